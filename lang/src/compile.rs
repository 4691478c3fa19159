//! The last stage of loading: from the checked parts of every rule file to the indexed, immutable
//! [`Registry`]. Nothing here can fail or report: every check has run before.

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::ast::{Cond, Sourcing, TaxOutcome};
use super::gains::GainsRules;
use super::registry::*;
use super::schema::{Fact, CATEGORIES};

/// A state file as read and checked, before its indexes.
pub struct JurisdictionParts {
    pub code: &'static str,
    pub name: String,
    pub state_rate: Vec<Dated<Decimal>>,
    pub local_taxes: Vec<Dated<bool>>,
    pub sourcing: Vec<Rule<Sourcing>>,
    pub economic_nexus: Vec<Dated<NexusThreshold>>,
    pub marketplace: Vec<Dated<Marketplace>>,
    /// Every rule's condition begins with a category test (R504).
    pub taxability: Vec<Rule<TaxOutcome>>,
    pub divergences: Vec<StateDivergence>,
}

/// Every rule file of a directory, read and checked without errors.
pub struct Parts {
    pub version: String,
    pub engine_version: String,
    pub coverage_from: NaiveDate,
    pub changelog: Vec<ChangeEntry>,
    pub classification: Classification,
    pub advisories: Vec<AdvisoryDef>,
    /// By the position of the state code in [`super::schema::STATES`].
    pub jurisdictions: Vec<Option<JurisdictionParts>>,
    pub local: LocalTables,
    pub special_taxes: Vec<SpecialTax>,
    pub information_returns: Vec<Dated<InformationReturnThreshold>>,
    pub gains: GainsRules,
}

pub fn compile(parts: Parts) -> Registry {
    Registry {
        version: parts.version,
        engine_version: parts.engine_version,
        coverage_from: parts.coverage_from,
        changelog: parts.changelog,
        classification: parts.classification,
        advisories: parts.advisories,
        jurisdictions: parts.jurisdictions.into_iter().map(|j| j.map(jurisdiction)).collect(),
        local: parts.local,
        special_taxes: parts.special_taxes,
        information_returns: parts.information_returns,
        gains: parts.gains,
    }
}

/// A jurisdiction with its taxability rules indexed by category, and the content types they name.
fn jurisdiction(p: JurisdictionParts) -> Jurisdiction {
    let mut by_category = vec![vec![]; CATEGORIES.len()];
    let mut content_types_named = vec![];
    for (pos, r) in p.taxability.iter().enumerate() {
        for c in r.when.as_ref().and_then(Cond::category_test).unwrap_or_default() {
            if let Some(slot) = by_category.get_mut(c as usize) {
                slot.push(pos as u32);
            }
        }
        if let Some(w) = &r.when {
            w.visit_facts(&mut |fact, values| {
                if fact == Fact::digital_content_type {
                    content_types_named.extend_from_slice(values);
                }
            });
        }
    }
    content_types_named.sort_unstable();
    content_types_named.dedup();
    Jurisdiction {
        code: p.code,
        name: p.name,
        state_rate: p.state_rate,
        local_taxes: p.local_taxes,
        sourcing: p.sourcing,
        economic_nexus: p.economic_nexus,
        marketplace: p.marketplace,
        taxability: p.taxability,
        by_category,
        content_types_named,
        divergences: p.divergences,
    }
}
