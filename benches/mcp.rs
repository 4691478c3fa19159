//! A tool call on `/mcp` against the REST call it wraps, through the whole application in-process (poem's test
//! client: routing, the envelope, the handler; no socket, which both would cross alike). The goal: a tool call costs
//! at most 1 ms more (benches/README.md, "MCP").

use std::path::Path;
use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use levy::api::{app, AppState};
use levy::clock::Clock;
use levy::config::{sqlite_url, Limits};
use levy::rules::load_dir;
use levy::security::DataKey;
use levy::store::Store;
use poem::test::TestClient;
use poem::Endpoint;

fn pairs(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let state = rt.block_on(async {
        let store = Store::connect(&sqlite_url(&dir.path().join("bench.db"))).await.unwrap();
        store.migrate().await.unwrap();
        let registry = Arc::new(load_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("rules")).0.expect("rules check clean"));
        // The demo's per-address limits would answer 429 within the first second of a bench.
        let limits = Limits { demo_per_minute: i64::MAX / 4, demo_per_day: i64::MAX / 4, ..Limits::default() };
        Arc::new(AppState::new(store, registry, Clock::system(), limits, DataKey::from_hex(&"ab".repeat(32)).unwrap()))
    });
    let client = TestClient::new(app(state, false));
    let sale = r#"{"amount":"1000","buyer_state":"TX","buyer_zip":"78701","counterparty_id":"c","transaction_type":"saas"}"#;
    let rpc = |tool: &str, arguments: &str| {
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#)
    };
    let local = rpc("get_local_rate", r#"{"zip":"78701"}"#);
    let calculate = rpc("calculate_tax", sale);

    let mut g = c.benchmark_group("mcp");
    let json = "application/json";
    g.bench_function("REST GET /rates/local", |b| b.iter(|| rt.block_on(call(client.get("/api/v1/rates/local?zip=78701")))));
    g.bench_function("MCP get_local_rate", |b| b.iter(|| rt.block_on(call(client.post("/mcp").content_type(json).body(local.clone())))));
    g.bench_function("REST POST /calculate (demo)", |b| {
        b.iter(|| rt.block_on(call(client.post("/api/v1/calculate").content_type(json).body(sale))))
    });
    g.bench_function("MCP calculate_tax (demo)", |b| {
        b.iter(|| rt.block_on(call(client.post("/mcp").content_type(json).body(calculate.clone()))))
    });
    g.finish();
}

/// Sends the request and reads the whole answer, which must be a 200.
async fn call<E: Endpoint>(request: poem::test::TestRequestBuilder<'_, E>) -> usize {
    let response = request.header("host", "127.0.0.1").header("accept", "application/json, text/event-stream").send().await;
    assert_eq!(response.0.status(), 200);
    response.0.into_body().into_vec().await.unwrap().len()
}

criterion_group!(benches, pairs);
criterion_main!(benches);
