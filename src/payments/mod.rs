//! The outside parties that take money, through their real protocols. Payments for a call itself, made by
//! callers without an API key: x402 (a signed USDC transfer authorization settled through a facilitator) and MPP
//! (the `Payment` HTTP authentication scheme, charged through Stripe). Subscriptions: `checkout`, the payment
//! processor's checkout sessions and its signed billing events. A call paid per call takes one path whatever its
//! protocol (`per_call`). Knows no HTTP routes: `api::paid` and `api::billing` take requests to these.

pub mod checkout;
pub mod mpp;
pub mod per_call;
pub mod x402;
