//! GET /api/v1/agents: every operation has an example, every example of the served guide runs and answers as the
//! guide says, and the errors an agent can act on (401, 402, 429) link to the guide.

use std::collections::BTreeSet;

use levy::api::agents::{examples, operations};
use levy::config::Limits;
use serde_json::{json, Value};

use super::harness::{Backend, TestApp};
use crate::on_both;

fn document(app: &TestApp) -> Value {
    serde_json::from_str(&levy::api::openapi_json(app.state.clone())).unwrap()
}

/// Splits a shell line into words: '…' and "…" quote (no escapes inside; the guide's bodies hold no quote).
fn words(line: &str) -> Vec<String> {
    let mut out = vec![];
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, ' ') => {
                if started {
                    out.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    assert!(quote.is_none(), "unclosed quote in {line}");
    if started {
        out.push(word);
    }
    out
}

/// A guide's curl line as (method, target, headers, body).
fn parse_curl(line: &str) -> (String, String, Vec<(String, String)>, Option<String>) {
    let w = words(line);
    assert_eq!(w[..2], ["curl", "-sS"], "{line}");
    let (mut method, mut target, mut headers, mut body) = ("GET".to_string(), None, vec![], None);
    let mut i = 2;
    while i < w.len() {
        match w[i].as_str() {
            "-X" => method = w[i + 1].clone(),
            "-H" => {
                let (name, value) = w[i + 1].split_once(": ").unwrap_or_else(|| panic!("header in {line}"));
                headers.push((name.to_string(), value.to_string()));
            }
            "-d" => body = Some(w[i + 1].clone()),
            url => {
                target = Some(url.strip_prefix("$LEVY").unwrap_or_else(|| panic!("URL in {line}")).to_string());
                i += 1;
                continue;
            }
        }
        i += 2;
    }
    (method, target.unwrap(), headers, body)
}

/// The guide's examples, by operation id, in the guide's order.
fn guide_examples(guide: &str) -> Vec<(String, String)> {
    let mut out = vec![];
    let mut current: Option<String> = None;
    for line in guide.lines() {
        if let Some(id) = line.split_once("  [").and_then(|(_, rest)| rest.split_once(';')).map(|(id, _)| id.to_string()) {
            if !line.starts_with(' ') {
                current = Some(id);
                continue;
            }
        }
        if let Some(cmd) = line.strip_prefix("  $ ") {
            out.push((current.clone().expect("an example under its operation"), cmd.to_string()));
        }
    }
    out
}

async fn every_operation_has_one_example(app: TestApp) {
    let doc = document(&app);
    let ops: BTreeSet<String> = operations(&doc).into_iter().map(|o| o.id).collect();
    assert!(ops.len() >= 20, "{ops:?}");
    let examples = examples(&doc).unwrap();
    let listed: BTreeSet<String> = examples.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(listed.len(), examples.len(), "an operation with two examples");
    let missing: Vec<_> = ops.difference(&listed).collect();
    assert!(missing.is_empty(), "operations without a code_sample labelled example: {missing:?}");
    // The guide shows each once.
    let r = app.get("/api/v1/agents", None).await;
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/plain"), "{:?}", r.header("content-type"));
    let shown: Vec<String> = guide_examples(&r.text).into_iter().map(|(id, _)| id).collect();
    assert_eq!(shown.len(), ops.len(), "{}", r.text);
    assert_eq!(shown.into_iter().collect::<BTreeSet<_>>(), ops);
    assert!(!r.text.contains("(no example)"));
}

/// Runs every curl line of the served guide (in the document's order, which puts what an example needs before
/// it), with the caller's credentials in place of the placeholders, and checks each answer.
async fn every_example_of_the_guide_runs(backend: Backend) {
    // A server that sells plans (a processor stand-in on loopback), so that checkout's example is a checkout.
    let processor = crate::billing::Processor::start();
    let app = crate::billing::billing_app(backend, &processor.url, "tax:growth=price_tax_growth").await;
    let guide = app.get("/api/v1/agents", None).await.text;
    let lines = guide_examples(&guide);
    let runner = app.signup("runner@example.com").await;
    let login = app.post("/api/v1/auth/login", None, &json!({"email": "runner@example.com", "password": "correct horse battery"})).await;
    let session = login.json["session_token"].as_str().unwrap().to_string();
    let spare = app.post("/api/v1/keys", Some(&runner.key), &json!({"name": "spare"})).await;
    let spare_prefix = spare.json["api_key"]["prefix"].as_str().unwrap().to_string();
    let partner = crate::partners::create_partner(&app, "acme-agents", "20", "0.002", 0, None).await;
    let fill = |s: &str| {
        s.replace("<API_KEY>", &runner.key)
            .replace("<SESSION_TOKEN>", &session)
            .replace("<KEY_PREFIX>", &spare_prefix)
            .replace("<PARTNER_KEY>", &partner.key)
    };
    for (id, example) in examples(&document(&app)).unwrap() {
        let (_, line) = lines.iter().find(|(op, _)| *op == id).unwrap_or_else(|| panic!("{id} is not in the guide"));
        let (method, target, headers, body) = parse_curl(line);
        let headers: Vec<(String, String)> =
            headers.iter().filter(|(n, _)| n != "Content-Type").map(|(n, v)| (n.clone(), fill(v))).collect();
        let header_refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
        let body = body.map(|b| fill(&b));
        let mut target = fill(&target);
        if target.contains("<TRANSACTION_ID>") {
            // The ingest example's record (external_tx_id inv-1001): 1,000 into Austin, 66.00.
            let list = app.get("/api/v1/transactions", Some(&runner.key)).await;
            let row = list.json["transactions"].as_array().unwrap().iter().find(|t| t["external_tx_id"] == "inv-1001").unwrap();
            target = target.replace("<TRANSACTION_ID>", row["transaction_id"].as_str().unwrap());
        }
        let r = app.request(&method, &target, None, &header_refs, body.as_deref()).await;
        assert_eq!(r.status, example.status, "{id}: {line}\n{}", r.text);
        for (pointer, want) in &example.expect {
            let got = r.json.pointer(pointer).unwrap_or_else(|| panic!("{id}: no {pointer} in {}", r.text));
            let same = match (got.as_f64(), want.as_f64()) {
                (Some(a), Some(b)) => (a - b).abs() < 1e-9,
                _ => got == want,
            };
            assert!(same, "{id}: {pointer} is {got}, the guide says {want}");
        }
        if let Some(text) = &example.contains {
            assert!(r.text.lines().any(|l| l == text), "{id}: no line {text:?}");
        }
    }
}

async fn guide_states_auth_limits_errors_and_retries(app: TestApp) {
    let guide = app.get("/api/v1/agents", None).await.text;
    // Credentials, including what is not accepted yet.
    assert!(guide.contains("API key: header X-API-Key: <API_KEY>, or Authorization: Bearer <API_KEY>"));
    assert!(guide.contains("NOT ACCEPTED by this server: no payee is configured (LEVY_X402_PAYEE)"), "{guide}");
    assert!(
        guide.contains("MPP (machine payments through a payment processor): NOT ACCEPTED by this server: no challenge secret"),
        "{guide}"
    );
    assert!(guide.contains("POST /api/v1/calculate  [calculate; credentials: API key, or none (demo)]"), "{guide}");
    assert!(guide.contains("GET /api/v1/auth/me  [me; credentials: session token]"));
    assert!(guide.contains("GET /api/v1/pricing  [pricing; credentials: none]"));
    // Limits from the settings (the spec's 120 per key per minute; demo 30 and 50) and the plans file.
    assert!(guide.contains("Per API key: 120 calls per 60 seconds"));
    assert!(guide.contains("Demo: no credentials, on POST /api/v1/calculate only: 30 calls per minute and 50 per UTC day"));
    assert!(guide.contains("  Free (free): 0 USD per month; 1,500 calls per month; past it: 429 RATE_LIMITED \"Monthly limit reached\""));
    assert!(guide.contains("  Pro (pro): 199 USD per month; 1,000,000 calls per month; past it: served, 0.005 USD per call; 100 optimization reports per month"));
    // Every code of the frozen enum, with its status and meaning.
    let doc = document(&app);
    let codes = doc["components"]["schemas"]["ErrorCode"]["enum"].as_array().unwrap().clone();
    assert_eq!(codes.len(), 16);
    for code in codes {
        let code = code.as_str().unwrap();
        assert!(guide.lines().any(|l| l.starts_with(&format!("  {code} (")) && l.contains("): ")), "{code} without its meaning");
    }
    assert!(guide.contains("  RATE_LIMITED (429): burst or demo limiter tripped"));
    // The spec's retry guidance.
    assert!(guide.contains("exponential backoff from 1 second (1, 2, 4, 8, 16 s), at most"));
    assert!(guide.contains("5 retries, each wait varied by plus or minus 20% (jitter)"));
    assert!(guide.contains("whose error says \"Monthly limit reached\": do not retry"));
    assert!(guide.contains("429 with Retry-After: wait that many seconds"));
}

/// 401 and a burst 429 carry agent_guide; a 400 or a 404 does not. The envelope's schema documents the field.
async fn actionable_errors_link_the_guide(app: TestApp) {
    let r = app.get("/api/v1/keys", Some("svc_live_00000000000000000000000000000000")).await;
    assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED"));
    assert_eq!(r.json["agent_guide"], json!("/api/v1/agents"));
    let r = app.get("/api/v1/keys", None).await;
    assert_eq!((r.status, r.json["agent_guide"].as_str()), (401, Some("/api/v1/agents")));
    let r = app.get("/api/v1/pricing?x=1", None).await;
    assert_eq!(r.status, 400);
    assert!(r.json.get("agent_guide").is_none(), "{}", r.text);
    let r = app.get("/api/v1/nowhere", None).await;
    assert_eq!(r.status, 404);
    assert!(r.json.get("agent_guide").is_none(), "{}", r.text);
    // The link resolves.
    assert_eq!(app.get("/api/v1/agents", None).await.status, 200);
    let doc = document(&app);
    let prop = &doc["components"]["schemas"]["ErrorEnvelope"]["properties"]["agent_guide"];
    assert_eq!(prop["type"], json!("string"));
    assert!(prop["description"].as_str().unwrap().contains("401, 402, 429"));
}

/// 402 (the demo's daily cap) and 429 (its per-minute cap, and a key's burst window) with limits small enough to reach.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payment_and_rate_errors_link_the_guide() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let limits = Limits { demo_per_minute: 1, demo_per_day: 2, burst_per_minute: 1, ..Limits::default() };
        let Some(app) = TestApp::start_with(backend, limits).await else { continue };
        let body = json!({"amount": 10, "buyer_state": "TX", "counterparty_id": "c"}).to_string();
        let ip = [("X-Forwarded-For", "203.0.113.9")];
        let r = app.request("POST", "/api/v1/calculate", None, &ip, Some(&body)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let r = app.request("POST", "/api/v1/calculate", None, &ip, Some(&body)).await;
        assert_eq!((r.status, r.code()), (429, "RATE_LIMITED"), "the second call of the minute");
        assert_eq!(r.json["agent_guide"], json!("/api/v1/agents"));
        app.clock.advance_ms(60_000);
        let r = app.request("POST", "/api/v1/calculate", None, &ip, Some(&body)).await;
        assert_eq!((r.status, r.code()), (402, "PAYMENT_REQUIRED"), "the third call of the day: {}", r.text);
        assert_eq!(r.json["agent_guide"], json!("/api/v1/agents"));
        assert_eq!(r.json["signup"]["free_tier"], json!("1,500 calls per month, no card required"));
        assert_eq!(r.json["pay_per_call"]["price_usd_per_call"].as_f64(), Some(0.005));

        let a = app.signup("guide@example.com").await;
        let r = app.request("POST", "/api/v1/calculate", Some(&a.key), &[], Some(&body)).await;
        assert_eq!(r.status, 200, "{}", r.text);
        let r = app.request("POST", "/api/v1/calculate", Some(&a.key), &[], Some(&body)).await;
        assert_eq!((r.status, r.code()), (429, "RATE_LIMITED"));
        assert!(r.header("retry-after").is_some());
        assert_eq!(r.json["agent_guide"], json!("/api/v1/agents"));
    }
}

crate::on_each_backend!(every_example_of_the_guide_runs);

on_both!(every_operation_has_one_example, guide_states_auth_limits_errors_and_retries, actionable_errors_link_the_guide);
