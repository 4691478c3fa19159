//! No query parameter is silently dropped: one an operation does not document is a 400 naming it, with the
//! closest documented name when one is close, before the operation does anything.

use serde_json::{json, Value};

use super::harness::TestApp;
use crate::on_both;

async fn unknown_query_parameters_are_refused(app: TestApp) {
    let a = app.signup("query@example.com").await;

    // The list: a misspelt limit, and a valid one beside it.
    let r = app.get("/api/v1/transactions?limt=5", Some(&a.key)).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    assert_eq!(r.errors(), vec!["limt: unknown query parameter `limt`; did you mean `limit`?"]);
    let r = app.get("/api/v1/transactions?limit=5&ofset=1&page=2", Some(&a.key)).await;
    assert_eq!(
        r.errors(),
        vec![
            "ofset: unknown query parameter `ofset`; did you mean `offset`?",
            "page: unknown query parameter `page`; this operation takes: buyer_state, limit, offset, role, since, state, transaction_type",
        ]
    );
    assert_eq!(app.get("/api/v1/transactions?limit=5", Some(&a.key)).await.status, 200);

    // The 1099-DA export: `yaer` for `year`.
    let r = app.get("/api/v1/export/1099-da?yaer=2026", Some(&a.key)).await;
    assert_eq!((r.status, r.errors()), (400, vec!["yaer: unknown query parameter `yaer`; did you mean `year`?".to_string()]));
    assert_eq!(app.get("/api/v1/export/1099-da?year=2026", Some(&a.key)).await.status, 200);

    // Calculate takes none: the call is refused before it is determined or recorded.
    app.set_nexus(&a.key, &["WA"]).await;
    let body = json!({"amount": 100, "buyer_state": "WA", "counterparty_id": "c"}).to_string();
    let r = app.request("POST", "/api/v1/calculate?dry_run=true", Some(&a.key), &[], Some(&body)).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"));
    assert_eq!(r.errors(), vec!["dry_run: unknown query parameter `dry_run`; this operation takes no query parameters"]);
    assert_eq!(app.ledger_rows(&a.entity_id).await, 0);
    assert_eq!(app.request("POST", "/api/v1/calculate", Some(&a.key), &[], Some(&body)).await.status, 200);
    assert_eq!(app.ledger_rows(&a.entity_id).await, 1);

    // Revoking a key: `prefx` for `prefix`; the key is not revoked.
    let r = app.request("DELETE", &format!("/api/v1/keys?prefx={}", a.prefix), Some(&a.key), &[], None).await;
    assert_eq!(r.errors(), vec!["prefx: unknown query parameter `prefx`; did you mean `prefix`?"]);
    assert_eq!(app.get("/api/v1/keys", Some(&a.key)).await.status, 200);
}

on_both!(unknown_query_parameters_are_refused);

/// Every operation of the document refuses a parameter it does not name (with or without credentials: the
/// check comes first), and none refuses a request without one for that reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_operation_refuses_unknown_query_parameters() {
    let app = TestApp::start(super::harness::Backend::Sqlite).await.unwrap();
    let doc: Value = serde_json::from_str(&levy::api::openapi_json(app.state.clone())).unwrap();
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            let r = app.request(&method.to_ascii_uppercase(), &format!("{path}?zz_not_a_parameter=1"), None, &[], None).await;
            assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{method} {path}: {}", r.text);
            assert!(
                r.errors()[0].starts_with("zz_not_a_parameter: unknown query parameter `zz_not_a_parameter`"),
                "{method} {path}: {:?}",
                r.errors()
            );
            let r = app.request(&method.to_ascii_uppercase(), path, None, &[], None).await;
            assert!(!r.errors().iter().any(|e| e.contains("unknown query parameter")), "{method} {path}: {}", r.text);
            checked += 1;
        }
    }
    // (At least the 45 operations the document had on 2026-11-28; a new one adds to them.)
    assert!(checked >= 45, "{checked} operations in the document");
}
