//! The blog (index, category filter, one article) and the onboarding guide (keyless steps; keyed progress).

use serde_json::json;

use super::harness::TestApp;
use crate::on_both;

async fn blog_index_filters_and_articles(app: TestApp) {
    let r = app.get("/api/v1/blog", None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // Newest first: 2026-11-20, 2026-11-18, 2026-11-12.
    let slugs: Vec<&str> = r.json["articles"].as_array().unwrap().iter().map(|a| a["slug"].as_str().unwrap()).collect();
    assert_eq!(slugs, ["how-levy-decides-saas-taxability", "texas-80-percent-rule-for-data-processing", "form-1099-threshold-2026"]);
    assert_eq!(r.json["count"], json!(3));
    assert_eq!(r.json["articles"][1]["date"], json!("2026-11-18"));
    assert!(r.json["articles"][0].get("body").is_none(), "the index carries no bodies");

    // Category: a case-insensitive substring.
    let r = app.get("/api/v1/blog?category=STATE", None).await;
    assert_eq!(
        (r.json["count"].clone(), r.json["articles"][0]["slug"].clone()),
        (json!(1), json!("texas-80-percent-rule-for-data-processing"))
    );
    assert_eq!(r.json["category"], json!("STATE"));
    let r = app.get("/api/v1/blog?category=fEd", None).await;
    assert_eq!(r.json["articles"][0]["slug"], json!("form-1099-threshold-2026"));
    let r = app.get("/api/v1/blog?category=a", None).await;
    assert_eq!(r.json["count"], json!(3), "taxability, state law and federal all contain an a");
    let r = app.get("/api/v1/blog?category=estate%20planning", None).await;
    assert_eq!((r.status, r.json["count"].clone(), r.json["articles"].clone()), (200, json!(0), json!([])));

    // One article with its Markdown body; its figures are the TX rule file's (6.25% state, 1% Austin, 1% Capital Metro, 80% base).
    let r = app.get("/api/v1/blog?slug=texas-80-percent-rule-for-data-processing", None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let a = &r.json["article"];
    assert_eq!((a["category"].as_str(), a["format"].as_str()), (Some("state law"), Some("markdown")));
    let body = a["body"].as_str().unwrap();
    assert!(body.starts_with("# Texas's 80% rule"), "{body}");
    assert!(body.contains("800.00 × 8.25% = 66.00"));
    assert!(r.json.get("articles").is_none());

    // Unknown: 404 in the envelope. Malformed or conflicting: 400 naming the field.
    let r = app.get("/api/v1/blog?slug=no-such-article", None).await;
    assert_eq!((r.status, r.code()), (404, "RESOURCE_NOT_FOUND"));
    // Both: the article, if it is in the category.
    assert_eq!(app.get("/api/v1/blog?slug=form-1099-threshold-2026&category=FEDERAL", None).await.status, 200);
    assert_eq!(app.get("/api/v1/blog?slug=form-1099-threshold-2026&category=state", None).await.code(), "RESOURCE_NOT_FOUND");
    for (q, field) in [
        ("slug=Not_A_Slug", "slug:"),
        ("slug=a--b", "slug:"),
        ("category=", "category:"),
        (&format!("category={}", "x".repeat(101)), "category:"),
        ("tag=x", "tag"),
    ] {
        let r = app.get(&format!("/api/v1/blog?{q}"), None).await;
        assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{q}: {}", r.text);
        assert!(r.errors().iter().any(|e| e.starts_with(field)), "{q}: {:?}", r.errors());
    }
}

async fn onboarding_steps_and_progress(app: TestApp) {
    let r = app.get("/api/v1/onboarding", None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["personalized"], json!(false));
    let steps = r.json["steps"].as_array().unwrap();
    let ids: Vec<&str> = steps.iter().map(|s| s["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["sign_up", "set_nexus", "first_calculation", "ingest", "alerts"]);
    let paths: Vec<&str> = steps.iter().map(|s| s["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["/api/v1/auth/signup", "/api/v1/nexus", "/api/v1/calculate", "/api/v1/transactions/ingest", "/api/v1/nexus-alerts"]);
    assert!(steps.iter().all(|s| s.get("done").is_none()));
    assert!(r.json.get("completed").is_none() && r.json.get("next_step").is_none(), "no progress members without a key");

    let a = app.signup("onboard@example.com").await;
    let progress = |r: &super::harness::Reply| -> Vec<bool> {
        r.json["steps"].as_array().unwrap().iter().map(|s| s["done"].as_bool().unwrap()).collect()
    };
    let r = app.get("/api/v1/onboarding", Some(&a.key)).await;
    assert_eq!(r.json["personalized"], json!(true));
    assert_eq!(progress(&r), [true, false, false, false, false]);
    assert_eq!((r.json["completed"].clone(), r.json["next_step"].clone()), (json!(1), json!("set_nexus")));

    app.set_nexus(&a.key, &["TX", "CA"]).await;
    let r = app.post("/api/v1/calculate", Some(&a.key), &json!({"amount": 1000, "buyer_state": "TX", "counterparty_id": "acme"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.get("/api/v1/onboarding", Some(&a.key)).await;
    // A seller-role sale is in the ledger, so the alerts have something to watch.
    assert_eq!(progress(&r), [true, true, true, false, true]);
    assert_eq!(r.json["steps"][1]["progress"], json!("2 state(s) with nexus"));
    assert_eq!(r.json["steps"][2]["progress"], json!("1 calculation(s) recorded"));
    assert_eq!(r.json["next_step"], json!("ingest"));

    let r = app
        .post(
            "/api/v1/transactions/ingest",
            Some(&a.key),
            &json!([{"amount": 5, "buyer_state": "TX", "counterparty_id": "c", "external_tx_id": "e1"}]),
        )
        .await;
    assert!(r.status < 300, "{}", r.text);
    let r = app.get("/api/v1/onboarding", Some(&a.key)).await;
    assert_eq!(progress(&r), [true; 5]);
    assert_eq!(
        (r.json["completed"].clone(), r.json.get("next_step")),
        (json!(5), Some(&json!(null))),
        "next_step is written null when all are done"
    );
    assert_eq!(r.json["steps"][3]["progress"], json!("1 record(s) ingested"));

    // A key that is sent must be good.
    let r = app.get("/api/v1/onboarding", Some("svc_live_00000000000000000000000000000000")).await;
    assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED"));
}

on_both!(blog_index_filters_and_articles, onboarding_steps_and_progress);
