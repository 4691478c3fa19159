//! The payment processor of subscriptions, Stripe, through its HTTP API: checkout sessions for a plan (`POST
//! /v1/checkout/sessions`, mode `subscription`) and the billing events its webhooks deliver, signed with the
//! endpoint's secret (the `Stripe-Signature` header: `t=<unix seconds>,v1=<hex HMAC-SHA256 of "t.body">`).
//!
//! Sources: Stripe API reference, "Create a Checkout Session" (`mode`, `line_items[][price|quantity]`,
//! `client_reference_id`, `customer_email`, `metadata`, `subscription_data[metadata]`, `success_url`,
//! `cancel_url`); Stripe docs, "Check the webhook signatures" (the signed payload `t.body`, HMAC-SHA256 with the
//! endpoint secret, compare every `v1`, a tolerance of five minutes).

use std::collections::BTreeMap;
use std::time::Duration;

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;

use crate::billing::changes::Change;
use crate::billing::events::Event;
use crate::billing::Product;
use crate::config::Billing;
use crate::plans::{Plans, DEFAULT_PLAN};
use crate::store::entity::entity;

/// How far a signature's timestamp may be from the server's clock, either way (seconds).
pub const TOLERANCE_SECS: i64 = 300;

/// The processor's price of each product and tier that can be bought.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prices(BTreeMap<(Product, String), String>);

impl Prices {
    /// Reads `product:tier=price_id` pairs separated by commas (LEVY_STRIPE_PRICES), each tier a paid tier of the
    /// plans file.
    pub fn parse(text: &str, plans: &Plans) -> Result<Prices, String> {
        let mut map = BTreeMap::new();
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let bad =
                |why: String| format!("LEVY_STRIPE_PRICES: `{pair}`: {why} (expected product:tier=price_id, e.g. tax:growth=price_1Q...)");
            let (key, price) = pair.split_once('=').ok_or_else(|| bad("no `=`".into()))?;
            let (product, tier) = key.trim().split_once(':').ok_or_else(|| bad("no `:` between product and tier".into()))?;
            let product = Product::parse(product.trim()).ok_or_else(|| bad("the product is `tax` or `gains`".into()))?;
            let tier = tier.trim();
            if !plans.tiers.iter().any(|p| p.id == tier) || tier == DEFAULT_PLAN {
                let paid: Vec<&str> = plans.tiers.iter().map(|p| p.id.as_str()).filter(|id| *id != DEFAULT_PLAN).collect();
                return Err(bad(format!("the tier is one of the plans file's paid tiers: {}", paid.join(", "))));
            }
            let price = price.trim();
            if price.is_empty() || !price.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(bad("the price id is letters, digits and `_`".into()));
            }
            if map.insert((product, tier.to_string()), price.to_string()).is_some() {
                return Err(bad("this product and tier are priced twice".into()));
            }
        }
        Ok(Prices(map))
    }

    /// The price id of a product's tier, when one is configured.
    pub fn price(&self, product: Product, tier: &str) -> Option<&str> {
        self.0.get(&(product, tier.to_string())).map(String::as_str)
    }

    /// The product and tier a price id stands for.
    pub fn tier_of(&self, price_id: &str) -> Option<(Product, &str)> {
        self.0.iter().find(|(_, p)| *p == price_id).map(|((product, tier), _)| (*product, tier.as_str()))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A checkout session the processor created.
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    pub id: String,
    pub url: String,
}

/// Why no checkout session was created.
#[derive(Debug, PartialEq)]
pub enum ProcessorError {
    /// No answer, a 5xx, a 429, or an answer that is not a session: transient; nothing was bought.
    Unavailable(String),
    /// The processor refused the request (a 4xx): the configuration is at fault (a price id it does not know, a
    /// revoked key); its message.
    Refused(String),
}

/// The processor as this server is configured to use it.
pub struct Stripe {
    http: reqwest::Client,
    api_base: String,
    secret_key: Option<String>,
    webhook_secret: Option<String>,
    pub prices: Prices,
    success_url: String,
    cancel_url: String,
}

impl Stripe {
    /// The processor as `settings` say, its prices checked against the plans file. Checkout needs a secret key,
    /// at least one price and both return URLs; a secret key without the rest is a configuration error.
    pub fn from_settings(settings: &Billing, plans: &Plans) -> Result<Stripe, String> {
        let prices = Prices::parse(&settings.prices, plans)?;
        if settings.secret_key.is_some() {
            if prices.is_empty() {
                return Err(
                    "LEVY_STRIPE_SECRET_KEY is set but LEVY_STRIPE_PRICES names no price: checkout would have nothing to sell".into()
                );
            }
            if settings.success_url.is_none() || settings.cancel_url.is_none() {
                return Err(
                    "LEVY_STRIPE_SECRET_KEY is set: LEVY_CHECKOUT_SUCCESS_URL and LEVY_CHECKOUT_CANCEL_URL are required with it".into()
                );
            }
        }
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(20))
            .build()
            .map_err(|e| format!("HTTP client: {e}"))?;
        Ok(Stripe {
            http,
            api_base: settings.api_base.trim_end_matches('/').to_string(),
            secret_key: settings.secret_key.clone(),
            webhook_secret: settings.webhook_secret.clone(),
            prices,
            success_url: settings.success_url.clone().unwrap_or_default(),
            cancel_url: settings.cancel_url.clone().unwrap_or_default(),
        })
    }

    /// Whether checkout sessions can be created.
    pub fn checkout_enabled(&self) -> bool {
        self.secret_key.is_some()
    }

    /// The webhook endpoint's signing secret, when billing events are taken.
    pub fn webhook_secret(&self) -> Option<&str> {
        self.webhook_secret.as_deref()
    }

    /// Creates a subscription checkout session for the account: one line item per product and tier bought, the
    /// account as client reference and in the metadata of the session and of the subscription it creates (the
    /// billing events name the account by them).
    pub async fn create_checkout(&self, account: &entity::Model, items: &[(Product, String)]) -> Result<Session, ProcessorError> {
        let Some(key) = &self.secret_key else { return Err(ProcessorError::Refused("checkout is not configured".into())) };
        let mut form: Vec<(String, String)> = vec![
            ("mode".into(), "subscription".into()),
            ("client_reference_id".into(), account.id.clone()),
            ("success_url".into(), self.success_url.clone()),
            ("cancel_url".into(), self.cancel_url.clone()),
            ("metadata[levy_account]".into(), account.id.clone()),
            ("subscription_data[metadata][levy_account]".into(), account.id.clone()),
        ];
        if account.email.contains('@') && !account.email.ends_with(".invalid") {
            form.push(("customer_email".into(), account.email.clone()));
        }
        if let Some(customer) = &account.billing_customer {
            form.retain(|(k, _)| k != "customer_email");
            form.push(("customer".into(), customer.clone()));
        }
        for (i, (product, tier)) in items.iter().enumerate() {
            let price = self
                .prices
                .price(*product, tier)
                .ok_or_else(|| ProcessorError::Refused(format!("no price for {} {tier}", product.id())))?;
            form.push((format!("line_items[{i}][price]"), price.to_string()));
            form.push((format!("line_items[{i}][quantity]"), "1".into()));
            form.push((format!("metadata[{}_tier]", product.id()), tier.clone()));
            form.push((format!("subscription_data[metadata][{}_tier]", product.id()), tier.clone()));
        }
        let url = format!("{}/v1/checkout/sessions", self.api_base);
        let resp =
            self.http.post(&url).bearer_auth(key).form(&form).send().await.map_err(|e| ProcessorError::Unavailable(e.to_string()))?;
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if status.is_client_error() && status.as_u16() != 429 {
            let message = body["error"]["message"].as_str().unwrap_or("no message").to_string();
            return Err(ProcessorError::Refused(format!("HTTP {}: {message}", status.as_u16())));
        }
        match (status.is_success(), body["id"].as_str(), body["url"].as_str()) {
            (true, Some(id), Some(url)) => Ok(Session { id: id.into(), url: url.into() }),
            _ => Err(ProcessorError::Unavailable(format!("HTTP {} without a session id and url", status.as_u16()))),
        }
    }
}

/// Why a billing event was not taken.
#[derive(Debug, PartialEq)]
pub enum SignatureError {
    Missing,
    Malformed,
    /// The timestamp is more than [`TOLERANCE_SECS`] from the server's clock.
    Stale,
    /// No `v1` signature matches.
    Mismatch,
}

impl SignatureError {
    pub fn message(&self) -> &'static str {
        match self {
            SignatureError::Missing => "no Stripe-Signature header",
            SignatureError::Malformed => "the Stripe-Signature header is not t=<unix seconds>,v1=<hex>",
            SignatureError::Stale => "the signature's timestamp is more than 5 minutes from the server's clock",
            SignatureError::Mismatch => "no v1 signature matches the body",
        }
    }
}

fn mac(secret: &str, t: i64, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The `Stripe-Signature` value the processor sends for `body` at `t` (what the tests sign events with).
pub fn sign(secret: &str, t: i64, body: &[u8]) -> String {
    format!("t={t},v1={}", hex::encode(mac(secret, t, body).finalize().into_bytes()))
}

/// Checks a `Stripe-Signature` header against the raw body: its timestamp within [`TOLERANCE_SECS`] of `now_secs`,
/// and one of its `v1` signatures the HMAC-SHA256 of `t.body` with the secret (compared in constant time).
pub fn verify(secret: &str, header: Option<&str>, body: &[u8], now_secs: i64) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let mut t = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        let (k, v) = part.trim().split_once('=').ok_or(SignatureError::Malformed)?;
        match k {
            "t" => t = Some(v.parse::<i64>().map_err(|_| SignatureError::Malformed)?),
            "v1" => signatures.push(hex::decode(v).map_err(|_| SignatureError::Malformed)?),
            _ => {}
        }
    }
    let t = t.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    if (now_secs - t).abs() > TOLERANCE_SECS {
        return Err(SignatureError::Stale);
    }
    if signatures.iter().any(|s| mac(secret, t, body).verify_slice(s).is_ok()) {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// The `subscription` an invoice belongs to: `subscription` up to API version 2025-03-31, and
/// `parent.subscription_details.subscription` from it on.
fn invoice_subscription(invoice: &Value) -> Option<String> {
    invoice["subscription"].as_str().or_else(|| invoice["parent"]["subscription_details"]["subscription"].as_str()).map(str::to_string)
}

/// Reads a billing event (already verified). `Err`: the body is not an event.
pub fn parse_event(body: &Value, prices: &Prices) -> Result<Event, String> {
    let id = body["id"].as_str().filter(|s| !s.is_empty()).ok_or("the event has no id")?.to_string();
    let kind = body["type"].as_str().ok_or("the event has no type")?.to_string();
    let created_ms = body["created"].as_i64().ok_or("the event has no created time")? * 1000;
    let object = &body["data"]["object"];
    let text = |v: &Value| v.as_str().map(str::to_string);
    let change = match kind.as_str() {
        "checkout.session.completed" => {
            let paid = matches!(object["payment_status"].as_str(), Some("paid" | "no_payment_required"));
            let tiers: Vec<(Product, String)> =
                Product::ALL.into_iter().filter_map(|p| text(&object["metadata"][format!("{}_tier", p.id())]).map(|t| (p, t))).collect();
            match (text(&object["client_reference_id"]), text(&object["subscription"])) {
                _ if !paid => Change::Nothing(format!("the checkout's payment_status is {}", object["payment_status"])),
                (Some(entity_id), Some(subscription)) if !tiers.is_empty() => {
                    Change::Subscribed { entity_id, subscription, customer: text(&object["customer"]), tiers }
                }
                _ => Change::Nothing("the checkout session names no levy account, subscription or tier".into()),
            }
        }
        "customer.subscription.updated" | "customer.subscription.deleted" => {
            let subscription = text(&object["id"]).ok_or("the subscription has no id")?;
            let entity_id = text(&object["metadata"]["levy_account"]);
            if kind.ends_with("deleted") {
                Change::Ended { entity_id, subscription }
            } else {
                let items = object["items"]["data"].as_array().cloned().unwrap_or_default();
                let tiers = items
                    .iter()
                    .filter_map(|item| item["price"]["id"].as_str().and_then(|p| prices.tier_of(p)))
                    .map(|(p, t)| (p, t.to_string()))
                    .collect();
                Change::Updated { entity_id, subscription, status: text(&object["status"]).unwrap_or_default(), tiers }
            }
        }
        "invoice.payment_failed" | "invoice.paid" => match invoice_subscription(object) {
            Some(subscription) if kind == "invoice.paid" => Change::Paid { subscription },
            Some(subscription) => Change::PaymentFailed { subscription },
            None => Change::Nothing("the invoice belongs to no subscription".into()),
        },
        other => Change::Nothing(format!("levy does not act on {other} events")),
    };
    Ok(Event { id, kind, created_ms, change })
}
