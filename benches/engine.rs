//! Criterion benchmarks: one determination on a pre-compiled registry over varied inputs, and
//! loading + checking + compiling the whole rules/ directory. Baseline in the same run: parsing
//! the request alone, so the determination's cost can be read as a ratio to it.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::NaiveDate;
use criterion::{black_box, criterion_group, criterion_main, Criterion};
use levy::engine::{self, Input};
use levy::rules::load_dir;
use levy::rules::schema::STATES;
use serde_json::json;

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
    let requests: Vec<_> = bodies.iter().filter_map(|b| engine::parse_request(b).ok()).collect();
    let nexus: BTreeMap<usize, bool> = (0..STATES.len()).map(|i| (i, i % 2 == 0)).collect();
    let as_of = NaiveDate::from_ymd_opt(2026, 6, 1).unwrap_or_default();

    let mut i = 0;
    c.bench_function("baseline: parse one request", |b| {
        b.iter(|| {
            i = (i + 1) % bodies.len();
            black_box(engine::parse_request(&bodies[i]).ok())
        })
    });
    let mut k = 0;
    c.bench_function("determine one request (pre-compiled registry)", |b| {
        b.iter(|| {
            k = (k + 1) % requests.len();
            black_box(engine::determine(&reg, &Input { request: &requests[k], nexus: Some(&nexus), vendor_ytd: None, as_of }).ok())
        })
    });
    let mut g = c.benchmark_group("registry");
    g.sample_size(20);
    g.bench_function("load + check + compile rules/", |b| b.iter(|| black_box(load_dir(&dir).0.is_some())));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
