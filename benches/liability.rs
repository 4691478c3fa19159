//! Criterion benchmark of the liability report over 100,000 ledger rows, through the HTTP app on a SQLite file in a
//! temp dir (issue: "the report over 100,000 ledger rows answers in under 1 second on SQLite").
//!
//! The rows are copies of four real keyed calculations (a taxable sale into Austin with three jurisdictions, a CA
//! sale exempt by category, a WA sale a marketplace collects, a NY sale without nexus), with their full bodies,
//! spread over the 365 days of 2026, one in fifty voided. Baseline in the same run: GET /api/v1/health.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use levy::api::{app, AppState};
use levy::clock::Clock;
use levy::config::{sqlite_url, Limits};
use levy::rules::load_dir;
use levy::security::DataKey;
use levy::store::entity::transaction;
use levy::store::Store;
use poem::test::TestClient;
use poem::EndpointExt;
use sea_orm::{EntityTrait, IntoActiveModel, TransactionTrait};

const N: usize = 100_000;

type Client = TestClient<poem::endpoint::BoxEndpoint<'static>>;

async fn post(client: &Client, path: &str, key: Option<&str>, body: serde_json::Value) -> serde_json::Value {
    let mut req = client.post(path).body_json(&body);
    if let Some(k) = key {
        req = req.header("X-API-Key", k);
    }
    let text = req.send().await.0.into_body().into_string().await.unwrap();
    serde_json::from_str(&text).unwrap()
}

/// An app on a fresh SQLite file with one account and its key, and 100,000 ledger rows of 2026.
async fn seeded() -> (Client, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::connect(&sqlite_url(&dir.path().join("bench.db"))).await.unwrap();
    store.migrate().await.unwrap();
    let registry = Arc::new(load_dir(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rules")).0.expect("rules check clean"));
    let clock = Clock::fixed(DateTime::parse_from_rfc3339("2026-12-31T10:00:00Z").unwrap().with_timezone(&Utc));
    let limits = Limits { burst_per_minute: i64::MAX / 4, ..Limits::default() };
    let state = Arc::new(AppState::new(store, registry, clock, limits, DataKey::from_hex(&"ab".repeat(32)).unwrap()));
    let client = TestClient::new(app(state.clone(), true).boxed());
    let signup = post(
        &client,
        "/api/v1/auth/signup",
        None,
        serde_json::json!({"email": "bench@example.com", "password": "benchmark-pw", "agent_name": "bench", "agent_work_type": "compute"}),
    )
    .await;
    let key = signup["api_key"]["key"].as_str().unwrap().to_string();
    post(
        &client,
        "/api/v1/nexus",
        Some(&key),
        serde_json::json!({"nexus": {"TX": {"hasNexus": true}, "CA": {"hasNexus": true}, "WA": {"hasNexus": true}}}),
    )
    .await;
    for body in [
        serde_json::json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "acme"}),
        serde_json::json!({"amount": 500, "buyer_state": "CA", "buyer_zip": "94103", "counterparty_id": "ca-buyer"}),
        serde_json::json!({"amount": 200, "buyer_state": "WA", "counterparty_id": "wa-buyer", "marketplace_role": "seller"}),
        serde_json::json!({"amount": 400, "buyer_state": "NY", "buyer_zip": "10001", "counterparty_id": "ny-buyer"}),
    ] {
        post(&client, "/api/v1/calculate", Some(&key), body).await;
    }
    let db = &state.store.db;
    let templates = transaction::Entity::find().all(db).await.unwrap();
    assert_eq!(templates.len(), 4);
    let start = chrono::NaiveDate::from_ymd_opt(2026, 1, 1).unwrap();
    let txn = db.begin().await.unwrap();
    for chunk in (0..N).collect::<Vec<_>>().chunks(200) {
        let rows = chunk.iter().map(|&i| {
            let t = &templates[i % templates.len()];
            let day = start + chrono::Duration::days((i % 365) as i64);
            let at = day.and_hms_opt(12, 0, 0).unwrap().and_utc().timestamp_millis();
            let row = transaction::Model {
                id: format!("tx_bench_{i:07}"),
                created_at: at,
                dated: levy::ledger::report::day_number(day),
                voided_at: (i % 50 == 0).then_some(at),
                ..t.clone()
            };
            row.into_active_model()
        });
        transaction::Entity::insert_many(rows).exec_without_returning(&txn).await.unwrap();
    }
    txn.commit().await.unwrap();
    (client, key, dir)
}

fn service(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (client, key, _dir) = rt.block_on(seeded());
    let mut g = c.benchmark_group("liability report on SQLite, 100,000 ledger rows");
    g.sample_size(10);
    g.bench_function("baseline: GET /api/v1/health", |b| {
        b.iter(|| rt.block_on(async { black_box(client.get("/api/v1/health").send().await.0.status()) }))
    });
    for (name, query) in [
        ("GET /api/v1/reports/liability (a year by month)", "from=2026-01-01&to=2026-12-31"),
        ("GET /api/v1/reports/liability (a year by quarter, CSV)", "from=2026-01-01&to=2026-12-31&period=quarter&format=csv"),
    ] {
        g.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(async {
                    let r = client.get(format!("/api/v1/reports/liability?{query}")).header("X-API-Key", &key).send().await;
                    assert_eq!(r.0.status(), 200);
                    black_box(r.0.into_body().into_string().await.map(|s| s.len()))
                })
            })
        });
    }
    g.finish();
}

criterion_group!(benches, service);
criterion_main!(benches);
