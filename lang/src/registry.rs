//! The compiled registry: the immutable, indexed form of every rule file, shared by the engine,
//! the CLI and the server. Built only by [`super::compile`] from checked documents.

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::ast::{Cond, Sourcing, TaxOutcome};
pub use super::dated::{in_force, Citation, Dated};
use super::diag::Span;
use super::gains::GainsRules;
pub use super::places::{Divergence, LocalTables};
use super::schema::{Fact, CATEGORIES};

#[derive(Clone, Debug)]
pub enum RuleBody<O> {
    Single(O),
    /// Readings of ambiguous law; the engine answers with the one giving the higher tax.
    Alternatives(Vec<(O, Citation)>),
}

#[derive(Clone, Debug)]
pub struct Rule<O> {
    pub id: String,
    pub when: Option<Cond>,
    pub body: RuleBody<O>,
    pub from: NaiveDate,
    pub to: Option<NaiveDate>,
    pub citation: Citation,
    pub note: Option<String>,
    pub advisories: Vec<String>,
    pub span: Span,
}

impl<O> Rule<O> {
    pub fn covers(&self, day: NaiveDate) -> bool {
        self.from <= day && self.to.is_none_or(|t| day <= t)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FacilitatedCount {
    Counts,
    Excluded,
    /// Excluded only under a condition (for example, the facilitator collects); reported as counting.
    Conditional,
}

#[derive(Clone, Debug)]
pub struct Marketplace {
    pub law: bool,
    pub facilitated_sales_count: FacilitatedCount,
}

#[derive(Clone, Debug)]
pub struct NexusThreshold {
    pub sales: Option<Decimal>,
    pub transactions: Option<u32>,
    pub sales_measure: String,
    pub period: String,
    /// True when both prongs must be met (CT, NY); false when either suffices.
    pub both_prongs_required: bool,
}

#[derive(Debug)]
pub struct Jurisdiction {
    pub code: &'static str,
    pub name: String,
    pub state_rate: Vec<Dated<Decimal>>,
    pub local_taxes: Vec<Dated<bool>>,
    pub sourcing: Vec<Rule<Sourcing>>,
    pub economic_nexus: Vec<Dated<NexusThreshold>>,
    pub marketplace: Vec<Dated<Marketplace>>,
    pub taxability: Vec<Rule<TaxOutcome>>,
    /// For each category, the positions in `taxability` of the rules that can apply, in file order.
    pub by_category: Vec<Vec<u32>>,
    /// Values of `digital_content_type` that some rule of this jurisdiction names.
    pub content_types_named: Vec<u16>,
    /// Known disagreements of a state-level table with this jurisdiction's figures (`divergences:`).
    pub divergences: Vec<StateDivergence>,
}

/// A recorded, explained disagreement of a state-level table (the state-rate table, the SaaS summary) with one
/// of a jurisdiction's figures: `levy rules audit-rates` lists a row that matches one apart and does not fail on it.
#[derive(Clone, Debug)]
pub struct StateDivergence {
    /// The other table, `state_rates` or `saas_taxability` (of [`crate::schema::RATE_TABLES`]).
    pub table: String,
    /// The figure compared, one of [`crate::schema::STATE_FIELDS`]: `state_rate` and `local_taxes` (state_rates),
    /// `saas` and `digital_goods` (saas_taxability).
    pub field: String,
    /// The table's value in canonical form: a rate as a fraction (`0.065`), `true`/`false`, or
    /// `taxable`/`exempt`/`local_only`.
    pub value: String,
    pub reason: String,
    /// The primary source our figure rests on.
    pub citation: Citation,
}

#[derive(Debug)]
pub struct SpecialTax {
    pub id: String,
    pub name: String,
    pub state: usize,
    pub zips: Vec<String>,
    pub when: Option<Cond>,
    pub requires_seller_nexus: bool,
    pub rates: Vec<Dated<Decimal>>,
    pub citation: Citation,
    pub note: Option<String>,
}

#[derive(Clone, Debug)]
pub struct TransactionTypeEntry {
    pub work_type: u16,
    pub category: u16,
    pub label: String,
}

#[derive(Clone, Debug)]
pub struct WorkTypeEntry {
    pub category: u16,
    pub label: String,
}

#[derive(Clone, Debug)]
pub struct CategoryEntry {
    pub label: String,
    pub outside_sales_tax: bool,
    pub route: Option<String>,
    pub note: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Reclassification {
    pub id: String,
    pub when: Cond,
    pub category: u16,
    pub advisories: Vec<String>,
    pub citation: Citation,
}

#[derive(Debug)]
pub struct Classification {
    pub transaction_types: Vec<TransactionTypeEntry>,
    pub work_types: Vec<WorkTypeEntry>,
    pub categories: Vec<CategoryEntry>,
    pub derived: Vec<(Fact, Cond)>,
    pub reclassify: Vec<Reclassification>,
}

#[derive(Clone, Debug)]
pub struct AdvisoryDef {
    pub code: String,
    pub kind: String,
    pub message: String,
    pub when: Option<Cond>,
}

#[derive(Clone, Debug)]
pub struct InformationReturnThreshold {
    pub threshold: Decimal,
    pub form: String,
}

#[derive(Clone, Debug)]
pub struct ChangeEntry {
    pub date: NaiveDate,
    pub version: String,
    pub summary: String,
    pub rules: Vec<String>,
}

#[derive(Debug)]
pub struct Registry {
    pub version: String,
    pub engine_version: String,
    pub coverage_from: NaiveDate,
    pub changelog: Vec<ChangeEntry>,
    pub classification: Classification,
    pub advisories: Vec<AdvisoryDef>,
    /// Indexed by the position of the state code in [`super::schema::STATES`]; `None` only in a
    /// registry loaded with `partial` (a rules directory still being written).
    pub jurisdictions: Vec<Option<Jurisdiction>>,
    /// Local taxes written once, and where each ZIP code's apply (rules/local/, rules/geo/).
    pub local: LocalTables,
    pub special_taxes: Vec<SpecialTax>,
    pub information_returns: Vec<Dated<InformationReturnThreshold>>,
    /// Federal and state figures for the gains tracker (rules/gains/).
    pub gains: GainsRules,
}

/// A rule found by id: its jurisdiction, and the rule (a taxability rule or a sourcing rule).
pub type FoundRule<'a> = (&'a Jurisdiction, Option<&'a Rule<TaxOutcome>>, Option<&'a Rule<Sourcing>>);

impl Registry {
    pub fn advisory(&self, code: &str) -> Option<&AdvisoryDef> {
        self.advisories.iter().find(|a| a.code == code)
    }

    pub fn jurisdiction(&self, state: usize) -> Option<&Jurisdiction> {
        self.jurisdictions.get(state).and_then(Option::as_ref)
    }

    pub fn all_jurisdictions(&self) -> impl Iterator<Item = &Jurisdiction> {
        self.jurisdictions.iter().flatten()
    }

    pub fn rule_count(&self) -> usize {
        self.all_jurisdictions().map(|j| j.taxability.len() + j.sourcing.len()).sum::<usize>()
            + self.classification.reclassify.len()
            + self.special_taxes.len()
    }

    pub fn category_name(&self, c: u16) -> &'static str {
        CATEGORIES.get(c as usize).copied().unwrap_or("unknown")
    }

    /// Finds a taxability or sourcing rule by id, with its jurisdiction.
    pub fn find_rule(&self, id: &str) -> Option<FoundRule<'_>> {
        self.all_jurisdictions().find_map(|j| {
            if let Some(r) = j.taxability.iter().find(|r| r.id == id) {
                return Some((j, Some(r), None));
            }
            j.sourcing.iter().find(|r| r.id == id).map(|r| (j, None, Some(r)))
        })
    }
}
