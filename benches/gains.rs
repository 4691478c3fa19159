//! Criterion benchmarks of the gains tracker, each beside a baseline measured in the same run.
//!
//! Engine (pure):
//! - a FIFO and a LIFO sell against an asset with 100,000 open lots; baseline: one pass summing the
//!   remaining quantity of all 100,000 lots (what a sell that loaded or scanned every lot would at
//!   least cost);
//! - rendering the draft 1099-DA of 100,000 dispositions; baseline: serde_json serialising the
//!   same 100,000 rows as plain structs.
//!
//! Service (HTTP through the poem app, SQLite file in a temp dir):
//! - POST /api/v1/trades, a FIFO sell, with 100,000 open lots of the asset; baseline: GET /api/v1/health;
//! - GET /api/v1/export/1099-da for a year of 100,000 dispositions.

use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveDate, Utc};
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use levy::api::{app, AppState};
use levy::clock::Clock;
use levy::config::{sqlite_url, Limits};
use levy::gains::form1099da::{render, Disposition};
use levy::gains::{match_sell, Lot, Term};
use levy::rules::load_dir;
use levy::security::DataKey;
use levy::store::entity::{disposition, lot, position};
use levy::store::Store;
use poem::test::TestClient;
use poem::EndpointExt;
use rust_decimal::Decimal;
use sea_orm::{EntityTrait, IntoActiveModel, TransactionTrait};
use serde::Serialize;

const N: usize = 100_000;

fn start() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2025-01-01T00:00:00Z").unwrap().with_timezone(&Utc)
}

fn lots() -> Vec<Lot> {
    (0..N)
        .map(|i| {
            let at = start() + Duration::minutes(i as i64);
            Lot {
                id: format!("lot_{i:06}"),
                acquired_at: at,
                holding_start: at.date_naive(),
                remaining_quantity: Decimal::new(150_000_000, 8),
                remaining_basis: Decimal::new(15_075 + i as i64, 2),
            }
        })
        .collect()
}

fn dispositions() -> Vec<Disposition> {
    (0..N)
        .map(|i| Disposition {
            id: format!("dsp_{i:06}"),
            trade_id: format!("trd_{i:06}"),
            lot_id: format!("lot_{i:06}"),
            asset_symbol: "BTC".into(),
            asset_name: Some("Bitcoin".into()),
            asset_class: Some("crypto".into()),
            exchange: Some("Example Exchange".into()),
            quantity: Decimal::new(12_345_678, 8),
            acquired: NaiveDate::from_ymd_opt(2025, 1, 1).unwrap(),
            sold: NaiveDate::from_ymd_opt(2026, 1 + (i % 12) as u32, 1).unwrap(),
            proceeds: Decimal::new(1_000_000 + i as i64, 2),
            cost_basis: Decimal::new(900_000 + i as i64, 2),
            wash_sale_disallowed: Decimal::ZERO,
            term: if i % 3 == 0 { Term::LongTerm } else { Term::ShortTerm },
        })
        .collect()
}

#[derive(Serialize)]
struct PlainRow<'a> {
    id: &'a str,
    trade_id: &'a str,
    lot_id: &'a str,
    asset_symbol: &'a str,
    quantity: String,
    acquired: String,
    sold: String,
    proceeds: String,
    cost_basis: String,
    term: &'static str,
}

fn engine(c: &mut Criterion) {
    let book = lots();
    let sold = NaiveDate::from_ymd_opt(2026, 6, 1).unwrap();
    let q = Decimal::new(400_000_000, 8); // 4 units: three lots of 1.5
    let proceeds = Decimal::new(4_000_000, 2); // 40,000.00
    let mut g = c.benchmark_group("gains engine, 100,000 open lots");
    g.bench_function("baseline: scan all lots (sum remaining quantity)", |b| {
        b.iter(|| black_box(book.iter().map(|l| l.remaining_quantity).sum::<Decimal>()))
    });
    g.bench_function("FIFO sell of 4 units", |b| b.iter(|| black_box(match_sell(book.iter(), q, proceeds, sold, 12).map(|v| v.len()))));
    g.bench_function("LIFO sell of 4 units", |b| {
        b.iter(|| black_box(match_sell(book.iter().rev(), q, proceeds, sold, 12).map(|v| v.len())))
    });
    g.finish();

    let rows = dispositions();
    let mut g = c.benchmark_group("1099-DA, 100,000 dispositions");
    g.sample_size(10);
    g.bench_function("baseline: serde_json of the plain rows", |b| {
        b.iter(|| {
            let plain: Vec<PlainRow> = rows
                .iter()
                .map(|d| PlainRow {
                    id: &d.id,
                    trade_id: &d.trade_id,
                    lot_id: &d.lot_id,
                    asset_symbol: &d.asset_symbol,
                    quantity: d.quantity.to_string(),
                    acquired: d.acquired.to_string(),
                    sold: d.sold.to_string(),
                    proceeds: d.proceeds.to_string(),
                    cost_basis: d.cost_basis.to_string(),
                    term: d.term.name(),
                })
                .collect();
            black_box(serde_json::to_string(&plain).map(|s| s.len()))
        })
    });
    g.bench_function("render the draft", |b| {
        b.iter(|| black_box(render(2026, "2026-11-21T00:00:00Z", "{}", "{}", rows.iter().cloned()).0.len()))
    });
    g.finish();
}

/// An app on a fresh SQLite file with one account, its key, 100,000 open BTC lots and 100,000 dispositions in 2025.
async fn seeded() -> (TestClient<poem::endpoint::BoxEndpoint<'static>>, String, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::connect(&sqlite_url(&dir.path().join("bench.db"))).await.unwrap();
    store.migrate().await.unwrap();
    let registry = Arc::new(load_dir(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rules")).0.expect("rules check clean"));
    let clock = Clock::fixed(DateTime::parse_from_rfc3339("2026-11-21T10:00:00Z").unwrap().with_timezone(&Utc));
    let limits = Limits { burst_per_minute: i64::MAX / 4, ..Limits::default() };
    let state = Arc::new(AppState::new(store, registry, clock, limits, DataKey::from_hex(&"ab".repeat(32)).unwrap()));
    let client = TestClient::new(app(state.clone(), true).boxed());
    let signup = client
        .post("/api/v1/auth/signup")
        .body_json(&serde_json::json!({"email": "bench@example.com", "password": "benchmark-pw", "agent_name": "bench", "agent_work_type": "trading"}))
        .send()
        .await;
    let body: serde_json::Value = serde_json::from_str(&signup.0.into_body().into_string().await.unwrap()).unwrap();
    let key = body["api_key"]["key"].as_str().unwrap().to_string();
    let me = client.get("/api/v1/keys").header("X-API-Key", &key).send().await;
    let _ = me.0.into_body().into_string().await;
    let entity_id = {
        use sea_orm::{ColumnTrait, QueryFilter};
        levy::store::entity::entity::Entity::find()
            .filter(levy::store::entity::entity::Column::Email.eq("bench@example.com"))
            .one(&state.store.db)
            .await
            .unwrap()
            .unwrap()
            .id
    };
    let db = &state.store.db;
    let txn = db.begin().await.unwrap();
    for chunk in (0..N).collect::<Vec<_>>().chunks(500) {
        let rows = chunk.iter().map(|&i| {
            let at = start() + Duration::minutes(i as i64);
            lot::Model {
                id: format!("lot_{i:06}"),
                entity_id: entity_id.clone(),
                asset_symbol: "BTC".into(),
                trade_id: format!("trd_{i:06}"),
                acquired_at: at.timestamp_millis(),
                holding_start: at.date_naive().to_string(),
                quantity: "1.5".into(),
                cost_basis: "150.75".into(),
                remaining_quantity: "1.5".into(),
                remaining_basis: "150.75".into(),
                open: true,
                wash_adjustment: "0".into(),
                replacement_for: None,
                split_from: None,
                created_at: 0,
            }
            .into_active_model()
        });
        lot::Entity::insert_many(rows).exec_without_returning(&txn).await.unwrap();
        let rows = chunk.iter().map(|&i| {
            disposition::Model {
                id: format!("dsp_{i:06}"),
                entity_id: entity_id.clone(),
                trade_id: format!("trs_{i:06}"),
                lot_id: format!("old_{i:06}"),
                asset_symbol: "ETH".into(),
                asset_name: Some("Ether".into()),
                asset_class: Some("crypto".into()),
                exchange: None,
                quantity: "0.12345678".into(),
                acquired_at: start().timestamp_millis(),
                holding_start: "2025-01-01".into(),
                sold_at: (start() + Duration::minutes(i as i64)).timestamp_millis(),
                tax_year: 2025,
                proceeds: "100.5".into(),
                cost_basis: "90.25".into(),
                term: "short_term".into(),
                holding_days: 1,
                wash_applicable: false,
                wash_disallowed: "0".into(),
                wash_open: false,
                wash_open_quantity: "0".into(),
                wash_open_loss: "0".into(),
                replacements: "[]".into(),
            }
            .into_active_model()
        });
        disposition::Entity::insert_many(rows).exec_without_returning(&txn).await.unwrap();
    }
    let held = Decimal::new(15, 1) * Decimal::from(N as i64);
    let pos = position::Model {
        entity_id: entity_id.clone(),
        asset_symbol: "BTC".into(),
        asset_class: Some("crypto".into()),
        asset_name: None,
        held_quantity: held.to_string(),
        open_lots: N as i64,
        remaining_basis: (Decimal::new(15075, 2) * Decimal::from(N as i64)).to_string(),
        realized_short_term: "0".into(),
        realized_long_term: "0".into(),
        wash_disallowed: "0".into(),
        buys: N as i64,
        sells: 0,
        last_sell_at: None,
        updated_at: 0,
        version: 0,
    };
    position::Entity::insert(pos.into_active_model()).exec_without_returning(&txn).await.unwrap();
    txn.commit().await.unwrap();
    (client, key, dir)
}

fn service(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (client, key, _dir) = rt.block_on(seeded());
    let sell = serde_json::json!({"asset_symbol": "BTC", "trade_type": "sell", "quantity": "0.5", "price_per_unit": 120});
    let mut g = c.benchmark_group("service on SQLite, 100,000 open lots / dispositions");
    g.sample_size(20);
    g.bench_function("baseline: GET /api/v1/health", |b| {
        b.iter(|| rt.block_on(async { black_box(client.get("/api/v1/health").send().await.0.status()) }))
    });
    g.bench_function("POST /api/v1/trades (FIFO sell of 0.5)", |b| {
        b.iter(|| {
            rt.block_on(async {
                let r = client.post("/api/v1/trades").header("X-API-Key", &key).body_json(&sell).send().await;
                assert_eq!(r.0.status(), 201);
                black_box(r.0.into_body().into_string().await.map(|s| s.len()))
            })
        })
    });
    g.sample_size(10);
    g.bench_function("GET /api/v1/export/1099-da (100,000 dispositions)", |b| {
        b.iter(|| {
            rt.block_on(async {
                let r = client.get("/api/v1/export/1099-da?year=2025").header("X-API-Key", &key).send().await;
                assert_eq!(r.0.status(), 200);
                black_box(r.0.into_body().into_string().await.map(|s| s.len()))
            })
        })
    });
    g.finish();
}

criterion_group!(benches, engine, service);
criterion_main!(benches);
