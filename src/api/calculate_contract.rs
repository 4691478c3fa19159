//! Calculate's two contracts: the request, read through the type that documents it (`CalculateRequest`,
//! `read_request`) into the engine's request; and the answer, written by the engine's renderer (`engine::render`,
//! text member by member) beside the documented types (`FullCalculation`, `DemoCalculation`, `NexusAlert`). Every
//! sample answer, parsed into its type and written again by it, is the same text byte for byte: the same members in
//! the same order, null where null and absent where absent, numbers with the same digits. The `calculate body` group
//! of `benches/engine.rs` measures the two writers.

use poem_openapi::types::{ParseFromJSON, ToJSON};
use serde_json::{json, Value};

use crate::api::schema::calculate::read_request;

/// The facts of a request as the engine holds them, by name.
fn declared(r: &crate::engine::Request) -> Vec<(&'static str, &'static str)> {
    crate::rules::schema::ALL_FACTS
        .iter()
        .filter(|f| r.facts.declared(**f).is_some())
        .filter_map(|f| Some((f.name(), r.facts.name_of(*f)?)))
        .collect()
}

/// The engine names the nested facts by these lists (a missing fact's field in the what-if); the documented objects
/// hold the same members.
#[test]
fn the_nested_objects_hold_the_fields_the_engine_names() {
    use crate::engine::request::{ATTESTATION_FIELDS, MAINTENANCE_FIELDS};
    let mut registry = poem_openapi::registry::Registry::new();
    <crate::api::schema::calculate::CalculateRequest as poem_openapi::types::Type>::register(&mut registry);
    for (name, listed) in [("CustomSoftwareAttestation", ATTESTATION_FIELDS), ("MaintenanceContract", MAINTENANCE_FIELDS)] {
        let mut documented: Vec<&str> = registry.schemas[name].properties.iter().map(|(n, _)| *n).collect();
        let mut listed = listed.to_vec();
        documented.sort();
        listed.sort();
        assert_eq!(documented, listed, "{name}");
    }
}

#[test]
fn a_body_is_read_into_the_facts_it_declares() {
    let body = json!({
        "role": "buyer", "amount": "1234.5600", "buyer_state": "TX", "seller_state": "TX", "buyer_zip": "78701-1234",
        "seller_zip": "", "transaction_type": "software_maintenance", "work_type": "custom_software", "counterparty_id": "vendor-9",
        "is_b2b": true, "custom_software_attestation": {"written_for_buyer": true, "deliverable": "source_code", "delivery": null},
        "maintenance_contract": {"mandatory": false, "support_kind": "technical", "itemized_amounts": {"updates": "1000", "support": 234.56}},
        "description": "annual support", "exemption_certificate": "  ", "nexus_override": {"ca": {"hasNexus": false}},
        "seller_remitting": true
    });
    let r = read_request(&body).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(r.amount.to_string(), "1234.56");
    assert_eq!((r.buyer_state, r.seller_state), (42, Some(42)));
    assert_eq!((r.buyer_zip.as_deref(), r.seller_zip.as_deref()), (Some("78701-1234"), None));
    assert_eq!(r.counterparty_id, "vendor-9");
    assert_eq!(r.itemized.map(|(u, s)| (u.to_string(), s.to_string())), Some(("1000".into(), "234.56".into())));
    assert_eq!((r.description.as_str(), r.exemption_certificate.as_deref()), ("annual support", None));
    assert_eq!(r.nexus_override, Some([(4, false)].into()));
    assert_eq!((r.seller_remitting, r.vendor_ytd_override, r.has_attestation), (Some(true), None, true));
    let mut facts = declared(&r);
    facts.sort();
    assert_eq!(
        facts,
        vec![
            ("buyer_state", "TX"),
            ("deliverable", "source_code"),
            ("intrastate", "true"),
            ("is_b2b", "true"),
            ("mandatory", "false"),
            ("role", "buyer"),
            ("seller_state", "TX"),
            ("support_kind", "technical"),
            ("transaction_type", "software_maintenance"),
            ("work_type", "custom_software"),
            ("work_type_source", "explicit"),
            ("written_for_buyer", "true"),
        ]
    );
    // Echoed as sent, in the answer's order: the attestation with its null, the amounts as written.
    assert_eq!(
        Value::Object(r.classification_facts).to_string(),
        json!({"is_b2b": true, "custom_software_attestation": body["custom_software_attestation"], "maintenance_contract": body["maintenance_contract"]}).to_string()
    );
}

#[test]
fn a_body_is_refused_with_every_problem_at_once() {
    let body = json!({
        "amount": "5e-324", "buyer_state": "TZ", "counterparty_id": "has space", "colour": "red", "is_b2b": "yes",
        "maintenance_contract": {"itemized_amounts": {"updates": -1, "support": 2}}
    });
    let mut errors: Vec<String> = read_request(&body).err().unwrap_or_default().iter().map(ToString::to_string).collect();
    errors.sort();
    assert_eq!(errors.len(), 6, "{errors:?}");
    for (field, part) in [
        ("amount", "must be greater than 0"),
        ("buyer_state", "`TZ` is not a two-letter US state code or DC"),
        ("colour", "unknown field"),
        ("counterparty_id", "may contain only letters, digits"),
        ("is_b2b", "must be true or false"),
        ("maintenance_contract.itemized_amounts.updates", "must be at least 0"),
    ] {
        assert!(errors.iter().any(|e| e.starts_with(&format!("{field}: ")) && e.contains(part)), "{field}: {part} in {errors:?}");
    }
    // The rule across fields, once the fields themselves are good.
    let body = json!({"amount": 100, "buyer_state": "TX", "counterparty_id": "c",
        "maintenance_contract": {"itemized_amounts": {"updates": "60.5", "support": 40}}});
    let errors = read_request(&body).err().unwrap_or_default();
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].to_string(), "maintenance_contract.itemized_amounts: updates + support must equal amount (60.5 + 40 ≠ 100)");
}

/// The body of calculate's example (the one in the document, which the guide shows and runs).
fn example_body() -> Value {
    let example: Value = serde_json::from_str(crate::api::calculate::CalculateApi::CALCULATE_EXAMPLE).unwrap_or_default();
    example["body"].clone()
}

#[test]
fn every_sample_body_is_read() {
    // The operation's example (the guide's), and the scenario cases that expect no input error.
    let mut bodies: Vec<(String, Value)> = vec![("calculate".into(), example_body())];
    let mut sources = crate::rules::diag::SourceMap::default();
    let (cases, _) = crate::rules::cases::load_cases(std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/rules")), &mut sources);
    assert!(cases.len() > 100, "{} scenario cases", cases.len());
    bodies.extend(cases.iter().filter(|c| !c.expect.iter().any(|(k, _, _)| k == "error")).map(|c| (c.name.clone(), c.request.clone())));
    let refused: Vec<String> = bodies.iter().filter_map(|(name, b)| read_request(b).err().map(|e| format!("{name}: {e:?}"))).collect();
    assert!(refused.is_empty(), "{refused:?}");
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
    use crate::engine::{determine, Input};

    let rules = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/rules"));
    let (reg, _) = crate::rules::load::load_or_report(rules).expect("the rules load");
    let mut sources = crate::rules::diag::SourceMap::default();
    let (cases, _) = crate::rules::cases::load_cases(rules, &mut sources);
    let guide = chrono::NaiveDate::from_ymd_opt(2026, 6, 1).map(|day| ("calculate".to_string(), example_body(), None, None, day));
    let samples = cases.iter().map(|c| (c.name.clone(), c.request.clone(), c.nexus.clone(), c.vendor_ytd, c.as_of)).chain(guide);

    let alerts = sample_alerts(&reg);
    let mut problems = Vec::new();
    problems.extend(written_alike::<Vec<NexusAlert>>(&alerts, "nexus alerts").err());
    let upgrade = [("message", "Paid per call."), ("signup", "/api/v1/auth/signup"), ("free_tier", "100 calls a month")];
    let mut answered = 0;
    for (i, (name, body, nexus, vendor_ytd, as_of)) in samples.enumerate() {
        let Ok(req) = read_request(&body) else { continue };
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
        let fixed = FullText::new(&det).into_fixed(&extra, (i % 2 == 1).then_some(&upgrade[..]));
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
