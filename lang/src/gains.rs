//! The gains tracker's rule data, compiled: federal brackets, breakpoints, thresholds and the wash-sale
//! rule (rules/gains/federal.yaml), and each jurisdiction's treatment of a resident's capital
//! gains (rules/gains/states/<xx>.yaml). Read by [`super::load_gains`].

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::dated::{in_force, Dated};
#[cfg(doc)]
use super::schema::{FILING_STATUSES, STATES};

/// A bracket schedule: `rates` has one more entry than each status's `bounds` (the last rate
/// applies above the last bound). Bounds are indexed by [`FILING_STATUSES`].
#[derive(Clone, Debug)]
pub struct Schedule {
    pub rates: Vec<Decimal>,
    pub bounds: [Vec<Decimal>; 4],
}

#[derive(Clone, Debug)]
pub struct Niit {
    pub rate: Decimal,
    pub thresholds: [Decimal; 4],
}

#[derive(Clone, Debug)]
pub struct WashSaleRule {
    pub window_days: i64,
    pub asset_classes: Vec<String>,
    pub note: Option<String>,
}

pub const STATE_KINDS: [&str; 3] = ["income_tax", "gains_excise", "none"];
pub const RATE_STRUCTURES: [&str; 2] = ["flat", "graduated"];
pub const SURTAX_BASES: [&str; 3] = ["income_above", "gain_above", "whole_gain_when_income_above"];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StateKind {
    IncomeTax,
    GainsExcise,
    None,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SurtaxBase {
    /// The part of income plus taxable gain above `over`.
    IncomeAbove,
    /// The part of the taxable gain above `over`.
    GainAbove,
    /// The whole taxable gain, once income plus gain exceeds `over`.
    WholeGainWhenIncomeAbove,
}

#[derive(Clone, Debug)]
pub struct Surtax {
    pub rate: Decimal,
    pub over: Decimal,
    pub on: SurtaxBase,
}

/// How one jurisdiction taxes a resident individual's capital gains for a span of tax years.
#[derive(Clone, Debug)]
pub struct StateGains {
    pub kind: StateKind,
    /// `Some(true)` when the rate is the top bracket of a graduated schedule.
    pub graduated: Option<bool>,
    pub rate: Decimal,
    pub short_term_rate: Option<Decimal>,
    pub long_term_rate: Option<Decimal>,
    pub long_term_exclusion: Decimal,
    pub long_term_cap: Option<Decimal>,
    pub gain_deduction: Decimal,
    pub short_term_taxed: bool,
    pub surtaxes: Vec<Surtax>,
    pub note: Option<String>,
}

impl StateGains {
    /// The rate on short-term gain (0 when the state does not tax it).
    pub fn short_term(&self) -> Decimal {
        if self.kind == StateKind::None || !self.short_term_taxed {
            return Decimal::ZERO;
        }
        self.short_term_rate.unwrap_or(self.rate)
    }

    /// The effective top rate on long-term gain: its own rate or the ordinary one, less the
    /// excluded share, no higher than the cap.
    pub fn long_term(&self) -> Decimal {
        if self.kind == StateKind::None {
            return Decimal::ZERO;
        }
        let r = self.long_term_rate.unwrap_or(self.rate) * (Decimal::ONE - self.long_term_exclusion);
        self.long_term_cap.map_or(r, |c| r.min(c))
    }
}

/// Everything in rules/gains/.
#[derive(Clone, Debug, Default)]
pub struct GainsRules {
    pub ordinary: Vec<Dated<Schedule>>,
    pub standard_deduction: Vec<Dated<[Decimal; 4]>>,
    pub long_term: Vec<Dated<Schedule>>,
    pub niit: Vec<Dated<Niit>>,
    pub loss_limit: Vec<Dated<[Decimal; 4]>>,
    pub corporate_rate: Vec<Dated<Decimal>>,
    pub long_term_months: Vec<Dated<u32>>,
    pub wash_sale: Vec<Dated<WashSaleRule>>,
    /// Indexed like [`STATES`]; empty lists only in a partial registry.
    pub states: Vec<Vec<Dated<StateGains>>>,
}

impl GainsRules {
    pub fn state(&self, idx: usize, day: NaiveDate) -> Option<&Dated<StateGains>> {
        self.states.get(idx).and_then(|l| in_force(l, day))
    }

    pub fn wash_sale_rule(&self, day: NaiveDate) -> Option<&Dated<WashSaleRule>> {
        in_force(&self.wash_sale, day)
    }

    /// The number of months a lot must be held *more than* to be long-term.
    pub fn long_term_after_months(&self, day: NaiveDate) -> u32 {
        in_force(&self.long_term_months, day).map_or(12, |d| d.value)
    }
}
