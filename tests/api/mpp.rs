//! Calculate paid per call with MPP (the `Payment` HTTP authentication scheme, Stripe charge method), end to end with
//! the real client: credentials are made by the MPP client library (PyPI `pympp`, tests/mpp/pay.py) from the 402's
//! `WWW-Authenticate` challenge, and Stripe is tests/mpp/stripe.py on loopback, which grants Shared Payment Tokens
//! and creates PaymentIntents with their usage limits, single use, declines and Idempotency-Key replays as Stripe
//! describes them. Both run in the Python venv named by LEVY_X402_VENV (.ci/run installs pympp there).
//!
//! A call paid this way costs the plans file's `mpp` price, 0.50 USD (50 cents, Stripe's smallest charge).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};

use base64::Engine;
use levy::config::{Limits, Mpp};
use levy::store::entity::paid_call;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{json, Value};

use crate::harness::{num, Backend, Payments, Reply, TestApp};

const SECRET: &str = "an MPP challenge secret of at least 32 bytes, for tests";
const STRIPE_KEY: &str = "sk_test_levy_standin";
const NETWORK_ID: &str = "profile_test_levy";

/// The venv's Python and `tests/mpp/<name>`.
fn python_and(name: &str) -> (String, String) {
    crate::harness::payment_python("mpp", name)
}

/// The loopback Stripe, stopped when dropped.
struct Stripe {
    child: Child,
    url: String,
}

impl Stripe {
    fn start() -> Stripe {
        let (python, stripe) = python_and("stripe.py");
        let mut child = Command::new(python)
            .args([stripe, STRIPE_KEY.into(), NETWORK_ID.into()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("start stripe.py");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port: u16 = line.trim().parse().unwrap_or_else(|_| panic!("stripe.py printed `{line}`"));
        Stripe { child, url: format!("http://127.0.0.1:{port}") }
    }

    async fn get(&self, path: &str) -> Value {
        reqwest::get(format!("{}{path}", self.url)).await.unwrap().json().await.unwrap()
    }

    /// The PaymentIntents created, with the status each ended in.
    async fn intents(&self) -> Vec<Value> {
        self.get("/intents").await.as_array().unwrap().clone()
    }

    async fn succeeded(&self) -> usize {
        self.intents().await.iter().filter(|i| i["status"] == "succeeded").count()
    }

    /// POSTs to /v1/payment_intents (replays included).
    async fn calls(&self) -> u64 {
        self.get("/calls").await["payment_intents"].as_u64().unwrap()
    }
}

impl Drop for Stripe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn payments(stripe: &str) -> Payments {
    Payments {
        mpp: Mpp {
            secret: Some(SECRET.into()),
            stripe_secret_key: Some(STRIPE_KEY.into()),
            stripe_network_id: Some(NETWORK_ID.into()),
            stripe_api_base: stripe.into(),
        },
        public_url: Some("https://levy.example".into()),
        ..Default::default()
    }
}

/// An instance whose demo allows one call a day, so that the second keyless call gets the 402.
async fn paid_app(backend: Backend, stripe: &str) -> Option<TestApp> {
    TestApp::start_paid(backend, Limits { demo_per_day: 1, ..Limits::default() }, None, &payments(stripe)).await
}

/// 100 into Austin, Texas (78701), SaaS by default: taxed on 80% at 6.25% state and 2% local, 6.60 with nexus.
fn sale() -> Value {
    json!({"amount": 100, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "cp-1"})
}

/// The 402 a keyless caller gets past the demo's day (the instance allows one demo call).
async fn challenge(app: &TestApp) -> Reply {
    let addr = [("X-Forwarded-For", "2001:db8::403")];
    let first = app.request("POST", "/api/v1/calculate", None, &addr, Some(&sale().to_string())).await;
    if first.status == 200 {
        return app.request("POST", "/api/v1/calculate", None, &addr, Some(&sale().to_string())).await;
    }
    first
}

/// The Authorization value the client library makes for the 402's challenge, paying with `payment_method`;
/// `extra` adds pay.py's options (forge, tamper, secret).
fn pay(c: &Reply, stripe: &Stripe, payment_method: &str, extra: Value) -> (String, Option<bool>) {
    let mut given = json!({
        "www_authenticate": c.header("WWW-Authenticate").expect("WWW-Authenticate"),
        "stripe": stripe.url,
        "payment_method": payment_method,
    });
    for (k, v) in extra.as_object().unwrap() {
        given[k] = v.clone();
    }
    let (python, pay) = python_and("pay.py");
    let mut child =
        Command::new(python).arg(pay).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start pay.py");
    child.stdin.take().unwrap().write_all(given.to_string().as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "pay.py: {}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (v["authorization"].as_str().unwrap().into(), v["verified"].as_bool())
}

async fn paid(app: &TestApp, authorization: &str, idempotency_key: Option<&str>, body: &Value) -> Reply {
    let mut headers = vec![("Authorization", authorization)];
    if let Some(k) = idempotency_key {
        headers.push(("Idempotency-Key", k));
    }
    app.request("POST", "/api/v1/calculate", None, &headers, Some(&body.to_string())).await
}

fn decode(header: &str) -> Value {
    serde_json::from_slice(&base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap()
}

fn problem(r: &Reply) -> String {
    r.json["type"].as_str().unwrap_or("").trim_start_matches("https://paymentauth.org/problems/").to_string()
}

/// The claims of MPP payments.
fn mpp_claims() -> sea_orm::Select<paid_call::Entity> {
    paid_call::Entity::find().filter(paid_call::Column::Protocol.eq("mpp"))
}

async fn claims(app: &TestApp) -> u64 {
    mpp_claims().count(&app.state.store.db).await.unwrap()
}

async fn ledger_rows(app: &TestApp) -> u64 {
    levy::store::entity::transaction::Entity::find().count(&app.state.store.db).await.unwrap()
}

async fn mpp_payment_is_charged_recorded_and_answered(backend: Backend) {
    let stripe = Stripe::start();
    let Some(app) = paid_app(backend, &stripe.url).await else { return };
    let guide = app.get("/api/v1/agents", None).await.text;
    assert!(
        guide.contains("MPP (machine payments through a payment processor, POST /api/v1/calculate): 0.50 USD per call (amount 50"),
        "{guide}"
    );
    assert!(guide.contains("The answer has mode \"mpp\" and its receipt in Payment-Receipt."), "{guide}");
    let c = challenge(&app).await;
    assert_eq!((c.status, c.code()), (402, "PAYMENT_REQUIRED"), "{}", c.text);
    assert_eq!(c.header("Cache-Control").as_deref(), Some("no-store"));
    let www = c.header("WWW-Authenticate").expect("WWW-Authenticate");
    assert!(www.starts_with("Payment id=\"") && www.contains("method=\"stripe\"") && www.contains("intent=\"charge\""), "{www}");
    assert!(www.contains("realm=\"levy.example\""), "{www}");
    let offer = &c.json["pay_per_call"]["mpp"];
    assert_eq!((offer["amount"].as_str(), offer["currency"].as_str()), (Some("50"), Some("usd")), "{}", c.text);
    let request = decode(www.split("request=\"").nth(1).unwrap().split('"').next().unwrap());
    assert_eq!(
        request,
        json!({"amount": "50", "currency": "usd", "description": "One US sales/use tax determination (POST /api/v1/calculate)",
               "methodDetails": {"networkId": NETWORK_ID, "paymentMethodTypes": ["card"]}})
    );

    // The library's own Challenge.verify accepts the id under the secret: the HMAC binding is the draft's.
    let (authorization, verified) = pay(&c, &stripe, "pm_card_visa", json!({"secret": SECRET}));
    assert_eq!(verified, Some(true));
    assert!(authorization.starts_with("Payment "));
    let r = paid(&app, &authorization, None, &sale()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["mode"], json!("mpp"));
    assert_eq!(r.header("Cache-Control").as_deref(), Some("private"));
    let receipt = decode(&r.header("Payment-Receipt").expect("Payment-Receipt"));
    assert_eq!((receipt["method"].as_str(), receipt["status"].as_str()), (Some("stripe"), Some("success")));
    let intents = stripe.intents().await;
    assert_eq!(intents.len(), 1);
    assert_eq!(receipt["reference"], intents[0]["id"]);
    assert_eq!((intents[0]["amount"].as_i64(), intents[0]["currency"].as_str()), (Some(50), Some("usd")));
    let challenge_id = www.split("id=\"").nth(1).unwrap().split('"').next().unwrap();
    assert_eq!(intents[0]["metadata"]["challenge_id"], json!(challenge_id));
    // The spec's upgrade member, on a paid answer.
    assert_eq!(r.json["upgrade"]["signup"], json!("/api/v1/auth/signup"));
    assert!(r.json["upgrade"]["message"].as_str().unwrap().starts_with("Paid per call."), "{}", r.text);
    // The payer's account has stored no nexus: a seller without nexus in Texas owes nothing there.
    assert_eq!(num(&r.json["total_tax"]), 0.0);
    let entity = r.json["entity_id"].as_str().unwrap().to_string();
    assert!(entity.starts_with("ent_m"), "{entity}");
    assert_eq!(app.ledger_rows(&entity).await, 1);

    // The same credential again: its challenge has paid for a call.
    let again = paid(&app, &authorization, None, &sale()).await;
    assert_eq!((again.status, problem(&again).as_str()), (402, "invalid-challenge"), "{}", again.text);
    assert!(again.header("Payment-Receipt").is_none());
    assert!(again.header("WWW-Authenticate").is_some(), "a refusal carries a fresh challenge");
    assert_eq!(stripe.calls().await, 1);
    assert_eq!(ledger_rows(&app).await, 1);

    // A paid call may state its nexus (the spec gives nexus_override to x402 inline calls; MPP calls are the same
    // kind of keyless caller): with nexus in Texas, 6.60. (A challenge pays for one call: each payment answers a
    // fresh one.)
    let (authorization, _) = pay(&challenge(&app).await, &stripe, "pm_card_visa", json!({}));
    let mut stated = sale();
    stated["nexus_override"] = json!({"TX": {"hasNexus": true}});
    let r = paid(&app, &authorization, None, &stated).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(num(&r.json["total_tax"]), 6.6);
    // vendor_ytd_override stays the demo's: nothing is charged for a refused body.
    let mut ytd = sale();
    ytd["vendor_ytd_override"] = json!(10);
    let (authorization, _) = pay(&challenge(&app).await, &stripe, "pm_card_visa", json!({}));
    let r = paid(&app, &authorization, None, &ytd).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    assert_eq!(stripe.calls().await, 2);

    // A keyed answer carries no upgrade member.
    let a = app.signup("keyed@example.com").await;
    let r = app.post("/api/v1/calculate", Some(&a.key), &sale()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert!(r.json.get("upgrade").is_none(), "{}", r.text);
    assert!(r.header("Payment-Receipt").is_none());
}

async fn refused_credentials_record_nothing(backend: Backend) {
    let stripe = Stripe::start();
    let Some(app) = paid_app(backend, &stripe.url).await else { return };
    let c = challenge(&app).await;
    assert_eq!(c.status, 402, "{}", c.text);
    let request = json!({"amount": "50", "currency": "usd", "methodDetails": {"networkId": NETWORK_ID, "paymentMethodTypes": ["card"]}});

    // The challenge's request altered (amount 0), its id left as issued: not the challenge this server issued.
    let mut cheaper = request.clone();
    cheaper["amount"] = json!("0");
    let (authorization, _) = pay(&c, &stripe, "pm_card_visa", json!({"tamper": cheaper}));
    let r = paid(&app, &authorization, None, &sale()).await;
    assert_eq!((r.status, r.code(), problem(&r).as_str()), (402, "PAYMENT_REQUIRED", "invalid-challenge"), "{}", r.text);
    assert_eq!(r.header("Cache-Control").as_deref(), Some("no-store"));

    // A challenge bound by the server's own secret but for another amount (as a price change, or a leaked secret,
    // would give): the amount is checked against what a call costs.
    let (authorization, _) = pay(&c, &stripe, "pm_card_visa", json!({"forge": {"secret": SECRET, "request": cheaper}}));
    let r = paid(&app, &authorization, None, &sale()).await;
    assert_eq!((r.status, problem(&r).as_str()), (402, "payment-insufficient"), "{}", r.text);

    // Not a credential at all.
    let r = paid(&app, "Payment not-base64-json!", None, &sale()).await;
    assert_eq!((r.status, problem(&r).as_str()), (402, "malformed-credential"), "{}", r.text);

    // Declined by the card's issuer (Stripe's test card that declines).
    let (authorization, _) = pay(&c, &stripe, "pm_card_chargeDeclined", json!({}));
    let r = paid(&app, &authorization, None, &sale()).await;
    assert_eq!((r.status, problem(&r).as_str()), (402, "verification-failed"), "{}", r.text);
    assert!(r.json["error"].as_str().unwrap().contains("generic_decline"), "{}", r.text);

    // The card needs its holder (3-D Secure): the PaymentIntent is not succeeded.
    let (authorization, _) = pay(&c, &stripe, "pm_card_authenticationRequired", json!({}));
    let r = paid(&app, &authorization, None, &sale()).await;
    assert_eq!((r.status, problem(&r).as_str()), (402, "payment-action-required"), "{}", r.text);

    // Expired: the challenge lives five minutes; the server's clock is then six minutes later.
    let (authorization, _) = pay(&c, &stripe, "pm_card_visa", json!({}));
    app.clock.advance_ms(360_000);
    let r = paid(&app, &authorization, None, &sale()).await;
    assert_eq!((r.status, problem(&r).as_str()), (402, "payment-expired"), "{}", r.text);

    assert_eq!(stripe.succeeded().await, 0);
    assert_eq!(stripe.calls().await, 2, "only the declined and the unauthenticated card reached Stripe");
    assert_eq!(claims(&app).await, 0);
    assert_eq!(ledger_rows(&app).await, 0);

    // The metrics: 6 refusals, each under its problem.
    assert_eq!(app.metric("levy_payments_total", &[("method", "mpp"), ("outcome", "refused")]), 6.0);
    for problem in [
        "invalid-challenge",
        "payment-insufficient",
        "malformed-credential",
        "verification-failed",
        "payment-action-required",
        "payment-expired",
    ] {
        assert_eq!(app.metric("levy_payment_refusals_total", &[("method", "mpp"), ("reason", problem)]), 1.0, "{problem}");
    }
}

async fn processor_down_is_503_and_records_nothing(backend: Backend) {
    let stripe = Stripe::start();
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let Some(app) = paid_app(backend, &format!("http://127.0.0.1:{closed}")).await else { return };
    let c = challenge(&app).await;
    let (authorization, _) = pay(&c, &stripe, "pm_card_visa", json!({}));
    let r = paid(&app, &authorization, Some("down-1"), &sale()).await;
    assert_eq!((r.status, r.code()), (503, "DB_UNAVAILABLE"), "{}", r.text);
    assert!(r.header("Payment-Receipt").is_none());
    assert_eq!(claims(&app).await, 0, "the challenge's claim is given back");
    assert_eq!(ledger_rows(&app).await, 0);

    // The credential was not spent: another instance (same secret) whose Stripe answers takes it.
    let up = TestApp::start_paid(backend, Limits::default(), None, &payments(&stripe.url)).await.unwrap();
    let r = paid(&up, &authorization, Some("down-1"), &sale()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(stripe.succeeded().await, 1);
    assert_eq!(app.metric("levy_payments_total", &[("method", "mpp"), ("outcome", "unavailable")]), 1.0);
    assert_eq!(up.metric("levy_payments_total", &[("method", "mpp"), ("outcome", "paid")]), 1.0);
}

async fn idempotent_replay_returns_the_stored_answer_and_receipt(backend: Backend) {
    let stripe = Stripe::start();
    let Some(app) = paid_app(backend, &stripe.url).await else { return };
    let c = challenge(&app).await;
    let (authorization, _) = pay(&c, &stripe, "pm_card_visa", json!({}));
    let first = paid(&app, &authorization, Some("idem-1"), &sale()).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let second = paid(&app, &authorization, Some("idem-1"), &sale()).await;
    assert_eq!(second.status, 200, "{}", second.text);
    assert_eq!(second.text, first.text, "the stored answer, byte for byte");
    assert_eq!(second.header("X-Idempotency-Status").as_deref(), Some("cached"));
    assert_eq!(second.header("Payment-Receipt"), first.header("Payment-Receipt"));
    assert_eq!(second.header("Cache-Control").as_deref(), Some("private"));
    assert_eq!(stripe.calls().await, 1);
    assert_eq!(ledger_rows(&app).await, 1);
}

async fn twenty_parallel_calls_with_one_credential_charge_once(backend: Backend) {
    let stripe = Stripe::start();
    let Some(app) = paid_app(backend, &stripe.url).await else { return };
    let c = challenge(&app).await;
    let (authorization, _) = pay(&c, &stripe, "pm_card_visa", json!({}));
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (client, authorization) = (app.client.clone(), authorization.clone());
        tasks.push(tokio::spawn(async move {
            let resp = client.post("/api/v1/calculate").header("Authorization", authorization).body_json(&sale()).send().await;
            let status = resp.0.status().as_u16();
            (status, resp.0.into_body().into_string().await.unwrap())
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        let (status, text) = t.await.unwrap();
        if status != 200 {
            assert!(text.contains("invalid-challenge"), "{status} {text}");
        }
        statuses.push(status);
    }
    statuses.sort();
    assert_eq!(statuses, [vec![200], vec![402; 19]].concat());
    assert_eq!(stripe.calls().await, 1, "one PaymentIntent request");
    assert_eq!(stripe.succeeded().await, 1);
    assert_eq!(ledger_rows(&app).await, 1);
}

/// A trigger that makes the database refuse ledger rows, as a full disk or a lost connection would mid-write.
pub async fn refuse_ledger_rows(app: &TestApp, on: bool) {
    let db = &app.state.store.writer;
    let sql: &[&str] = match (app.backend, on) {
        (Backend::Sqlite, true) => {
            &["CREATE TRIGGER refuse_rows BEFORE INSERT ON transactions BEGIN SELECT RAISE(ABORT, 'ledger rows refused'); END"]
        }
        (Backend::Sqlite, false) => &["DROP TRIGGER refuse_rows"],
        (Backend::Postgres, true) => &[
            "CREATE FUNCTION refuse_rows() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'ledger rows refused'; END $$ LANGUAGE plpgsql",
            "CREATE TRIGGER refuse_rows BEFORE INSERT ON transactions FOR EACH ROW EXECUTE FUNCTION refuse_rows()",
        ],
        (Backend::Postgres, false) => &["DROP TRIGGER refuse_rows ON transactions", "DROP FUNCTION refuse_rows()"],
    };
    for s in sql {
        db.execute_unprepared(s).await.unwrap();
    }
}

async fn a_payment_whose_call_is_not_recorded_is_answered_on_retry(backend: Backend) {
    let stripe = Stripe::start();
    let Some(app) = paid_app(backend, &stripe.url).await else { return };
    let c = challenge(&app).await;
    let (authorization, _) = pay(&c, &stripe, "pm_card_visa", json!({}));
    refuse_ledger_rows(&app, true).await;
    let r = paid(&app, &authorization, None, &sale()).await;
    assert!(r.status == 500 || r.status == 503, "{} {}", r.status, r.text);
    assert!(r.json["error"].as_str().unwrap().contains("the payment was taken"), "{}", r.text);
    assert!(r.header("Payment-Receipt").is_none(), "no receipt with an error");
    assert_eq!(stripe.succeeded().await, 1);
    assert_eq!(ledger_rows(&app).await, 0);
    let kept = mpp_claims().all(&app.state.store.db).await.unwrap();
    assert_eq!((kept.len(), kept[0].state.as_str()), (1, "unrecorded"));
    assert!(kept[0].receipt.is_some(), "the receipt is kept for the retry (and an operator)");

    // The same payment again, once the database takes rows: recorded and answered, not charged again.
    refuse_ledger_rows(&app, false).await;
    let r = paid(&app, &authorization, None, &sale()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.header("Payment-Receipt"), kept[0].receipt);
    assert_eq!(stripe.calls().await, 1);
    assert_eq!(ledger_rows(&app).await, 1);
    // And only once.
    let r = paid(&app, &authorization, None, &sale()).await;
    assert_eq!((r.status, problem(&r).as_str()), (402, "invalid-challenge"), "{}", r.text);
    assert_eq!(ledger_rows(&app).await, 1);
}

/// MPP is off without a secret: a credential is refused with 402 and the offer says MPP is not configured.
async fn mpp_off_says_so(backend: Backend) {
    let Some(app) = TestApp::start_paid(backend, Limits { demo_per_day: 1, ..Limits::default() }, None, &Payments::default()).await else {
        return;
    };
    let c = challenge(&app).await;
    assert_eq!(c.status, 402, "{}", c.text);
    assert!(c.header("WWW-Authenticate").is_none());
    assert!(c.json["pay_per_call"]["mpp"]["note"].as_str().unwrap().contains("not configured"), "{}", c.text);
    let r = paid(&app, "Payment eyJ9", None, &sale()).await;
    assert_eq!((r.status, r.code()), (402, "PAYMENT_REQUIRED"), "{}", r.text);
    assert!(r.json["error"].as_str().unwrap().contains("MPP payments are not configured"), "{}", r.text);
}

crate::on_each_backend!(
    mpp_payment_is_charged_recorded_and_answered,
    refused_credentials_record_nothing,
    processor_down_is_503_and_records_nothing,
    idempotent_replay_returns_the_stored_answer_and_receipt,
    twenty_parallel_calls_with_one_credential_charge_once,
    a_payment_whose_call_is_not_recorded_is_answered_on_retry,
    mpp_off_says_so
);

/// Refused payments are bounded per address: past the limit a minute, 429 with Retry-After, and another address
/// is not affected. (Payments of either protocol count in the one window.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_payments_are_limited_per_address() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let limits = Limits { payment_failures_per_address: 2, ..Limits::default() };
        let Some(app) = TestApp::start_paid(backend, limits, None, &Payments::default()).await else { continue };
        let body = sale().to_string();
        let from = |ip: &'static str, header: (&'static str, &'static str)| {
            let app = &app;
            let body = body.clone();
            async move { app.request("POST", "/api/v1/calculate", None, &[("X-Forwarded-For", ip), header], Some(&body)).await }
        };
        let r = from("203.0.113.20", ("Authorization", "Payment eyJ9")).await;
        assert_eq!((r.status, r.code()), (402, "PAYMENT_REQUIRED"), "{}", r.text);
        let r = from("203.0.113.20", ("X-PAYMENT", "bm90LWEtcGF5bWVudA")).await;
        assert_eq!(r.status, 402, "{}", r.text);
        let r = from("203.0.113.20", ("Authorization", "Payment eyJ9")).await;
        assert_eq!((r.status, r.code()), (429, "RATE_LIMITED"), "{}", r.text);
        // The paid instances' clock is the real time: the minute ends within 60 s.
        let wait: i64 = r.header("retry-after").and_then(|v| v.parse().ok()).expect("Retry-After");
        assert!((1..=60).contains(&wait), "{wait}");
        assert_eq!(from("203.0.113.21", ("Authorization", "Payment eyJ9")).await.status, 402, "another address");
    }
}
