//! Idempotency-Key: replay byte for byte, conflicts, concurrent retries, expiry, account scope.

use serde_json::json;

use super::harness::{num, Backend, TestApp};
use crate::on_both;

async fn replays_and_conflicts(app: TestApp) {
    let a = app.signup("idem@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    let body = r#"{"amount": 250, "buyer_state": "TX", "counterparty_id": "c-9"}"#;
    let same_reordered = r#"{"counterparty_id":"c-9","buyer_state":"TX","amount":250}"#;
    let key = [("Idempotency-Key", "order-1001")];
    let first = app.request("POST", "/api/v1/calculate", Some(&a.key), &key, Some(body)).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert!(first.header("x-idempotency-status").is_none());
    app.clock.advance_ms(3_600_000);
    let again = app.request("POST", "/api/v1/calculate", Some(&a.key), &key, Some(same_reordered)).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.header("x-idempotency-status").as_deref(), Some("cached"));
    assert_eq!(again.text, first.text, "byte for byte");
    assert_eq!(app.ledger_rows(&a.entity_id).await, 1);
    // 1099 counted once: 250.
    assert_eq!(num(&again.json["tracking_1099"]["vendor_ytd_total"]), 250.0);

    let other = app
        .request("POST", "/api/v1/calculate", Some(&a.key), &key, Some(r#"{"amount": 251, "buyer_state": "TX", "counterparty_id": "c-9"}"#))
        .await;
    assert_eq!((other.status, other.code()), (409, "IDEMPOTENCY_KEY_CONFLICT"));

    // A failed request releases its key: a corrected retry with the same key goes through.
    let bad = app
        .request(
            "POST",
            "/api/v1/calculate",
            Some(&a.key),
            &[("Idempotency-Key", "order-1002")],
            Some(r#"{"amount": -5, "buyer_state": "TX", "counterparty_id": "c"}"#),
        )
        .await;
    assert_eq!(bad.status, 400);
    let fixed = app
        .request(
            "POST",
            "/api/v1/calculate",
            Some(&a.key),
            &[("Idempotency-Key", "order-1002")],
            Some(r#"{"amount": 5, "buyer_state": "TX", "counterparty_id": "c"}"#),
        )
        .await;
    assert_eq!(fixed.status, 200, "{}", fixed.text);

    // After 24 hours the key is free again.
    app.clock.advance_ms(23 * 3_600_000 + 1);
    let later = app
        .request("POST", "/api/v1/calculate", Some(&a.key), &key, Some(r#"{"amount": 251, "buyer_state": "TX", "counterparty_id": "c-9"}"#))
        .await;
    assert_eq!(later.status, 200, "{}", later.text);
    assert!(later.header("x-idempotency-status").is_none());
    assert_eq!(app.ledger_rows(&a.entity_id).await, 3);

    // Keys are per account: another account's identical key is its own.
    let b = app.signup("idem-b@example.com").await;
    let r = app.request("POST", "/api/v1/calculate", Some(&b.key), &key, Some(body)).await;
    assert_eq!(r.status, 200);
    assert!(r.header("x-idempotency-status").is_none());
    assert_eq!(r.json["entity_id"], json!(b.entity_id));
}

async fn concurrent_retries_write_one_row(app: TestApp) {
    let a = app.signup("race@example.com").await;
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let client = app.client.clone();
        let key = a.key.clone();
        tasks.push(tokio::spawn(async move {
            let resp = client
                .post("/api/v1/calculate")
                .header("X-API-Key", key)
                .header("Idempotency-Key", "race-1")
                .body_json(&json!({"amount": 42, "buyer_state": "NY", "counterparty_id": "c"}))
                .send()
                .await;
            let status = resp.0.status().as_u16();
            (status, resp.0.into_body().into_string().await.unwrap())
        }));
    }
    let mut bodies = Vec::new();
    for t in tasks {
        let (status, text) = t.await.unwrap();
        assert_eq!(status, 200, "{text}");
        bodies.push(text);
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "every retry sees the one response");
    assert_eq!(app.ledger_rows(&a.entity_id).await, 1);
}

on_both!(replays_and_conflicts, concurrent_retries_write_one_row);

/// A key with bytes outside visible ASCII is refused on both operations that take one, not read as no key
/// (which would let the retry it was sent to protect be recorded twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_outside_visible_ascii_is_refused() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let a = app.signup("idem-bytes@example.com").await;
    let calls = [
        ("/api/v1/calculate", r#"{"amount": 5, "buyer_state": "TX", "counterparty_id": "c"}"#),
        ("/api/v1/trades", r#"{"asset_symbol": "AAA", "trade_type": "buy", "quantity": 1, "price_per_unit": 1}"#),
    ];
    for (path, body) in calls {
        for key in ["clé-1", "two words", ""] {
            let r = app.request("POST", path, Some(&a.key), &[("Idempotency-Key", key)], Some(body)).await;
            assert_eq!((r.status, r.code()), (400, "IDEMPOTENCY_KEY_INVALID"), "{path} {key:?}: {}", r.text);
        }
    }
    assert_eq!(app.ledger_rows(&a.entity_id).await, 0);
}

/// What a stored key's body hash is taken over: the operation, a newline, and the body as compact JSON with every
/// object's keys sorted (nested ones too; arrays keep their order; numbers and strings as sent). The text is written
/// out here by hand, so that hashes stored by one build still match the retries another build hears.
#[test]
fn a_body_hash_is_over_the_body_with_its_keys_sorted() {
    let body: serde_json::Value = serde_json::from_str(r#"{"b": 1, "a": {"d": [{"y": 2, "x": "é\"q"}, 3], "c": 1.50}}"#).unwrap();
    let text = "calculate\n{\"a\":{\"c\":1.50,\"d\":[{\"x\":\"é\\\"q\",\"y\":2},3]},\"b\":1}";
    assert_eq!(levy::idempotency::body_hash("calculate", &body), levy::security::sha256_hex(text.as_bytes()));
}
