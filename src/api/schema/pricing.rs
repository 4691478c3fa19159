//! GET /api/v1/pricing: the spec's PricingResponse, field for field. The figures are `rules/plans.yaml`'s
//! (`crate::plans`), rendered by `api::pricing`.

use poem_openapi::Object;

use super::number::Exact;
use crate::listed_enum;

listed_enum!(
    /// hard_cutoff (calls past the allowance are refused until the month ends), meter (served and billed per call), custom (by contract).
    OveragePolicy = crate::plans::OVERAGE_POLICIES
);

/// A subscription plan.
#[derive(Object)]
pub struct PricingTier {
    /// The plan id an account holds (free, starter, growth, pro).
    pub id: String,
    pub name: String,
    /// USD per month, as the plans file writes it; null for a price agreed per customer.
    pub price_usd_monthly: Option<Exact>,
    /// Calls per calendar month (UTC) before the overage policy applies; null for no allowance.
    pub monthly_calls_included: Option<i64>,
    /// USD per call past the allowance, as the plans file writes it; null when the plan publishes none (hard_cutoff, custom).
    pub overage_usd_per_call: Option<Exact>,
    pub overage_policy: OveragePolicy,
    /// What the plan includes; its last line is its optimization-report allowance.
    pub features: Vec<String>,
    /// The payment processor's price id for this plan's checkout; null until configured.
    pub stripe_price_id: Option<String>,
    /// Whom to contact, for a custom plan (absent otherwise).
    #[oai(skip_serializing_if_is_none)]
    pub contact: Option<String>,
}

/// Paying per call instead of subscribing.
#[derive(Object)]
pub struct PayPerCallOption {
    /// x402.
    pub id: String,
    pub name: String,
    /// USD per call (not negative), as the plans file writes it.
    pub price_usd_per_call: Exact,
    /// The chain payments settle on (a setting of the service).
    pub network: String,
    /// The address paid; null until the operator configures one.
    pub payee: Option<String>,
    /// The facilitator that verifies and settles payments.
    pub facilitator: String,
    pub notes: String,
}

/// GET /api/v1/pricing.
#[derive(Object)]
pub struct PricingResponse {
    /// The version of this document's shape.
    pub schema_version: String,
    /// The date the prices were last changed (YYYY-MM-DD).
    pub updated_at: String,
    /// USD.
    pub currency: String,
    /// The subscription plans, cheapest first.
    pub tiers: Vec<PricingTier>,
    pub pay_per_call: PayPerCallOption,
    /// The payment processor of subscriptions: stripe.
    pub billing_provider: String,
    /// Where the API documentation is.
    pub docs: String,
}
