//! Keyed and demo calculate: values, ledger writes, 1099 totals.

use serde_json::json;

use super::harness::{num, TestApp};
use crate::on_both;

async fn keyed_calculate_records_and_tracks(app: TestApp) {
    let a = app.signup("seller@example.com").await;

    // No nexus configured yet: 0 due, the hypothetical in tax_if_nexus, still recorded.
    // Austin 78701, SaaS read as data processing: 8.25% on 80% of 100.50 = 80.40 × 0.0825 = 6.633 → 6.63.
    let body = json!({"amount": "100.50", "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "vendor-1"});
    let r = app.post("/api/v1/calculate", Some(&a.key), &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(num(&r.json["total_tax"]), 0.0);
    assert_eq!(r.json["nexus_configured"], json!(false));
    assert_eq!(num(&r.json["tax_if_nexus"]["total_tax"]), 6.63);
    assert_eq!(r.json["audit_trail"]["final_determination"], json!("no_nexus"));

    app.set_nexus(&a.key, &["TX"]).await;
    app.clock.advance_ms(1000);
    let r = app.post("/api/v1/calculate", Some(&a.key), &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let v = &r.json;
    assert_eq!(num(&v["amount"]), 100.5, "decimal string normalised to a number");
    assert_eq!(num(&v["total_tax"]), 6.63);
    assert_eq!(num(&v["combined_rate"]), 0.0825);
    assert_eq!(v["jurisdiction"], json!("Austin, TX"));
    assert_eq!(v["mode"], json!("live"));
    assert_eq!(v["api_version"], json!("v2"));
    assert_eq!(v["entity_id"], json!(a.entity_id));
    assert_eq!(v["engine_version"], json!("1.5"));
    assert!(v["transaction_id"].as_str().unwrap().starts_with("tx_"));
    assert_eq!(v["timestamp"], json!("2026-11-21T10:00:01.000Z"));
    // 1099: the counterparty's payments this tax year, this one included: 100.50 + 100.50 = 201.00 of 2000.
    assert_eq!(num(&v["tracking_1099"]["vendor_ytd_total"]), 201.0);
    assert_eq!(num(&v["tracking_1099"]["threshold"]), 2000.0);
    assert_eq!(v["tracking_1099"]["threshold_exceeded"], json!(false));
    let advised =
        |v: &serde_json::Value| v["advisories"].as_array().unwrap().iter().any(|a| a["code"] == "INFORMATION_RETURN_THRESHOLD_REACHED");
    assert!(!advised(v));
    assert_eq!(r.header("x-ratelimit-limit").as_deref(), Some("120"));
    assert_eq!(r.header("x-ratelimit-remaining").as_deref(), Some("118"));

    // Crossing 2000: 201.00 + 1799.00 = 2000.00 → reached exactly, form required.
    let r = app
        .post(
            "/api/v1/calculate",
            Some(&a.key),
            &json!({"amount": 1799, "buyer_state": "TX", "role": "buyer", "counterparty_id": "vendor-1"}),
        )
        .await;
    assert_eq!(num(&r.json["tracking_1099"]["vendor_ytd_total"]), 2000.0);
    assert_eq!(r.json["tracking_1099"]["threshold_exceeded"], json!(true));
    assert!(r.json["tracking_1099"]["form_required"].is_string());
    assert!(advised(&r.json), "{}", r.text);
    // A different counterparty starts from zero.
    let r = app.post("/api/v1/calculate", Some(&a.key), &json!({"amount": 5, "buyer_state": "TX", "counterparty_id": "vendor-2"})).await;
    assert_eq!(num(&r.json["tracking_1099"]["vendor_ytd_total"]), 5.0);

    // Demo-only fields are refused on live calls, and nothing is written.
    let r = app.post("/api/v1/calculate", Some(&a.key), &json!({"amount": 5, "buyer_state": "TX", "counterparty_id": "v", "nexus_override": {"TX": {"hasNexus": true}}, "vendor_ytd_override": 10})).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.errors().len(), 2);
    assert_eq!(app.ledger_rows(&a.entity_id).await, 4);

    // The history, newest first, filtered.
    let r = app.get("/api/v1/transactions", Some(&a.key)).await;
    assert_eq!(r.json["count"], json!(4));
    let list = r.json["transactions"].as_array().unwrap();
    assert_eq!(list[0]["counterparty_id"], json!("vendor-2"));
    assert_eq!(num(&list[3]["calculation"]["total_tax"]), 0.0);
    let r = app.get("/api/v1/transactions?role=buyer", Some(&a.key)).await;
    assert_eq!(r.json["count"], json!(1));
    let r = app.get("/api/v1/transactions?state=tx&limit=2", Some(&a.key)).await;
    assert_eq!(r.json["count"], json!(2));
    let r = app.get("/api/v1/transactions?since=2026-11-21T10:00:01Z", Some(&a.key)).await;
    assert_eq!(r.json["count"], json!(3));
    let r = app.get("/api/v1/transactions?since=2026-11-22", Some(&a.key)).await;
    assert_eq!(r.json["count"], json!(0));
}

async fn demo_calculate_answers_without_writing(app: TestApp) {
    // With nexus declared inline: 80% of 100 at 8.25% = 6.60.
    let r = app.post("/api/v1/calculate", None, &json!({"amount": 100, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "c", "nexus_override": {"TX": {"hasNexus": true}}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["mode"], json!("demo"));
    assert_eq!(num(&r.json["total_tax"]), 6.6);
    assert!(r.json.get("audit_trail").is_none() && r.json.get("sales_tax").is_none() && r.json.get("advisories").is_none());
    assert_eq!(r.json["upgrade"]["signup"], json!("/api/v1/auth/signup"));
    // Without: 0 with the hypothetical.
    let r = app
        .post("/api/v1/calculate", None, &json!({"amount": 100, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "c"}))
        .await;
    assert_eq!(num(&r.json["total_tax"]), 0.0);
    assert_eq!(num(&r.json["tax_if_nexus"]["total_tax"]), 6.6);
    // A ZIP+4 is a zip: 78701-1234 is answered as Austin (no boundary row of Texas has ZIP+4 ranges) and echoed.
    let body = json!({"amount": 100, "buyer_state": "TX", "buyer_zip": "78701-1234", "counterparty_id": "c", "nexus_override": {"TX": {"hasNexus": true}}});
    let r = app.post("/api/v1/calculate", None, &body).await;
    assert_eq!((r.status, num(&r.json["total_tax"]), r.json["buyer_zip"].clone()), (200, 6.6, json!("78701-1234")), "{}", r.text);
    let r = app
        .post("/api/v1/calculate", None, &json!({"amount": 100, "buyer_state": "TX", "buyer_zip": "78701-12", "counterparty_id": "c"}))
        .await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    assert!(r.errors()[0].starts_with("buyer_zip"), "{:?}", r.errors());
    use sea_orm::{EntityTrait, PaginatorTrait};
    assert_eq!(levy::store::entity::transaction::Entity::find().count(&app.state.store.db).await.unwrap(), 0);
}

on_both!(keyed_calculate_records_and_tracks, demo_calculate_answers_without_writing);
