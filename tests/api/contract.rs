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
    // The interface version of the spec's Versioning section, not the crate's.
    assert_eq!(doc["info"]["version"], json!("1.5.0"));
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
            // Any operation refuses a query parameter it does not list (`api::query`).
            assert!(statuses.iter().any(|s| s.as_str() == "400"), "{method} {path}: 400 not documented");
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

/// Every gains response is described by the document: each key documented, each required key present.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gains_responses_conform() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let a = app.signup("gains-contract@example.com").await;
    let doc: Value = serde_json::from_str(&levy::api::openapi_json(app.state.clone())).unwrap();
    let buy = app.post("/api/v1/trades", Some(&a.key), &json!({"asset_symbol": "AAA", "trade_type": "buy", "quantity": 10, "price_per_unit": 50, "trade_date": "2026-01-05T00:00:00Z", "asset_class": "stock"})).await;
    assert_eq!(buy.status, 201, "{}", buy.text);
    // A second buy within 30 days before the loss sale: it becomes the replacement.
    let again = app.post("/api/v1/trades", Some(&a.key), &json!({"asset_symbol": "AAA", "trade_type": "buy", "quantity": 2, "price_per_unit": 45, "trade_date": "2026-01-20T00:00:00Z"})).await;
    assert_eq!(again.status, 201, "{}", again.text);
    let sell = app.post("/api/v1/trades", Some(&a.key), &json!({"asset_symbol": "AAA", "trade_type": "sell", "quantity": 4, "price_per_unit": 40, "trade_date": "2026-02-01T00:00:00Z", "resident_state": "NY", "estimated_annual_income": 90000, "filing_status": "mfj"})).await;
    assert_eq!(sell.status, 201, "{}", sell.text);
    conforms(&doc, &buy.json, "TradeResult");
    conforms(&doc, &buy.json["lot"], "LotView");
    conforms(&doc, &buy.json["wash_sale"], "WashSaleInfo");
    conforms(&doc, &sell.json, "TradeResult");
    conforms(&doc, &sell.json["lots_consumed"][0], "ConsumedLot");
    conforms(&doc, &sell.json["lots_consumed"][0]["wash_sale"], "DispositionWash");
    conforms(&doc, &sell.json["lots_consumed"][0]["wash_sale"]["replacements"][0], "Replacement");
    conforms(&doc, &sell.json["totals"], "SellTotals");
    conforms(&doc, &sell.json["estimates"]["federal"], "FederalEstimate");
    conforms(&doc, &sell.json["estimates"]["state"], "StateEstimate");
    let list = app.get("/api/v1/trades", Some(&a.key)).await;
    conforms(&doc, &list.json, "TradeList");
    conforms(&doc, &list.json["trades"][0], "TradeRecord");
    conforms(&doc, &list.json["summary"], "TradeSummary");
    conforms(&doc, &list.json["summary"]["assets"][0], "AssetSummary");
    let export = app.get("/api/v1/export/1099-da?year=2026", Some(&a.key)).await;
    conforms(&doc, &export.json, "Export1099Da");
    conforms(&doc, &export.json["entries"][0], "Form1099DaEntry");
    conforms(&doc, &export.json["totals"]["all"], "Form1099DaTotal");
    let rates = app.get("/api/v1/rates/capital-gains?state=NY&explain=true", None).await;
    conforms(&doc, &rates.json, "FullGainsRates");
    conforms(&doc, &rates.json["states"]["NY"], "StateGainsRate");
}
