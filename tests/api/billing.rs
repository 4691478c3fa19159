//! Plans people buy: checkout at the payment processor, its signed billing events, operators' plan changes, and the
//! monthly usage statement.
//!
//! The processor is a stand-in on loopback that answers `POST /v1/checkout/sessions` as Stripe's API does and
//! records what it was sent. Billing events are signed with `levy::payments::checkout::sign`, whose headers the official
//! Stripe library (PyPI `stripe`, in the venv named by LEVY_STRIPE_VENV) accepts and refuses exactly as levy does
//! (`our_signatures_are_stripes`).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use levy::billing::Product;
use levy::config::Billing;
use levy::payments::checkout::sign;
use poem::listener::TcpAcceptor;
use poem::web::{Data, Form};
use poem::{handler, post, EndpointExt, Request, Route, Server};
use serde_json::{json, Value};

use crate::harness::{Account, Backend, Reply, TestApp};
use crate::on_each_backend;

const SECRET_KEY: &str = "sk_test_levy";
const WEBHOOK_SECRET: &str = "whsec_levy_test_0123456789";
/// Prices of this server: tax starter, growth and pro; gains pro only.
const PRICES: &str = "tax:starter=price_tax_starter,tax:growth=price_tax_growth,tax:pro=price_tax_pro,gains:pro=price_gains_pro";

/// One request the stand-in processor took: its Authorization header and its form.
type Taken = (Option<String>, Vec<(String, String)>);

/// What the stand-in processor was sent.
#[derive(Clone, Default)]
struct Sent(Arc<Mutex<Vec<Taken>>>);

/// Answers as Stripe's `POST /v1/checkout/sessions` does: the session (id, url), or a 400 for a price it does not know.
#[handler]
fn create_session(req: &Request, form: Form<Vec<(String, String)>>, sent: Data<&Sent>) -> poem::Response {
    let auth = req.headers().get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
    let form = form.0;
    let mut all = sent.0 .0.lock().unwrap();
    all.push((auth, form.clone()));
    let n = all.len();
    if let Some((_, price)) = form.iter().find(|(k, v)| k.ends_with("[price]") && v.starts_with("price_unknown")) {
        let body = json!({"error": {"type": "invalid_request_error", "message": format!("No such price: '{price}'"), "param": "line_items[0][price]"}});
        return poem::Response::builder()
            .status(poem::http::StatusCode::BAD_REQUEST)
            .content_type("application/json")
            .body(body.to_string());
    }
    let id = format!("cs_test_{n:04}");
    let body =
        json!({"id": id, "object": "checkout.session", "mode": "subscription", "url": format!("https://checkout.stripe.com/c/pay/{id}")});
    poem::Response::builder().content_type("application/json").body(body.to_string())
}

/// The stand-in processor on a loopback port of its own.
pub struct Processor {
    pub url: String,
    sent: Sent,
}

impl Processor {
    pub fn start() -> Processor {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        listener.set_nonblocking(true).unwrap();
        let sent = Sent::default();
        let app = Route::new().at("/v1/checkout/sessions", post(create_session)).data(sent.clone());
        tokio::spawn(Server::new_with_acceptor(TcpAcceptor::from_std(listener).unwrap()).run(app));
        Processor { url, sent }
    }

    fn forms(&self) -> Vec<Taken> {
        self.sent.0.lock().unwrap().clone()
    }
}

fn settings(api_base: &str, prices: &str) -> Billing {
    Billing {
        api_base: api_base.into(),
        secret_key: Some(SECRET_KEY.into()),
        webhook_secret: Some(WEBHOOK_SECRET.into()),
        prices: prices.into(),
        success_url: Some("https://levy.example/billing/done".into()),
        cancel_url: Some("https://levy.example/pricing".into()),
    }
}

/// An instance selling plans through the processor at `api_base`, at `prices`.
pub async fn billing_app(backend: Backend, api_base: &str, prices: &str) -> TestApp {
    let settings = settings(api_base, prices);
    TestApp::start_configured(backend, |s| s.with_billing(&settings).unwrap()).await.unwrap()
}

fn field<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
    form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn calc() -> Value {
    json!({"amount": 10, "buyer_state": "TX", "counterparty_id": "c"})
}

fn trade() -> Value {
    json!({"trade_type": "buy", "asset_symbol": "ETH", "quantity": 1, "price_per_unit": 100, "trade_date": "2026-11-20"})
}

/// Counts `n` more calls of `product` in the account's current month, as served calls would have.
async fn seed_usage(app: &TestApp, product: Product, entity_id: &str, calls: i64, overage: i64) {
    let now = app.clock.now_ms();
    for (hit, n) in [(product.usage_hit(entity_id, now), calls), (product.overage_hit(entity_id, now), overage)] {
        if n > 0 {
            app.state.store.hit_counter_by(&hit.name, hit.window_start, hit.expires_at, n).await.unwrap();
        }
    }
}

/// The server's clock, in Unix seconds.
fn now_secs(app: &TestApp) -> i64 {
    app.clock.now_ms() / 1000
}

fn event(id: &str, kind: &str, created: i64, object: Value) -> Value {
    json!({"id": id, "object": "event", "api_version": "2025-10-29.clover", "created": created, "livemode": false, "type": kind, "data": {"object": object}})
}

fn completed(id: &str, created: i64, account: &Account, subscription: &str, metadata: Value) -> Value {
    let object = json!({
        "id": format!("cs_test_{id}"), "object": "checkout.session", "mode": "subscription", "payment_status": "paid",
        "client_reference_id": account.entity_id, "customer": "cus_levy_1", "subscription": subscription, "metadata": metadata,
    });
    event(id, "checkout.session.completed", created, object)
}

fn subscription(id: &str, created: i64, kind: &str, sub: &str, status: &str, prices: &[&str]) -> Value {
    let items: Vec<Value> = prices.iter().map(|p| json!({"object": "subscription_item", "price": {"id": p, "object": "price"}})).collect();
    let object = json!({"id": sub, "object": "subscription", "status": status, "customer": "cus_levy_1", "items": {"object": "list", "data": items}});
    event(id, kind, created, object)
}

fn invoice(id: &str, kind: &str, created: i64, sub: &str) -> Value {
    // The invoice names its subscription where API versions from 2025-03-31 put it.
    let object = json!({"id": format!("in_{id}"), "object": "invoice", "customer": "cus_levy_1",
        "parent": {"type": "subscription_details", "subscription_details": {"subscription": sub}}});
    event(id, kind, created, object)
}

async fn deliver_signed(app: &TestApp, body: &str, signature: &str) -> Reply {
    app.request("POST", "/api/v1/billing/webhook", None, &[("Stripe-Signature", signature)], Some(body)).await
}

/// Delivers an event signed now with the endpoint's secret; asserts it is taken.
async fn deliver(app: &TestApp, event: &Value) -> Reply {
    let body = event.to_string();
    let r = deliver_signed(app, &body, &sign(WEBHOOK_SECRET, now_secs(app), body.as_bytes())).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["received"], json!(true));
    r
}

/// A session's `Authorization` value.
async fn login(app: &TestApp, email: &str) -> String {
    let r = app.post("/api/v1/auth/login", None, &json!({"email": email, "password": "correct horse battery"})).await;
    format!("Bearer {}", r.json["session_token"].as_str().unwrap_or_else(|| panic!("{}", r.text)))
}

async fn me(app: &TestApp, bearer: &str) -> Reply {
    app.request("GET", "/api/v1/auth/me", None, &[("Authorization", bearer)], None).await
}

async fn account_plans(app: &TestApp, entity_id: &str) -> (String, String, String) {
    let a = app.state.store.entity_by_id(entity_id).await.unwrap().unwrap();
    (a.plan, a.gains_plan, a.plan_status)
}

async fn checkout_creates_a_subscription_session(backend: Backend) {
    let processor = Processor::start();
    let app = billing_app(backend, &processor.url, PRICES).await;
    let a = app.signup("buyer@example.com").await;

    let r = app.post("/api/v1/checkout", Some(&a.key), &json!({"product": "tax", "tier": "growth"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["session_id"], json!("cs_test_0001"));
    assert_eq!(r.json["checkout_url"], json!("https://checkout.stripe.com/c/pay/cs_test_0001"));
    assert_eq!(r.json["items"], json!([{"product": "tax", "tier": "growth", "price_id": "price_tax_growth"}]));

    let r = app.post("/api/v1/checkout", Some(&a.key), &json!({"tax_tier": "starter", "gains_tier": "pro"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["session_id"], json!("cs_test_0002"));

    let forms = processor.forms();
    assert_eq!(forms.len(), 2);
    let (auth, one) = &forms[0];
    assert_eq!(auth.as_deref(), Some("Bearer sk_test_levy"), "the secret key authenticates the call");
    for (name, value) in [
        ("mode", "subscription"),
        ("client_reference_id", a.entity_id.as_str()),
        ("customer_email", "buyer@example.com"),
        ("line_items[0][price]", "price_tax_growth"),
        ("line_items[0][quantity]", "1"),
        ("metadata[levy_account]", a.entity_id.as_str()),
        ("metadata[tax_tier]", "growth"),
        ("subscription_data[metadata][levy_account]", a.entity_id.as_str()),
        ("subscription_data[metadata][tax_tier]", "growth"),
        ("success_url", "https://levy.example/billing/done"),
        ("cancel_url", "https://levy.example/pricing"),
    ] {
        assert_eq!(field(one, name), Some(value), "{name} in {one:?}");
    }
    assert_eq!(field(one, "line_items[1][price]"), None, "one product, one line item");
    let (_, bundle) = &forms[1];
    assert_eq!(field(bundle, "line_items[0][price]"), Some("price_tax_starter"));
    assert_eq!(field(bundle, "line_items[1][price]"), Some("price_gains_pro"));
    assert_eq!(field(bundle, "metadata[tax_tier]"), Some("starter"));
    assert_eq!(field(bundle, "metadata[gains_tier]"), Some("pro"));
    assert_eq!(app.metric("levy_checkout_sessions_total", &[("outcome", "created")]), 2.0);

    // The pricing document publishes this server's price ids (the tax product's), null where none is set.
    let p = app.get("/api/v1/pricing", None).await;
    let ids: Vec<&Value> = p.json["tiers"].as_array().unwrap().iter().map(|t| &t["stripe_price_id"]).collect();
    assert_eq!(ids, [&json!(null), &json!("price_tax_starter"), &json!("price_tax_growth"), &json!("price_tax_pro")]);
}

async fn checkout_bodies_are_checked(backend: Backend) {
    let processor = Processor::start();
    let app = billing_app(backend, &processor.url, PRICES).await;
    let a = app.signup("shapes@example.com").await;
    let cases: [(Value, &str); 8] = [
        // The shapes' words come from the document's two forms (`api::conform`).
        (json!({}), "body: expected {product, tier} or {tax_tier, gains_tier}"),
        (json!({"product": "tax"}), "tier: is required"),
        (
            json!({"product": "tax", "tier": "growth", "gains_tier": "pro"}),
            "body: send {product, tier} or {tax_tier, gains_tier}, not fields of several",
        ),
        (json!({"product": "fees", "tier": "growth"}), "product: `fees` is not one of: tax, gains"),
        (json!({"product": "tax", "tier": "free"}), "tier: the free plan needs no checkout: every account starts on it"),
        (json!({"product": "tax", "tier": "growht"}), "tier: `growht` is not a paid tier: starter, growth, pro; did you mean `growth`?"),
        (
            json!({"tax_tier": "pro", "gains_tier": "growth"}),
            "gains_tier: the growth tier of gains is not sold through checkout on this server (no price is configured for it)",
        ),
        (json!({"tax_tier": "pro"}), "gains_tier: is required"),
    ];
    for (body, error) in cases {
        let r = app.post("/api/v1/checkout", Some(&a.key), &body).await;
        assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{body}: {}", r.text);
        assert_eq!(r.errors(), [error], "{body}");
    }
    let r = app.request("POST", "/api/v1/checkout", Some(&a.key), &[], Some("[1]")).await;
    assert_eq!(r.errors(), ["body: must be a JSON object"]);
    let r = app.request("POST", "/api/v1/checkout", Some(&a.key), &[], Some("{")).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_JSON_BODY"));
    let r = app.post("/api/v1/checkout", None, &json!({"product": "tax", "tier": "growth"})).await;
    assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED"));
    assert!(processor.forms().is_empty(), "no refused checkout reached the processor");
}

async fn checkout_without_a_processor_says_how_plans_are_set(backend: Backend) {
    let app = TestApp::start(backend).await.unwrap();
    let a = app.signup("selfhosted@example.com").await;
    let r = app.post("/api/v1/checkout", Some(&a.key), &json!({"product": "tax", "tier": "growth"})).await;
    assert_eq!((r.status, r.code()), (404, "RESOURCE_NOT_FOUND"), "{}", r.text);
    assert!(r.json["error"].as_str().unwrap().contains("`levy accounts set-plan EMAIL PLAN`"), "{}", r.text);
    // Billing events are refused as well: no secret to check them with.
    let r = app.request("POST", "/api/v1/billing/webhook", None, &[("Stripe-Signature", "t=1,v1=00")], Some("{}")).await;
    assert_eq!((r.status, r.code()), (404, "RESOURCE_NOT_FOUND"), "{}", r.text);
}

async fn processor_down_or_refusing(backend: Backend) {
    // A port nothing listens on: bound, then released.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let app = billing_app(backend, &closed, PRICES).await;
    let a = app.signup("down@example.com").await;
    let r = app.post("/api/v1/checkout", Some(&a.key), &json!({"product": "tax", "tier": "pro"})).await;
    assert_eq!((r.status, r.code()), (503, "DB_UNAVAILABLE"), "{}", r.text);
    assert!(r.json["error"].as_str().unwrap().contains("payment processor did not answer; nothing was bought"));
    assert_eq!(app.metric("levy_checkout_sessions_total", &[("outcome", "unavailable")]), 1.0);

    // A price the processor does not know: the configuration is at fault, a 500 (details in the server's log).
    let processor = Processor::start();
    let app = billing_app(backend, &processor.url, "tax:pro=price_unknown_1").await;
    let a = app.signup("refused@example.com").await;
    let r = app.post("/api/v1/checkout", Some(&a.key), &json!({"product": "tax", "tier": "pro"})).await;
    assert_eq!((r.status, r.code()), (500, "INTERNAL"), "{}", r.text);
    assert_eq!(processor.forms().len(), 1);
    assert_eq!(app.metric("levy_checkout_sessions_total", &[("outcome", "refused")]), 1.0);
    assert_eq!(app.metric("levy_checkout_sessions_total", &[("outcome", "created")]), 0.0);
}

async fn checkout_and_events_move_an_account_free_to_growth_and_back(backend: Backend) {
    let processor = Processor::start();
    let app = billing_app(backend, &processor.url, PRICES).await;
    let other = TestApp::on(app.db.clone(), backend, app.clock.clone()).await;
    let a = app.signup("grows@example.com").await;
    let b = app.signup("stays@example.com").await;
    // Both have used the free plan's 1,500 calls of November: B's 1,501st call is refused.
    seed_usage(&app, Product::Tax, &a.entity_id, 1500, 0).await;
    seed_usage(&app, Product::Tax, &b.entity_id, 1500, 0).await;
    let r = other.post("/api/v1/calculate", Some(&b.key), &calc()).await;
    assert_eq!((r.status, r.code()), (429, "RATE_LIMITED"), "{}", r.text);
    assert!(r.json["error"].as_str().unwrap().starts_with("Monthly limit reached: the Free plan includes 1,500 calls"));

    // A buys growth: the checkout session, then the processor's event for it.
    let r = app.post("/api/v1/checkout", Some(&a.key), &json!({"product": "tax", "tier": "growth"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let session = r.json["session_id"].as_str().unwrap().to_string();
    let t = now_secs(&app);
    let mut paid = completed("evt_paid", t, &a, "sub_1", json!({"levy_account": a.entity_id, "tax_tier": "growth"}));
    paid["data"]["object"]["id"] = json!(session);
    let r = deliver(&app, &paid).await;
    assert_eq!((r.json["applied"].clone(), r.json["duplicate"].clone()), (json!(true), json!(false)), "{}", r.text);
    assert_eq!(r.json["outcome"], json!(format!("{}: tax plan growth", a.entity_id)));
    assert_eq!(account_plans(&app, &a.entity_id).await, ("growth".into(), "free".into(), "active".into()));
    // A's 1,501st call of the month succeeds, on the other instance; its 1,502nd on this one.
    let r = other.post("/api/v1/calculate", Some(&a.key), &calc()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.post("/api/v1/calculate", Some(&a.key), &calc()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let me = app.get("/api/v1/usage", Some(&a.key)).await;
    assert_eq!(me.json["products"][0]["calls"], json!(1502));
    assert_eq!(me.json["products"][0]["included"], json!(100000));

    // The same event again changes nothing.
    let r = deliver(&app, &paid).await;
    assert_eq!((r.json["applied"].clone(), r.json["duplicate"].clone()), (json!(false), json!(true)), "{}", r.text);

    // The subscription ends: back to free, and the next call is past the allowance again.
    let r =
        deliver(&app, &subscription("evt_end", t + 1, "customer.subscription.deleted", "sub_1", "canceled", &["price_tax_growth"])).await;
    assert_eq!(r.json["outcome"], json!(format!("{}: tax plan free", a.entity_id)), "{}", r.text);
    assert_eq!(account_plans(&app, &a.entity_id).await, ("free".into(), "free".into(), "active".into()));
    let r = other.post("/api/v1/calculate", Some(&a.key), &calc()).await;
    assert_eq!((r.status, r.code()), (429, "RATE_LIMITED"), "{}", r.text);
    // Replaying the paid checkout does not buy the plan again.
    let r = deliver(&app, &paid).await;
    assert_eq!(r.json["duplicate"], json!(true));
    assert_eq!(account_plans(&app, &a.entity_id).await.0, "free");

    // The end of a subscription that no longer pays for the plan leaves the newer one alone.
    deliver(&app, &completed("evt_paid2", t + 2, &a, "sub_2", json!({"tax_tier": "pro"}))).await;
    let r =
        deliver(&app, &subscription("evt_old", t + 3, "customer.subscription.deleted", "sub_1", "canceled", &["price_tax_growth"])).await;
    assert_eq!(r.json["applied"], json!(false), "{}", r.text);
    assert_eq!(account_plans(&app, &a.entity_id).await.0, "pro");
    // A change of price on the subscription changes the tier.
    let r =
        deliver(&app, &subscription("evt_down", t + 4, "customer.subscription.updated", "sub_2", "active", &["price_tax_starter"])).await;
    assert_eq!(r.json["outcome"], json!(format!("{}: tax plan starter, active", a.entity_id)), "{}", r.text);
    // Delivered out of order: the subscription's end (t + 6), then an update made before it (t + 5). The update is
    // older than what was applied about the subscription, and changes nothing.
    let end = subscription("evt_end2", t + 6, "customer.subscription.deleted", "sub_2", "canceled", &["price_tax_starter"]);
    assert_eq!(deliver(&app, &end).await.json["outcome"], json!(format!("{}: tax plan free", a.entity_id)));
    let late = subscription("evt_late", t + 5, "customer.subscription.updated", "sub_2", "active", &["price_tax_growth"]);
    let r = deliver(&app, &late).await;
    assert_eq!(
        (r.json["applied"].clone(), r.json["outcome"].clone()),
        (json!(false), json!("a newer event about this subscription was applied before; this one changes nothing"))
    );
    assert_eq!(account_plans(&app, &a.entity_id).await.0, "free");
    // An event levy does not act on is acknowledged and recorded.
    let r = deliver(&app, &event("evt_other", "customer.created", t, json!({"id": "cus_levy_1", "object": "customer"}))).await;
    assert_eq!(
        (r.json["applied"].clone(), r.json["outcome"].clone()),
        (json!(false), json!("levy does not act on customer.created events"))
    );
}

async fn forged_stale_and_malformed_events_change_nothing(backend: Backend) {
    let app = billing_app(backend, "http://127.0.0.1:9", PRICES).await;
    let a = app.signup("forged@example.com").await;
    let t = now_secs(&app);
    let body = completed("evt_forged", t, &a, "sub_f", json!({"tax_tier": "pro"})).to_string();
    let tampered = body.replace("\"pro\"", "\"growth\"");
    let cases = [
        ("another secret", sign("whsec_someone_else", t, body.as_bytes()), body.clone(), "no v1 signature matches the body"),
        ("301 s old", sign(WEBHOOK_SECRET, t - 301, body.as_bytes()), body.clone(), "more than 5 minutes"),
        ("301 s ahead", sign(WEBHOOK_SECRET, t + 301, body.as_bytes()), body.clone(), "more than 5 minutes"),
        ("the body changed after signing", sign(WEBHOOK_SECRET, t, body.as_bytes()), tampered, "no v1 signature matches the body"),
        ("no v1", format!("t={t}"), body.clone(), "is not t=<unix seconds>,v1=<hex>"),
        ("not hex", format!("t={t},v1=zz"), body.clone(), "is not t=<unix seconds>,v1=<hex>"),
    ];
    for (what, signature, body, error) in cases {
        let r = deliver_signed(&app, &body, &signature).await;
        assert_eq!((r.status, r.code()), (401, "WEBHOOK_SIGNATURE_INVALID"), "{what}: {}", r.text);
        assert!(r.json["error"].as_str().unwrap().contains(error), "{what}: {}", r.text);
    }
    let r = app.request("POST", "/api/v1/billing/webhook", None, &[], Some(&body)).await;
    assert_eq!((r.status, r.code()), (401, "WEBHOOK_SIGNATURE_INVALID"), "{}", r.text);
    assert_eq!(account_plans(&app, &a.entity_id).await.0, "free", "0 forged or stale events accepted");
    // 300 s old is within the tolerance.
    let r = deliver_signed(&app, &body, &sign(WEBHOOK_SECRET, t - 300, body.as_bytes())).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(account_plans(&app, &a.entity_id).await.0, "pro");
    // Signed, but not an event: 400 naming the body.
    let junk = json!({"hello": "world"}).to_string();
    let r = deliver_signed(&app, &junk, &sign(WEBHOOK_SECRET, t, junk.as_bytes())).await;
    assert_eq!((r.status, r.errors()), (400, vec!["body: the event has no id".to_string()]), "{}", r.text);
    // The metrics: 7 bad signatures and the junk body refused, the one good event applied.
    assert_eq!(app.metric("levy_billing_events_total", &[("outcome", "refused")]), 8.0);
    assert_eq!(app.metric("levy_billing_events_total", &[("outcome", "applied")]), 1.0);
}

async fn a_failed_payment_keeps_the_plan_through_the_grace_period(backend: Backend) {
    let app = billing_app(backend, "http://127.0.0.1:9", PRICES).await;
    let a = app.signup("pastdue@example.com").await;
    let bearer = login(&app, "pastdue@example.com").await;

    let t = now_secs(&app);
    deliver(&app, &completed("evt_g1", t, &a, "sub_g", json!({"tax_tier": "growth", "gains_tier": "pro"}))).await;
    assert_eq!(account_plans(&app, &a.entity_id).await, ("growth".into(), "pro".into(), "active".into()));
    let r = deliver(&app, &invoice("evt_g2", "invoice.payment_failed", t, "sub_g")).await;
    assert_eq!(r.json["outcome"], json!(format!("{}: past due", a.entity_id)));
    let m = me(&app, &bearer).await;
    assert_eq!(m.status, 200, "{}", m.text);
    // Failed at 2026-11-21T10:00:00Z; 14 days of grace end 2026-12-05T10:00:00Z.
    assert_eq!(
        m.json["plans"],
        json!({"tax_plan": "growth", "gains_plan": "pro", "status": "past_due",
               "past_due_since": "2026-11-21T10:00:00.000Z", "grace_ends_at": "2026-12-05T10:00:00.000Z"})
    );
    seed_usage(&app, Product::Tax, &a.entity_id, 5000, 0).await;
    assert_eq!(app.post("/api/v1/calculate", Some(&a.key), &calc()).await.status, 200, "growth still applies in the grace period");

    // A second at the end of the grace period: suspended, the free plan applies (December's 1,500).
    app.clock.set("2026-12-05T10:00:00Z".parse().unwrap());
    seed_usage(&app, Product::Tax, &a.entity_id, 1500, 0).await;
    let r = app.post("/api/v1/calculate", Some(&a.key), &calc()).await;
    assert_eq!((r.status, r.code()), (429, "RATE_LIMITED"), "{}", r.text);
    assert!(r.json["error"].as_str().unwrap().contains("the Free plan"), "{}", r.text);
    let bearer = login(&app, "pastdue@example.com").await;
    assert_eq!(me(&app, &bearer).await.json["plans"]["status"], json!("suspended"));
    let u = app.get("/api/v1/usage", Some(&a.key)).await;
    assert_eq!((u.json["plan_status"].clone(), u.json["products"][0]["plan"].clone()), (json!("suspended"), json!("free")));

    // The payment goes through: active on growth again.
    let r = deliver(&app, &invoice("evt_g3", "invoice.paid", now_secs(&app), "sub_g")).await;
    assert_eq!(r.json["outcome"], json!(format!("{}: active", a.entity_id)));
    assert_eq!(app.post("/api/v1/calculate", Some(&a.key), &calc()).await.status, 200);
    let m = me(&app, &bearer).await;
    assert_eq!((m.json["plans"]["status"].clone(), m.json["plans"]["grace_ends_at"].clone()), (json!("active"), json!(null)));
}

async fn the_gains_plan_counts_trades(backend: Backend) {
    let app = billing_app(backend, "http://127.0.0.1:9", PRICES).await;
    let a = app.signup("trader@example.com").await;
    seed_usage(&app, Product::Gains, &a.entity_id, 1500, 0).await;
    let r = app.post("/api/v1/trades", Some(&a.key), &trade()).await;
    assert_eq!((r.status, r.code()), (429, "RATE_LIMITED"), "{}", r.text);
    assert!(r.json["error"].as_str().unwrap().starts_with("Monthly limit reached"));
    assert_eq!(app.get("/api/v1/trades", Some(&a.key)).await.json["trades"], json!([]), "nothing written");
    // The gains pro plan: 1,000,000 trades a month.
    deliver(&app, &completed("evt_t1", now_secs(&app), &a, "sub_t", json!({"gains_tier": "pro"}))).await;
    let r = app.post("/api/v1/trades", Some(&a.key), &trade()).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let u = app.get("/api/v1/usage", Some(&a.key)).await;
    assert_eq!(
        u.json["products"][1],
        json!({"product": "gains", "plan": "pro", "calls": 1501, "included": 1000000,
        "overage_calls": 0, "overage_usd_per_call": "0.005", "overage_usd": "0.00"})
    );
    assert_eq!(u.json["products"][0]["plan"], json!("free"), "the tax plan is unchanged");
    // Five overage calls at 0.005 USD are 0.025 USD: rounded half away from zero, as every money figure is, 0.03
    // (half to even would say 0.02).
    seed_usage(&app, Product::Gains, &a.entity_id, 0, 5).await;
    let u = app.get("/api/v1/usage", Some(&a.key)).await;
    assert_eq!((u.json["products"][1]["overage_usd"].clone(), u.json["overage_usd"].clone()), (json!("0.03"), json!("0.03")), "{}", u.text);
}

async fn the_usage_statement_of_a_starter_account_250_over(backend: Backend) {
    let app = TestApp::start(backend).await.unwrap();
    let a = app.signup("starter@example.com").await;
    let plans = &app.state.plans;
    let out = levy::cli::accounts::set_plan(&app.state.store, plans, "Starter@Example.com", "starter", "tax").await.unwrap();
    assert_eq!(out, format!("ok: starter@example.com ({}) is on the starter plan for tax, from its next call", a.entity_id));
    // 10,249 calls this month, 249 of them past the 10,000 included; then one more, served and metered.
    seed_usage(&app, Product::Tax, &a.entity_id, 10_249, 249).await;
    let r = app.post("/api/v1/calculate", Some(&a.key), &calc()).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let u = app.get("/api/v1/usage", Some(&a.key)).await;
    assert_eq!(u.status, 200, "{}", u.text);
    // 250 past the allowance at 0.01 USD: 2.50 USD.
    assert_eq!(
        u.json,
        json!({"success": true, "entity_id": a.entity_id, "email": "starter@example.com", "month": "2026-11", "plan_status": "active",
            "products": [
                {"product": "tax", "plan": "starter", "calls": 10250, "included": 10000, "overage_calls": 250,
                 "overage_usd_per_call": "0.01", "overage_usd": "2.50"},
                {"product": "gains", "plan": "free", "calls": 0, "included": 1500, "overage_calls": 0,
                 "overage_usd_per_call": null, "overage_usd": null}],
            "overage_usd": "2.50"})
    );
    // The operator's export of the month has the same figures.
    let now = app.clock.now_ms();
    let csv = levy::cli::accounts::usage(&app.state.store, plans, now, None, "csv").await.unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "month,entity_id,email,plan_status,product,plan,calls,included,overage_calls,overage_usd_per_call,overage_usd");
    assert_eq!(lines[1], format!("2026-11,{},starter@example.com,active,tax,starter,10250,10000,250,0.01,2.50", a.entity_id));
    assert_eq!(lines[2], format!("2026-11,{},starter@example.com,active,gains,free,0,1500,0,,", a.entity_id));
    let json_out: Value =
        serde_json::from_str(&levy::cli::accounts::usage(&app.state.store, plans, now, Some("2026-11"), "json").await.unwrap()).unwrap();
    let mine = json_out.as_array().unwrap().iter().find(|s| s["entity_id"] == json!(a.entity_id)).unwrap();
    assert_eq!(mine, &u.json, "the operator's JSON is the account's GET /usage answer");

    // Months: the previous one is kept (nothing in it here); earlier and later ones have no statement.
    let r = app.get("/api/v1/usage?month=2026-10", Some(&a.key)).await;
    assert_eq!((r.status, r.json["products"][0]["calls"].clone()), (200, json!(0)), "{}", r.text);
    for none in ["2026-09", "2026-12"] {
        let r = app.get(&format!("/api/v1/usage?month={none}"), Some(&a.key)).await;
        assert_eq!((r.status, r.code()), (404, "RESOURCE_NOT_FOUND"), "{none}: {}", r.text);
        assert_eq!(r.json["error"], json!("usage is kept for the current and the previous month (2026-11 and 2026-10)"));
    }
    for bad in ["2026-13", "November", "2026-1"] {
        let r = app.get(&format!("/api/v1/usage?month={bad}"), Some(&a.key)).await;
        assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{bad}: {}", r.text);
    }
    // The operator's commands refuse what they cannot do.
    let e = levy::cli::accounts::set_plan(&app.state.store, plans, "starter@example.com", "growht", "tax").await.unwrap_err();
    assert_eq!(e, "`growht` is not a plan of the plans file: free, starter, growth, pro; did you mean `growth`?");
    let e = levy::cli::accounts::set_plan(&app.state.store, plans, "nobody@example.com", "growth", "tax").await.unwrap_err();
    assert_eq!(e, "no account has the email nobody@example.com");
}

on_each_backend!(
    checkout_creates_a_subscription_session,
    checkout_bodies_are_checked,
    checkout_without_a_processor_says_how_plans_are_set,
    processor_down_or_refusing,
    checkout_and_events_move_an_account_free_to_growth_and_back,
    forged_stale_and_malformed_events_change_nothing,
    a_failed_payment_keeps_the_plan_through_the_grace_period,
    the_gains_plan_counts_trades,
    the_usage_statement_of_a_starter_account_250_over
);

/// `levy accounts set-plan` and `levy accounts list`, as an operator runs them, on the SQLite file of a running
/// instance: no processor configured, and the plan applies from the account's next call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_plan_from_the_command_line() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let a = app.signup("operator-set@example.com").await;
    seed_usage(&app, Product::Tax, &a.entity_id, 1500, 0).await;
    assert_eq!(app.post("/api/v1/calculate", Some(&a.key), &calc()).await.status, 429);
    let levy = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_levy"))
            .args(["accounts", "--database-url", &app.db.url])
            .args(args)
            .env_remove("LEVY_STRIPE_SECRET_KEY")
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, stdout, stderr) = levy(&["set-plan", "operator-set@example.com", "growth"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout.trim(), format!("ok: operator-set@example.com ({}) is on the growth plan for tax, from its next call", a.entity_id));
    assert_eq!(app.post("/api/v1/calculate", Some(&a.key), &calc()).await.status, 200, "call 1,501 on growth");
    let (code, stdout, _) = levy(&["set-plan", "operator-set@example.com", "pro", "--product", "gains"]);
    assert_eq!(code, Some(0), "{stdout}");
    let (code, stdout, _) = levy(&["list", "--json"]);
    assert_eq!(code, Some(0));
    let rows: Value = serde_json::from_str(&stdout).unwrap();
    let row = rows.as_array().unwrap().iter().find(|r| r["email"] == json!("operator-set@example.com")).unwrap().clone();
    assert_eq!(
        (row["tax_plan"].clone(), row["gains_plan"].clone(), row["plan_status"].clone()),
        (json!("growth"), json!("pro"), json!("active"))
    );
    let (code, _, stderr) = levy(&["set-plan", "nobody@example.com", "growth"]);
    assert_eq!((code, stderr.trim()), (Some(1), "error: no account has the email nobody@example.com"));
}

/// The headers levy signs events with are Stripe's: the official library accepts and refuses them as levy does.
#[test]
fn our_signatures_are_stripes() {
    let venv = std::env::var("LEVY_STRIPE_VENV").unwrap_or_else(|_| format!("{}/target/stripe-venv", env!("CARGO_MANIFEST_DIR")));
    let python = format!("{venv}/bin/python");
    assert!(
        std::path::Path::new(&python).exists(),
        "this test needs a Python venv with stripe==16.1.0 at {venv} (LEVY_STRIPE_VENV): python3 -m venv {venv} && \
         {venv}/bin/pip install 'stripe==16.1.0' (as .ci/run does)"
    );
    let mut child = Command::new(&python)
        .arg(format!("{}/tests/billing/verify_signature.py", env!("CARGO_MANIFEST_DIR")))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut ready = String::new();
    out.read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), "ready", "verify_signature.py did not start");
    // Both sides read the time within a second of each other: the cases keep 5 s from the tolerance's edge.
    let now = chrono::Utc::now().timestamp();
    let body = r#"{"id":"evt_1","object":"event","type":"invoice.paid","created":1795255200,"data":{"object":{"subscription":"sub_1"}}}"#;
    let cases = [
        (sign(WEBHOOK_SECRET, now, body.as_bytes()), WEBHOOK_SECRET, true),
        (sign(WEBHOOK_SECRET, now - 295, body.as_bytes()), WEBHOOK_SECRET, true),
        (sign(WEBHOOK_SECRET, now - 305, body.as_bytes()), WEBHOOK_SECRET, false),
        (sign("whsec_other", now, body.as_bytes()), WEBHOOK_SECRET, false),
        // Two v1 signatures, as during a secret's rotation: one match is enough.
        (
            format!(
                "{},v1={}",
                sign("whsec_other", now, body.as_bytes()),
                &sign(WEBHOOK_SECRET, now, body.as_bytes())[format!("t={now},v1=").len()..]
            ),
            WEBHOOK_SECRET,
            true,
        ),
    ];
    for (header, secret, valid) in cases {
        writeln!(stdin, "{}", json!({"payload": body, "header": header, "secret": secret, "tolerance": 300})).unwrap();
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        assert_eq!(line.trim() == "ok", valid, "stripe says `{}` of {header}", line.trim());
        assert_eq!(levy::payments::checkout::verify(secret, Some(&header), body.as_bytes(), now).is_ok(), valid, "levy on {header}");
    }
    drop(stdin);
    child.wait().unwrap();
}
