//! The contract as reviewers see it: snapshots of a full and a demo response and of the OpenAPI
//! document, and a check that live responses use only fields the document describes.

use std::path::Path;

use serde_json::{json, Value};

use super::harness::{Backend, TestApp};

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots"));
    s.set_prepend_module_to_snapshot(false);
    s
}

/// Pretty JSON as the wire shows numbers (exact decimals such as 0.00).
fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

fn redact(mut v: Value) -> Value {
    for k in ["transaction_id", "timestamp", "entity_id"] {
        if v.get(k).is_some() {
            v[k] = json!(format!("[{k}]"));
        }
    }
    v
}

fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
    &doc["components"]["schemas"][name]
}

/// Every key of `body` is a documented property of `schema_name`, and every required property is present.
fn conforms(doc: &Value, body: &Value, schema_name: &str) {
    let s = schema(doc, schema_name);
    let props = s["properties"].as_object().unwrap_or_else(|| panic!("{schema_name} has no properties"));
    for k in body.as_object().unwrap().keys() {
        assert!(props.contains_key(k), "{schema_name}: field `{k}` is not in the OpenAPI document");
    }
    for r in s["required"].as_array().into_iter().flatten() {
        assert!(body.get(r.as_str().unwrap()).is_some(), "{schema_name}: required `{r}` missing");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_and_document_snapshots() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let a = app.signup("contract@example.com").await;
    app.set_nexus(&a.key, &["IL"]).await;
    // Chicago 60601: SaaS in Illinois, plus the Chicago lease tax that does not depend on nexus.
    let full = app.post("/api/v1/calculate", Some(&a.key), &json!({"amount": 1000, "buyer_state": "IL", "buyer_zip": "60601", "counterparty_id": "acme-corp", "role": "buyer", "is_b2b": true})).await;
    assert_eq!(full.status, 200, "{}", full.text);
    let demo = app.post("/api/v1/calculate", None, &json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "acme-corp"})).await;
    assert_eq!(demo.status, 200, "{}", demo.text);
    let doc: Value = serde_json::from_str(&levy::api::openapi_json(app.state.clone())).unwrap();
    conforms(&doc, &full.json, "FullCalculation");
    conforms(&doc, &demo.json, "DemoCalculation");
    conforms(&doc, &full.json["audit_trail"], "AuditTrail");
    settings().bind(|| {
        insta::assert_snapshot!("api_calculate_full", pretty(&redact(full.json.clone())));
        insta::assert_snapshot!("api_calculate_demo", pretty(&redact(demo.json.clone())));
        insta::assert_snapshot!("api_openapi", pretty(&doc));
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn document_is_served_and_complete() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let r = app.get("/api/v1/openapi.json", None).await;
    assert_eq!(r.status, 200);
    let doc = r.json;
    // The frozen error enum has exactly the spec's 16 codes.
    let codes = schema(&doc, "ErrorCode")["enum"].as_array().unwrap().clone();
    assert_eq!(codes.len(), 16);
    for c in ["INVALID_INPUT", "INVALID_JSON_BODY", "UNAUTHORIZED", "PAYMENT_REQUIRED", "FORBIDDEN", "TIER_LIMIT_REACHED", "RESOURCE_NOT_FOUND", "METHOD_NOT_ALLOWED", "RESOURCE_CONFLICT", "IDEMPOTENCY_KEY_CONFLICT", "IDEMPOTENCY_KEY_INVALID", "NEXUS_NOT_REACHED", "RATE_LIMITED", "WEBHOOK_SIGNATURE_INVALID", "INTERNAL", "DB_UNAVAILABLE"] {
        assert!(codes.contains(&json!(c)), "{c}");
    }
    // Every operation is documented with a summary and its error statuses.
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{method} {path} has no summary");
            let statuses: Vec<&String> = op["responses"].as_object().unwrap().keys().collect();
            assert!(statuses.iter().any(|s| s.starts_with('2')), "{method} {path}: no success status");
            assert!(statuses.iter().any(|s| s.as_str() == "500"), "{method} {path}: 500 not documented");
        }
    }
    let calc = &doc["paths"]["/api/v1/calculate"]["post"];
    for s in ["200", "400", "401", "402", "409", "429", "503"] {
        assert!(calc["responses"].get(s).is_some(), "calculate lacks {s}");
    }
    assert!(calc["parameters"].as_array().unwrap().iter().any(|p| p["name"] == json!("Idempotency-Key")));
    let r = app.get("/docs/", None).await;
    assert_eq!(r.status, 200);
    assert!(r.text.contains("swagger"), "the docs page renders the document");
}
