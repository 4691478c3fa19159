//! The calculate request's two readers agree: the schema the document shows (`CalculateRequest`, checked by
//! `api::conform`) and the engine's own parser (`engine::parse_request`, kept on the hot path for speed). Same
//! fields, and for every probe of every field (each enum value and one beside the list, lengths at and past
//! the limit, bounds, types, null) both accept or both refuse.

use poem_openapi::registry::{MetaSchema, MetaSchemaRef};
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
