//! Fuzzing the HTTP bodies of calculate (keyed and demo), ingest and trades: byte mutations of real bodies (the
//! scenario cases' requests and tests/fuzz/) sent through the whole service. Whatever the bytes, the answer is
//! a success or the envelope with a 4xx status: never a 500. Runs for LEVY_FUZZ_SECONDS (default 3) on SQLite.

use std::time::{Duration, Instant};

use levy::config::Limits;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

use super::harness::{Backend, TestApp};

fn corpus(kind: &str) -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz").join(kind);
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

fn seeds() -> Vec<Vec<u8>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rules");
    let mut sources = levy::rules::diag::SourceMap::default();
    let (cases, _) = levy::rules::cases::load_cases(&dir, &mut sources);
    let mut out: Vec<Vec<u8>> = cases.iter().step_by(7).map(|c| c.request.to_string().into_bytes()).collect();
    out.extend(cases.iter().step_by(29).map(|c| {
        json!([c.request, {"amount": 5, "buyer_state": "WA", "counterparty_id": "w", "external_tx_id": "e-1"}]).to_string().into_bytes()
    }));
    for kind in ["bodies", "requests", "trades"] {
        out.extend(corpus(kind));
    }
    out
}

const TOKENS: &[&str] =
    &["{", "}", "[", "]", ",", ":", "\"", "\\", "null", "true", "-", "0", "1e999", "\"TX\"", "\"amount\"", "\u{0}", "é", " "];

fn mutation(n: usize) -> impl Strategy<Value = (usize, Vec<(usize, u8, usize)>)> {
    // (seed, edits): each edit at a position: 0 delete a byte, 1 insert a random byte, 2 insert a token, 3 truncate.
    (0..n, prop::collection::vec((any::<usize>(), 0u8..4, any::<usize>()), 0..5))
}

fn apply(seed: &[u8], edits: &[(usize, u8, usize)]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for &(at, kind, x) in edits {
        let at = if b.is_empty() { 0 } else { at % b.len() };
        match kind {
            0 if !b.is_empty() => {
                b.remove(at);
            }
            1 => b.insert(at, (x % 256) as u8),
            2 => {
                b.splice(at..at, TOKENS[x % TOKENS.len()].bytes());
            }
            3 => b.truncate(at),
            _ => {}
        }
    }
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_never_get_a_500() {
    let budget = Duration::from_secs_f64(std::env::var("LEVY_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3.0));
    let app = TestApp::start_with(Backend::Sqlite, Limits { burst_per_minute: i64::MAX / 4, ..Limits::default() }).await.unwrap();
    let account = app.signup("fuzz@example.com").await;
    // The pro plan's million calls a month, so that the allowance is not what answers.
    use sea_orm::{ActiveModelTrait, EntityTrait, Set};
    let row = levy::store::entity::entity::Entity::find_by_id(account.entity_id.clone()).one(&app.state.store.db).await.unwrap().unwrap();
    let mut am: levy::store::entity::entity::ActiveModel = row.into();
    am.plan = Set("pro".into());
    am.update(&app.state.store.db).await.unwrap();

    let seeds = seeds();
    let mut runner = TestRunner::new(Config { failure_persistence: None, ..Config::default() });
    let strategy = mutation(seeds.len());
    let routes =
        [("/api/v1/calculate", true), ("/api/v1/calculate", false), ("/api/v1/transactions/ingest", true), ("/api/v1/trades", true)];
    let (started, mut sent) = (Instant::now(), 0usize);
    while started.elapsed() < budget {
        let (i, edits) = strategy.new_tree(&mut runner).unwrap().current();
        let body = apply(&seeds[i], &edits);
        let (path, keyed) = routes[sent % routes.len()];
        let address = format!("2001:db8:f::{:x}", sent);
        let mut req = app.client.post(path).content_type("application/json").header("X-Forwarded-For", address).body(body.clone());
        if keyed {
            req = req.header("X-API-Key", &account.key);
        }
        let resp = req.send().await;
        let status = resp.0.status().as_u16();
        let text = resp.0.into_body().into_string().await.unwrap();
        let shown = String::from_utf8_lossy(&body);
        assert!((200..500).contains(&status), "{path} answered {status} to {shown:?}: {text}");
        let json: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: not JSON ({e}) for {shown:?}: {text}"));
        if status >= 400 {
            assert!(json["code"].is_string() && json["success"] == json!(false), "{path}: no envelope for {shown:?}: {text}");
        }
        sent += 1;
    }
    eprintln!("fuzz http bodies: {sent} requests in {:?}", started.elapsed());
    assert!(sent > 0);
}
