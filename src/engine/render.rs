//! Renders a determination as the contract's JSON bodies: the full calculate response (without
//! the fields the API adds: transaction_id, timestamp, entity_id, mode, api_version) and the demo body.

use rust_decimal::Decimal;
use serde_json::{json, Map, Value};

use super::determine::{pct, Determination};
use crate::rules::registry::Citation;

pub const DISCLAIMER: &str = "Estimates for information only, computed from cited public law as of the date shown; not legal or tax advice. Confirm with a qualified professional before filing.";

/// A JSON number holding the decimal exactly (money keeps its cents: 66.00).
pub fn num(d: Decimal) -> Value {
    serde_json::from_str(&d.to_string()).unwrap_or(Value::Null)
}

/// Money as a JSON number with exactly two decimals.
pub fn money(d: Decimal) -> Value {
    let mut c = super::money::cents(d);
    c.rescale(2);
    num(c)
}

fn rate(d: Decimal) -> Value {
    num(d.normalize())
}

fn cite(c: &Citation) -> Value {
    match &c.url {
        Some(u) => json!(format!("{} <{}>", c.cite, u)),
        None => json!(c.cite),
    }
}

fn tax_object(det: &Determination, amount: Decimal, kind: &str) -> Value {
    let first = det.legs.first();
    let mut o = Map::new();
    o.insert("jurisdiction".into(), json!(det.jurisdiction));
    o.insert("state".into(), json!(det.buyer_state));
    o.insert("rate".into(), rate(first.map_or(Decimal::ZERO, |l| l.rate)));
    o.insert("amount".into(), money(amount));
    o.insert("type".into(), json!(kind));
    if let Some(r) = first.and_then(|l| l.reason.clone()) {
        o.insert("reason".into(), json!(r));
        o.insert("exemption".into(), json!(first.map(|l| l.result.clone())));
    }
    if kind == "use_tax" {
        o.insert("state_rate".into(), rate(det.applied_state_rate()));
        o.insert("local_rate".into(), rate(det.local_rate));
        o.insert("combined_rate".into(), rate(det.applied_combined_rate()));
        o.insert("gross_amount".into(), money(det.amount));
        o.insert("taxable_amount".into(), money(det.legs.iter().map(|l| if l.result == "taxable" { l.taxable_amount } else { Decimal::ZERO }).sum()));
        o.insert("taxable_percentage".into(), num((first.map_or(Decimal::ONE, |l| l.base_share) * Decimal::from(100)).normalize()));
        if det.seller_remitting == Some(true) {
            o.insert("note".into(), json!("the seller collected and remitted the tax; no use tax is due"));
        }
    }
    if det.legs.len() > 1 {
        o.insert("legs".into(), Value::Array(det.legs.iter().map(|l| json!({
            "leg": l.name, "amount": money(l.amount), "rate": rate(l.rate), "tax": money(l.tax), "rule": l.rule_id, "result": l.result,
        })).collect()));
    }
    if det.role == "seller" && !det.has_nexus && !det.collected_by_marketplace {
        o.insert("reason".into(), json!(format!("no nexus configured in {}", det.buyer_state)));
    }
    Value::Object(o)
}

/// The full response body, as the engine knows it.
pub fn full(det: &Determination) -> Value {
    let mut o = Map::new();
    o.insert("success".into(), json!(true));
    o.insert("engine_version".into(), json!(det.engine_version));
    o.insert("role".into(), json!(det.role));
    o.insert("amount".into(), num(det.amount));
    o.insert("buyer_state".into(), json!(det.buyer_state));
    o.insert("buyer_zip".into(), json!(det.buyer_zip));
    o.insert("seller_state".into(), json!(det.seller_state.unwrap_or("")));
    o.insert("seller_zip".into(), json!(det.seller_zip));
    o.insert("sourcing_rule".into(), json!(det.sourcing.as_str()));
    o.insert("marketplace_role".into(), json!(det.marketplace_role));
    o.insert("local_rate".into(), rate(det.local_rate));
    o.insert("combined_rate".into(), rate(det.applied_combined_rate()));
    o.insert("jurisdiction".into(), json!(det.jurisdiction));
    o.insert("transaction_type".into(), json!(det.transaction_type));
    o.insert("transaction_category".into(), json!(det.category));
    o.insert("work_type".into(), json!(det.work_type));
    o.insert("work_type_label".into(), json!(det.work_type_label));
    o.insert("classification_basis".into(), json!(det.classification_basis));
    o.insert("is_b2b".into(), json!(det.is_b2b));
    o.insert("use_context".into(), json!(det.use_context));
    o.insert("counterparty_id".into(), json!(det.counterparty_id));
    o.insert("digital_content_type".into(), json!(det.digital_content_type));
    o.insert("classification_facts".into(), Value::Object(det.classification_facts.clone()));
    o.insert("sales_tax".into(), det.sales_tax.map_or(Value::Null, |a| tax_object(det, a, "sales_tax")));
    o.insert("use_tax".into(), det.use_tax.map_or(Value::Null, |a| tax_object(det, a, "use_tax")));
    o.insert(
        "seller_remitting".into(),
        match det.seller_remitting {
            Some(true) => json!({"status": "collected", "source": "self_reported"}),
            Some(false) => json!({"status": "not_collected", "source": "self_reported"}),
            None => Value::Null,
        },
    );
    o.insert(
        "tracking_1099".into(),
        det.tracking_1099.as_ref().map_or(Value::Null, |t| json!({
            "counterparty_id": t.counterparty_id,
            "payment_this_transaction": money(t.payment_this_transaction),
            "vendor_ytd_total": money(t.vendor_ytd_total),
            "threshold": money(t.threshold),
            "threshold_exceeded": t.threshold_exceeded,
            "form_required": t.form_required,
            "tax_year": t.tax_year,
        })),
    );
    o.insert("confidence".into(), json!({"score": det.confidence_score, "level": det.confidence_level, "factors": det.confidence_factors}));
    o.insert(
        "advisories".into(),
        Value::Array(det.advisories.iter().map(|a| {
            let mut m = json!({"type": a.kind, "advisory": a.message, "code": a.code, "flagged": a.flagged});
            if let (Some(s), Some(obj)) = (a.state, m.as_object_mut()) {
                obj.insert("state".into(), json!(s));
            }
            m
        }).collect()),
    );
    o.insert(
        "routing".into(),
        Value::Array(det.routing.iter().map(|r| json!({"type": r.kind, "amount": money(r.amount), "destination": r.destination, "jurisdiction": r.jurisdiction})).collect()),
    );
    o.insert("total_tax".into(), money(det.total_tax));
    o.insert("nexus_configured".into(), json!(det.nexus_configured));
    o.insert("classification_note".into(), json!(classification_note(det)));
    o.insert("disclaimer".into(), json!(DISCLAIMER));
    o.insert("collected_by_marketplace".into(), json!(det.collected_by_marketplace));
    if let Some(m) = det.marketplace_remitted_tax {
        o.insert("marketplace_remitted_tax".into(), money(m));
    }
    if let Some(c) = det.counts_toward_nexus_threshold {
        o.insert("counts_toward_nexus_threshold".into(), json!(c));
    }
    if let Some(cert) = &det.exemption_certificate {
        o.insert("exemption".into(), json!({"type": "exemption_certificate", "certificate": cert}));
    } else if let Some(l) = det.legs.iter().find(|l| l.result != "taxable") {
        if det.legs.iter().all(|l| l.result != "taxable") {
            o.insert("exemption".into(), json!({"type": l.result, "reason": l.reason, "citation": l.citation.cite}));
        }
    }
    if let Some(t) = det.tax_if_nexus {
        o.insert("tax_if_nexus".into(), json!({
            "total_tax": money(t),
            "combined_rate": rate(det.applied_combined_rate()),
            "basis": format!("what {} would be due in {} with nexus ({})", money(t), det.buyer_state, det.legs.first().map(|l| l.rule_id.as_str()).unwrap_or("")),
        }));
    }
    o.insert("b2b_detection".into(), json!({
        "is_b2b": det.is_b2b,
        "method": if det.classification_facts.contains_key("is_b2b") { "declared" } else { "default" },
        "counterparty_principal": Value::Null,
        "note": if det.classification_facts.contains_key("is_b2b") { "declared by the caller" } else { "not declared; treated as not business-to-business" },
    }));
    o.insert("audit_trail".into(), audit_trail(det));
    Value::Object(o)
}

fn classification_note(det: &Determination) -> String {
    let mut s = format!("{} ({}): {}", det.work_type_label, det.classification_basis, det.category_label);
    if let Some(r) = &det.reclassified_by {
        s += &format!("; reclassified by {r}");
    }
    if let Some(note) = &det.outside_sales_tax {
        s += &format!("; outside sales tax: {note}");
    }
    s
}

fn audit_trail(det: &Determination) -> Value {
    let mut chain = vec![json!({
        "level": "state", "name": det.buyer_state_name, "rate": rate(det.state_rate),
        "applied": det.legs.iter().any(|l| l.result == "taxable"), "source": cite(&det.state_rate_citation),
    })];
    let local_applied = det.legs.iter().any(|l| l.result == "taxable" && !l.local_rate.is_zero());
    for l in &det.layers {
        chain.push(json!({"level": "local", "layer": l.level, "name": l.name, "rate": rate(l.rate), "applied": local_applied, "source": cite(&l.citation)}));
    }
    for s in &det.special {
        chain.push(json!({"level": "special_rule", "name": s.name, "rate": rate(s.rate), "applied": !s.tax.is_zero(), "source": cite(&s.citation)}));
    }
    let first = det.legs.first();
    let mut taxability = json!({
        "source": first.map(|l| cite(&l.citation)).unwrap_or(Value::Null),
        "state": det.buyer_state,
        "category": det.category,
        "taxable": det.legs.iter().any(|l| l.result == "taxable"),
        "note": first.map(|l| match &l.reason { Some(r) => format!("{}: {r}", l.rule_id), None => format!("{}: taxable at {} on {}% of the amount", l.rule_id, pct(l.rate), (l.base_share * Decimal::from(100)).normalize()) }),
        "digital_content_type_override": det.digital_content_type_applied.then_some(det.digital_content_type).flatten(),
        "digital_content_type_rule": det.digital_content_type_rule,
    });
    if let (Some(l), Some(t)) = (first, taxability.as_object_mut()) {
        if !l.readings.is_empty() {
            t.insert("ambiguous_readings".into(), Value::Array(l.readings.iter().map(|(d, tax, c)| json!({"reading": d, "tax": money(*tax), "source": cite(c)})).collect()));
        }
    }
    let mut exemptions = vec![];
    for step in det.trace.iter().filter(|s| s.stage == "taxability" || s.stage == "exemption" || s.stage == "nexus" || s.stage == "marketplace") {
        exemptions.push(json!({"check": step.rule.clone().unwrap_or_else(|| step.stage.to_string()), "result": step.result, "detail": step.stage}));
    }
    let mut refs = vec![];
    for l in &det.legs {
        refs.push(json!({"id": l.rule_id, "settlement": cite(&l.citation), "note": l.note}));
    }
    refs.push(json!({"id": det.sourcing_rule, "settlement": cite(&det.sourcing_citation), "note": format!("{} sourcing", det.sourcing.as_str())}));
    for s in &det.special {
        refs.push(json!({"id": s.id, "settlement": cite(&s.citation), "note": s.name}));
    }
    if let Some(r) = &det.reclassified_by {
        refs.push(json!({"id": r, "settlement": "levy classification.yaml", "note": "reclassification"}));
    }
    json!({
        "engine_version": det.engine_version,
        "rules_version": det.rules_version,
        "as_of": det.as_of.to_string(),
        "jurisdiction_chain": chain,
        "combined_rate": rate(det.applied_combined_rate()),
        "classification": {
            "input_transaction_type": det.transaction_type,
            "input_work_type": det.input_work_type,
            "resolved_work_type": det.work_type,
            "work_type_source": det.work_type_source,
            "economic_category": det.category,
            "label": det.work_type_label,
            "digital_content_type_applied": det.digital_content_type_applied,
        },
        "taxability": taxability,
        "exemptions_evaluated": exemptions,
        "final_determination": det.final_determination,
        "policy_references": refs,
    })
}

/// The demo body (keyless calls): totals without the breakdown.
pub fn demo(det: &Determination) -> Value {
    let mut o = json!({
        "success": true,
        "engine_version": det.engine_version,
        "mode": "demo",
        "role": det.role,
        "amount": num(det.amount),
        "buyer_state": det.buyer_state,
        "buyer_zip": det.buyer_zip,
        "transaction_type": det.transaction_type,
        "work_type": det.work_type,
        "classification_basis": det.classification_basis,
        "is_b2b": det.is_b2b,
        "digital_content_type": det.digital_content_type,
        "classification_facts": det.classification_facts,
        "total_tax": money(det.total_tax),
        "combined_rate": rate(det.applied_combined_rate()),
        "applied_rate": rate(det.applied_rate()),
        "nexus_configured_for_state": det.has_nexus,
        "confidence": {"score": det.confidence_score, "level": det.confidence_level},
        "disclaimer": DISCLAIMER,
    });
    if let Some(obj) = o.as_object_mut() {
        if let Some(t) = det.tax_if_nexus {
            obj.insert("tax_if_nexus".into(), json!({"total_tax": money(t), "combined_rate": rate(det.applied_combined_rate()), "basis": "no nexus configured for this state in demo mode"}));
        } else if det.total_tax.is_zero() {
            if let Some(l) = det.legs.first() {
                obj.insert("exemption".into(), json!({"type": l.result, "reason": l.reason}));
            }
        }
    }
    o
}
