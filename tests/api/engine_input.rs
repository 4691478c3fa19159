//! Every input error the engine can raise reaches the caller as 400 INVALID_INPUT naming its field, on keyed
//! and demo calculate and on ingest (where the request is rejected whole and nothing is written). The errors
//! are found in the engine's source (`EngineError::input("field", …)` in src/engine/determine.rs), so one
//! added there without a case here fails this test.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{json, Value};

use super::harness::{Backend, TestApp};
use crate::on_both;

const DETERMINE: &str = include_str!("../../src/engine/determine.rs");

/// The fields named by the engine's input errors, read from its source.
fn engine_input_fields() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in DETERMINE.match_indices("EngineError::input(") {
        let rest = DETERMINE[at + "EngineError::input(".len()..].trim_start();
        let field = rest
            .strip_prefix('"')
            .and_then(|r| r.split('"').next())
            .unwrap_or_else(|| panic!("EngineError::input without a literal field at byte {at}"));
        out.insert(field.to_string());
    }
    out
}

/// The fields this file drives through HTTP.
const DRIVEN: &[&str] = &["buyer_state", "seller_zip"];

#[test]
fn every_engine_input_error_is_driven_here() {
    let fields = engine_input_fields();
    assert_eq!(
        fields,
        DRIVEN.iter().map(|s| s.to_string()).collect::<BTreeSet<_>>(),
        "add a case to tests/api/engine_input.rs for each new EngineError::input"
    );
}

/// The intrastate seller calls that are origin-sourced (spec: TX, UT, AZ and TN; OH for license and
/// digital_good), without seller_zip.
fn origin_sourced() -> Vec<(&'static str, Value)> {
    let call = |state: &str, zip: &str, tt: &str| json!({"amount": 1000, "buyer_state": state, "buyer_zip": zip, "seller_state": state, "transaction_type": tt, "counterparty_id": "vendor-1"});
    vec![
        ("TX", call("TX", "77002", "saas")),
        ("UT", call("UT", "84601", "saas")),
        ("AZ", call("AZ", "85281", "saas")),
        ("TN", call("TN", "37203", "saas")),
        ("OH", call("OH", "45202", "license")),
        ("OH", call("OH", "45202", "digital_good")),
    ]
}

fn assert_seller_zip(r: &super::harness::Reply, prefix: &str, state: &str) {
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    let errors = r.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    let expected = format!("{prefix}seller_zip: is required: intrastate sales in {state} are sourced to the seller's location (");
    assert!(errors[0].starts_with(&expected), "{:?} does not start with {expected:?}", errors[0]);
}

async fn origin_sourced_sale_without_seller_zip_is_400(app: TestApp) {
    let a = app.signup("origin@example.com").await;
    app.set_nexus(&a.key, &["TX", "UT", "AZ", "TN", "OH"]).await;
    for (state, body) in origin_sourced() {
        // Keyed, demo, and ingest as one record.
        let r = app.post("/api/v1/calculate", Some(&a.key), &body).await;
        assert_seller_zip(&r, "", state);
        let r = app.post("/api/v1/calculate", None, &body).await;
        assert_seller_zip(&r, "", state);
        let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &body).await;
        assert_seller_zip(&r, "", state);
    }
    // OH services stay destination-sourced: the same call as saas is answered.
    let oh_saas = json!({"amount": 1000, "buyer_state": "OH", "buyer_zip": "45202", "seller_state": "OH", "transaction_type": "saas", "counterparty_id": "vendor-1"});
    assert_eq!(app.post("/api/v1/calculate", Some(&a.key), &oh_saas).await.status, 200);
    assert_eq!(app.ledger_rows(&a.entity_id).await, 1, "only the OH saas call was recorded");

    // A batch with one such record is rejected whole, the record named by its index; nothing is written.
    let tx = json!({"amount": 100, "buyer_state": "TX", "seller_state": "TX", "counterparty_id": "c", "external_tx_id": "b-2"});
    let batch = json!([
        {"amount": 100, "buyer_state": "WA", "counterparty_id": "c", "external_tx_id": "b-1"},
        tx,
        {"amount": 100, "buyer_state": "UT", "seller_state": "UT", "counterparty_id": "c", "external_tx_id": "b-3"},
    ]);
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &batch).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    let errors = r.errors();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].starts_with("records[1].seller_zip: is required: intrastate sales in TX"), "{errors:?}");
    assert!(errors[1].starts_with("records[2].seller_zip: is required: intrastate sales in UT"), "{errors:?}");
    assert_eq!(app.ledger_rows(&a.entity_id).await, 1, "nothing of the batch was written");
    let list = app.get("/api/v1/transactions", Some(&a.key)).await;
    assert_eq!(list.json["count"], json!(1));
    assert_eq!(list.json["transactions"][0]["buyer_state"], json!("OH"));

    // The same batch with the seller's zip is recorded, WA's record included.
    let mut fixed = batch.clone();
    fixed[1]["seller_zip"] = json!("78701");
    fixed[2]["seller_zip"] = json!("84601");
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &fixed).await;
    assert_eq!((r.status, r.json["written"].clone()), (201, json!(3)), "{}", r.text);
    assert_eq!(app.ledger_rows(&a.entity_id).await, 4);

    // A keyed call rejected this way releases its Idempotency-Key: the corrected body under the same key is
    // answered, not refused as a different body.
    let body = origin_sourced()[0].1.clone();
    let text = body.to_string();
    let r = app.request("POST", "/api/v1/calculate", Some(&a.key), &[("Idempotency-Key", "k-origin")], Some(&text)).await;
    assert_seller_zip(&r, "", "TX");
    let mut corrected = body.clone();
    corrected["seller_zip"] = json!("78701");
    let r = app.request("POST", "/api/v1/calculate", Some(&a.key), &[("Idempotency-Key", "k-origin")], Some(&corrected.to_string())).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["sourcing_rule"], json!("origin"));
    assert_eq!(r.json["seller_zip"], json!("78701"));
    assert_eq!(app.ledger_rows(&a.entity_id).await, 5);
}

/// A copy of the repository's rules without Wyoming, loaded as a partial rule set (LEVY_PARTIAL_RULES): the
/// engine has no rules for WY, a state the request schema accepts.
fn rules_without_wyoming() -> Arc<levy::rules::Registry> {
    fn copy(from: &std::path::Path, to: &std::path::Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else if entry.file_name() != "wy.yaml" && entry.file_name() != "wy.csv" {
                std::fs::copy(entry.path(), &target).unwrap();
            }
        }
    }
    let tmp = tempfile::tempdir().unwrap();
    copy(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rules"), tmp.path());
    let (registry, diags, _) = levy::rules::load::load_dir_with(tmp.path(), true);
    assert!(
        diags.iter().any(|d| d.message.contains("jurisdiction `WY` is missing")),
        "{:?}",
        diags.iter().map(|d| &d.message).collect::<Vec<_>>()
    );
    Arc::new(registry.expect("the partial rules load"))
}

async fn state_without_rules_is_400(backend: Backend) {
    let Some(app) = TestApp::start_with_rules(backend, rules_without_wyoming()).await else {
        eprintln!("TEST_DATABASE_URL not set: PostgreSQL run skipped");
        return;
    };
    let a = app.signup("partial@example.com").await;
    let wy = json!({"amount": 100, "buyer_state": "WY", "role": "buyer", "counterparty_id": "c"});
    let expected = vec!["buyer_state: this rule set has no rules for the state".to_string()];
    for key in [Some(a.key.as_str()), None] {
        let r = app.post("/api/v1/calculate", key, &wy).await;
        assert_eq!((r.status, r.code(), r.errors()), (400, "INVALID_INPUT", expected.clone()), "{}", r.text);
    }
    let r = app
        .post("/api/v1/transactions/ingest", Some(&a.key), &json!([{"amount": 100, "buyer_state": "WA", "counterparty_id": "c"}, wy]))
        .await;
    assert_eq!(
        (r.status, r.code(), r.errors()),
        (400, "INVALID_INPUT", vec!["records[1].buyer_state: this rule set has no rules for the state".to_string()]),
        "{}",
        r.text
    );
    assert_eq!(app.ledger_rows(&a.entity_id).await, 0);
    // The states it has rules for are answered.
    let r = app
        .post("/api/v1/calculate", Some(&a.key), &json!({"amount": 100, "buyer_state": "WA", "role": "buyer", "counterparty_id": "c"}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_without_rules_is_400_sqlite() {
    state_without_rules_is_400(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_without_rules_is_400_postgres() {
    state_without_rules_is_400(Backend::Postgres).await;
}

/// The engine's one other refusal is not the caller's: a date before the rules' coverage is the server's date
/// on the API (no request field sets it), so it is a 500, logged, and nothing is written.
async fn server_date_before_the_rules_is_500(app: TestApp) {
    let a = app.signup("early@example.com").await;
    app.clock.set("2023-06-01T12:00:00Z".parse().unwrap());
    let body = json!({"amount": 100, "buyer_state": "WA", "role": "buyer", "counterparty_id": "c"});
    for key in [Some(a.key.as_str()), None] {
        let r = app.post("/api/v1/calculate", key, &body).await;
        assert_eq!((r.status, r.code()), (500, "INTERNAL"), "{}", r.text);
    }
    assert_eq!(app.ledger_rows(&a.entity_id).await, 0);
}

on_both!(origin_sourced_sale_without_seller_zip_is_400, server_date_before_the_rules_is_500);
