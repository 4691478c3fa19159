//! The error envelope on every kind of failure.

use serde_json::json;

use super::harness::TestApp;
use crate::on_both;

async fn envelope_for_every_failure(app: TestApp) {
    let a = app.signup("errors@example.com").await;

    // Unknown path: 404 RESOURCE_NOT_FOUND, with a generated request id in body and header.
    let r = app.get("/api/v1/no-such-thing", None).await;
    assert_eq!((r.status, r.code()), (404, "RESOURCE_NOT_FOUND"));
    assert_eq!(r.json["success"], json!(false));
    let rid = r.header("x-request-id").unwrap();
    assert!(rid.starts_with("req_"));
    assert_eq!(r.json["request_id"], json!(rid));

    // Wrong method: 405 with Allow.
    let r = app.request("PUT", "/api/v1/calculate", None, &[], None).await;
    assert_eq!((r.status, r.code()), (405, "METHOD_NOT_ALLOWED"));
    assert_eq!(r.header("allow").as_deref(), Some("POST"));
    let r = app.request("DELETE", "/api/v1/nexus", Some(&a.key), &[], None).await;
    assert_eq!(r.status, 405);
    assert_eq!(r.header("allow").as_deref(), Some("GET, POST"));
    // On a path with a parameter too.
    let r = app.request("GET", "/api/v1/transactions/tx_1/void", Some(&a.key), &[], None).await;
    assert_eq!((r.status, r.header("allow").as_deref()), (405, Some("POST")));

    // The caller's request id is echoed.
    let r = app.request("POST", "/api/v1/calculate", Some(&a.key), &[("X-Request-Id", "trace-42")], Some("{not json")).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_JSON_BODY"));
    assert_eq!(r.json["request_id"], json!("trace-42"));
    assert_eq!(r.header("x-request-id").as_deref(), Some("trace-42"));

    // Wrong shape, wrong type, out of range, unknown field: each named.
    let r = app
        .post(
            "/api/v1/calculate",
            Some(&a.key),
            &json!({"amount": 0, "buyer_state": "XX", "counterparty_id": "c 1", "colour": "red", "is_b2b": "yes"}),
        )
        .await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"));
    let errs = r.errors().join("\n");
    for field in ["amount: must be greater than 0", "buyer_state", "counterparty_id", "colour: unknown field", "is_b2b"] {
        assert!(errs.contains(field), "{field} missing from {errs}");
    }
    let r = app.post("/api/v1/calculate", Some(&a.key), &json!([1, 2])).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"));
    let r = app.post("/api/v1/calculate", Some(&a.key), &json!({"amount": 100000001, "buyer_state": "TX", "counterparty_id": "c"})).await;
    assert_eq!(r.errors(), vec!["amount: must be at most 100000000"]);

    // Credentials.
    let r = app.get("/api/v1/transactions", None).await;
    assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED"));
    let r = app.get("/api/v1/transactions", Some("svc_live_not-a-key")).await;
    assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED"));
    let r = app.request("GET", "/api/v1/transactions", None, &[("Authorization", &format!("Bearer {}", a.key))], None).await;
    assert_eq!(r.status, 200, "Bearer keys are accepted: {}", r.text);

    // Malformed Idempotency-Key.
    let long = "k".repeat(256);
    let r = app
        .request(
            "POST",
            "/api/v1/calculate",
            Some(&a.key),
            &[("Idempotency-Key", &long)],
            Some(r#"{"amount":1,"buyer_state":"TX","counterparty_id":"c"}"#),
        )
        .await;
    assert_eq!((r.status, r.code()), (400, "IDEMPOTENCY_KEY_INVALID"));

    // Bad query parameter.
    let r = app.get("/api/v1/transactions?transaction_type=sas&role=vendor&since=yesterday", Some(&a.key)).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"));
    assert_eq!(r.errors().len(), 3, "{:?}", r.errors());
    // A value out of a documented range is refused before the others are read.
    let r = app.get("/api/v1/transactions?limit=5000&role=vendor", Some(&a.key)).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"));
    assert_eq!(r.errors().len(), 1, "{:?}", r.errors());
    assert!(r.errors()[0].starts_with("limit: "), "{:?}", r.errors());
    assert_eq!(app.ledger_rows(&a.entity_id).await, 0, "no failure wrote anything");
}

async fn database_unreachable_is_503(app: TestApp) {
    use levy::api::{app as build, AppState};
    use poem::EndpointExt;
    let a = app.signup("db@example.com").await;
    // A second instance whose database does not answer (nothing listens on port 1).
    let store = levy::store::Store::connect("postgres://postgres@127.0.0.1:1/none").await.unwrap();
    let state = std::sync::Arc::new(AppState::new(
        store,
        app.state.registry.clone(),
        app.clock.clone(),
        Default::default(),
        app.state.data_key.clone(),
    ));
    let client = poem::test::TestClient::new(build(state, true).boxed());
    let resp = client.get("/api/v1/health").send().await;
    resp.assert_status(poem::http::StatusCode::SERVICE_UNAVAILABLE);
    let v: serde_json::Value = serde_json::from_str(&resp.0.into_body().into_string().await.unwrap()).unwrap();
    assert_eq!(v["code"], json!("DB_UNAVAILABLE"));
    let resp = client
        .post("/api/v1/calculate")
        .header("X-API-Key", &a.key)
        .body_json(&json!({"amount": 1, "buyer_state": "TX", "counterparty_id": "c"}))
        .send()
        .await;
    resp.assert_status(poem::http::StatusCode::SERVICE_UNAVAILABLE);

    let r = app.get("/api/v1/health", None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json["database"]["connected"], json!(true));
    assert_eq!(r.json["engine_version"], json!("1.5"));
    assert_eq!(r.json["rules_version"], json!("1.6.0"));
}

on_both!(envelope_for_every_failure, database_unreachable_is_503);

/// PostgreSQL: connections are pinged on the way out of the pool only after a second idle (see
/// `store::postgres_pool`), so one the server dropped while idle is replaced before a request uses it, rather
/// than failing that request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_the_server_dropped_while_idle_are_replaced() {
    use sea_orm::ConnectionTrait;
    let Some(app) = TestApp::start(super::harness::Backend::Postgres).await else {
        eprintln!("TEST_DATABASE_URL not set: PostgreSQL run skipped");
        return;
    };
    let a = app.signup("idle@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    let call = json!({"amount": 10, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "c"});
    assert_eq!(app.post("/api/v1/calculate", Some(&a.key), &call).await.status, 200);

    // (Connections go back to the pool with a ping of their own, off the request's path.)
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    // The server's process behind every connection the instance's pool holds.
    let mut conns = app.pool_connections().await;
    assert!(!conns.is_empty());
    let mut pids = Vec::new();
    for c in &mut conns {
        let (pid,): (i32,) = sea_orm::sqlx::query_as("SELECT pg_backend_pid()").fetch_one(&mut **c).await.unwrap();
        pids.push(pid);
    }
    drop(conns);
    // The server ends them all, and they sit idle past the second.
    let admin = levy::store::Store::connect(&app.db.url).await.unwrap();
    let list = pids.iter().map(i32::to_string).collect::<Vec<_>>().join(", ");
    let ended = admin
        .db
        .query_all(sea_orm::Statement::from_string(
            sea_orm::DbBackend::Postgres,
            format!("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid IN ({list})"),
        ))
        .await
        .unwrap();
    assert_eq!(ended.len(), pids.len());
    tokio::time::sleep(std::time::Duration::from_millis(1300)).await;

    // Every request is served, on new connections.
    let r = app.get("/api/v1/health", None).await;
    assert_eq!((r.status, &r.json["database"]["connected"]), (200, &json!(true)), "{}", r.text);
    assert_eq!(app.post("/api/v1/calculate", Some(&a.key), &call).await.status, 200);
    assert_eq!(app.get("/api/v1/transactions", Some(&a.key)).await.json["transactions"].as_array().map(Vec::len), Some(2));
    let (pid,): (i32,) =
        sea_orm::sqlx::query_as("SELECT pg_backend_pid()").fetch_one(app.state.store.db.get_postgres_connection_pool()).await.unwrap();
    assert!(!pids.contains(&pid));

    // A connection the server ends while a transaction holds it: the next statement fails as the server said
    // (SQLSTATE 57P01), which reads as the database being unavailable (503), not as an internal error.
    use sea_orm::TransactionTrait;
    let txn = app.state.store.db.begin().await.unwrap();
    let row = txn
        .query_one(sea_orm::Statement::from_string(sea_orm::DbBackend::Postgres, "SELECT pg_backend_pid() AS pid"))
        .await
        .unwrap()
        .unwrap();
    let pid: i32 = row.try_get("", "pid").unwrap();
    admin
        .db
        .execute(sea_orm::Statement::from_string(sea_orm::DbBackend::Postgres, format!("SELECT pg_terminate_backend({pid})")))
        .await
        .unwrap();
    let err = txn.execute(sea_orm::Statement::from_string(sea_orm::DbBackend::Postgres, "SELECT 1")).await.unwrap_err();
    assert!(err.to_string().contains("57P01") || err.to_string().contains("administrator"), "{err}");
    assert!(matches!(levy::store::StoreError::from(err), levy::store::StoreError::Unavailable(_)));
}
