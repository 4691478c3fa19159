//! Criterion benchmarks: one determination on a pre-compiled registry over varied inputs; writing its full
//! calculate body, by the engine's renderer (the hot path) and by the documenting type (`FullCalculation`, what a
//! typed `Json<T>` response would do); and loading + checking + compiling the whole rules/ directory. Baseline in
//! the same run: reading a request body as calculate reads it (checked against `CalculateRequest`'s schema, parsed,
//! and taken into the engine's request), so each cost can be read as a ratio to it.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::NaiveDate;
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use levy::api::schema::calculate::{read_request, FullCalculation};
use levy::engine::render::FullText;
use levy::engine::{self, Input};
use levy::rules::load_dir;
use levy::rules::schema::STATES;
use poem_openapi::types::{ParseFromJSON, ToJSON};
use serde_json::json;

/// The server's allocator (src/main.rs), so that the figures are those of the service.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn inputs() -> Vec<serde_json::Value> {
    let types = ["saas", "digital_good", "consulting", "license", "data_processing", "it_support", "payment_processing_fee"];
    let zips = ["78701", "60601", "10001", "90012", "98101", ""];
    let mut out = vec![];
    for (i, s) in STATES.iter().enumerate() {
        for (k, t) in types.iter().enumerate() {
            out.push(json!({"amount": 100 + i * 7 + k, "buyer_state": s, "buyer_zip": zips[(i + k) % zips.len()], "transaction_type": t,
                "is_b2b": (i + k) % 2 == 0, "role": if k % 3 == 0 { "buyer" } else { "seller" }, "counterparty_id": "bench"}));
        }
    }
    out
}

fn bench(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("rules");
    let reg = load_dir(&dir).0.expect("rules check clean");
    let bodies = inputs();
    let requests: Vec<_> = bodies.iter().filter_map(|b| read_request(b).ok()).collect();
    let nexus: BTreeMap<usize, bool> = (0..STATES.len()).map(|i| (i, i % 2 == 0)).collect();
    let as_of = NaiveDate::from_ymd_opt(2026, 6, 1).unwrap_or_default();

    let mut i = 0;
    c.bench_function("baseline: read one request (api::schema::calculate::read_request)", |b| {
        b.iter(|| {
            i = (i + 1) % bodies.len();
            black_box(read_request(&bodies[i]).ok())
        })
    });
    let mut k = 0;
    c.bench_function("determine one request (pre-compiled registry)", |b| {
        b.iter(|| {
            k = (k + 1) % requests.len();
            black_box(engine::determine(&reg, &Input { request: &requests[k], nexus: Some(&nexus), vendor_ytd: None, as_of }).ok())
        })
    });
    // The full body, as calculate sends it: the renderer writes it from the determination; the typed path is
    // timed from a `FullCalculation` already built (parsed from the renderer's text), so it is the least that
    // path costs: building the struct from the determination would come on top.
    let dets: Vec<_> = requests
        .iter()
        .filter_map(|r| engine::determine(&reg, &Input { request: r, nexus: Some(&nexus), vendor_ytd: None, as_of }).ok())
        .collect();
    let extra = [
        ("transaction_id", "tx_0001"),
        ("timestamp", "2026-06-01T12:00:00.000Z"),
        ("entity_id", "ent_1"),
        ("mode", "live"),
        ("api_version", "v2"),
    ];
    let text = |d: &engine::Determination| FullText::new(d).with(d, d.tracking_1099.as_ref(), &d.advisories, &extra);
    let typed: Vec<FullCalculation> =
        dets.iter().filter_map(|d| FullCalculation::parse_from_json(serde_json::from_str(&text(d)).ok()).ok()).collect();
    assert_eq!(typed.len(), dets.len(), "every body parses as FullCalculation");
    let mut g = c.benchmark_group("calculate body");
    let mut j = 0;
    g.bench_function("renderer: text member by member", |b| {
        b.iter(|| {
            j = (j + 1) % dets.len();
            black_box(text(&dets[j]))
        })
    });
    let mut j = 0;
    g.bench_function("typed: FullCalculation written by poem-openapi (built beforehand)", |b| {
        b.iter(|| {
            j = (j + 1) % typed.len();
            black_box(typed[j].to_json().map(|v| v.to_string()))
        })
    });
    g.finish();
    let mut g = c.benchmark_group("registry");
    g.sample_size(20);
    g.bench_function("load + check + compile rules/", |b| b.iter(|| black_box(load_dir(&dir).0.is_some())));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
