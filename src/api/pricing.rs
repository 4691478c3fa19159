//! GET /api/v1/pricing: the plans, the pay-per-call option and the billing provider, as `rules/plans.yaml` and
//! the x402 settings give them (`crate::plans`). No key needed.

use std::sync::Arc;

use poem_openapi::{ApiResponse, OpenApi};
use serde_json::{json, Value};

use super::payload::JsonText;
use super::schema::pricing::PricingResponse;
use super::{ApiTags, AppState};
use crate::engine::render::num;
use crate::error_responses;
use crate::plans::Plans;

pub struct PricingApi(pub Arc<AppState>);

#[derive(ApiResponse)]
#[oai(header(name = "X-Request-Id", ty = "String", description = "The request id."))]
pub enum PricingReply {
    #[oai(status = 200)]
    Ok(JsonText<PricingResponse>),
}

error_responses!(PricingErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter this operation does not take.",
});

/// The PricingResponse body of `plans`.
/// The pricing document: the plans file, with each tier's price id for checkout on this server (the tax
/// product's, from LEVY_STRIPE_PRICES; null where none is configured).
pub fn pricing_json(plans: &Plans, prices: &crate::payments::checkout::Prices) -> Value {
    let tiers: Vec<Value> = plans
        .tiers
        .iter()
        .map(|p| {
            let mut features = p.features.clone();
            features.push(p.reports_allowance());
            let mut t = json!({
                "id": p.id,
                "name": p.name,
                "price_usd_monthly": p.price_usd_monthly.map(num),
                "monthly_calls_included": p.monthly_calls,
                "overage_usd_per_call": p.overage.price().map(num),
                "overage_policy": p.overage.policy(),
                "features": features,
                "stripe_price_id": prices.price(crate::billing::Product::Tax, &p.id),
            });
            if let Some(contact) = &p.contact {
                t["contact"] = json!(contact);
            }
            t
        })
        .collect();
    let ppc = &plans.pay_per_call;
    json!({
        "schema_version": plans.schema_version,
        "updated_at": plans.updated_at.to_string(),
        "currency": plans.currency,
        "tiers": tiers,
        "pay_per_call": {
            "id": ppc.id,
            "name": ppc.name,
            "price_usd_per_call": num(ppc.price_usd_per_call),
            "network": ppc.network,
            "payee": ppc.payee,
            "facilitator": ppc.facilitator,
            "notes": ppc.notes,
        },
        "billing_provider": plans.billing_provider,
        "docs": plans.docs,
    })
}

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Guide")]
impl PricingApi {
    /// Pricing: plans, allowances, overage, pay-per-call
    ///
    /// The subscription plans (price, calls included per month, what happens past them, optimization reports per
    /// month), the pay-per-call option (x402) and the billing provider. The monthly allowance the limiter
    /// enforces is the one published here. No key needed.
    #[oai(path = "/pricing", method = "get", operation_id = "pricing")]
    async fn pricing(&self) -> Result<PricingReply, PricingErrors> {
        Ok(PricingReply::Ok(JsonText::value(&pricing_json(&self.0.plans, &self.0.billing.prices))))
    }
}
