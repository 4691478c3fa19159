//! Runs scenario cases against a registry: the same code serves `cargo test` and `levy rules test`.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use serde_json::Value;

use crate::engine::{self, Determination, EngineError};
use crate::rules::cases::Case;
use crate::rules::Registry;

/// What a case found: each mismatch as `key: expected X, got Y`.
pub struct CaseOutcome {
    pub failures: Vec<String>,
    pub determination: Option<Determination>,
}

fn dec(v: &Value) -> Option<Decimal> {
    match v {
        Value::Number(n) => n.to_string().parse().ok(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn codes(v: &Value) -> Vec<String> {
    match v {
        Value::Array(a) => a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect(),
        Value::String(s) => vec![s.clone()],
        _ => vec![],
    }
}

/// The case's request read and determined with the case's nexus, year-to-date sales and date.
pub fn determine_case(reg: &Registry, case: &Case) -> Result<Determination, EngineError> {
    let req = crate::api::schema::calculate::read_request(&case.request).map_err(EngineError::Input)?;
    let nexus: Option<BTreeMap<usize, bool>> = case.nexus.as_ref().map(|v| v.iter().map(|s| (*s, true)).collect());
    let nexus = req.nexus_override.clone().or(nexus);
    engine::determine(reg, &engine::Input { request: &req, nexus: nexus.as_ref(), vendor_ytd: case.vendor_ytd, as_of: case.as_of })
}

pub fn run_case(reg: &Registry, case: &Case) -> CaseOutcome {
    let mut failures = vec![];
    let expected_error = case.expect.iter().find(|(k, _, _)| k == "error").and_then(|(_, v, _)| v.as_str().map(str::to_string));
    let det = match (determine_case(reg, case), expected_error) {
        (Err(EngineError::Input(errs)), Some(field)) => {
            if !errs.iter().any(|e| e.field == field) {
                failures.push(format!(
                    "error: expected an input error naming `{field}`, got {}",
                    errs.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; ")
                ));
            }
            return CaseOutcome { failures, determination: None };
        }
        (Err(EngineError::Input(errs)), None) => {
            failures.push(format!("request rejected: {}", errs.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; ")));
            return CaseOutcome { failures, determination: None };
        }
        (Err(e @ EngineError::BeforeCoverage { .. }), _) => {
            failures.push(format!("as_of: {e}"));
            return CaseOutcome { failures, determination: None };
        }
        (Err(EngineError::Internal(e)), _) => {
            failures.push(format!("internal error: {e}"));
            return CaseOutcome { failures, determination: None };
        }
        (Ok(_), Some(field)) => {
            failures.push(format!("error: expected the request to be rejected naming `{field}`, but it was answered"));
            return CaseOutcome { failures, determination: None };
        }
        (Ok(det), None) => det,
    };
    let taxable_amount: Decimal = det.legs.iter().filter(|l| l.result.is_taxable()).map(|l| l.taxable_amount).sum();
    let tracking = det.tracking_1099.as_ref();
    for (key, want, _) in &case.expect {
        let got: Value = match key.as_str() {
            "total_tax" => crate::engine::render::num(det.total_tax),
            "combined_rate" => crate::engine::render::num(det.applied_combined_rate()),
            "state_rate" => crate::engine::render::num(det.applied_state_rate()),
            "local_rate" => crate::engine::render::num(det.local_rate),
            "applied_rate" => crate::engine::render::num(det.applied_rate()),
            "taxable_amount" => crate::engine::render::num(taxable_amount),
            "marketplace_remitted_tax" => det.marketplace_remitted_tax.map_or(Value::Null, crate::engine::render::num),
            "tax_if_nexus" => det.tax_if_nexus.map_or(Value::Null, crate::engine::render::num),
            "special_tax" => crate::engine::render::num(det.special_total),
            "sales_tax" => det.sales_tax.map_or(Value::Null, crate::engine::render::num),
            "use_tax" => det.use_tax.map_or(Value::Null, crate::engine::render::num),
            "threshold_1099" => tracking.map_or(Value::Null, |t| crate::engine::render::num(t.threshold)),
            "threshold_exceeded" => tracking.map_or(Value::Null, |t| Value::Bool(t.threshold_exceeded)),
            "final_determination" => Value::String(det.final_determination.to_string()),
            "jurisdiction" => Value::String(det.jurisdiction.clone()),
            "confidence_level" => Value::String(det.confidence_level.to_string()),
            "collected_by_marketplace" => Value::Bool(det.collected_by_marketplace),
            "counts_toward_nexus_threshold" => det.counts_toward_nexus_threshold.map_or(Value::Null, Value::Bool),
            "category" => Value::String(det.category.to_string()),
            "work_type" => Value::String(det.work_type.to_string()),
            "classification_basis" => Value::String(det.classification_basis.to_string()),
            "sourcing_rule" => {
                let w = want.as_str().unwrap_or("");
                if w == det.sourcing.as_str() || w == det.sourcing_rule {
                    continue;
                }
                Value::String(format!("{} ({})", det.sourcing.as_str(), det.sourcing_rule))
            }
            "rule" => {
                let fired = det.fired_rules();
                let w = want.as_str().unwrap_or("");
                if fired.contains(&w) {
                    continue;
                }
                Value::String(fired.join(", "))
            }
            "advisories" => {
                let have = det.advisory_codes();
                let missing: Vec<String> = codes(want).into_iter().filter(|c| !have.contains(&c.as_str())).collect();
                if !missing.is_empty() {
                    failures.push(format!("advisories: missing {} (got {})", missing.join(", "), have.join(", ")));
                }
                continue;
            }
            "no_advisories" => {
                let have = det.advisory_codes();
                let present: Vec<String> = codes(want).into_iter().filter(|c| have.contains(&c.as_str())).collect();
                if !present.is_empty() {
                    failures.push(format!("no_advisories: {} present", present.join(", ")));
                }
                continue;
            }
            _ => continue,
        };
        let equal = match (dec(want), dec(&got)) {
            (Some(a), Some(b)) if !matches!(want, Value::String(_)) || key.ends_with("tax") || key.ends_with("rate") => a == b,
            _ => want == &got,
        };
        if !equal {
            failures.push(format!("{key}: expected {want}, got {got}"));
        }
    }
    CaseOutcome { failures, determination: Some(det) }
}
