//! The optimization report: conservative answers quantified per missing fact, 1099 vendors near the threshold,
//! sales without nexus, and the plan's monthly allowance (429 TIER_LIMIT_REACHED past it).

use serde_json::json;

use super::harness::{num, TestApp};
use crate::on_both;

async fn report_quantifies_missing_facts(app: TestApp) {
    let a = app.signup("report@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    // A TX payment-processing fee without payment_provider_type: rules/states/tx.yaml answers it as data
    // processing, taxable on 80% of the base (tx.taxability.payment-processing, Tex. Tax Code §151.0035(a),
    // §151.351): 1000 × 80% × 6.25% = 50.00. Declared as settled through a bank, a licensed money transmitter, a
    // card network or a processor routing to them, it is excluded (tx.taxability.payment-settlement-excluded,
    // §151.0035(b)(3)): 0.00, 50.00 less. Declared other: 50.00 still.
    let r = app
        .post(
            "/api/v1/calculate",
            Some(&a.key),
            &json!({"amount": 1000, "buyer_state": "TX", "transaction_type": "payment_processing_fee", "counterparty_id": "acme"}),
        )
        .await;
    assert_eq!(num(&r.json["total_tax"]), 50.0, "{}", r.text);
    // The same sale with the fact declared is not conservative: not in the report.
    app.post(
        "/api/v1/calculate",
        Some(&a.key),
        &json!({"amount": 1000, "buyer_state": "TX", "transaction_type": "payment_processing_fee", "payment_provider_type": "other", "counterparty_id": "acme"}),
    )
    .await;
    // No nexus in WA: 0 collected, tax_if_nexus 1000 × 6.5% = 65.00 (RCW 82.08.020).
    let r = app.post("/api/v1/calculate", Some(&a.key), &json!({"amount": 1000, "buyer_state": "WA", "counterparty_id": "wa-buyer"})).await;
    assert_eq!(num(&r.json["tax_if_nexus"]["total_tax"]), 65.0, "{}", r.text);
    // A vendor paid 1,700 in 2026: 85% of the 2,000 threshold (Pub. L. 119-21 §70433), listed, not reached.
    app.post(
        "/api/v1/calculate",
        Some(&a.key),
        &json!({"amount": 1700, "buyer_state": "OR", "role": "buyer", "counterparty_id": "big-vendor"}),
    )
    .await;

    let r = app.get("/api/v1/optimization-report", Some(&a.key)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let j = &r.json;
    assert_eq!(j["allowance"], json!({"plan": "free", "reports_per_month": 1, "used": 1, "remaining": 0}));
    assert_eq!(j["window"]["transactions_examined"], json!(4));
    assert_eq!(j["window"]["from"], json!("2026-01-01"));

    let facts = j["missing_facts"].as_array().unwrap();
    assert_eq!(facts.len(), 1, "{}", r.text);
    let f = &facts[0];
    assert_eq!(
        (&f["fact"], &f["field"], &f["advisory"], &f["transactions"]),
        (&json!("payment_provider_type"), &json!("payment_provider_type"), &json!("PAYMENT_PROVIDER_TYPE_ASSUMED"), &json!(1))
    );
    let by_value: Vec<(String, f64)> =
        f["by_value"].as_array().unwrap().iter().map(|v| (v["value"].as_str().unwrap().to_string(), num(&v["total_tax_change"]))).collect();
    assert_eq!(
        by_value,
        [
            ("bank".to_string(), -50.0),
            ("licensed_money_transmitter".to_string(), -50.0),
            ("card_network".to_string(), -50.0),
            ("processor_routing_to_bank_or_network".to_string(), -50.0),
            ("other".to_string(), 0.0)
        ]
    );
    let c = &j["conservative_calculations"];
    assert_eq!(c.as_array().unwrap().len(), 1);
    assert_eq!((num(&c[0]["amount"]), num(&c[0]["total_tax"]), c[0]["buyer_state"].as_str()), (1000.0, 50.0, Some("TX")));
    assert_eq!(c[0]["transaction_type"], json!("payment_processing_fee"));
    let bank = &c[0]["missing"][0]["readings"][0];
    assert_eq!((bank["value"].as_str(), num(&bank["total_tax"]), num(&bank["tax_due"])), (Some("bank"), 0.0, 0.0));

    assert_eq!(j["uncollected_no_nexus"]["transactions"], json!(1));
    assert_eq!(num(&j["uncollected_no_nexus"]["tax_if_nexus"]), 65.0);
    let wa = &j["uncollected_no_nexus"]["states"][0];
    assert_eq!((wa["state"].as_str(), num(&wa["sales"]), num(&wa["tax_if_nexus"])), (Some("WA"), 1000.0, 65.0));

    let v = &j["vendors_1099"];
    assert_eq!((v["tax_year"].clone(), num(&v["threshold"]), v["form"].clone()), (json!(2026), 2000.0, json!("1099-NEC")));
    // acme (2,000 = 100%) and big-vendor (1,700 = 85%); wa-buyer (1,000 = 50%) is not listed.
    let vendors: Vec<(String, f64, bool)> = v["vendors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (x["counterparty_id"].as_str().unwrap().to_string(), num(&x["percent_of_threshold"]), x["threshold_reached"].as_bool().unwrap())
        })
        .collect();
    assert_eq!(vendors, [("acme".to_string(), 100.0, true), ("big-vendor".to_string(), 85.0, false)]);
    assert_eq!(j["nexus_alerts"], json!([]));

    // The free plan's one report this month is used: 429 TIER_LIMIT_REACHED, no Retry-After.
    let r = app.get("/api/v1/optimization-report", Some(&a.key)).await;
    assert_eq!((r.status, r.code()), (429, "TIER_LIMIT_REACHED"), "{}", r.text);
    assert!(r.header("Retry-After").is_none());

    // A plan with a larger allowance (starter: 5) continues the month's count: runs 2 to 5, then 429.
    use sea_orm::{ActiveModelTrait, EntityTrait, Set};
    let row = levy::store::entity::entity::Entity::find_by_id(a.entity_id.clone()).one(&app.state.store.db).await.unwrap().unwrap();
    let mut am: levy::store::entity::entity::ActiveModel = row.into();
    am.plan = Set("starter".into());
    am.update(&app.state.store.db).await.unwrap();
    assert_eq!(app.state.plans.plan("starter").optimization_reports_per_month, 5);
    for used in 2..=5 {
        let r = app.get("/api/v1/optimization-report", Some(&a.key)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        assert_eq!(r.json["allowance"]["used"], json!(used));
    }
    let r = app.get("/api/v1/optimization-report", Some(&a.key)).await;
    assert_eq!(r.code(), "TIER_LIMIT_REACHED");

    // December is a new month.
    app.clock.set("2026-12-01T00:00:00Z".parse().unwrap());
    let r = app.get("/api/v1/optimization-report", Some(&a.key)).await;
    assert_eq!((r.status, r.json["allowance"]["used"].clone()), (200, json!(1)));
}

/// Concurrent runs never pass the allowance: the count is one conditional upsert in the database.
async fn allowance_holds_under_concurrency(app: TestApp) {
    let a = app.signup("report-race@example.com").await;
    let calls = (0..6).map(|_| app.get("/api/v1/optimization-report", Some(&a.key)));
    let statuses: Vec<u16> = futures::future::join_all(calls).await.iter().map(|r| r.status).collect();
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 1, "{statuses:?}");
    assert_eq!(statuses.iter().filter(|s| **s == 429).count(), 5, "{statuses:?}");
    // Another account's allowance is its own; no key is 401.
    let b = app.signup("report-other@example.com").await;
    assert_eq!(app.get("/api/v1/optimization-report", Some(&b.key)).await.status, 200);
    assert_eq!(app.get("/api/v1/optimization-report", None).await.code(), "UNAUTHORIZED");
}

on_both!(report_quantifies_missing_facts, allowance_holds_under_concurrency);
