//! Calculate paid per call with x402, end to end with real clients: the payment headers are made by the x402
//! client library (PyPI `x402`, signing EIP-3009 authorizations with throwaway keys), and the facilitator is
//! tests/x402/facilitator.py on loopback, which checks the EIP-712 signature with `eth-account` and records
//! what it settles. Both run in the Python venv named by LEVY_X402_VENV (default target/x402-venv; .ci/run
//! creates it).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use base64::Engine;
use levy::config::{Limits, X402};
use serde_json::{json, Value};

use crate::harness::{num, Backend, Reply, TestApp};

/// Throwaway keys (never funded), and their addresses as eth-account derives them.
const KEY_A: &str = "0x1111111111111111111111111111111111111111111111111111111111111111";
const ADDRESS_A: &str = "0x19E7E376E7C213B7E7e7e46cc70A5dD086DAff2A";
const KEY_B: &str = "0x2222222222222222222222222222222222222222222222222222222222222222";
/// The payee this server is configured with.
const PAYEE: &str = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
/// Base mainnet USDC (Circle's published address).
const USDC_BASE: &str = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";

/// The venv's Python and `tests/x402/<name>`.
fn python_and(name: &str) -> (String, String) {
    crate::harness::payment_python("x402", name)
}

/// The loopback facilitator, stopped when dropped.
struct Facilitator {
    child: Child,
    url: String,
}

impl Facilitator {
    fn start() -> Facilitator {
        let (python, facilitator) = python_and("facilitator.py");
        let mut child = Command::new(python).arg(facilitator).stdout(Stdio::piped()).spawn().expect("start facilitator.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port: u16 = line.trim().parse().unwrap_or_else(|_| panic!("facilitator.py printed `{line}`"));
        Facilitator { child, url: format!("http://127.0.0.1:{port}") }
    }

    async fn get(&self, path: &str) -> Value {
        reqwest::get(format!("{}{path}", self.url)).await.unwrap().json().await.unwrap()
    }

    /// The authorizations settled.
    async fn settlements(&self) -> Vec<Value> {
        self.get("/settlements").await.as_array().unwrap().clone()
    }
}

impl Drop for Facilitator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn settings(facilitator: &str) -> X402 {
    X402 { network: "base".into(), payee: Some(PAYEE.into()), facilitator: facilitator.into() }
}

/// An instance whose demo allows one call a day, so that the second keyless call gets the 402.
async fn paid_app(backend: Backend, facilitator: &str) -> Option<TestApp> {
    TestApp::start_x402(backend, Limits { demo_per_day: 1, ..Limits::default() }, &settings(facilitator)).await
}

/// The payment header the client library makes for a 402, as (name, value): X-PAYMENT from the v1 body alone,
/// PAYMENT-SIGNATURE when the PAYMENT-REQUIRED header is passed.
fn pay(key: &str, headers: &[(&str, String)], body: &Value) -> (String, String) {
    let (python, pay) = python_and("pay.py");
    let mut child =
        Command::new(python).arg(pay).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start pay.py");
    let headers: serde_json::Map<String, Value> = headers.iter().map(|(k, v)| (k.to_string(), json!(v))).collect();
    child.stdin.take().unwrap().write_all(json!({"key": key, "headers": headers, "body": body}).to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "pay.py: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (v["name"].as_str().unwrap().into(), v["value"].as_str().unwrap().into())
}

fn decode(header: &str) -> Value {
    serde_json::from_slice(&base64::engine::general_purpose::STANDARD.decode(header).unwrap()).unwrap()
}

fn encode(v: &Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(v.to_string())
}

/// 100 into Austin, Texas (78701), SaaS by default: taxed on 80% at 6.25% state and 2% local, 6.60.
fn sale() -> Value {
    json!({"amount": 100, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "cp-1"})
}

/// The 402 a keyless caller gets past the demo's day (the instance allows one demo call).
async fn challenge(app: &TestApp) -> Reply {
    let addr = [("X-Forwarded-For", "2001:db8::402")];
    let first = app.request("POST", "/api/v1/calculate", None, &addr, Some(&sale().to_string())).await;
    if first.status == 200 {
        return app.request("POST", "/api/v1/calculate", None, &addr, Some(&sale().to_string())).await;
    }
    first
}

async fn paid(app: &TestApp, header: &(String, String), idempotency_key: Option<&str>) -> Reply {
    let mut headers = vec![(header.0.as_str(), header.1.as_str())];
    if let Some(k) = idempotency_key {
        headers.push(("Idempotency-Key", k));
    }
    app.request("POST", "/api/v1/calculate", None, &headers, Some(&sale().to_string())).await
}

async fn payments_held(app: &TestApp) -> u64 {
    use levy::store::entity::paid_call;
    use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
    paid_call::Entity::find().filter(paid_call::Column::Protocol.eq("x402")).count(&app.state.store.db).await.unwrap()
}

async fn x402_payment_is_settled_recorded_and_attributed(backend: Backend) {
    let f = Facilitator::start();
    let Some(app) = paid_app(backend, &f.url).await else { return };
    let guide = app.get("/api/v1/agents", None).await.text;
    assert!(guide.contains("mode \"x402\" and its receipt in X-PAYMENT-RESPONSE / PAYMENT-RESPONSE."), "{guide}");
    let a = app.signup("payer@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    // Linked in another case than the client library writes it: addresses compare case-insensitively.
    let r = app.post("/api/v1/wallets", Some(&a.key), &json!({"wallet_address": ADDRESS_A.to_ascii_uppercase().replace("0X", "0x")})).await;
    assert_eq!(r.status, 200, "{}", r.text);

    let c = challenge(&app).await;
    assert_eq!(c.status, 402, "{}", c.text);
    assert_eq!(c.code(), "PAYMENT_REQUIRED");
    assert_eq!(c.json["x402Version"], json!(1));
    let offer = &c.json["accepts"][0];
    assert_eq!(offer["scheme"], json!("exact"));
    assert_eq!(offer["network"], json!("base"));
    // 0.005 USD in USDC's 6 decimals.
    assert_eq!(offer["maxAmountRequired"], json!("5000"));
    assert_eq!(offer["asset"], json!(USDC_BASE));
    assert_eq!(offer["payTo"], json!(PAYEE));
    assert_eq!(offer["extra"], json!({"name": "USD Coin", "version": "2"}));
    assert_eq!(offer["mimeType"], json!("application/json"));
    assert!(c.json["signup"]["url"].is_string() && c.json["pay_per_call"]["payee"] == json!(PAYEE), "{}", c.text);
    let v2 = decode(&c.header("PAYMENT-REQUIRED").expect("PAYMENT-REQUIRED"));
    assert_eq!(v2["x402Version"], json!(2));
    assert_eq!(v2["accepts"][0]["network"], json!("eip155:8453"));
    assert_eq!(v2["accepts"][0]["amount"], json!("5000"));

    // v1: the library answers the body's offer with X-PAYMENT.
    let header = pay(KEY_A, &[], &c.json);
    assert_eq!(header.0, "X-PAYMENT");
    let r = paid(&app, &header, None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["mode"], json!("x402"));
    assert_eq!(r.json["entity_id"], json!(a.entity_id));
    assert_eq!(num(&r.json["total_tax"]), 6.6);
    assert_eq!(num(&r.json["tracking_1099"]["vendor_ytd_total"]), 100.0);
    let receipt = decode(&r.header("X-PAYMENT-RESPONSE").expect("X-PAYMENT-RESPONSE"));
    assert_eq!(receipt["success"], json!(true));
    assert_eq!(receipt["network"], json!("base"));
    assert!(receipt["payer"].as_str().unwrap().eq_ignore_ascii_case(ADDRESS_A));
    let settled = f.settlements().await;
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0]["value"], json!("5000"));
    // The spec's upgrade member, on a paid answer; a paid answer is for its payer only.
    assert_eq!(r.json["upgrade"]["signup"], json!("/api/v1/auth/signup"));
    assert_eq!(r.json["upgrade"]["free_tier"], json!("1,500 calls per month"));
    assert_eq!(r.header("Cache-Control").as_deref(), Some("private"));
    assert!(settled[0]["to"].as_str().unwrap().eq_ignore_ascii_case(PAYEE));
    assert_eq!(app.ledger_rows(&a.entity_id).await, 1);

    // The same payment again: its authorization has paid for a call.
    let again = paid(&app, &header, None).await;
    assert_eq!(again.status, 402, "{}", again.text);
    assert!(again.json["error"].as_str().unwrap().contains("invalid_transaction_state"), "{}", again.text);
    assert_eq!(f.settlements().await.len(), 1);
    assert_eq!(app.ledger_rows(&a.entity_id).await, 1);

    // v2: given the PAYMENT-REQUIRED header, the library pays with PAYMENT-SIGNATURE.
    let header = pay(KEY_A, &[("PAYMENT-REQUIRED", c.header("PAYMENT-REQUIRED").unwrap())], &c.json);
    assert_eq!(header.0, "PAYMENT-SIGNATURE");
    let r = paid(&app, &header, None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["mode"], json!("x402"));
    assert_eq!(decode(&r.header("PAYMENT-RESPONSE").expect("PAYMENT-RESPONSE"))["network"], json!("eip155:8453"));
    // The account's 1099 total for cp-1 counts both paid calls: 200.
    assert_eq!(num(&r.json["tracking_1099"]["vendor_ytd_total"]), 200.0);
    assert_eq!(app.ledger_rows(&a.entity_id).await, 2);
    assert_eq!(f.settlements().await.len(), 2);

    // An unlinked wallet's payment is recorded to that wallet's own account.
    let header = pay(KEY_B, &[], &c.json);
    let r = paid(&app, &header, None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let wallet_account = r.json["entity_id"].as_str().unwrap().to_string();
    assert!(wallet_account.starts_with("ent_w") && wallet_account != a.entity_id, "{wallet_account}");
    // Its account has stored no nexus: a seller without nexus in Texas owes nothing there.
    assert_eq!(num(&r.json["total_tax"]), 0.0);
    assert_eq!(num(&r.json["tracking_1099"]["vendor_ytd_total"]), 100.0);
    assert_eq!(app.ledger_rows(&wallet_account).await, 1);
    assert_eq!(app.ledger_rows(&a.entity_id).await, 2);
}

async fn refused_payments_record_nothing(backend: Backend) {
    let f = Facilitator::start();
    let Some(app) = paid_app(backend, &f.url).await else { return };
    let c = challenge(&app).await;
    assert_eq!(c.status, 402, "{}", c.text);
    let reason_of = |r: &Reply| r.json["error"].as_str().unwrap_or("").to_string();

    // Signed for 0.004 USD.
    let mut cheap = c.json.clone();
    cheap["accepts"][0]["maxAmountRequired"] = json!("4000");
    let r = paid(&app, &pay(KEY_A, &[], &cheap), None).await;
    assert_eq!((r.status, r.code()), (402, "PAYMENT_REQUIRED"), "{}", r.text);
    assert!(reason_of(&r).contains("invalid_exact_evm_payload_authorization_value"), "{}", r.text);
    assert_eq!(r.json["accepts"][0]["maxAmountRequired"], json!("5000"), "a refusal offers the requirements again");

    // Paying someone else.
    let mut elsewhere = c.json.clone();
    elsewhere["accepts"][0]["payTo"] = json!("0x000000000000000000000000000000000000dEaD");
    let r = paid(&app, &pay(KEY_A, &[], &elsewhere), None).await;
    assert_eq!(r.status, 402, "{}", r.text);
    assert!(reason_of(&r).contains("invalid_exact_evm_payload_recipient_mismatch"), "{}", r.text);

    // Signed by B but claiming to be from A: the facilitator's signature check refuses it.
    let (name, value) = pay(KEY_B, &[], &c.json);
    let mut forged = decode(&value);
    forged["payload"]["authorization"]["from"] = json!(ADDRESS_A);
    let r = paid(&app, &(name, encode(&forged)), None).await;
    assert_eq!(r.status, 402, "{}", r.text);
    assert!(reason_of(&r).contains("invalid_exact_evm_payload_signature"), "{}", r.text);

    // Not base64 JSON at all.
    let r = paid(&app, &("X-PAYMENT".into(), "not a payment".into()), None).await;
    assert_eq!(r.status, 402, "{}", r.text);
    assert!(reason_of(&r).contains("invalid_payload"), "{}", r.text);

    // Expired: the library makes it valid for the offer's 60 s; the server's clock is then 2 minutes later.
    let header = pay(KEY_A, &[], &c.json);
    app.clock.advance_ms(120_000);
    let r = paid(&app, &header, None).await;
    assert_eq!(r.status, 402, "{}", r.text);
    assert!(reason_of(&r).contains("invalid_exact_evm_payload_authorization_valid_before"), "{}", r.text);

    assert!(f.settlements().await.is_empty());
    assert_eq!(payments_held(&app).await, 0);
    use sea_orm::{EntityTrait, PaginatorTrait};
    assert_eq!(levy::store::entity::transaction::Entity::find().count(&app.state.store.db).await.unwrap(), 0);

    // The metrics: 5 refusals, each under its reason; the challenge was a demo call.
    assert_eq!(app.metric("levy_payments_total", &[("method", "x402"), ("outcome", "refused")]), 5.0);
    assert_eq!(app.metric("levy_payments_total", &[("method", "x402"), ("outcome", "paid")]), 0.0);
    for reason in [
        "invalid_exact_evm_payload_authorization_value",
        "invalid_exact_evm_payload_recipient_mismatch",
        "invalid_exact_evm_payload_signature",
        "invalid_payload",
        "invalid_exact_evm_payload_authorization_valid_before",
    ] {
        assert_eq!(app.metric("levy_payment_refusals_total", &[("method", "x402"), ("reason", reason)]), 1.0, "{reason}");
    }
    assert_eq!(app.metric("levy_calculations_total", &[("mode", "x402"), ("outcome", "payment_required")]), 5.0);
    assert_eq!(app.metric("levy_calculations_total", &[("mode", "demo"), ("outcome", "payment_required")]), 1.0);
}

async fn facilitator_down_is_503_and_records_nothing(backend: Backend) {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let Some(app) = paid_app(backend, &format!("http://127.0.0.1:{closed}")).await else { return };
    let c = challenge(&app).await;
    let header = pay(KEY_A, &[], &c.json);
    let r = paid(&app, &header, Some("down-1")).await;
    assert_eq!((r.status, r.code()), (503, "DB_UNAVAILABLE"), "{}", r.text);
    assert!(r.header("X-PAYMENT-RESPONSE").is_none());
    assert_eq!(payments_held(&app).await, 0, "the authorization's claim is given back");
    use sea_orm::{EntityTrait, PaginatorTrait};
    assert_eq!(levy::store::entity::transaction::Entity::find().count(&app.state.store.db).await.unwrap(), 0);

    // The authorization was not spent: an instance whose facilitator answers takes it.
    let f = Facilitator::start();
    let up = TestApp::start_x402(backend, Limits::default(), &settings(&f.url)).await.unwrap();
    let r = paid(&up, &header, Some("down-1")).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(f.settlements().await.len(), 1);
    assert_eq!(app.metric("levy_payments_total", &[("method", "x402"), ("outcome", "unavailable")]), 1.0);
    assert_eq!(up.metric("levy_payments_total", &[("method", "x402"), ("outcome", "paid")]), 1.0);
    assert_eq!(up.metric("levy_calculations_total", &[("mode", "x402"), ("outcome", "ok")]), 1.0);
}

async fn idempotent_replay_returns_the_stored_answer_and_receipt(backend: Backend) {
    let f = Facilitator::start();
    let Some(app) = paid_app(backend, &f.url).await else { return };
    let c = challenge(&app).await;
    let header = pay(KEY_A, &[], &c.json);
    let first = paid(&app, &header, Some("idem-1")).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let second = paid(&app, &header, Some("idem-1")).await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert_eq!(second.text, first.text, "the stored answer, byte for byte");
    assert_eq!(second.header("X-Idempotency-Status").as_deref(), Some("cached"));
    assert_eq!(second.header("X-PAYMENT-RESPONSE"), first.header("X-PAYMENT-RESPONSE"));
    // A fresh payment with the same key and body is not taken either: the stored answer stands for it.
    let third = paid(&app, &pay(KEY_A, &[], &c.json), Some("idem-1")).await;
    assert_eq!(third.text, first.text);
    assert_eq!(f.settlements().await.len(), 1);
    let entity = first.json["entity_id"].as_str().unwrap();
    assert_eq!(app.ledger_rows(entity).await, 1);
}

async fn twenty_parallel_calls_with_one_payment_settle_once(backend: Backend) {
    let f = Facilitator::start();
    let Some(app) = paid_app(backend, &f.url).await else { return };
    let c = challenge(&app).await;
    let header = pay(KEY_A, &[], &c.json);
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (client, header) = (app.client.clone(), header.clone());
        tasks.push(tokio::spawn(async move {
            let resp = client.post("/api/v1/calculate").header(header.0, header.1).body_json(&sale()).send().await;
            let status = resp.0.status().as_u16();
            let text = resp.0.into_body().into_string().await.unwrap();
            (status, text)
        }));
    }
    let mut statuses = Vec::new();
    let mut entity = String::new();
    for t in tasks {
        let (status, text) = t.await.unwrap();
        if status == 200 {
            entity = serde_json::from_str::<Value>(&text).unwrap()["entity_id"].as_str().unwrap().into();
        } else {
            assert!(text.contains("invalid_transaction_state"), "{status} {text}");
        }
        statuses.push(status);
    }
    statuses.sort();
    assert_eq!(statuses, [vec![200], vec![402; 19]].concat());
    assert_eq!(f.settlements().await.len(), 1);
    assert_eq!(app.ledger_rows(&entity).await, 1);
}

/// With a public base URL configured, the requirements name the resource under it, whatever the Host header says.
/// A paid call may state its nexus. A payment settled whose call the database then refuses is kept `unrecorded`
/// with its receipt, and the same payment sent again is recorded and answered without settling again.
async fn settled_but_unrecorded_payment_is_answered_on_retry(backend: Backend) {
    let f = Facilitator::start();
    let pay_settings =
        crate::harness::Payments { x402: settings(&f.url), public_url: Some("https://levy.example".into()), ..Default::default() };
    let Some(app) = TestApp::start_paid(backend, Limits { demo_per_day: 1, ..Limits::default() }, None, &pay_settings).await else {
        return;
    };
    let c = challenge(&app).await;
    assert_eq!(c.status, 402, "{}", c.text);
    assert_eq!(c.json["accepts"][0]["resource"], json!("https://levy.example/api/v1/calculate"));
    assert_eq!(decode(&c.header("PAYMENT-REQUIRED").unwrap())["resource"]["url"], json!("https://levy.example/api/v1/calculate"));
    let header = pay(KEY_B, &[], &c.json);
    let mut stated = sale();
    stated["nexus_override"] = json!({"TX": {"hasNexus": true}});
    crate::mpp::refuse_ledger_rows(&app, true).await;
    let r = send_with_host(&app, &header, &stated).await;
    assert!(r.status == 500 || r.status == 503, "{} {}", r.status, r.text);
    assert!(r.json["error"].as_str().unwrap().contains("the payment was taken"), "{}", r.text);
    assert!(r.header("X-PAYMENT-RESPONSE").is_none());
    assert_eq!(f.settlements().await.len(), 1);
    crate::mpp::refuse_ledger_rows(&app, false).await;
    let r = send_with_host(&app, &header, &stated).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["mode"], json!("x402"));
    // The wallet's account stores no nexus; the call stated it: 6.60.
    assert_eq!(num(&r.json["total_tax"]), 6.6);
    assert!(r.header("X-PAYMENT-RESPONSE").is_some());
    assert_eq!(f.settlements().await.len(), 1, "not settled again");
    assert_eq!(app.ledger_rows(r.json["entity_id"].as_str().unwrap()).await, 1);
}

/// A paid call sent with a Host header of its own.
async fn send_with_host(app: &TestApp, header: &(String, String), body: &Value) -> Reply {
    let headers = [(header.0.as_str(), header.1.as_str()), ("Host", "elsewhere.example")];
    app.request("POST", "/api/v1/calculate", None, &headers, Some(&body.to_string())).await
}

crate::on_each_backend!(
    x402_payment_is_settled_recorded_and_attributed,
    refused_payments_record_nothing,
    facilitator_down_is_503_and_records_nothing,
    idempotent_replay_returns_the_stored_answer_and_receipt,
    twenty_parallel_calls_with_one_payment_settle_once,
    settled_but_unrecorded_payment_is_answered_on_retry
);
