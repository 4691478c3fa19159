//! Fuzzing with proptest: the rule-file reader, the rules' expression parser, the calculate and trade request
//! parsers (with the engine and renderer behind them) and the HTTP bodies of calculate, ingest and trades, each
//! fed mutations of real inputs: the files of rules/, the scenario cases' requests, and the committed corpus in
//! tests/fuzz/ (edge cases, and any input that once failed). Nothing may panic or hang; HTTP never answers 500.
//!
//! Each target runs for LEVY_FUZZ_SECONDS (default 3; `.ci/run` gives each 6 s) with a random seed,
//! printed first; a failure prints its input, shrunk. Add it to tests/fuzz/ so that it is tried every run.

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use chrono::NaiveDate;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRng, TestRunner};
use serde_json::{json, Map, Value};

use levy::engine::{self, render};
use levy::rules::diag::{SourceMap, Span};
use levy::rules::parse::{self, ExprSource};
use levy::rules::{cases, load::load_dir_with, Registry};

/// A case that takes longer fails (proptest's own check, made when the case returns).
const MAX_CASE_MS: u32 = 10_000;

fn budget() -> Duration {
    Duration::from_secs_f64(std::env::var("LEVY_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3.0))
}

/// Runs `test` on values of `strategy` until the time budget is spent; on a failure, panics with the shrunk input.
fn fuzz<S: Strategy>(target: &str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let seed: [u8; 32] = rand_seed();
    eprintln!("fuzz {target}: seed {}", hex(&seed));
    let config = Config { failure_persistence: None, timeout: MAX_CASE_MS, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &seed));
    let (started, mut cases) = (Instant::now(), 0u64);
    while started.elapsed() < budget() {
        let case = strategy.new_tree(&mut runner).unwrap_or_else(|e| panic!("fuzz {target}: {e}"));
        if let Err(e) = runner.run_one(case, &test) {
            panic!("fuzz {target} (seed {}): {e}", hex(&seed));
        }
        cases += 1;
    }
    eprintln!("fuzz {target}: {cases} cases in {:?}", started.elapsed());
    assert!(cases > 0);
}

fn rand_seed() -> [u8; 32] {
    match std::env::var("LEVY_FUZZ_SEED") {
        Ok(h) => {
            let mut seed = [0u8; 32];
            for (i, b) in seed.iter_mut().enumerate() {
                *b = h.get(2 * i..2 * i + 2).and_then(|x| u8::from_str_radix(x, 16).ok()).unwrap_or(0);
            }
            seed
        }
        Err(_) => {
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
            let mut seed = [0u8; 32];
            seed[..16].copy_from_slice(&nanos.to_le_bytes());
            seed[16..20].copy_from_slice(&std::process::id().to_le_bytes());
            seed
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn corpus(kind: &str) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz").join(kind);
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())).map(|e| e.unwrap().path()).collect();
    files.sort();
    files.iter().map(|p| std::fs::read(p).unwrap()).collect()
}

// ---- byte mutations --------------------------------------------------------------------------------------------

/// Pieces that mean something to YAML, the rules' expressions or JSON, to splice in.
const TOKENS: &[&str] = &[
    "\n",
    "\n  ",
    "\n    - ",
    ": ",
    "- ",
    "{",
    "}",
    "[",
    "]",
    ",",
    "\"",
    "'",
    "#",
    "&a ",
    "*a",
    "!!str ",
    "<<: ",
    "---\n",
    "...\n",
    "|\n",
    ">-\n",
    "when: ",
    "then: ",
    "from: ",
    "to: ",
    "id: ",
    "cite: ",
    " and ",
    " or ",
    "not ",
    " in ",
    " == ",
    " != ",
    "{a, b}",
    "taxable",
    "exempt",
    " on 80% of base",
    "category",
    "is_b2b",
    "null",
    "true",
    "false",
    "0",
    "-1",
    "1e999",
    "-0.0",
    "5e-324",
    "99999999999999999999999",
    "2026-02-30",
    "2026-13-01",
    "9999-12-31",
    "\t",
    "\r\n",
    "\u{0}",
    "\u{feff}",
    "é",
    "ß",
    "🙂",
    "\u{202e}",
    "\\",
    "\\u0000",
    "%",
    "%%",
];

#[derive(Clone, Debug)]
enum Edit {
    Delete { at: usize, len: usize },
    Insert { at: usize, bytes: Vec<u8> },
    Token { at: usize, token: usize },
    Copy { from: usize, len: usize, to: usize },
    Truncate { at: usize },
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        3 => (any::<usize>(), 1usize..64).prop_map(|(at, len)| Edit::Delete { at, len }),
        2 => (any::<usize>(), prop::collection::vec(any::<u8>(), 1..8)).prop_map(|(at, bytes)| Edit::Insert { at, bytes }),
        4 => (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, token)| Edit::Token { at, token }),
        2 => (any::<usize>(), 1usize..200, any::<usize>()).prop_map(|(from, len, to)| Edit::Copy { from, len, to }),
        1 => any::<usize>().prop_map(|at| Edit::Truncate { at }),
    ]
}

fn mutated(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for e in edits {
        let n = b.len().max(1);
        match e {
            Edit::Delete { at, len } => {
                let at = at % n;
                let end = (at + len).min(b.len());
                if at < end {
                    b.drain(at..end);
                }
            }
            Edit::Insert { at, bytes } => {
                let at = (at % n).min(b.len());
                b.splice(at..at, bytes.iter().copied());
            }
            Edit::Token { at, token } => {
                let at = (at % n).min(b.len());
                b.splice(at..at, TOKENS[*token].bytes());
            }
            Edit::Copy { from, len, to } => {
                let from = from % n;
                let piece: Vec<u8> = b.iter().skip(from).take(*len).copied().collect();
                let to = (to % n).min(b.len());
                b.splice(to..to, piece);
            }
            Edit::Truncate { at } => b.truncate(at % n),
        }
    }
    b
}

/// A seed chosen from `seeds`, mutated.
fn mutations(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let seeds = Arc::new(seeds);
    (0..seeds.len(), prop::collection::vec(edit(), 0..6)).prop_map(move |(i, edits)| mutated(&seeds[i], &edits))
}

// ---- the rule files ------------------------------------------------------------------------------------------

fn rules_dir() -> PathBuf {
    common::rules_dir()
}

/// Every rule file (relative path, text), the scenario cases excluded.
fn rule_files() -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() && p.file_name().is_some_and(|n| n != "tests") {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|x| x == "yaml") {
                out.push((p.strip_prefix(root).unwrap().to_path_buf(), std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = vec![];
    walk(&rules_dir(), &rules_dir(), &mut out);
    out
}

#[test]
fn fuzz_rule_files() {
    // A directory with the four files every load reads, and one file (any rule file) mutated in its place;
    // loaded as a directory being written (missing jurisdictions are warnings), every diagnostic rendered.
    let files = rule_files();
    let base = ["registry.yaml", "advisories.yaml", "classification.yaml", "federal/information_returns.yaml"];
    let tmp = tempfile::tempdir().unwrap();
    let strategy = (0..files.len(), prop::collection::vec(edit(), 0..6));
    fuzz("rule files", strategy, |(i, edits)| {
        let dir = tmp.path().join("rules");
        let _ = std::fs::remove_dir_all(&dir);
        for f in base {
            let to = dir.join(f);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(rules_dir().join(f), to).unwrap();
        }
        let (path, text) = &files[i];
        let to = dir.join(path);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::write(&to, mutated(text, &edits)).unwrap();
        let (_, diags, sources) = load_dir_with(&dir, true);
        for d in &diags {
            let shown = sources.render(d);
            prop_assert!(!shown.is_empty());
            if let Some(span) = &d.span {
                prop_assert!(span.line >= 1 && span.col >= 1, "{shown}");
            }
        }
        Ok(())
    });
}

/// Every `when:` and `then:` text of the rule files, and the corpus's expressions.
fn expressions() -> Vec<Vec<u8>> {
    let mut out = corpus("expressions");
    for (_, text) in rule_files() {
        for line in String::from_utf8_lossy(&text).lines() {
            let line = line.trim_start().trim_start_matches("- ");
            for key in ["when: ", "then: ", "sourcing: "] {
                if let Some(rest) = line.strip_prefix(key) {
                    out.push(rest.as_bytes().to_vec());
                }
            }
        }
    }
    out
}

#[test]
fn fuzz_rule_expressions() {
    let seeds = expressions();
    assert!(seeds.len() > 300, "{} expressions", seeds.len());
    fuzz("rule expressions", mutations(seeds), |bytes| {
        let text = String::from_utf8_lossy(&bytes);
        let src = ExprSource {
            text: &text,
            span: Span::new(&Arc::from("fuzz.yaml"), 3, 11, u32::try_from(text.chars().count()).unwrap_or(u32::MAX)),
        };
        let mut sources = SourceMap::default();
        sources.add(&Arc::from("fuzz.yaml"), &format!("a:\n  b:\n    when: {text}\n"));
        for diags in [parse::condition(&src).err(), parse::tax_outcome(&src).err(), parse::sourcing(&src).err()].into_iter().flatten() {
            for d in &diags {
                prop_assert!(!sources.render(d).is_empty());
            }
        }
        Ok(())
    });
}

// ---- requests ---------------------------------------------------------------------------------------------------

fn registry() -> Arc<Registry> {
    static REG: OnceLock<Arc<Registry>> = OnceLock::new();
    REG.get_or_init(|| Arc::new(levy::server::load_rules(&rules_dir()).expect("rules load"))).clone()
}

/// The scenario cases' requests, with their dates and nexus, and the corpus's requests.
fn calculate_seeds() -> Vec<(Value, NaiveDate, Vec<usize>)> {
    let mut sources = SourceMap::default();
    let (cases, _) = cases::load_cases(&rules_dir(), &mut sources);
    let day = NaiveDate::from_ymd_opt(2026, 3, 1).unwrap();
    let mut out: Vec<_> = cases.into_iter().map(|c| (c.request, c.as_of, c.nexus.unwrap_or_default())).collect();
    out.extend(corpus("requests").iter().filter_map(|b| serde_json::from_slice(b).ok()).map(|v| (v, day, vec![])));
    out
}

/// JSON values that probe the parsers' edges: numbers too large, too small, negative, fractional; strings
/// empty, long, odd; nested arrays and objects.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(|f| json!(f)),
        prop::sample::select(vec!["0", "-0", "1e308", "5e-324", "100000000", "100000000.01", "0.001", "12345678901234567890123", "-1"])
            .prop_map(|n| serde_json::from_str::<Value>(n).unwrap()),
        ".{0,40}".prop_map(Value::String),
        prop::sample::select(vec![
            "TX",
            "tx",
            "CA",
            "NY",
            "DC",
            "ZZ",
            "78701",
            "7870",
            "2026-03-01",
            "2026-02-30T25:00:00Z",
            "saas",
            "compute",
            "seller",
            "buyer",
            "crypto",
            "BTC",
            "buy",
            "sell",
            "full",
            "technical"
        ])
        .prop_map(|s| Value::String(s.into())),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,12}", inner, 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

#[derive(Clone, Debug)]
enum JsonEdit {
    Set { pick: usize, value: Value },
    Remove { pick: usize },
    Add { key: usize, value: Value },
}

fn json_edit(keys: usize) -> impl Strategy<Value = JsonEdit> {
    prop_oneof![
        3 => (any::<usize>(), json_value()).prop_map(|(pick, value)| JsonEdit::Set { pick, value }),
        1 => any::<usize>().prop_map(|pick| JsonEdit::Remove { pick }),
        2 => (0..keys, json_value()).prop_map(|(key, value)| JsonEdit::Add { key, value }),
    ]
}

/// Paths to every member of `v` (objects' keys, nested).
fn member_paths(v: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    if let Value::Object(m) = v {
        for (k, x) in m {
            prefix.push(k.clone());
            out.push(prefix.clone());
            member_paths(x, prefix, out);
            prefix.pop();
        }
    }
}

fn object_at<'a>(v: &'a mut Value, path: &[String]) -> Option<&'a mut Map<String, Value>> {
    let mut cur = v;
    for k in path {
        cur = cur.as_object_mut()?.get_mut(k)?;
    }
    cur.as_object_mut()
}

fn apply_json(seed: &Value, edits: &[JsonEdit], keys: &[String]) -> Value {
    let mut v = seed.clone();
    for e in edits {
        let mut paths = vec![];
        member_paths(&v, &mut vec![], &mut paths);
        let picked = match e {
            JsonEdit::Set { pick, .. } | JsonEdit::Remove { pick } if !paths.is_empty() => Some(&paths[pick % paths.len()]),
            _ => None,
        };
        match (e, picked.and_then(|p| p.split_last())) {
            (JsonEdit::Set { value, .. }, Some((last, parent))) => {
                if let Some(slot) = object_at(&mut v, parent).and_then(|o| o.get_mut(last)) {
                    *slot = value.clone();
                }
            }
            (JsonEdit::Remove { .. }, Some((last, parent))) => {
                if let Some(o) = object_at(&mut v, parent) {
                    o.remove(last);
                }
            }
            (JsonEdit::Add { key, value }, _) => {
                if let Some(o) = v.as_object_mut() {
                    o.insert(keys[*key].clone(), value.clone());
                }
            }
            _ => {}
        }
    }
    v
}

/// Every key name the seeds use, at any depth.
fn key_names(seeds: &[Value]) -> Vec<String> {
    let mut keys = std::collections::BTreeSet::new();
    for s in seeds {
        let mut paths = vec![];
        member_paths(s, &mut vec![], &mut paths);
        keys.extend(paths.into_iter().filter_map(|p| p.last().cloned()));
    }
    keys.into_iter().collect()
}

#[test]
fn fuzz_calculate_requests() {
    // Parsed, determined on the registry, and rendered full and demo: every accepted request gives JSON.
    let reg = registry();
    let seeds = Arc::new(calculate_seeds());
    assert!(seeds.len() >= 300, "{} seeds", seeds.len());
    let requests: Vec<Value> = seeds.iter().map(|s| s.0.clone()).collect();
    let keys = Arc::new(key_names(&requests));
    let strategy = (0..seeds.len(), prop::collection::vec(json_edit(keys.len()), 0..5));
    fuzz("calculate requests", strategy, |(i, edits)| {
        let (seed, as_of, nexus) = &seeds[i];
        let body = apply_json(seed, &edits, &keys);
        let Ok(req) = levy::api::schema::calculate::read_request(&body) else { return Ok(()) };
        let nexus: std::collections::BTreeMap<usize, bool> = nexus.iter().map(|s| (*s, true)).collect();
        let nexus = req.nexus_override.clone().unwrap_or(nexus);
        if let Ok(det) = engine::determine(&reg, &engine::Input { request: &req, nexus: Some(&nexus), vendor_ytd: None, as_of: *as_of }) {
            prop_assert!(render::full(&det).is_object(), "full body of {body}");
            let demo: Value = serde_json::from_str(&render::demo(&det, &[], None))
                .map_err(|e| TestCaseError::fail(format!("demo body of {body}: {e}")))?;
            prop_assert!(demo.is_object());
        }
        Ok(())
    });
}

fn trade_seeds() -> Vec<Value> {
    corpus("trades").iter().map(|b| serde_json::from_slice(b).unwrap()).collect()
}

#[test]
fn fuzz_trade_requests() {
    let seeds = Arc::new(trade_seeds());
    let keys = Arc::new(key_names(&seeds));
    let strategy = (0..seeds.len(), prop::collection::vec(json_edit(keys.len()), 0..5));
    fuzz("trade requests", strategy, |(i, edits)| {
        let body = apply_json(&seeds[i], &edits, &keys);
        // The document's check and the typed parse agree: a body the check passes always parses (never a 500),
        // and one it refuses is refused with every problem named.
        use levy::api::{conform, schema::gains::TradeBody};
        let mut checked = body.clone();
        let problems = conform::contract::<TradeBody>().check(&mut checked);
        let parsed = conform::parse::<TradeBody>(body.clone());
        prop_assert_eq!(problems.is_empty(), parsed.is_ok(), "check and typed parse disagree on {}: {:?}", body, problems);
        Ok(())
    });
}
