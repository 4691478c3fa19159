//! The billing bodies: checkout (one product, or the bundle), the processor's billing events, the monthly usage
//! statement and an account's plans.

use poem_openapi::{Object, Union};

use super::param::{PaidTier, ProductParam};

/// Body of POST /api/v1/checkout, one product: its tier.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct CheckoutOne {
    pub product: ProductParam,
    pub tier: PaidTier,
}

/// Body of POST /api/v1/checkout, the bundle: a tier for each product.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct CheckoutBundle {
    pub tax_tier: PaidTier,
    pub gains_tier: PaidTier,
}

/// Body of POST /api/v1/checkout: `{product, tier}` for one product, or `{tax_tier, gains_tier}` for both.
#[derive(Union)]
#[oai(one_of)]
pub enum CheckoutRequest {
    One(CheckoutOne),
    Bundle(CheckoutBundle),
}

/// A product and tier in a checkout.
#[derive(Object)]
pub struct CheckoutItem {
    /// `tax` or `gains`.
    pub product: String,
    pub tier: String,
    /// The processor's price id.
    pub price_id: String,
}

/// The checkout session created at the payment processor.
#[derive(Object)]
pub struct CheckoutResponse {
    pub success: bool,
    /// Where the buyer pays (the processor's hosted page). The plan changes when the processor reports the payment.
    pub checkout_url: String,
    /// The processor's checkout session id (`cs_...`).
    pub session_id: String,
    pub items: Vec<CheckoutItem>,
}

/// What taking a billing event did.
#[derive(Object)]
pub struct BillingEventAck {
    pub received: bool,
    /// The event's id (`evt_...`).
    pub event_id: String,
    /// The event's type.
    #[oai(rename = "type")]
    pub kind: String,
    /// True when an account's plans changed.
    pub applied: bool,
    /// True when this event id was taken before (a redelivery): nothing changed.
    pub duplicate: bool,
    /// What it did, or why nothing.
    pub outcome: String,
}

/// One product's usage in a month.
#[derive(Object)]
pub struct UsageLine {
    /// `tax` (keyed calculate calls and ingested records) or `gains` (recorded trades).
    pub product: String,
    /// The plan that applies now (a tier id of GET /api/v1/pricing).
    pub plan: String,
    pub calls: i64,
    /// The plan's monthly allowance; null: unlimited.
    pub included: Option<i64>,
    /// Calls served past the allowance (metered plans), as recorded when they were served.
    pub overage_calls: i64,
    /// The plan's overage price per call in USD, as a decimal string; null when it publishes none.
    pub overage_usd_per_call: Option<String>,
    /// overage_calls times the price, in USD with two decimals; null when the plan publishes no price.
    pub overage_usd: Option<String>,
}

/// GET /api/v1/usage: the account's usage of one calendar month (UTC) against its plans.
#[derive(Object)]
pub struct UsageStatement {
    pub success: bool,
    pub entity_id: String,
    pub email: String,
    /// YYYY-MM.
    pub month: String,
    /// `active`, `past_due` (a payment failed; the paid plans apply through the grace period) or `suspended`
    /// (past the grace period: the free plan applies until a payment succeeds).
    pub plan_status: String,
    pub products: Vec<UsageLine>,
    /// The sum of the products' overage amounts, USD with two decimals.
    pub overage_usd: String,
}

/// The account's plans and whether they are paid up.
#[derive(Object)]
pub struct PlanStanding {
    /// The tax plan held (a tier id of GET /api/v1/pricing).
    pub tax_plan: String,
    /// The gains tracker's plan held.
    pub gains_plan: String,
    /// `active`, `past_due` or `suspended` (see GET /api/v1/usage).
    pub status: String,
    /// When a payment failed (ISO 8601); null while active.
    pub past_due_since: Option<String>,
    /// When the paid plans stop applying unless a payment succeeds; null while active.
    pub grace_ends_at: Option<String>,
}
