//! No account reads or changes another's data, on any keyed route.

use serde_json::json;

use super::harness::{num, TestApp};
use crate::on_both;

async fn accounts_are_walled_off(app: TestApp) {
    let a = app.signup("tenant-a@example.com").await;
    let b = app.signup("tenant-b@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    let r = app
        .request(
            "POST",
            "/api/v1/calculate",
            Some(&a.key),
            &[("Idempotency-Key", "shared-key")],
            Some(r#"{"amount": 100, "buyer_state": "TX", "counterparty_id": "c"}"#),
        )
        .await;
    assert_eq!(r.status, 200);
    let a_tx = r.json["transaction_id"].as_str().unwrap().to_string();
    app.post(
        "/api/v1/transactions/ingest",
        Some(&a.key),
        &json!({"amount": 5, "buyer_state": "TX", "counterparty_id": "c", "external_tx_id": "ext-1"}),
    )
    .await;

    // Transactions: B sees none of A's.
    let r = app.get("/api/v1/transactions", Some(&b.key)).await;
    assert_eq!(r.json["count"], json!(0));
    assert!(!r.text.contains(&a_tx));
    // B can neither refund nor void A's transaction (404, as for one that does not exist), and B's liability report
    // holds none of A's sales.
    for action in ["refund", "void"] {
        let r = app.post(&format!("/api/v1/transactions/{a_tx}/{action}"), Some(&b.key), &json!({})).await;
        assert_eq!((r.status, r.json["code"].as_str()), (404, Some("RESOURCE_NOT_FOUND")), "{action}: {}", r.text);
    }
    let r = app.get("/api/v1/reports/liability?from=2026-01-01&to=2026-12-31", Some(&b.key)).await;
    assert_eq!(r.json["returns"], json!([]), "{}", r.text);
    let r = app.get("/api/v1/reports/liability?from=2026-01-01&to=2026-12-31", Some(&a.key)).await;
    assert_eq!(r.json["returns"].as_array().map(Vec::len), Some(1), "{}", r.text);
    // Ingest: B's external id space is its own; A's record is not returned to B.
    let r = app
        .post(
            "/api/v1/transactions/ingest",
            Some(&b.key),
            &json!({"amount": 5, "buyer_state": "TX", "counterparty_id": "c", "external_tx_id": "ext-1"}),
        )
        .await;
    assert_eq!(r.status, 201);
    assert_eq!(r.json["records"][0]["duplicate"], json!(false));
    // Nexus: B's stays unconfigured; B's calls do not use A's nexus.
    let r = app.get("/api/v1/nexus", Some(&b.key)).await;
    assert_eq!(r.json["nexus_configured"], json!(false));
    let r = app.post("/api/v1/calculate", Some(&b.key), &json!({"amount": 100, "buyer_state": "TX", "counterparty_id": "c"})).await;
    assert_eq!(num(&r.json["total_tax"]), 0.0);
    // Alerts and 1099 totals are per account.
    let r = app.post("/api/v1/calculate", Some(&b.key), &json!({"amount": 1, "buyer_state": "TX", "counterparty_id": "c"})).await;
    assert_eq!(num(&r.json["tracking_1099"]["vendor_ytd_total"]), 106.0, "B's own 5 + 100 + 1");
    // Keys: B cannot list or revoke A's.
    let r = app.get("/api/v1/keys", Some(&b.key)).await;
    assert!(!r.text.contains(&a.prefix));
    let r = app.request("DELETE", "/api/v1/keys", Some(&b.key), &[], Some(&json!({"prefix": a.prefix}).to_string())).await;
    assert_eq!((r.status, r.code()), (403, "FORBIDDEN"));
    assert_eq!(app.get("/api/v1/keys", Some(&a.key)).await.status, 200, "A's key still works");
    // Idempotency keys are per account (covered in idempotency.rs); A's ledger holds exactly its own two rows.
    assert_eq!(app.ledger_rows(&a.entity_id).await, 2);
    assert_eq!(app.ledger_rows(&b.entity_id).await, 3);
}

on_both!(accounts_are_walled_off);
