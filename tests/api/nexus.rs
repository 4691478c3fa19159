//! Nexus settings (merge semantics) and alerts at 80% of a threshold.

use serde_json::json;

use super::harness::{num, TestApp};
use crate::on_both;

async fn nexus_merge_and_alerts(app: TestApp) {
    let a = app.signup("nexus@example.com").await;
    let r = app.get("/api/v1/nexus", Some(&a.key)).await;
    assert_eq!(r.json["nexus_configured"], json!(false));

    let r = app
        .post(
            "/api/v1/nexus",
            Some(&a.key),
            &json!({"nexus": {"tx": {"hasNexus": true, "reason": "office in Austin"}, "CA": {"hasNexus": true}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["states_with_nexus"], json!(["CA", "TX"]));
    // Merge: only NY is written; TX and CA keep theirs. Then CA removed.
    app.post("/api/v1/nexus", Some(&a.key), &json!({"nexus": {"NY": {"hasNexus": true}}})).await;
    let r = app.post("/api/v1/nexus", Some(&a.key), &json!({"nexus": {"ca": {"hasNexus": false}}})).await;
    assert_eq!(r.json["states_with_nexus"], json!(["NY", "TX"]));
    assert_eq!(r.json["nexus"]["TX"]["reason"], json!("office in Austin"));
    let r = app.post("/api/v1/nexus", Some(&a.key), &json!({"nexus": {}})).await;
    assert_eq!(r.json["states_with_nexus"], json!(["NY", "TX"]), "an empty map changes nothing");

    // Invalid: nothing written.
    let r = app.post("/api/v1/nexus", Some(&a.key), &json!({"nexus": {"QQ": {"hasNexus": true}, "WA": {"hasNexus": "yes"}, "OR": {"hasNexus": true, "reason": "r".repeat(501)}, "NV": {"hasNexus": true, "since": 2020}}, "extra": 1})).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"));
    let errs = r.errors().join("\n");
    for f in ["nexus.QQ:", "nexus.WA.hasNexus:", "nexus.OR.reason:", "nexus.NV.since: unknown field", "extra: unknown field"] {
        assert!(errs.contains(f), "{f} not in {errs}");
    }
    let r = app.get("/api/v1/nexus", Some(&a.key)).await;
    assert_eq!(r.json["states_with_nexus"], json!(["NY", "TX"]));

    // SD: 100,000 of sales in the current or previous calendar year (SDCL 10-64-2).
    // 79,000 is 79%: no alert. Another 2,000 → 81,000 = 81%: alert.
    let r = app.post("/api/v1/calculate", Some(&a.key), &json!({"amount": 79000, "buyer_state": "SD", "counterparty_id": "big"})).await;
    assert!(r.json.get("nexus_alerts").is_none(), "{}", r.text);
    let r = app.get("/api/v1/nexus-alerts", Some(&a.key)).await;
    assert_eq!(r.json["alerts"], json!([]));
    assert_eq!(r.json["jurisdictions_checked"], json!(51));
    let r = app.post("/api/v1/calculate", Some(&a.key), &json!({"amount": 2000, "buyer_state": "SD", "counterparty_id": "big"})).await;
    let alert = &r.json["nexus_alerts"][0];
    assert_eq!(alert["state"], json!("SD"), "{}", r.text);
    assert_eq!(num(&alert["percent_of_threshold"]), 81.0);
    assert_eq!(num(&alert["revenue"]), 81000.0);
    assert_eq!(alert["level"], json!("approaching"));
    assert_eq!(alert["has_nexus"], json!(false));
    // Buyer-role purchases are not sales: they do not count.
    app.post("/api/v1/calculate", Some(&a.key), &json!({"amount": 50000, "buyer_state": "SD", "role": "buyer", "counterparty_id": "big"}))
        .await;
    let r = app.get("/api/v1/nexus-alerts", Some(&a.key)).await;
    assert_eq!(r.json["alerts"].as_array().unwrap().len(), 1);
    assert_eq!(num(&r.json["alerts"][0]["revenue"]), 81000.0);
}

/// Spec, NexusRequest: "an empty object changes nothing" — so it does not mark nexus as configured either.
async fn empty_nexus_map_changes_nothing(app: TestApp) {
    let a = app.signup("empty-nexus@example.com").await;
    let r = app.post("/api/v1/nexus", Some(&a.key), &json!({"nexus": {}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!((&r.json["nexus_configured"], &r.json["nexus"], &r.json["states_with_nexus"]), (&json!(false), &json!({}), &json!([])));
    let r = app.get("/api/v1/nexus", Some(&a.key)).await;
    assert_eq!(r.json["nexus_configured"], json!(false));
    // A seller call still answers as for an account without nexus settings: 0 now, 1000 × 6.5% = 65.00 with nexus.
    let r = app
        .post(
            "/api/v1/calculate",
            Some(&a.key),
            &json!({"amount": 1000, "buyer_state": "WA", "transaction_type": "saas", "counterparty_id": "c"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (&r.json["nexus_configured"], num(&r.json["total_tax"]), num(&r.json["tax_if_nexus"]["total_tax"])),
        (&json!(false), 0.0, 65.0)
    );

    // After a real setting, an empty map keeps it as it is.
    app.set_nexus(&a.key, &["WA"]).await;
    let r = app.post("/api/v1/nexus", Some(&a.key), &json!({"nexus": {}})).await;
    assert_eq!((&r.json["nexus_configured"], &r.json["states_with_nexus"]), (&json!(true), &json!(["WA"])));
}

on_both!(empty_nexus_map_changes_nothing);

on_both!(nexus_merge_and_alerts);
