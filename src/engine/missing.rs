//! Counterfactuals for facts a request left out: where an assumption advisory (`rules/advisories.yaml`, `type:
//! assumption` with a `when:` naming `fact is not set`) says the engine answered conservatively because a
//! declared fact was missing, the request is determined again with the fact declared, once per value it can
//! take, so the caller sees what declaring it would have changed.

use rust_decimal::Decimal;

use super::determine::{determine, Determination, EngineError, Input};
use super::request::{ATTESTATION_FIELDS, MAINTENANCE_FIELDS};
use crate::rules::ast::Cond;
use crate::rules::registry::Registry;
use crate::rules::schema::{Fact, FactKind};

/// The answer with one value of a missing fact declared.
#[derive(Clone, Debug)]
pub struct Reading {
    pub value: &'static str,
    /// What the caller would have owed (`total_tax`).
    pub total_tax: Decimal,
    /// The tax the law imposes on the sale before nexus, marketplace or remittance (`tax_due`).
    pub tax_due: Decimal,
}

/// A fact the request left out that an assumption advisory of the answer names.
#[derive(Clone, Debug)]
pub struct MissingFact {
    pub fact: Fact,
    /// Where the fact goes in a calculate request (`payment_provider_type`, `maintenance_contract.mandatory`).
    pub field: String,
    /// The advisory that reported the assumption.
    pub advisory: String,
    pub readings: Vec<Reading>,
}

/// A determination and, for each fact it assumed, the answers with that fact declared.
pub struct WhatIf {
    pub answer: Determination,
    pub missing: Vec<MissingFact>,
}

/// The request field that declares `fact`.
pub fn field_of(fact: Fact) -> String {
    let name = fact.name();
    if MAINTENANCE_FIELDS.contains(&name) {
        format!("maintenance_contract.{name}")
    } else if ATTESTATION_FIELDS.contains(&name) {
        format!("custom_software_attestation.{name}")
    } else {
        name.to_string()
    }
}

/// The facts a condition requires to be absent (`fact is not set`, or `not (fact is set)`).
fn unset_facts(cond: &Cond, negated: bool, out: &mut Vec<Fact>) {
    match cond {
        Cond::And(parts) | Cond::Or(parts) => parts.iter().for_each(|c| unset_facts(c, negated, out)),
        Cond::Not(c) => unset_facts(c, !negated, out),
        Cond::Set { fact, negated: n, .. } => {
            if *n != negated && !out.contains(fact) {
                out.push(*fact);
            }
        }
        Cond::In { .. } | Cond::Eq { .. } | Cond::Flag { .. } => {}
    }
}

/// Each value a fact can be declared with, as (schema index, name).
fn values(fact: Fact) -> Vec<(u16, &'static str)> {
    let kind = &fact.def().kind;
    match kind {
        FactKind::Bool => vec![(0, "false"), (1, "true")],
        FactKind::Enum(names) => names.iter().enumerate().map(|(i, n)| (i as u16, *n)).collect(),
    }
}

/// Determines `input`, then, for every fact an assumption advisory of the answer names as missing, the same
/// request with that fact declared, one value at a time (everything else as sent).
pub fn what_if(reg: &Registry, input: &Input) -> Result<WhatIf, EngineError> {
    let answer = determine(reg, input)?;
    let raised = answer.advisory_codes().into_iter().map(str::to_string).collect::<Vec<_>>();
    let mut missing: Vec<MissingFact> = Vec::new();
    for def in reg.advisories.iter().filter(|d| d.kind == "assumption" && raised.contains(&d.code)) {
        let Some(when) = &def.when else { continue };
        let mut facts = Vec::new();
        unset_facts(when, false, &mut facts);
        for fact in facts {
            if input.request.facts.declared(fact).is_some() || missing.iter().any(|m| m.fact == fact) {
                continue;
            }
            let mut readings = Vec::new();
            for (value, name) in values(fact) {
                let mut request = input.request.clone();
                request.facts.set(fact, value);
                let det = determine(reg, &Input { request: &request, ..*input })?;
                readings.push(Reading { value: name, total_tax: det.total_tax, tax_due: det.tax_due });
            }
            missing.push(MissingFact { fact, field: field_of(fact), advisory: def.code.clone(), readings });
        }
    }
    Ok(WhatIf { answer, missing })
}
