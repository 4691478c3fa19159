//! Calculate's hand-written hot paths agree with the types that document them.
//!
//! The request's two readers: the schema the document shows (`CalculateRequest`, checked by `api::conform`)
//! and the engine's own parser (`engine::parse_request`, which the scenario cases, the CLI and the rereading of
//! stored requests use too, below the API; the typed read costs about 2 µs more, benches/README.md). Same fields,
//! and for every probe of every field (each enum value and one beside the list, lengths at and past the limit,
//! bounds, types, null) both accept or both refuse.
//!
//! The answer's two writers: the engine's renderer (`engine::render`, text written member by member) and the
//! documented types (`FullCalculation`, `DemoCalculation`, `NexusAlert`). Every sample answer, parsed into its
//! type and written again by it, is the same text byte for byte: the same members in the same order, null where
//! null and absent where absent, numbers with the same digits. The `calculate body` group of `benches/engine.rs`
//! measures the two.

use poem_openapi::registry::{MetaSchema, MetaSchemaRef};
use poem_openapi::types::{ParseFromJSON, ToJSON};
use serde_json::{json, Value};

use crate::api::conform::contract;
use crate::api::schema::calculate::CalculateRequest;
use crate::engine::request::{parse_request, ATTESTATION_FIELDS, MAINTENANCE_FIELDS, TOP_FIELDS};

/// A request both readers accept, that the probes change one field of.
fn base() -> Value {
    json!({"amount": 100, "buyer_state": "TX", "counterparty_id": "cust-1"})
}

/// What the engine refuses that JSON Schema cannot say (a rule across fields), by the engine's field name.
const ACROSS_FIELDS: &[&str] = &[
    // The itemized parts of a maintenance contract must add up to the amount.
    "maintenance_contract.itemized_amounts",
];

fn schema_of(name: &str) -> MetaSchema {
    let mut registry = poem_openapi::registry::Registry::new();
    <CalculateRequest as poem_openapi::types::Type>::register(&mut registry);
    registry.schemas.get(name).cloned().unwrap_or_else(|| panic!("{name} is not registered"))
}

fn names(s: &MetaSchema) -> Vec<&'static str> {
    s.properties.iter().map(|(n, _)| *n).collect()
}

#[test]
fn the_same_fields() {
    fn sorted(mut v: Vec<&'static str>) -> Vec<&'static str> {
        v.sort();
        v
    }
    assert_eq!(sorted(names(&schema_of("CalculateRequest"))), sorted(TOP_FIELDS.to_vec()));
    assert_eq!(sorted(names(&schema_of("CustomSoftwareAttestation"))), sorted(ATTESTATION_FIELDS.to_vec()));
    assert_eq!(sorted(names(&schema_of("MaintenanceContract"))), sorted(MAINTENANCE_FIELDS.to_vec()));
}

/// The schema a property's reference or inline schema resolves to, merged with its own constraints.
fn resolved(prop: &MetaSchemaRef) -> MetaSchema {
    let mut registry = poem_openapi::registry::Registry::new();
    <CalculateRequest as poem_openapi::types::Type>::register(&mut registry);
    let find = |r: &MetaSchemaRef| match r {
        MetaSchemaRef::Inline(s) => (**s).clone(),
        MetaSchemaRef::Reference(n) => registry.schemas.get(n).cloned().unwrap_or(MetaSchema::ANY),
    };
    let mut s = find(prop);
    for part in s.all_of.clone() {
        let p = find(&part);
        let ty = if s.ty.is_empty() { p.ty } else { s.ty };
        let enum_items = if s.enum_items.is_empty() { p.enum_items.clone() } else { s.enum_items.clone() };
        s = MetaSchema { ty, enum_items, ..p.merge(s) };
    }
    s
}

/// Values that probe a field of schema `s`.
fn probes(s: &MetaSchema) -> Vec<Value> {
    let mut out = vec![Value::Null, json!([]), json!(7), json!("x"), json!(true)];
    out.extend(s.enum_items.iter().cloned());
    if !s.enum_items.is_empty() {
        out.push(json!("not_a_value"));
    }
    for n in [s.min_length, s.max_length].into_iter().flatten() {
        for len in [n.saturating_sub(1), n, n + 1] {
            out.push(json!("a".repeat(len)));
            out.push(json!("1".repeat(len)));
        }
    }
    for b in [s.minimum, s.maximum].into_iter().flatten() {
        for d in [-1.0, 0.0, 1.0] {
            out.push(json!(b + d));
        }
        out.push(json!(b.to_string()));
    }
    if s.ty == "number" {
        out.extend([json!(0), json!(-1), json!("100.50"), json!("5e-324"), json!(5e-324), json!("abc"), json!(1e9)]);
    }
    if s.ty == "string" {
        out.extend([json!(""), json!("12345"), json!("tx"), json!("TX"), json!("has space"), json!("ok-id_1.2:3@x")]);
    }
    if s.ty == "object" {
        out.extend([json!({}), json!({"tx": {"hasNexus": true}}), json!({"TX": {"hasNexus": "yes"}}), json!({"ZZ": {"hasNexus": true}})]);
    }
    out
}

/// Whether the schema and the engine agree on `body`; if not, what each says.
fn disagreement(body: &Value, what: &str) -> Option<String> {
    let mut checked = body.clone();
    let schema = contract::<CalculateRequest>().check(&mut checked);
    let engine = parse_request(body).err().unwrap_or_default();
    // Refusals across fields are the engine's alone: the schema accepting such a body is agreement.
    let engine_refuses = engine.iter().any(|e| !ACROSS_FIELDS.contains(&e.field.as_str()));
    let differ = if schema.is_empty() { engine_refuses } else { engine.is_empty() };
    differ.then(|| {
        let schema: Vec<String> = schema.iter().map(ToString::to_string).collect();
        let engine: Vec<String> = engine.iter().map(ToString::to_string).collect();
        format!("{what}: the schema says {schema:?}, the engine {engine:?}")
    })
}

fn agree(body: &Value, what: &str) {
    if let Some(d) = disagreement(body, what) {
        panic!("{d}");
    }
}

#[test]
fn every_probe_of_every_field_is_read_alike() {
    let mut found = Vec::new();
    found.extend(disagreement(&base(), "the base request"));
    let top = schema_of("CalculateRequest");
    for (name, prop) in &top.properties {
        for probe in probes(&resolved(prop)) {
            let mut body = base();
            body[*name] = probe.clone();
            found.extend(disagreement(&body, &format!("{name} = {probe}")));
        }
    }
    for (outer, schema) in [("custom_software_attestation", "CustomSoftwareAttestation"), ("maintenance_contract", "MaintenanceContract")] {
        for (name, prop) in &schema_of(schema).properties {
            for probe in probes(&resolved(prop)) {
                let mut body = base();
                body[outer] = json!({ *name: probe.clone() });
                found.extend(disagreement(&body, &format!("{outer}.{name} = {probe}")));
            }
        }
    }
    let mut body = base();
    body["colour"] = json!("red");
    found.extend(disagreement(&body, "an unknown field"));
    assert!(found.is_empty(), "{} disagreements:\n{}", found.len(), found.join("\n"));
}

#[test]
fn every_sample_body_is_read_alike() {
    // The guide's examples (src/api/agents_examples.json) that are calculate requests.
    let examples: Value = serde_json::from_str(include_str!("agents_examples.json")).unwrap_or_default();
    let mut n = 0;
    for (op, example) in examples.as_object().into_iter().flatten() {
        if let (true, Some(body)) = (op.contains("alculat"), example.get("body")) {
            agree(body, op);
            n += 1;
        }
    }
    assert!(n >= 1, "no calculate example");
    // The scenario cases' requests.
    let mut sources = crate::rules::diag::SourceMap::default();
    let (cases, _) = crate::rules::cases::load_cases(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/rules")), &mut sources);
    assert!(cases.len() > 100, "{} scenario cases", cases.len());
    for c in &cases {
        agree(&c.request, &c.name);
    }
}

/// The answer `text` parsed into its documented type and written again by it (poem-openapi's `ToJSON`, as a
/// `Json<T>` response writes it).
fn rewritten<T: ParseFromJSON + ToJSON>(text: &str) -> Result<String, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let typed = T::parse_from_json(Some(value)).map_err(|e| e.into_message())?;
    Ok(typed.to_json().unwrap_or_default().to_string())
}

/// Whether the type writes `text` back as it is; else where they part.
fn written_alike<T: ParseFromJSON + ToJSON>(text: &str, what: &str) -> Result<(), String> {
    let again = rewritten::<T>(text).map_err(|e| format!("{what}: does not parse as {}: {e}", T::name()))?;
    if again == text {
        return Ok(());
    }
    let at = text.bytes().zip(again.bytes()).take_while(|(a, b)| a == b).count();
    let from = at.saturating_sub(80);
    let near = |s: &str| s.get(from..(at + 80).min(s.len())).unwrap_or_default().to_string();
    Err(format!("{what}: {} writes it otherwise from byte {at}:\n renderer: …{}…\n typed:    …{}…", T::name(), near(text), near(&again)))
}

/// Every state's alert at two levels of sales, with and without nexus, as the engine writes them.
fn sample_alerts(reg: &crate::rules::Registry) -> String {
    use crate::engine::nexus::{alerts, render, MonthRevenue};
    let today = chrono::NaiveDate::from_ymd_opt(2026, 6, 15).unwrap_or_default();
    let mut out = Vec::new();
    for (sales, transactions) in [("5000000", 1000), ("90000.5", 180)] {
        let revenue: Vec<MonthRevenue> = (0..crate::rules::schema::STATES.len())
            .map(|state| MonthRevenue { state, month: 202605, sales: sales.parse().unwrap_or_default(), transactions })
            .collect();
        let nexus = (0..crate::rules::schema::STATES.len()).map(|s| (s, s % 2 == 0)).collect();
        out.extend(alerts(reg, &revenue, &nexus, today).iter().map(render));
    }
    assert!(out.len() > 60, "{} alerts", out.len());
    Value::Array(out).to_string()
}

#[test]
fn every_sample_answer_is_written_as_its_type_writes_it() {
    use crate::api::schema::calculate::{DemoCalculation, FullCalculation, NexusAlert};
    use crate::engine::render::{demo, joined, settled, FullText};
    use crate::engine::{determine, parse_request, Input};

    let rules = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/rules"));
    let (reg, _) = crate::rules::load::load_or_report(rules).expect("the rules load");
    let mut sources = crate::rules::diag::SourceMap::default();
    let (cases, _) = crate::rules::cases::load_cases(rules, &mut sources);
    let examples: Value = serde_json::from_str(include_str!("agents_examples.json")).unwrap_or_default();
    let guide = examples
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(op, _)| op.contains("alculat"))
        .filter_map(|(op, e)| Some((op.clone(), e.get("body")?.clone(), None, None, chrono::NaiveDate::from_ymd_opt(2026, 6, 1)?)));
    let samples = cases.iter().map(|c| (c.name.clone(), c.request.clone(), c.nexus.clone(), c.vendor_ytd, c.as_of)).chain(guide);

    let alerts = sample_alerts(&reg);
    let mut problems = Vec::new();
    problems.extend(written_alike::<Vec<NexusAlert>>(&alerts, "nexus alerts").err());
    let upgrade = [("message", "Paid per call."), ("signup", "/api/v1/auth/signup"), ("free_tier", "100 calls a month")];
    let mut answered = 0;
    for (i, (name, body, nexus, vendor_ytd, as_of)) in samples.enumerate() {
        let Ok(req) = parse_request(&body) else { continue };
        let nexus: Option<std::collections::BTreeMap<usize, bool>> = nexus.map(|n| n.iter().map(|s| (*s, true)).collect());
        let nexus = req.nexus_override.clone().or(nexus);
        let Ok(det) = determine(&reg, &Input { request: &req, nexus: nexus.as_ref(), vendor_ytd, as_of }) else { continue };
        answered += 1;
        // As calculate and ingest answer: the API's members, an upgrade on a call paid per call (every other
        // sample here), nexus alerts on a keyed one (every third).
        let extra = [
            ("transaction_id", "tx_0001"),
            ("timestamp", "2026-06-01T12:00:00.000Z"),
            ("entity_id", "ent_1"),
            ("mode", "live"),
            ("api_version", "v2"),
        ];
        let fixed = FullText::new(&det).into_fixed_with(&extra, (i % 2 == 1).then_some(&upgrade[..]));
        let text = joined([&fixed[0], &fixed[1], &fixed[2]], &settled(&det, det.tracking_1099.as_ref(), &det.advisories));
        let text = crate::ledger::with_alerts(&text, (i % 3 == 0).then_some(alerts.as_str()));
        problems.extend(written_alike::<FullCalculation>(&text, &name).err());
        let text = demo(&det, &[("transaction_id", "demo_0001"), ("timestamp", "2026-06-01T12:00:00.000Z")], Some(&upgrade));
        problems.extend(written_alike::<DemoCalculation>(&text, &format!("{name} (demo)")).err());
    }
    assert!(answered > 600, "{answered} samples answered");
    assert!(
        problems.is_empty(),
        "{} of {answered} answers differ; the first:\n{}",
        problems.len(),
        problems.iter().take(5).cloned().collect::<Vec<_>>().join("\n")
    );
}
