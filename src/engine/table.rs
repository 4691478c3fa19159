//! The public rate tables (GET /rates, /rates/local, POST /verify) read through determinations: each
//! jurisdiction's figures are those of the sales calculate would answer on the same date, so a table and a
//! determination cannot disagree.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::determine::{determine, pct, Determination, EngineError, Fault, Input};
use super::request::{FieldError, Request};
use crate::rules::registry::{in_force, Dated, FacilitatedCount, Jurisdiction, Registry};
use crate::rules::schema::{Fact, STATES, TRANSACTION_TYPES};

/// The transaction types whose taxability the table reports: SaaS (calculate's default type) and digital goods.
pub const SAAS: &str = "saas";
pub const DIGITAL_GOOD: &str = "digital_good";

/// The amount of the probe sales; every figure the table reports is a rate or a share, not a tax.
const PROBE_AMOUNT: i64 = 1000;

/// A probe sale: `transaction_type` sold into `state` (at `zip` when given) by a seller with nexus there, with no
/// other fact declared, determined as calculate determines it.
pub fn probe(
    reg: &Registry,
    state: usize,
    transaction_type: &str,
    zip: Option<&str>,
    as_of: NaiveDate,
) -> Result<Determination, EngineError> {
    STATES.get(state).ok_or(Fault::Table("state index"))?;
    let tt = Fact::transaction_type.def().kind.index_of(transaction_type).ok_or(Fault::Table("transaction type"))?;
    let mut request = Request::new(Decimal::from(PROBE_AMOUNT), state, "rate-table".to_string());
    request.facts.set(Fact::transaction_type, tt);
    if let Some(z) = zip.filter(|z| !crate::postal::is_zip(z)) {
        let message = format!("`{z}` is not 5 digits or ZIP+4 (55401-1234)");
        return Err(EngineError::Input(vec![FieldError { field: "buyer_zip".into(), message }]));
    }
    request.buyer_zip = zip.map(str::to_string);
    let nexus = BTreeMap::from([(state, true)]);
    determine(reg, &Input { request: &request, nexus: Some(&nexus), vendor_ytd: None, as_of })
}

/// One jurisdiction's row of the rate table as of a date.
pub struct StateRates<'a> {
    pub state: usize,
    pub code: &'static str,
    pub jurisdiction: &'a Jurisdiction,
    /// The state rate entry in force (the one the determinations applied).
    pub state_rate: &'a Dated<Decimal>,
    pub local_taxes: Option<&'a Dated<bool>>,
    pub saas: Determination,
    pub digital_good: Determination,
}

impl StateRates<'_> {
    /// The general state rate, as the determinations applied it.
    pub fn rate(&self) -> Decimal {
        self.saas.state_rate
    }

    pub fn has_local_taxes(&self) -> bool {
        self.local_taxes.is_some_and(|d| d.value)
    }

    pub fn saas_taxable(&self) -> bool {
        taxable(&self.saas)
    }

    pub fn digital_goods_taxable(&self) -> bool {
        taxable(&self.digital_good)
    }

    /// The table's `digitalTaxable` / `d`: a SaaS subscription or a digital good is taxable.
    pub fn digital_taxable(&self) -> bool {
        self.saas_taxable() || self.digital_goods_taxable()
    }

    /// The ids of the rules that decided the row: the state's sourcing rule and the taxability rules of the two
    /// probe sales.
    pub fn rule_ids(&self) -> Vec<String> {
        let mut ids = vec![self.saas.sourcing_rule.clone()];
        for d in [&self.saas, &self.digital_good] {
            for leg in &d.legs {
                if !ids.contains(&leg.rule_id) {
                    ids.push(leg.rule_id.clone());
                }
            }
        }
        ids
    }
}

/// Whether some leg of the sale is taxable.
pub fn taxable(d: &Determination) -> bool {
    d.legs.iter().any(|l| l.result.is_taxable())
}

/// The share of the amount taxed (the first taxable leg's base share; 0 when nothing is taxable).
pub fn taxed_share(d: &Determination) -> Decimal {
    d.legs.iter().find(|l| l.result.is_taxable()).map_or(Decimal::ZERO, |l| l.base_share)
}

/// The row of `state` as of `as_of`.
pub fn state_rates(reg: &Registry, state: usize, as_of: NaiveDate) -> Result<StateRates<'_>, EngineError> {
    let code = STATES.get(state).copied().ok_or(Fault::Table("state index"))?;
    let j = reg.jurisdiction(state).ok_or(Fault::Table("jurisdiction missing from the registry"))?;
    let saas = probe(reg, state, SAAS, None, as_of)?;
    let digital_good = probe(reg, state, DIGITAL_GOOD, None, as_of)?;
    let state_rate = in_force(&j.state_rate, as_of).ok_or(Fault::NoStateRate { state: code, as_of })?;
    Ok(StateRates { state, code, jurisdiction: j, state_rate, local_taxes: in_force(&j.local_taxes, as_of), saas, digital_good })
}

/// How one transaction type is treated in a state, from its probe sale.
pub struct Treatment {
    pub transaction_type: &'static str,
    pub determination: Determination,
}

/// Every transaction type's probe sale in `state`, in the order of `TRANSACTION_TYPES`.
pub fn treatments(reg: &Registry, state: usize, as_of: NaiveDate) -> Result<Vec<Treatment>, EngineError> {
    TRANSACTION_TYPES
        .iter()
        .map(|&tt| probe(reg, state, tt, None, as_of).map(|determination| Treatment { transaction_type: tt, determination }))
        .collect()
}

/// A plain explanation of a state's law as of a date, in sentences built from the registry.
pub struct Explanation {
    pub taxability: String,
    pub sourcing: String,
    pub nexus_threshold: String,
    pub marketplace: String,
    pub special_local_taxes: Vec<String>,
}

pub fn explain(reg: &Registry, row: &StateRates, treatments: &[Treatment], as_of: NaiveDate) -> Explanation {
    let j = row.jurisdiction;
    let mut taxed: Vec<String> = vec![];
    let mut exempt: Vec<String> = vec![];
    for t in treatments {
        let d = &t.determination;
        match d.legs.iter().find(|l| l.result.is_taxable()) {
            Some(l) => {
                let share = if l.base_share == Decimal::ONE { String::new() } else { format!(" on {} of the price", pct(l.base_share)) };
                taxed.push(format!("{} (as {}) at {}{share} [{}]", t.transaction_type, d.category, pct(l.state_rate), l.rule_id));
            }
            None => {
                let reason = d.legs.first().and_then(|l| l.reason.clone()).unwrap_or_default();
                let rule = d.legs.first().map(|l| l.rule_id.as_str()).unwrap_or("");
                exempt.push(format!("{} (as {}): {reason} [{rule}]", t.transaction_type, d.category));
            }
        }
    }
    let mut taxability = format!("{} ({}) has a general state rate of {}", j.name, row.code, pct(row.rate()));
    taxability.push_str(if row.has_local_taxes() { ", and local sales taxes add to it." } else { " and no local sales taxes." });
    if !taxed.is_empty() {
        taxability.push_str(&format!(" Taxable: {}.", taxed.join("; ")));
    }
    if !exempt.is_empty() {
        taxability.push_str(&format!(" Not taxed: {}.", exempt.join("; ")));
    }
    let sourcing_rules: Vec<String> = j
        .sourcing
        .iter()
        .filter(|r| r.covers(as_of))
        .map(|r| {
            let how = match &r.body {
                crate::rules::registry::RuleBody::Single(s) => s.as_str(),
                crate::rules::registry::RuleBody::Alternatives(a) => a.first().map_or("destination", |x| x.0.as_str()),
            };
            let scope = if r.when.is_some() { "where its condition holds" } else { "otherwise" };
            format!("{how} {scope} ({}; {})", r.id, r.citation.cite)
        })
        .collect();
    let sourcing = format!("Sales are sourced {}.", sourcing_rules.join("; then "));
    let nexus_threshold = match in_force(&j.economic_nexus, as_of) {
        None => format!("{} has no economic-nexus threshold in force on {as_of}.", row.code),
        Some(n) => {
            let t = &n.value;
            let mut prongs = vec![];
            if let Some(s) = t.sales {
                prongs.push(format!("{} USD of {} sales", s.normalize(), t.sales_measure));
            }
            if let Some(c) = t.transactions {
                prongs.push(format!("{c} transactions"));
            }
            let joined = prongs.join(if t.both_prongs_required { " and " } else { " or " });
            format!("A remote seller has economic nexus at {joined} in the {} ({}).", t.period.replace('_', " "), n.citation.cite)
        }
    };
    let marketplace = match in_force(&j.marketplace, as_of) {
        Some(m) if m.value.law => {
            let count = match m.value.facilitated_sales_count {
                FacilitatedCount::Counts => "count toward the seller's own threshold",
                FacilitatedCount::Excluded => "do not count toward the seller's own threshold",
                FacilitatedCount::Conditional => "count toward the seller's own threshold unless a condition excludes them",
            };
            format!(
                "A marketplace facilitator collects and remits the tax on sales it facilitates; those sales {count} ({}).",
                m.citation.cite
            )
        }
        Some(m) => format!("{} has no marketplace-facilitator law ({}).", row.code, m.citation.cite),
        None => format!("No marketplace-facilitator rule is in force on {as_of}."),
    };
    let special_local_taxes = reg
        .special_taxes
        .iter()
        .filter(|s| s.state == row.state)
        .filter_map(|s| {
            let rate = in_force(&s.rates, as_of)?;
            let nexus = if s.requires_seller_nexus { "collected by a seller with nexus" } else { "owed whatever the seller's nexus" };
            Some(format!("{} ({}): {} in zip codes {}, {nexus} ({})", s.name, s.id, pct(rate.value), s.zips.join(", "), rate.citation.cite))
        })
        .collect();
    Explanation { taxability, sourcing, nexus_threshold, marketplace, special_local_taxes }
}
