//! Request bounds: an oversized body is refused without being read past the limit, a body that does not arrive
//! in time and a request that does not finish in time are answered with the envelope.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use levy::config::{Bounds, Limits};
use poem::Body;

use super::harness::{Backend, TestApp};

const MIB: usize = 1 << 20;
const CHUNK: usize = 64 << 10;

/// A body of `total` bytes of `x` made on demand in 64 KiB chunks; `pulled` counts what the server took.
fn counted_body(total: usize, pulled: Arc<AtomicUsize>) -> Body {
    let chunks = futures::stream::unfold(0usize, move |sent| {
        let pulled = pulled.clone();
        async move {
            (sent < total).then(|| {
                let n = CHUNK.min(total - sent);
                pulled.fetch_add(n, Ordering::SeqCst);
                (Ok::<_, std::io::Error>(vec![b'x'; n]), sent + n)
            })
        }
    });
    Body::from_bytes_stream(chunks)
}

/// A body that sends `{"amount":` and then nothing more, ever.
fn stalled_body() -> Body {
    let first = futures::stream::once(async { Ok::<_, std::io::Error>(b"{\"amount\":".to_vec()) });
    Body::from_bytes_stream(futures::StreamExt::chain(first, futures::stream::pending()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_are_refused_unread() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let key = app.signup("big@example.com").await.key;
    for (path, key) in [
        ("/api/v1/calculate", Some(key.as_str())),
        ("/api/v1/calculate", None),
        ("/api/v1/transactions/ingest", Some(key.as_str())),
        ("/api/v1/auth/login", None),
    ] {
        // Declared as 50 MB: refused before a byte of it is read.
        let pulled = Arc::new(AtomicUsize::new(0));
        let mut req = app
            .client
            .post(path)
            .content_type("application/json")
            .header("Content-Length", 50 * MIB)
            .body(counted_body(50 * MIB, pulled.clone()));
        if let Some(k) = key {
            req = req.header("X-API-Key", k);
        }
        let resp = req.send().await;
        resp.assert_status(poem::http::StatusCode::BAD_REQUEST);
        let json: serde_json::Value = serde_json::from_str(&resp.0.into_body().into_string().await.unwrap()).unwrap();
        assert_eq!(json["code"], "INVALID_JSON_BODY", "{path}");
        assert_eq!(json["error"], "the body is not valid JSON: the body is larger than 1048576 bytes");
        assert_eq!(pulled.load(Ordering::SeqCst), 0, "{path}: nothing of the declared 50 MB read");

        // Streamed without a length (chunked): read up to the chunk that passes 1 MiB, then refused.
        let pulled = Arc::new(AtomicUsize::new(0));
        let mut req = app.client.post(path).content_type("application/json").body(counted_body(50 * MIB, pulled.clone()));
        if let Some(k) = key {
            req = req.header("X-API-Key", k);
        }
        let resp = req.send().await;
        resp.assert_status(poem::http::StatusCode::BAD_REQUEST);
        let read = pulled.load(Ordering::SeqCst);
        assert!(read <= MIB + 2 * CHUNK, "{path}: {read} bytes of the streamed 50 MB taken");
    }
    // Exactly at the limit is read whole (and is then simply not JSON).
    let r = app.request("POST", "/api/v1/calculate", Some(&key), &[], Some(&" ".repeat(MIB).replacen(' ', "[", 1))).await;
    assert_eq!(r.code(), "INVALID_JSON_BODY");
    assert!(r.json["error"].as_str().unwrap().contains("EOF while parsing a list"), "{}", r.text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_body_times_out() {
    let bounds = Bounds { body_timeout: Duration::from_secs(1), ..Bounds::default() };
    let app = TestApp::start_with(Backend::Sqlite, Limits { bounds, ..Limits::default() }).await.unwrap();
    let resp = app.client.post("/api/v1/calculate").content_type("application/json").body(stalled_body()).send().await;
    resp.assert_status(poem::http::StatusCode::BAD_REQUEST);
    let json: serde_json::Value = serde_json::from_str(&resp.0.into_body().into_string().await.unwrap()).unwrap();
    assert_eq!(json["code"], "INVALID_JSON_BODY");
    assert_eq!(json["error"], "the body is not valid JSON: the body was not received within 1 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_outlives_its_bound_gets_the_envelope() {
    // The body would be waited for 30 s; the whole request is allowed 1 s.
    let bounds = Bounds { request_timeout: Duration::from_secs(1), ..Bounds::default() };
    let app = TestApp::start_with(Backend::Sqlite, Limits { bounds, ..Limits::default() }).await.unwrap();
    let resp = app
        .client
        .post("/api/v1/calculate")
        .header("X-Request-Id", "slow-1")
        .content_type("application/json")
        .body(stalled_body())
        .send()
        .await;
    resp.assert_status(poem::http::StatusCode::SERVICE_UNAVAILABLE);
    resp.assert_header("x-request-id", "slow-1");
    let json: serde_json::Value = serde_json::from_str(&resp.0.into_body().into_string().await.unwrap()).unwrap();
    assert_eq!(json["code"], "DB_UNAVAILABLE");
    assert_eq!(json["error"], "the request did not finish within 1 s; retry shortly");
    assert_eq!(json["request_id"], "slow-1");
}
