//! Plans people buy: POST /api/v1/checkout (a checkout session at the payment processor), POST
//! /api/v1/billing/webhook (the processor's signed billing events, which change an account's plans) and GET
//! /api/v1/usage (the month's usage statement: calls, allowance, metered overage and its amount).

use std::sync::Arc;

use poem::http::StatusCode;
use poem_openapi::param::{Header, Query};
use poem_openapi::OpenApi;
use serde_json::Value;

use super::auth::KeyAuth;
use super::error::{ApiError, ErrorCode};
use super::payload::{Body, Json, JsonBody};
use super::schema::billing::{BillingEventAck, CheckoutItem, CheckoutRequest, CheckoutResponse, UsageLine, UsageStatement};
use super::schema::param::{MonthParam, Param};
use super::{ApiTags, AppState};
use crate::billing::events::Applied;
use crate::billing::month_start_ms;
use crate::billing::{month_label, parse_month, Product, Statement};
use crate::engine::money::usd;
use crate::payments::checkout::{self as stripe, Prices, ProcessorError};
use crate::plans::DEFAULT_PLAN;
use crate::{error_responses, ok_responses};

pub struct BillingApi(pub Arc<AppState>);

/// What an operator without a processor does instead of checkout.
const NO_CHECKOUT: &str = "checkout is not set up on this server (no payment processor is configured); its operator sets plans with \
     `levy accounts set-plan EMAIL PLAN`. The plans are at GET /api/v1/pricing";

ok_responses!(CheckoutResponses {
    200 => Ok(Json<CheckoutResponse>): "The checkout session: send the buyer to `checkout_url`.",
});

error_responses!(CheckoutErrors {
    400 => BadRequest: "INVALID_INPUT: neither shape, fields of both, an unknown product, the free tier, or a tier not sold on this server (errors names each); INVALID_JSON_BODY.",
    401 => Unauthorized: "UNAUTHORIZED.",
    404 => NotFound: "RESOURCE_NOT_FOUND: checkout is not set up on this server (the error says how its operator sets plans).",
    503 => Unavailable: "DB_UNAVAILABLE: the database or the payment processor did not answer; nothing was bought. Retry.",
});

ok_responses!(WebhookResponses {
    200 => Ok(Json<BillingEventAck>): "The event is taken: applied, recorded without effect, or a redelivery of one taken before.",
});

error_responses!(WebhookErrors {
    400 => BadRequest: "INVALID_JSON_BODY, or INVALID_INPUT: a signed body that is not an event.",
    401 => Unauthorized: "WEBHOOK_SIGNATURE_INVALID: no Stripe-Signature, a malformed one, a timestamp more than 5 minutes from the server's clock, or no v1 signature that matches.",
    404 => NotFound: "RESOURCE_NOT_FOUND: billing events are not taken on this server (no signing secret is configured).",
    503 => DbUnavailable: "DB_UNAVAILABLE: not taken; the processor delivers it again.",
});

ok_responses!(UsageResponses {
    200 => Ok(Json<UsageStatement>): "The month's statement.",
});

error_responses!(UsageErrors {
    400 => BadRequest: "INVALID_INPUT: month is not YYYY-MM.",
    401 => Unauthorized: "UNAUTHORIZED.",
    404 => NotFound: "RESOURCE_NOT_FOUND: a month other than the current and the previous one (usage is kept for those two).",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

/// The products and tiers a checked checkout body asks for, each tier with a price on this server.
pub fn checkout_items(req: Result<CheckoutRequest, ApiError>, prices: &Prices) -> Result<Vec<(Product, String)>, ApiError> {
    let req = req.map_err(|mut e| {
        // The free tier is not in the paid tiers' list: it is every account's start, which needs no checkout.
        for m in e.errors.iter_mut() {
            if let Some((field, _)) = m.split_once(&format!(": `{DEFAULT_PLAN}` is not a paid tier")) {
                *m = format!("{field}: the free plan needs no checkout: every account starts on it");
            }
        }
        e
    })?;
    let items = match req {
        CheckoutRequest::One(one) => vec![(one.product.text().to_string(), "tier", one.tier.text().to_string())],
        CheckoutRequest::Bundle(b) => {
            vec![
                ("tax".to_string(), "tax_tier", b.tax_tier.text().to_string()),
                ("gains".to_string(), "gains_tier", b.gains_tier.text().to_string()),
            ]
        }
    };
    let mut errors = Vec::new();
    let mut out = Vec::new();
    for (product, field, tier) in items {
        let Some(product) = Product::parse(&product) else {
            errors.push(format!("{field}: `{product}` is not a product"));
            continue;
        };
        if prices.price(product, &tier).is_none() {
            errors.push(format!(
                "{field}: the {tier} tier of {} is not sold through checkout on this server (no price is configured for it)",
                product.id()
            ));
        }
        out.push((product, tier));
    }
    ApiError::check(errors)?;
    Ok(out)
}

/// A statement's lines, per product (also the `products` of GET /api/v1/auth/me's usage).
pub fn usage_lines(statement: &Statement) -> Vec<UsageLine> {
    statement
        .lines
        .iter()
        .map(|l| UsageLine {
            product: l.product.id().to_string(),
            plan: l.plan.clone(),
            calls: l.calls,
            included: l.included,
            overage_calls: l.overage_calls,
            overage_usd_per_call: l.overage_usd_per_call.map(|d| d.normalize().to_string()),
            overage_usd: l.overage_usd.map(usd),
        })
        .collect()
}

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Billing")]
impl BillingApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const CREATE_CHECKOUT_EXAMPLE: &'static str = r#"{
        "body": {"product": "tax", "tier": "growth"},
        "status": 200,
        "expect": {"/success": true, "/items/0/product": "tax", "/items/0/tier": "growth"}
    }"#;

    /// Buy a plan: a checkout session at the payment processor
    ///
    /// `{product, tier}` buys one product's plan (`tax`: calculate and ingest; `gains`: the gains tracker's
    /// trades); `{tax_tier, gains_tier}` buys both in one subscription. The answer is the processor's hosted
    /// checkout page; the account's plans change when the processor reports the payment (its billing events), and
    /// apply from the next call. On a server without a processor this is 404, and its operator sets plans with
    /// `levy accounts set-plan`.
    #[oai(
        path = "/checkout",
        method = "post",
        operation_id = "createCheckout",
        code_sample(lang = "json", label = "example", source = "Self::CREATE_CHECKOUT_EXAMPLE")
    )]
    async fn checkout(&self, auth: KeyAuth, body: Body<CheckoutRequest>) -> Result<CheckoutResponses, CheckoutErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        if !s.billing.checkout_enabled() {
            return Err(ApiError::not_found(NO_CHECKOUT).into());
        }
        let items = checkout_items(body.parse(), &s.billing.prices)?;
        let session = s.billing.create_checkout(&owner.entity, &items).await;
        s.metrics.checkout_session(match &session {
            Ok(_) => "created",
            Err(ProcessorError::Unavailable(_)) => "unavailable",
            Err(ProcessorError::Refused(_)) => "refused",
        });
        let session = session.map_err(|e| match e {
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
        let items = items
            .into_iter()
            .map(|(p, tier)| CheckoutItem {
                product: p.id().to_string(),
                price_id: s.billing.prices.price(p, &tier).unwrap_or_default().to_string(),
                tier,
            })
            .collect();
        Ok(CheckoutResponses::Ok(Json(CheckoutResponse { success: true, checkout_url: session.url, session_id: session.id, items })))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const BILLING_WEBHOOK_EXAMPLE: &'static str = r#"{
        "headers": {"Stripe-Signature": "t=1795255200,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a2c0e6ff3ebc8b3a3b1a3b8"},
        "body": {"id": "evt_1", "object": "event", "type": "invoice.paid", "created": 1795255200, "data": {"object": {"subscription": "sub_1"}}},
        "status": 401,
        "expect": {"/code": "WEBHOOK_SIGNATURE_INVALID"}
    }"#;

    /// The payment processor's billing events
    ///
    /// Stripe delivers its events here, signed (`Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
    /// "t.body" with the endpoint's secret>`; a timestamp more than 5 minutes from the server's clock is refused).
    /// Each event id is applied once. `checkout.session.completed` (paid) gives the account the tiers it bought;
    /// `customer.subscription.updated` follows the subscription's status and prices; `customer.subscription.deleted`
    /// puts the products it paid for back on the free plan; `invoice.payment_failed` makes the account past due
    /// (its paid plans apply for a grace period of 14 days) and `invoice.paid` active again. Other events are
    /// acknowledged and change nothing.
    #[oai(
        path = "/billing/webhook",
        method = "post",
        operation_id = "billingWebhook",
        code_sample(lang = "json", label = "example", source = "Self::BILLING_WEBHOOK_EXAMPLE")
    )]
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
            s.metrics.billing_event("refused");
            return Err(ApiError::new(StatusCode::UNAUTHORIZED, ErrorCode::WebhookSignatureInvalid, e.message()).into());
        }
        let event = body.value().and_then(|v| stripe::parse_event(v, &s.billing.prices).map_err(|e| ApiError::field("body", e)));
        let event = event.inspect_err(|_| s.metrics.billing_event("refused"))?;
        let applied = crate::billing::events::take(&s.store, &event, now_ms).await.map_err(ApiError::from)?;
        s.metrics.billing_event(match &applied {
            Applied::Applied { .. } => "applied",
            Applied::Nothing(_) => "ignored",
            Applied::Duplicate => "duplicate",
        });
        let (applied, duplicate, outcome) = match applied {
            Applied::Applied { entity_id, outcome } => (true, false, format!("{entity_id}: {outcome}")),
            Applied::Nothing(why) => (false, false, why),
            Applied::Duplicate => (false, true, "this event was taken before; nothing changed".to_string()),
        };
        tracing::info!(event = %event.id, kind = %event.kind, applied, duplicate, outcome = %outcome, "billing event");
        Ok(WebhookResponses::Ok(Json(BillingEventAck {
            received: true,
            event_id: event.id,
            kind: event.kind,
            applied,
            duplicate,
            outcome,
        })))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const USAGE_STATEMENT_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/success": true, "/products/0/product": "tax", "/products/0/plan": "free", "/products/1/product": "gains"}
    }"#;

    /// The month's usage statement
    ///
    /// Per product, the calls of the calendar month (UTC), the plan's allowance, the calls served past it (metered
    /// plans), the overage price from GET /api/v1/pricing and the amount (USD, two decimals). `month` is `YYYY-MM`,
    /// the current month by default; usage is kept for the current and the previous month.
    #[oai(
        path = "/usage",
        method = "get",
        operation_id = "usageStatement",
        code_sample(lang = "json", label = "example", source = "Self::USAGE_STATEMENT_EXAMPLE")
    )]
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
        let counts = crate::billing::month_counts(&s.store, &owner.entity.id, month_ms).await.map_err(ApiError::from)?;
        let statement = Statement::new(&s.plans, &owner.entity, month_ms, now_ms, &counts);
        Ok(UsageResponses::Ok(Json(usage_statement(statement))))
    }
}

/// A month's statement as GET /api/v1/usage answers it (and `levy accounts usage --format json` prints it).
pub fn usage_statement(statement: Statement) -> UsageStatement {
    UsageStatement {
        success: true,
        products: usage_lines(&statement),
        overage_usd: usd(statement.overage_usd()),
        entity_id: statement.entity_id,
        email: statement.email,
        month: statement.month,
        plan_status: statement.status.to_string(),
    }
}
