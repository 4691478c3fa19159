//! `GET /metrics`, `/livez` and `/readyz`. The exposition is parsed by the official Prometheus client's parser (PyPI
//! `prometheus-client`, in the venv named by LEVY_X402_VENV, which .ci/run creates), and every counter is checked
//! against the calls the test made: each instance has metrics of its own, so the counts are exact.

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::{json, Value};

use crate::harness::{Backend, TestApp};
use crate::{on_both, on_each_backend};

const TOKEN: &str = "scrape-token-7f3a";

/// One sample of the parsed exposition.
#[derive(Debug, Clone)]
struct Sample {
    name: String,
    labels: BTreeMap<String, String>,
    value: f64,
}

/// A family's name, type and help, as the parser reads them.
type Head = (String, String, String);

/// The exposition as the official parser reads it: (family name, type, help) and every sample. `None`, with the
/// reason printed, when the parser's venv is missing outside CI; in CI (CI set) a missing venv fails the test.
fn parse(text: &str) -> Option<(Vec<Head>, Vec<Sample>)> {
    let venv = std::env::var("LEVY_X402_VENV").unwrap_or_else(|_| format!("{}/target/x402-venv", env!("CARGO_MANIFEST_DIR")));
    let python = format!("{venv}/bin/python");
    let has_parser = std::path::Path::new(&python).exists()
        && Command::new(&python).args(["-c", "import prometheus_client"]).status().is_ok_and(|s| s.success());
    if !has_parser {
        let how = format!(
            "python3 -m venv {venv} && {venv}/bin/pip install 'prometheus-client==0.26.0' (as .ci/run does; LEVY_X402_VENV names the venv)"
        );
        assert!(std::env::var("CI").is_err(), "the metrics tests need prometheus-client in the venv at {venv}: {how}");
        eprintln!("SKIPPED: no prometheus-client parser at {venv}: {how}");
        return None;
    }
    let mut child = Command::new(&python)
        .arg(format!("{}/tests/metrics/parse.py", env!("CARGO_MANIFEST_DIR")))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the parser refused the exposition: {}\n{text}", String::from_utf8_lossy(&out.stderr));
    let families: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut heads = Vec::new();
    let mut samples = Vec::new();
    for f in &families {
        heads.push((
            f["name"].as_str().unwrap().to_string(),
            f["type"].as_str().unwrap().to_string(),
            f["help"].as_str().unwrap().to_string(),
        ));
        for s in f["samples"].as_array().unwrap() {
            let labels = s["labels"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect();
            samples.push(Sample { name: s["name"].as_str().unwrap().into(), labels, value: s["value"].as_f64().unwrap_or(f64::INFINITY) });
        }
    }
    Some((heads, samples))
}

/// The value of the sample named `name` whose labels include `labels` (0 when there is none: a series not yet
/// counted is absent).
fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<&Sample> =
        samples.iter().filter(|s| s.name == name && labels.iter().all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))).collect();
    assert!(found.len() <= 1, "{name} {labels:?} matches several series: {found:?}");
    found.first().map_or(0.0, |s| s.value)
}

async fn scrape(app: &TestApp) -> String {
    let r = app.request("GET", "/metrics", None, &[("Authorization", &format!("Bearer {TOKEN}"))], None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("content-type").as_deref(), Some("text/plain; version=0.0.4; charset=utf-8"));
    r.text
}

async fn with_token(backend: Backend) -> Option<TestApp> {
    TestApp::start_configured(backend, |s| s.with_metrics_token(Some(TOKEN))).await
}

fn calculate_body() -> Value {
    json!({"amount": "100.50", "buyer_state": "TX", "buyer_zip": "75201", "counterparty_id": "vendor-1"})
}

/// A known sequence of calls, and the exposition after it: every counter moved by exactly the calls made, the
/// histograms count the same requests, no label value is a path, key, id or ZIP, and the parser reads it all.
async fn counters_move_by_the_calls_made(backend: Backend) {
    let Some(app) = with_token(backend).await else { return };
    let acct = app.signup("metrics@example.com").await;
    let body = calculate_body();
    for _ in 0..2 {
        let r = app.post("/api/v1/calculate", Some(&acct.key), &body).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    let r = app.post("/api/v1/calculate", Some(&acct.key), &json!({"amount": "x"})).await;
    assert_eq!(r.status, 400, "{}", r.text);
    for _ in 0..3 {
        let r = app.request("POST", "/api/v1/calculate", None, &[("X-Forwarded-For", "198.51.100.7")], Some(&body.to_string())).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    assert_eq!(app.get("/api/v1/rates/local?zip=55401", None).await.status, 200);
    assert_eq!(app.get(&format!("/api/v1/keys/{}", acct.prefix), Some(&acct.key)).await.status, 404);
    assert_eq!(app.get("/api/v1/health", None).await.status, 200);
    assert_eq!(app.get("/livez", None).await.status, 200);
    assert_eq!(app.get("/metrics", None).await.status, 401);
    assert_eq!(app.request("GET", "/metrics", None, &[("Authorization", "Bearer wrong")], None).await.status, 401);

    let text = scrape(&app).await;
    let Some((families, samples)) = parse(&text) else { return };
    let http = "levy_http_requests_total";
    let calc = |method: &str, status: &str| value(&samples, http, &[("operation", "calculate"), ("method", method), ("status", status)]);
    assert_eq!(calc("POST", "2xx"), 5.0, "2 keyed and 3 demo answers\n{text}");
    assert_eq!(calc("POST", "4xx"), 1.0, "the invalid body");
    assert_eq!(value(&samples, "levy_http_request_duration_seconds_count", &[("operation", "calculate"), ("status", "2xx")]), 5.0);
    assert_eq!(
        value(&samples, "levy_http_request_duration_seconds_bucket", &[("operation", "calculate"), ("status", "2xx"), ("le", "+Inf")]),
        5.0
    );
    assert_eq!(value(&samples, http, &[("operation", "signup"), ("method", "POST"), ("status", "2xx")]), 1.0);
    assert_eq!(value(&samples, http, &[("operation", "localRates"), ("status", "2xx")]), 1.0, "{text}");
    assert_eq!(value(&samples, http, &[("operation", "unmatched"), ("method", "GET"), ("status", "4xx")]), 1.0);
    assert_eq!(value(&samples, http, &[("operation", "health"), ("status", "2xx")]), 1.0);
    assert_eq!(value(&samples, http, &[("operation", "livez"), ("status", "2xx")]), 1.0);
    assert_eq!(value(&samples, http, &[("operation", "metrics"), ("status", "4xx")]), 2.0);
    // This scrape is counted once it is answered: not in its own exposition.
    assert_eq!(value(&samples, http, &[("operation", "metrics"), ("status", "2xx")]), 0.0);
    let total: f64 = samples.iter().filter(|s| s.name == http).map(|s| s.value).sum();
    assert_eq!(
        total, 13.0,
        "signup, 6 calculate, rates, the unmatched path, health, livez and 2 refused scrapes: every request before this scrape"
    );

    let calcs = "levy_calculations_total";
    assert_eq!(value(&samples, calcs, &[("mode", "live"), ("outcome", "ok")]), 2.0);
    assert_eq!(value(&samples, calcs, &[("mode", "live"), ("outcome", "invalid_input")]), 1.0);
    assert_eq!(value(&samples, calcs, &[("mode", "demo"), ("outcome", "ok")]), 3.0);
    assert_eq!(samples.iter().filter(|s| s.name == calcs).map(|s| s.value).sum::<f64>(), 6.0);

    // The 2 keyed answers were recorded one after the other (each waits for its commit): 2 batches of 1 job, no
    // rerun. The invalid body was refused before any batch.
    assert_eq!(value(&samples, "levy_ledger_batch_jobs_count", &[]), 2.0);
    assert_eq!(value(&samples, "levy_ledger_batch_jobs_sum", &[]), 2.0);
    assert_eq!(value(&samples, "levy_ledger_batch_jobs_bucket", &[("le", "1")]), 2.0);
    assert_eq!(value(&samples, "levy_ledger_batch_commit_seconds_count", &[]), 2.0);
    assert_eq!(value(&samples, "levy_ledger_batch_reruns_total", &[]), 0.0);
    assert_eq!(value(&samples, "levy_db_acquire_seconds_count", &[]), 2.0);

    let backend_name = if backend == Backend::Postgres { "postgres" } else { "sqlite" };
    assert_eq!(value(&samples, "levy_db_backend_info", &[("backend", backend_name)]), 1.0);
    assert_eq!(value(&samples, "levy_build_info", &[("version", env!("CARGO_PKG_VERSION"))]), 1.0);
    let rules = &app.state.registry;
    let jurisdictions = rules.all_jurisdictions().count().to_string();
    assert_eq!(
        value(
            &samples,
            "levy_rules_info",
            &[("rules_version", &rules.version), ("engine_version", &rules.engine_version), ("jurisdictions", &jurisdictions)]
        ),
        1.0
    );
    assert_eq!(jurisdictions, "51");
    assert!(samples.iter().any(|s| s.name == "levy_db_connections" && s.labels["pool"] == "main" && s.labels["state"] == "idle"));

    // Every family is one levy declares, with its type and help; every label value is from a closed list.
    for (name, kind, help) in &families {
        let declared = levy::metrics::FAMILIES
            .iter()
            .find(|f| f.name == name || f.name.strip_suffix("_total") == Some(name))
            .unwrap_or_else(|| panic!("{name} is not declared in levy::metrics::FAMILIES"));
        assert_eq!(kind, declared.kind.as_str(), "{name}");
        assert_eq!(help, declared.help, "{name}");
    }
    let spec: Value = serde_json::from_str(&app.get("/api/v1/openapi.json", None).await.text).unwrap();
    let mut operations: Vec<String> =
        vec!["docs", "openapi", "metrics", "livez", "readyz", "unmatched"].into_iter().map(String::from).collect();
    for item in spec["paths"].as_object().unwrap().values() {
        operations.extend(item.as_object().unwrap().values().filter_map(|op| op["operationId"].as_str().map(String::from)));
    }
    let secrets = [acct.key.as_str(), acct.prefix.as_str(), acct.entity_id.as_str(), "55401", "75201", "198.51.100.7", "/api/v1"];
    for s in &samples {
        for (label, v) in &s.labels {
            assert!(!secrets.iter().any(|x| v.contains(x)), "{} has {label}={v}", s.name);
            if label == "operation" {
                assert!(operations.contains(v), "{} has operation={v}, which is no operation", s.name);
            }
        }
    }
}

/// Without a token or a listener of its own, `/metrics` is not served on the public port.
async fn metrics_are_closed_by_default(app: TestApp) {
    let r = app.get("/metrics", None).await;
    assert_eq!(r.status, 404, "{}", r.text);
    assert_eq!(r.code(), "RESOURCE_NOT_FOUND");
    let r = app.request("GET", "/metrics", None, &[("Authorization", "Bearer anything")], None).await;
    assert_eq!(r.status, 404);
    // The metrics listener's app (LEVY_METRICS_BIND) serves the exposition without a token, and nothing else.
    let listener = poem::test::TestClient::new(levy::api::operate::metrics_app(app.state.clone()));
    let resp = listener.get("/metrics").send().await;
    resp.assert_status_is_ok();
    let text = resp.0.into_body().into_string().await.unwrap();
    assert!(text.contains("# TYPE levy_build_info gauge"), "{text}");
    listener.get("/api/v1/health").send().await.assert_status(poem::http::StatusCode::NOT_FOUND);
}

/// `/livez` answers; `/readyz` checks the database, the migrations and the rules.
async fn live_and_ready(app: TestApp) {
    let r = app.get("/livez", None).await;
    assert_eq!((r.status, r.json["status"].as_str()), (200, Some("live")));
    let r = app.get("/readyz", None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["checks"], json!({"database": "ok", "migrations": "ok", "rules": "ok"}));
    assert_eq!(r.json["jurisdictions"], 51);
    assert_eq!(r.header("cache-control").as_deref(), Some("no-store"));
}

on_each_backend!(counters_move_by_the_calls_made);
on_both!(metrics_are_closed_by_default, live_and_ready);

/// A migration of this build missing from the database: not ready, and the check says how many.
async fn not_ready_while_a_migration_is_pending(app: TestApp) {
    use sea_orm::ConnectionTrait;
    let last = last_migration();
    let sql = format!("DELETE FROM seaql_migrations WHERE version = '{last}'");
    app.state.store.db.execute_unprepared(&sql).await.unwrap();
    let r = app.get("/readyz", None).await;
    assert_eq!(r.status, 503, "{}", r.text);
    assert_eq!(r.json["checks"]["migrations"], "1 pending");
    assert_eq!(r.json["status"], "not ready");
}

/// The name of the last migration of this build.
fn last_migration() -> String {
    use levy_migrations::{Migrator, MigratorTrait};
    Migrator::migrations().last().map(|m| m.name().to_string()).unwrap()
}

on_both!(not_ready_while_a_migration_is_pending);

/// A loopback TCP proxy to PostgreSQL that the test can cut (every connection through it closed, new ones refused
/// at once) and mend: the database becomes unreachable from the instance, as when its host goes away, and comes back.
struct Proxy {
    port: u16,
    down: tokio::sync::watch::Sender<bool>,
}

impl Proxy {
    async fn start(upstream: String) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (down, watch) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if *watch.borrow() {
                    continue; // dropped: the connection is closed at once
                }
                let upstream = upstream.clone();
                let mut cut = watch.clone();
                tokio::spawn(async move {
                    let Ok(mut server) = tokio::net::TcpStream::connect(&upstream).await else { return };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = cut.wait_for(|down| *down) => {}
                    }
                });
            }
        });
        Proxy { port, down }
    }

    fn cut(&self) {
        self.down.send_replace(true);
    }

    fn mend(&self) {
        self.down.send_replace(false);
    }
}

/// `/readyz` is 503 while the database does not answer and 200 again once it does, without a restart (PostgreSQL,
/// through a proxy the test cuts).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readyz_follows_the_database() {
    let Ok(url) = std::env::var("TEST_DATABASE_URL") else {
        eprintln!("TEST_DATABASE_URL not set: PostgreSQL run skipped");
        return;
    };
    let db = crate::harness::Db::fresh(Backend::Postgres).await.unwrap();
    // postgres://user@host:port/db → the same through the proxy.
    let (head, rest) = url.split_once('@').unwrap();
    let (host_port, tail) = rest.split_once('/').unwrap();
    let proxy = Proxy::start(host_port.to_string()).await;
    let proxied = format!("{head}@127.0.0.1:{}/{tail}", proxy.port);
    let store = levy::store::Store::connect_in_schema(&proxied, db.schema.as_deref()).await.unwrap();
    store.migrate().await.unwrap();
    let state = std::sync::Arc::new(levy::api::AppState::new(
        store,
        crate::harness::registry(),
        levy::clock::Clock::fixed(crate::harness::start_time()),
        levy::config::Limits::default(),
        levy::security::DataKey::from_hex(&"ab".repeat(32)).unwrap(),
    ));
    let client = poem::test::TestClient::new(levy::api::app(state, true));
    let ready = || async {
        let resp = client.get("/readyz").send().await;
        let status = resp.0.status().as_u16();
        let body: Value = serde_json::from_str(&resp.0.into_body().into_string().await.unwrap()).unwrap();
        (status, body)
    };
    let (status, body) = ready().await;
    assert_eq!(status, 200, "{body}");

    proxy.cut();
    let started = std::time::Instant::now();
    let (status, body) = ready().await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["checks"]["database"], "unreachable");
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "a probe answers within its wait: {:?}", started.elapsed());
    assert_eq!(client.get("/livez").send().await.0.status().as_u16(), 200, "the process still answers");

    proxy.mend();
    let (status, body) = ready().await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["checks"], json!({"database": "ok", "migrations": "ok", "rules": "ok"}));
}

/// A log writer the test reads back.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// LEVY_LOG_FORMAT=json: every line is one JSON object, and a request's closing line carries its request id,
/// operation, status and latency.
async fn json_logs_carry_the_request(app: TestApp) {
    use tracing::instrument::WithSubscriber;
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = levy::server::json_logs(move || writer.clone()).with_env_filter("info").finish();
    async {
        let r = app.request("GET", "/api/v1/health", None, &[("X-Request-Id", "req-json-logs-1")], None).await;
        assert_eq!(r.status, 200);
        let r = app.request("GET", "/api/v1/nowhere/55401", None, &[("X-Request-Id", "req-json-logs-2")], None).await;
        assert_eq!(r.status, 404);
    }
    .with_subscriber(subscriber)
    .await;
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect();
    let handled = |id: &str| {
        lines
            .iter()
            .find(|l| l["message"] == "handled" && l["span"]["request_id"] == id)
            .unwrap_or_else(|| panic!("no line for {id}: {text}"))
    };
    let health = handled("req-json-logs-1");
    assert_eq!(health["span"]["operation"], "health");
    assert_eq!(health["status"], 200);
    assert!(health["elapsed_us"].as_u64().is_some(), "{health}");
    assert_eq!(health["level"], "INFO");
    assert!(health["timestamp"].as_str().is_some());
    let missing = handled("req-json-logs-2");
    assert_eq!((missing["span"]["operation"].as_str(), missing["status"].as_u64()), (Some("unmatched"), Some(404)));
}

on_both!(json_logs_carry_the_request);

/// Each limiter's refusals are counted under its limit, once per refused request.
async fn limiter_refusals_by_limit(backend: Backend) {
    let limits = levy::config::Limits { burst_per_minute: 1, demo_per_minute: 2, signups_per_hour: 1, ..Default::default() };
    let Some(app) = TestApp::start_with(backend, limits).await else { return };
    let acct = app.signup("limits@example.com").await;
    let body = calculate_body();
    let statuses: Vec<u16> = keyed_statuses(&app, &acct.key, &body, 3).await;
    assert_eq!(statuses, [200, 429, 429], "the key's 1 call per minute");
    for expected in [200, 200, 429, 429] {
        let r = app.request("POST", "/api/v1/calculate", None, &[("X-Forwarded-For", "198.51.100.9")], Some(&body.to_string())).await;
        assert_eq!(r.status, expected, "{}", r.text);
    }
    let signup =
        json!({"email": "second@example.com", "password": "correct horse battery", "agent_name": "a", "agent_work_type": "compute"});
    for expected in [201, 429] {
        let r = app.request("POST", "/api/v1/auth/signup", None, &[("X-Forwarded-For", "198.51.100.10")], Some(&signup.to_string())).await;
        assert_eq!(r.status, expected, "{}", r.text);
    }
    let refusals = |limit: &str| app.metric("levy_limiter_refusals_total", &[("limit", limit)]);
    assert_eq!((refusals("burst"), refusals("demo"), refusals("signup")), (2.0, 2.0, 1.0));
    assert_eq!((refusals("login"), refusals("payment"), refusals("monthly")), (0.0, 0.0, 0.0));
    assert_eq!(app.metric("levy_calculations_total", &[("mode", "live"), ("outcome", "rate_limited")]), 2.0);
    assert_eq!(app.metric("levy_calculations_total", &[("mode", "demo"), ("outcome", "rate_limited")]), 2.0);
}

/// `n` keyed calculate calls one after another: their statuses.
async fn keyed_statuses(app: &TestApp, key: &str, body: &Value, n: usize) -> Vec<u16> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(app.post("/api/v1/calculate", Some(key), body).await.status);
    }
    out
}

on_each_backend!(limiter_refusals_by_limit);

/// docs/operating.md lists every metric family, as `levy::metrics::FAMILIES` declares it (name, type, labels, help),
/// in one table between its markers; the failure message prints the table to paste.
#[test]
fn operating_md_lists_every_metric() {
    let table: String = levy::metrics::FAMILIES
        .iter()
        .map(|f| {
            let labels = if f.labels.is_empty() {
                "—".to_string()
            } else {
                f.labels.iter().map(|l| format!("`{l}`")).collect::<Vec<_>>().join(", ")
            };
            format!("| `{}` | {} | {} | {} |\n", f.name, f.kind.as_str(), labels, f.help)
        })
        .collect();
    let doc = std::fs::read_to_string(format!("{}/docs/operating.md", env!("CARGO_MANIFEST_DIR"))).unwrap();
    let start = "<!-- metrics: generated from levy::metrics::FAMILIES, checked by tests/api/metrics.rs -->\n| metric | type | labels | meaning |\n|---|---|---|---|\n";
    let listed = doc.split_once(start).and_then(|(_, rest)| rest.split_once("<!-- /metrics -->")).map(|(t, _)| t);
    assert_eq!(listed, Some(table.as_str()), "docs/operating.md's metrics table should read:\n{start}{table}<!-- /metrics -->");
}
