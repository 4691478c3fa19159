//! GET /api/v1/pricing: the plans, the pay-per-call option and the billing provider, as `rules/plans.yaml` and
//! the x402 settings give them (`crate::plans`). No key needed.

use std::sync::Arc;

use poem_openapi::{ApiResponse, OpenApi};

use super::payload::Json;
use super::schema::number::Exact;
use super::schema::pricing::{OveragePolicy, PayPerCallOption, PricingResponse, PricingTier};
use super::{ApiTags, AppState};
use crate::error_responses;
use crate::plans::Plans;

pub struct PricingApi(pub Arc<AppState>);

#[derive(ApiResponse)]
#[oai(header(name = "X-Request-Id", ty = "String", description = "The request id."))]
pub enum PricingReply {
    #[oai(status = 200)]
    Ok(Json<PricingResponse>),
}

error_responses!(PricingErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter this operation does not take.",
});

/// The pricing document: the plans file, with each tier's price id for checkout on this server (the tax
/// product's, from LEVY_STRIPE_PRICES; null where none is configured).
pub fn pricing(plans: &Plans, prices: &crate::payments::checkout::Prices) -> PricingResponse {
    let tiers = plans
        .tiers
        .iter()
        .map(|p| {
            let mut features = p.features.clone();
            features.push(p.reports_allowance());
            PricingTier {
                id: p.id.clone(),
                name: p.name.clone(),
                price_usd_monthly: p.price_usd_monthly.map(Exact::of),
                monthly_calls_included: p.monthly_calls,
                overage_usd_per_call: p.overage.price().map(Exact::of),
                overage_policy: OveragePolicy(p.overage.policy().to_string()),
                features,
                stripe_price_id: prices.price(crate::billing::Product::Tax, &p.id).map(str::to_string),
                contact: p.contact.clone(),
            }
        })
        .collect();
    let ppc = &plans.pay_per_call;
    PricingResponse {
        schema_version: plans.schema_version.clone(),
        updated_at: plans.updated_at.to_string(),
        currency: plans.currency.clone(),
        tiers,
        pay_per_call: PayPerCallOption {
            id: ppc.id.clone(),
            name: ppc.name.clone(),
            price_usd_per_call: Exact::of(ppc.price_usd_per_call),
            network: ppc.network.clone(),
            payee: ppc.payee.clone(),
            facilitator: ppc.facilitator.clone(),
            notes: ppc.notes.clone(),
        },
        billing_provider: plans.billing_provider.clone(),
        docs: plans.docs.clone(),
    }
}

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Guide")]
impl PricingApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const PRICING_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/currency": "USD", "/tiers/0/id": "free", "/tiers/0/overage_policy": "hard_cutoff", "/pay_per_call/id": "x402", "/billing_provider": "stripe"}
    }"#;

    /// Pricing: plans, allowances, overage, pay-per-call
    ///
    /// The subscription plans (price, calls included per month, what happens past them, optimization reports per
    /// month), the pay-per-call option (x402) and the billing provider. The monthly allowance the limiter
    /// enforces is the one published here. No key needed.
    #[oai(
        path = "/pricing",
        method = "get",
        operation_id = "pricing",
        code_sample(lang = "json", label = "example", source = "Self::PRICING_EXAMPLE")
    )]
    async fn pricing(&self) -> Result<PricingReply, PricingErrors> {
        Ok(PricingReply::Ok(Json(pricing(&self.0.plans, &self.0.billing.prices))))
    }
}
