//! Plans people buy: POST /api/v1/checkout (a checkout session at the payment processor), POST
//! /api/v1/billing/webhook (the processor's signed billing events, which change an account's plans) and GET
//! /api/v1/usage (the month's usage statement: calls, allowance, metered overage and its amount).

use std::sync::Arc;

use poem::http::StatusCode;
use poem_openapi::param::{Header, Query};
use poem_openapi::{ApiResponse, OpenApi};
use serde_json::{json, Value};

use super::auth::KeyAuth;
use super::error::{ApiError, ErrorCode};
use super::payload::{JsonBody, JsonText};
use super::schema::billing::{BillingEventAck, CheckoutRequest, CheckoutResponse, UsageStatement};
use super::schema::param::{MonthParam, Param};
use super::{ApiTags, AppState};
use crate::billing::{month_label, parse_month, Product, Statement};
use crate::error_responses;
use crate::ledger::month_start_ms;
use crate::payments::checkout::{self as stripe, Prices, ProcessorError};
use crate::plans::{Plans, DEFAULT_PLAN};
use crate::store::billing::Applied;
use crate::validate::Checker;

pub struct BillingApi(pub Arc<AppState>);

/// What an operator without a processor does instead of checkout.
const NO_CHECKOUT: &str = "checkout is not set up on this server (no payment processor is configured); its operator sets plans with \
     `levy accounts set-plan EMAIL PLAN`. The plans are at GET /api/v1/pricing";

#[derive(ApiResponse)]
#[oai(header(name = "X-Request-Id", ty = "String", description = "The request id."))]
pub enum CheckoutResponses {
    /// The checkout session: send the buyer to `checkout_url`.
    #[oai(status = 200)]
    Ok(JsonText<CheckoutResponse>),
}

error_responses!(CheckoutErrors {
    400 => BadRequest: "INVALID_INPUT: neither shape, fields of both, an unknown product, the free tier, or a tier not sold on this server (errors names each); INVALID_JSON_BODY.",
    401 => Unauthorized: "UNAUTHORIZED.",
    404 => NotFound: "RESOURCE_NOT_FOUND: checkout is not set up on this server (the error says how its operator sets plans).",
    503 => Unavailable: "DB_UNAVAILABLE: the database or the payment processor did not answer; nothing was bought. Retry.",
});

#[derive(ApiResponse)]
#[oai(header(name = "X-Request-Id", ty = "String", description = "The request id."))]
pub enum WebhookResponses {
    /// The event is taken: applied, recorded without effect, or a redelivery of one taken before.
    #[oai(status = 200)]
    Ok(JsonText<BillingEventAck>),
}

error_responses!(WebhookErrors {
    400 => BadRequest: "INVALID_JSON_BODY, or INVALID_INPUT: a signed body that is not an event.",
    401 => Unauthorized: "WEBHOOK_SIGNATURE_INVALID: no Stripe-Signature, a malformed one, a timestamp more than 5 minutes from the server's clock, or no v1 signature that matches.",
    404 => NotFound: "RESOURCE_NOT_FOUND: billing events are not taken on this server (no signing secret is configured).",
    503 => DbUnavailable: "DB_UNAVAILABLE: not taken; the processor delivers it again.",
});

#[derive(ApiResponse)]
#[oai(header(name = "X-Request-Id", ty = "String", description = "The request id."))]
pub enum UsageResponses {
    /// The month's statement.
    #[oai(status = 200)]
    Ok(JsonText<UsageStatement>),
}

error_responses!(UsageErrors {
    400 => BadRequest: "INVALID_INPUT: month is not YYYY-MM.",
    401 => Unauthorized: "UNAUTHORIZED.",
    404 => NotFound: "RESOURCE_NOT_FOUND: a month other than the current and the previous one (usage is kept for those two).",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

/// The products and tiers a checkout body asks for: `{product, tier}` or `{tax_tier, gains_tier}`, each tier a
/// paid tier with a price on this server.
pub fn checkout_items(value: &Value, plans: &Plans, prices: &Prices) -> Result<Vec<(Product, String)>, ApiError> {
    let mut c = Checker::default();
    let Some(obj) = c.object(value, &["product", "tier", "tax_tier", "gains_tier"]) else { return Err(ApiError::fields(&c.errors)) };
    let one = obj.contains_key("product") || obj.contains_key("tier");
    let bundle = obj.contains_key("tax_tier") || obj.contains_key("gains_tier");
    let mut items = Vec::new();
    match (one, bundle) {
        (true, true) => c.err("body", "send {product, tier} for one product or {tax_tier, gains_tier} for the bundle, not fields of both"),
        (false, false) if c.errors.is_empty() => {
            c.err("body", "expected {product, tier} for one product (tax or gains) or {tax_tier, gains_tier} for the bundle")
        }
        (false, false) => {}
        (true, false) => {
            let ids: Vec<&str> = Product::ALL.iter().map(|p| p.id()).collect();
            let product = c.one_of(obj, "product", true, &ids).and_then(|p| Product::parse(&p));
            let tier = c.text(obj, "tier", true, 1, 200);
            if let (Some(product), Some(tier)) = (product, tier) {
                items.push((product, "tier", tier));
            }
        }
        (false, true) => {
            for (product, field) in [(Product::Tax, "tax_tier"), (Product::Gains, "gains_tier")] {
                if let Some(tier) = c.text(obj, field, true, 1, 200) {
                    items.push((product, field, tier));
                }
            }
        }
    }
    for (product, field, tier) in &items {
        let known: Vec<&str> = plans.tiers.iter().map(|p| p.id.as_str()).filter(|id| *id != DEFAULT_PLAN).collect();
        if tier == DEFAULT_PLAN {
            c.err(field, "the free plan needs no checkout: every account starts on it");
        } else if !known.contains(&tier.as_str()) {
            let hint =
                crate::rules::diag::did_you_mean(tier, known.iter().copied()).map(|x| format!("; did you mean `{x}`?")).unwrap_or_default();
            c.err(field, format!("`{tier}` is not a paid tier: {}{hint}", known.join(", ")));
        } else if prices.price(*product, tier).is_none() {
            c.err(
                field,
                format!("the {tier} tier of {} is not sold through checkout on this server (no price is configured for it)", product.id()),
            );
        }
    }
    if !c.errors.is_empty() {
        return Err(ApiError::fields(&c.errors));
    }
    Ok(items.into_iter().map(|(p, _, t)| (p, t)).collect())
}

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Billing")]
impl BillingApi {
    /// Buy a plan: a checkout session at the payment processor
    ///
    /// `{product, tier}` buys one product's plan (`tax`: calculate and ingest; `gains`: the gains tracker's
    /// trades); `{tax_tier, gains_tier}` buys both in one subscription. The answer is the processor's hosted
    /// checkout page; the account's plans change when the processor reports the payment (its billing events), and
    /// apply from the next call. On a server without a processor this is 404, and its operator sets plans with
    /// `levy accounts set-plan`.
    #[oai(path = "/checkout", method = "post", operation_id = "createCheckout")]
    async fn checkout(&self, auth: KeyAuth, body: JsonBody<CheckoutRequest>) -> Result<CheckoutResponses, CheckoutErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        if !s.billing.checkout_enabled() {
            return Err(ApiError::not_found(NO_CHECKOUT).into());
        }
        let items = checkout_items(body.value()?, &s.plans, &s.billing.prices)?;
        let session = s.billing.create_checkout(&owner.entity, &items).await.map_err(|e| match e {
            ProcessorError::Unavailable(detail) => {
                tracing::warn!(error = %detail, "payment processor unavailable");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    ErrorCode::DbUnavailable,
                    "the payment processor did not answer; nothing was bought. Retry",
                )
            }
            ProcessorError::Refused(detail) => ApiError::internal(format!("the payment processor refused a checkout session: {detail}")),
        })?;
        let items: Vec<Value> =
            items.iter().map(|(p, t)| json!({"product": p.id(), "tier": t, "price_id": s.billing.prices.price(*p, t)})).collect();
        Ok(CheckoutResponses::Ok(JsonText::value(&json!({
            "success": true, "checkout_url": session.url, "session_id": session.id, "items": items,
        }))))
    }

    /// The payment processor's billing events
    ///
    /// Stripe delivers its events here, signed (`Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
    /// "t.body" with the endpoint's secret>`; a timestamp more than 5 minutes from the server's clock is refused).
    /// Each event id is applied once. `checkout.session.completed` (paid) gives the account the tiers it bought;
    /// `customer.subscription.updated` follows the subscription's status and prices; `customer.subscription.deleted`
    /// puts the products it paid for back on the free plan; `invoice.payment_failed` makes the account past due
    /// (its paid plans apply for a grace period of 14 days) and `invoice.paid` active again. Other events are
    /// acknowledged and change nothing.
    #[oai(path = "/billing/webhook", method = "post", operation_id = "billingWebhook")]
    async fn webhook(
        &self,
        /// `t=<unix seconds>,v1=<hex>`: the processor's signature of the body.
        #[oai(name = "Stripe-Signature")]
        _signature: Header<Option<String>>,
        req: &poem::Request,
        body: JsonBody<Value>,
    ) -> Result<WebhookResponses, WebhookErrors> {
        let s = &self.0;
        let Some(secret) = s.billing.webhook_secret() else {
            return Err(ApiError::not_found(
                "billing events are not taken on this server: no signing secret is configured (LEVY_STRIPE_WEBHOOK_SECRET)",
            )
            .into());
        };
        let header = req.headers().get("Stripe-Signature").and_then(|v| v.to_str().ok());
        let now_ms = s.clock.now_ms();
        if let Err(e) = stripe::verify(secret, header, &body.raw, now_ms.div_euclid(1000)) {
            return Err(ApiError::new(StatusCode::UNAUTHORIZED, ErrorCode::WebhookSignatureInvalid, e.message()).into());
        }
        let event = stripe::parse_event(body.value()?, &s.billing.prices).map_err(|e| ApiError::field("body", e))?;
        let applied = s.store.apply_billing_event(&event, now_ms).await.map_err(ApiError::from)?;
        let (applied, duplicate, outcome) = match applied {
            Applied::Applied { entity_id, outcome } => (true, false, format!("{entity_id}: {outcome}")),
            Applied::Nothing(why) => (false, false, why),
            Applied::Duplicate => (false, true, "this event was taken before; nothing changed".to_string()),
        };
        tracing::info!(event = %event.id, kind = %event.kind, applied, duplicate, outcome = %outcome, "billing event");
        Ok(WebhookResponses::Ok(JsonText::value(&json!({
            "received": true, "event_id": event.id, "type": event.kind, "applied": applied, "duplicate": duplicate, "outcome": outcome,
        }))))
    }

    /// The month's usage statement
    ///
    /// Per product, the calls of the calendar month (UTC), the plan's allowance, the calls served past it (metered
    /// plans), the overage price from GET /api/v1/pricing and the amount (USD, two decimals). `month` is `YYYY-MM`,
    /// the current month by default; usage is kept for the current and the previous month.
    #[oai(path = "/usage", method = "get", operation_id = "usageStatement")]
    async fn usage(&self, auth: KeyAuth, month: Query<Option<Param<MonthParam>>>) -> Result<UsageResponses, UsageErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let now_ms = s.clock.now_ms();
        let current = month_start_ms(now_ms);
        let month_ms = match month.0.as_ref().map(|m| m.0.as_str()) {
            None => current,
            Some(text) => parse_month(text).ok_or_else(|| ApiError::field("month", format!("`{text}` is not a month (YYYY-MM)")))?,
        };
        if month_ms > current || month_ms < month_start_ms(current - 1) {
            return Err(ApiError::not_found(format!(
                "usage is kept for the current and the previous month ({} and {})",
                month_label(current),
                month_label(current - 1)
            ))
            .into());
        }
        let counts = s.store.month_counts(&owner.entity.id, month_ms).await.map_err(ApiError::from)?;
        let mut out = serde_json::Map::from_iter([("success".to_string(), json!(true))]);
        if let Value::Object(statement) = Statement::new(&s.plans, &owner.entity, month_ms, now_ms, &counts).to_json() {
            out.extend(statement);
        }
        Ok(UsageResponses::Ok(JsonText::value(&Value::Object(out))))
    }
}
