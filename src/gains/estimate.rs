//! Estimates of the federal and state tax on a sale's realized gain, from the dated figures in
//! rules/gains/. Each estimate says which tax year and which figures it used, and every
//! assumption it made.
//!
//! Federal, by entity type:
//! - individual: with `estimated_annual_income` (the taxpayer's other income for the year, before
//!   the standard deduction) the estimate is bracket-aware: it is the change in tax when the gain
//!   is added on top of that income — short-term gain at the ordinary rates, net capital gain at
//!   0/15/20% by the breakpoints on taxable income (§1(h)), plus NIIT (§1411) on the gain above
//!   the MAGI threshold. Without it, short-term gain is taken at the top ordinary rate and
//!   long-term at the top 20% rate (a ceiling), and NIIT cannot be detected.
//! - c_corp: 21% of net gain (§11(b)); a corporation's net capital loss has no current effect.
//! - pass_through: no entity-level tax; with income and filing status, the owner's tax at
//!   individual rates.
//!
//! Netting within the sale follows §1222: a short-term loss first reduces long-term gain (and
//! vice versa); a net loss reduces ordinary income by at most the §1211(b) limit.

use chrono::{Datelike, NaiveDate};
use rust_decimal::Decimal;

use super::EntityType;
use crate::engine::money::{cents, two_places};
use crate::rules::gains::{GainsRules, Schedule, StateGains, StateKind, SurtaxBase};
use crate::rules::registry::{in_force, Citation, Dated};
use crate::rules::schema::{FILING_STATUSES, STATES};

/// Both estimates of a sale.
#[derive(Clone, Debug)]
pub struct Estimates {
    pub federal: FederalEstimate,
    pub state: StateEstimate,
}

/// The federal estimate: money in dollars to the cent (two places), rates as fractions. `available` false with a
/// `reason` when the figures it needs are not in the rules.
#[derive(Clone, Debug, Default)]
pub struct FederalEstimate {
    pub available: bool,
    pub reason: Option<String>,
    pub tax_year: Option<i32>,
    pub entity_type: Option<String>,
    pub method: Option<String>,
    pub filing_status: Option<String>,
    pub short_term_gain: Option<Decimal>,
    pub long_term_gain: Option<Decimal>,
    pub net_capital_gain: Option<Decimal>,
    pub ordinary_income_change: Option<Decimal>,
    pub ordinary_tax: Option<Decimal>,
    pub long_term_tax: Option<Decimal>,
    pub net_investment_income_tax: Option<Decimal>,
    pub rate: Option<Decimal>,
    pub total_tax: Option<Decimal>,
    pub marginal_rates: Option<MarginalRates>,
    pub assumptions: Option<Vec<String>>,
    pub citations: Option<Vec<Citation>>,
}

/// The rates on the next dollar of short-term and of long-term gain.
#[derive(Clone, Copy, Debug)]
pub struct MarginalRates {
    pub short_term: Decimal,
    pub long_term: Decimal,
}

/// The resident state's estimate, in the same units as [`FederalEstimate`].
#[derive(Clone, Debug, Default)]
pub struct StateEstimate {
    pub available: bool,
    pub reason: Option<String>,
    pub state: Option<String>,
    pub tax_year: Option<i32>,
    pub kind: Option<String>,
    pub treatment: Option<String>,
    pub short_term_rate: Option<Decimal>,
    pub long_term_rate: Option<Decimal>,
    pub long_term_exclusion: Option<Decimal>,
    pub taxable_short_term: Option<Decimal>,
    pub taxable_long_term: Option<Decimal>,
    pub tax: Option<Decimal>,
    pub surtax: Option<Decimal>,
    pub total_tax: Option<Decimal>,
    pub assumptions: Option<Vec<String>>,
    pub citation: Option<Citation>,
    /// The treatment's note from the rules, when it has one.
    pub note: Option<String>,
}

/// A sale's realized gain after wash-sale adjustments, by term.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Gains {
    pub short_term: Decimal,
    pub long_term: Decimal,
}

/// What the trade said about the taxpayer.
#[derive(Clone, Debug)]
pub struct Profile {
    /// `None` when the trade did not say (individual is assumed).
    pub entity: Option<EntityType>,
    /// An index into [`FILING_STATUSES`]; `None` when not given (single is assumed).
    pub filing_status: Option<usize>,
    pub income: Option<Decimal>,
    /// An index into [`STATES`].
    pub state: Option<usize>,
}

/// Both estimates for a sale on `sold`.
pub fn estimate(rules: &GainsRules, gains: Gains, p: &Profile, sold: NaiveDate) -> Estimates {
    Estimates { federal: federal(rules, gains, p, sold), state: state(rules, gains, p, sold) }
}

/// Dollars to the cent, written with two places.
fn money(d: Decimal) -> Option<Decimal> {
    Some(two_places(d))
}

/// The tax on the slice of income from `lo` to `hi` under one status's schedule.
pub fn slice_tax(s: &Schedule, status: usize, lo: Decimal, hi: Decimal) -> Decimal {
    let bounds = &s.bounds[status];
    let mut tax = Decimal::ZERO;
    let mut floor = Decimal::ZERO;
    for (i, rate) in s.rates.iter().enumerate() {
        let ceil = bounds.get(i).copied();
        let a = lo.max(floor);
        let b = ceil.map_or(hi, |c| hi.min(c));
        if b > a {
            tax += (b - a) * rate;
        }
        match ceil {
            Some(c) => floor = c,
            None => break,
        }
    }
    tax
}

/// The rate of the bracket that income `x` falls in (the rate on the next dollar above `x`).
pub fn rate_at(s: &Schedule, status: usize, x: Decimal) -> Decimal {
    let bounds = &s.bounds[status];
    let i = bounds.iter().position(|b| x < *b).unwrap_or(bounds.len());
    s.rates[i.min(s.rates.len() - 1)]
}

/// Splits a sale's gains into the part taxed at preferential rates (net capital gain) and the
/// ordinary part; a net loss becomes a negative ordinary part, no larger than `limit`.
fn net(g: Gains, limit: Decimal) -> (Decimal, Decimal) {
    let total = g.short_term + g.long_term;
    if total >= Decimal::ZERO {
        let pref = g.long_term.min(total).max(Decimal::ZERO);
        (pref, total - pref)
    } else {
        (Decimal::ZERO, -(-total).min(limit))
    }
}

struct Year<'a> {
    ordinary: &'a Dated<Schedule>,
    long_term: &'a Dated<Schedule>,
    deduction: &'a Dated<[Decimal; 4]>,
    loss_limit: &'a Dated<[Decimal; 4]>,
    niit: &'a Dated<crate::rules::gains::Niit>,
}

fn year_figures(rules: &GainsRules, day: NaiveDate) -> Option<Year<'_>> {
    Some(Year {
        ordinary: in_force(&rules.ordinary, day)?,
        long_term: in_force(&rules.long_term, day)?,
        deduction: in_force(&rules.standard_deduction, day)?,
        loss_limit: in_force(&rules.loss_limit, day)?,
        niit: in_force(&rules.niit, day)?,
    })
}

fn unavailable(reason: String) -> FederalEstimate {
    FederalEstimate { reason: Some(reason), ..FederalEstimate::default() }
}

fn state_unavailable(reason: String) -> StateEstimate {
    StateEstimate { reason: Some(reason), ..StateEstimate::default() }
}

pub fn federal(rules: &GainsRules, g: Gains, p: &Profile, sold: NaiveDate) -> FederalEstimate {
    let year = sold.year();
    let mut assumptions: Vec<String> = vec![];
    let entity = p.entity.unwrap_or_else(|| {
        assumptions.push("tax_entity_type not given: estimated for an individual".into());
        EntityType::Individual
    });
    if entity == EntityType::CCorp {
        let Some(rate) = in_force(&rules.corporate_rate, sold) else {
            return unavailable(format!("no corporate rate for tax year {year} in rules/gains/federal.yaml"));
        };
        let total = g.short_term + g.long_term;
        let tax = if total > Decimal::ZERO { cents(total * rate.value) } else { Decimal::ZERO };
        if total < Decimal::ZERO {
            assumptions.push("a corporation's net capital loss offsets only capital gains (carried back 3 years and forward 5, §1212(a)); no current tax effect is estimated".into());
        }
        assumptions.push(
            "capital gains of a C corporation are ordinary income taxed at the flat corporate rate; no preferential rate (§1201 repealed)"
                .into(),
        );
        return FederalEstimate {
            available: true,
            tax_year: Some(year),
            entity_type: Some(entity.name().into()),
            method: Some("corporate_flat_rate".into()),
            short_term_gain: money(g.short_term),
            long_term_gain: money(g.long_term),
            rate: Some(rate.value),
            total_tax: money(tax),
            assumptions: Some(assumptions),
            citations: Some(vec![rate.citation.clone()]),
            ..FederalEstimate::default()
        };
    }
    if entity == EntityType::PassThrough {
        if p.income.is_none() || p.filing_status.is_none() {
            assumptions.push("a partnership or S corporation pays no entity-level income tax: the gain passes to the owners with its character (§702, §1366); send estimated_annual_income and filing_status to estimate an owner's tax at individual rates".into());
            let citation = Citation {
                cite: "26 U.S.C. §701, §702(a)-(b), §1366(a)-(b)".into(),
                url: Some("https://www.law.cornell.edu/uscode/text/26/702".into()),
                checked: None,
            };
            return FederalEstimate {
                available: true,
                tax_year: Some(year),
                entity_type: Some(entity.name().into()),
                method: Some("pass_through_no_entity_tax".into()),
                short_term_gain: money(g.short_term),
                long_term_gain: money(g.long_term),
                total_tax: money(Decimal::ZERO),
                assumptions: Some(assumptions),
                citations: Some(vec![citation]),
                ..FederalEstimate::default()
            };
        }
        assumptions.push("a pass-through entity's gain is taxed to its owners (§702, §1366): estimated for one owner at individual rates with the income and filing status given".into());
    }
    individual(rules, g, p, sold, entity, assumptions)
}

fn individual(
    rules: &GainsRules,
    g: Gains,
    p: &Profile,
    sold: NaiveDate,
    entity: EntityType,
    mut assumptions: Vec<String>,
) -> FederalEstimate {
    let year = sold.year();
    let Some(y) = year_figures(rules, sold) else {
        return unavailable(format!(
            "no federal brackets for tax year {year} in rules/gains/federal.yaml; the figures are added when the IRS publishes them"
        ));
    };
    let status = p.filing_status.unwrap_or_else(|| {
        assumptions.push("filing_status not given: single".into());
        0
    });
    let (pref, ord_gain) = net(g, y.loss_limit.value[status]);
    let top_ordinary = *y.ordinary.value.rates.last().unwrap_or(&Decimal::ZERO);
    let top_long = *y.long_term.value.rates.last().unwrap_or(&Decimal::ZERO);
    let (method, ordinary_tax, long_term_tax, niit, marginal) = match p.income {
        Some(income) => {
            let sd = y.deduction.value[status];
            let base_ti = (income - sd).max(Decimal::ZERO);
            let ti = (income - sd + ord_gain + pref).max(Decimal::ZERO);
            let ord_ti = (ti - pref).max(Decimal::ZERO);
            let ordinary_change =
                slice_tax(&y.ordinary.value, status, Decimal::ZERO, ord_ti) - slice_tax(&y.ordinary.value, status, Decimal::ZERO, base_ti);
            let lt_tax = slice_tax(&y.long_term.value, status, ord_ti, ti);
            let nii = (g.short_term + g.long_term).max(Decimal::ZERO);
            let magi = income + ord_gain + pref;
            let over = (magi - y.niit.value.thresholds[status]).max(Decimal::ZERO);
            let niit = nii.min(over) * y.niit.value.rate;
            assumptions.push(format!(
                "estimated_annual_income is other income for the year before deductions; the {} standard deduction for {} ({}) is subtracted and the gain stacked on top",
                year,
                FILING_STATUSES[status],
                cents(sd).normalize()
            ));
            assumptions
                .push("no other investment income, capital gains or losses this year; NIIT measured with MAGI = income + this gain".into());
            let marginal = MarginalRates {
                short_term: rate_at(&y.ordinary.value, status, ord_ti.max(base_ti)),
                long_term: rate_at(&y.long_term.value, status, ti),
            };
            ("bracket_aware", ordinary_change, lt_tax, niit, marginal)
        }
        None => {
            assumptions.push("estimated_annual_income not given: short-term gain at the top ordinary rate and long-term gain at the top long-term rate (a ceiling); NIIT not assessed".into());
            let marginal = MarginalRates { short_term: top_ordinary, long_term: top_long };
            ("top_marginal_rates", ord_gain * top_ordinary, pref * top_long, Decimal::ZERO, marginal)
        }
    };
    if g.short_term + g.long_term < Decimal::ZERO {
        assumptions.push(format!(
            "a net capital loss: at most {} of it offsets ordinary income this year (§1211(b)); the rest carries forward (§1212(b))",
            cents(y.loss_limit.value[status]).normalize()
        ));
    }
    let (ordinary_tax, long_term_tax, niit) = (cents(ordinary_tax), cents(long_term_tax), cents(niit));
    FederalEstimate {
        available: true,
        reason: None,
        tax_year: Some(year),
        entity_type: Some(entity.name().into()),
        method: Some(method.into()),
        filing_status: Some(FILING_STATUSES[status].into()),
        short_term_gain: money(g.short_term),
        long_term_gain: money(g.long_term),
        net_capital_gain: money(pref),
        ordinary_income_change: money(ord_gain),
        ordinary_tax: money(ordinary_tax),
        long_term_tax: money(long_term_tax),
        net_investment_income_tax: money(niit),
        rate: None,
        total_tax: money(ordinary_tax + long_term_tax + niit),
        marginal_rates: Some(marginal),
        assumptions: Some(assumptions),
        citations: Some(vec![
            y.ordinary.citation.clone(),
            y.long_term.citation.clone(),
            y.deduction.citation.clone(),
            y.niit.citation.clone(),
            y.loss_limit.citation.clone(),
        ]),
    }
}

/// The compact treatment code: none, exempt, excise, preferential or ordinary.
pub fn treatment(t: &StateGains) -> &'static str {
    match t.kind {
        StateKind::None => "none",
        StateKind::GainsExcise => "excise",
        StateKind::IncomeTax if t.short_term().is_zero() && t.long_term().is_zero() => "exempt",
        StateKind::IncomeTax if t.long_term() < t.short_term() => "preferential",
        StateKind::IncomeTax => "ordinary",
    }
}

pub fn kind_name(k: StateKind) -> &'static str {
    match k {
        StateKind::IncomeTax => "income_tax",
        StateKind::GainsExcise => "gains_excise",
        StateKind::None => "none",
    }
}

pub fn state(rules: &GainsRules, g: Gains, p: &Profile, sold: NaiveDate) -> StateEstimate {
    let Some(idx) = p.state else { return state_unavailable("resident_state not given".into()) };
    let code = STATES[idx];
    if p.entity == Some(EntityType::CCorp) {
        return state_unavailable(format!(
            "state corporate income tax is not estimated; {code} treats a corporation's gains as business income"
        ));
    }
    let year = sold.year();
    let Some(entry) = rules.state(idx, sold) else {
        return state_unavailable(format!("no treatment for {code} in tax year {year} in rules/gains/states/"));
    };
    let t = &entry.value;
    let mut assumptions: Vec<String> = vec!["local income taxes are not included".into()];
    if t.graduated == Some(true) {
        assumptions
            .push(format!("{code}'s brackets are not modelled: the gain is taxed at the top rate ({}), a ceiling", t.rate.normalize()));
    }
    let (pref, ord) = net(g, Decimal::ZERO);
    let mut taxable_st = if t.short_term_taxed && t.kind != StateKind::None { ord } else { Decimal::ZERO };
    let mut taxable_lt = if t.kind == StateKind::None { Decimal::ZERO } else { pref * (Decimal::ONE - t.long_term_exclusion) };
    if !t.gain_deduction.is_zero() {
        let from_lt = taxable_lt.min(t.gain_deduction);
        taxable_lt -= from_lt;
        taxable_st -= taxable_st.min(t.gain_deduction - from_lt);
        assumptions.push(format!(
            "the {} deduction of {} is applied as if this sale were the year's only gain",
            code,
            cents(t.gain_deduction).normalize()
        ));
    }
    let st_rate = t.short_term();
    let lt_rate = {
        let r = if t.kind == StateKind::None { Decimal::ZERO } else { t.long_term_rate.unwrap_or(t.rate) };
        t.long_term_cap.map_or(r, |c| r.min(c))
    };
    let base = cents(taxable_st * st_rate) + cents(taxable_lt * lt_rate);
    let taxable = taxable_st + taxable_lt;
    let income = p.income.unwrap_or(Decimal::ZERO);
    let mut surtax = Decimal::ZERO;
    for s in &t.surtaxes {
        let part = match s.on {
            SurtaxBase::IncomeAbove => taxable.min((income + taxable - s.over).max(Decimal::ZERO)),
            SurtaxBase::GainAbove => (taxable - s.over).max(Decimal::ZERO),
            SurtaxBase::WholeGainWhenIncomeAbove if income + taxable > s.over => taxable,
            SurtaxBase::WholeGainWhenIncomeAbove => Decimal::ZERO,
        };
        surtax += cents(part * s.rate);
        if s.on != SurtaxBase::GainAbove && p.income.is_none() {
            assumptions.push(format!(
                "a {} surtax depends on income; estimated_annual_income not given, so only this gain counts",
                s.rate.normalize()
            ));
        }
    }
    if g.short_term + g.long_term < Decimal::ZERO {
        assumptions.push("a net loss on this sale: no state tax; state loss limits and carryovers are not estimated".into());
    }
    StateEstimate {
        available: true,
        reason: None,
        state: Some(code.into()),
        tax_year: Some(year),
        kind: Some(kind_name(t.kind).into()),
        treatment: Some(treatment(t).into()),
        short_term_rate: Some(st_rate),
        long_term_rate: Some(lt_rate),
        long_term_exclusion: Some(t.long_term_exclusion),
        taxable_short_term: money(taxable_st),
        taxable_long_term: money(taxable_lt),
        tax: money(base),
        surtax: money(surtax),
        total_tax: money(base + surtax),
        assumptions: Some(assumptions),
        citation: Some(entry.citation.clone()),
        note: t.note.clone(),
    }
}
