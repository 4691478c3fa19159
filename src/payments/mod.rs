//! Payments for a call itself, made by callers without an API key: x402 (a signed USDC transfer authorization
//! settled through a facilitator) and MPP (the `Payment` HTTP authentication scheme, charged through Stripe).
//! Knows no HTTP routes: `api::paid` and `api::mpp` take the headers to these checks.

pub mod mpp;
pub mod x402;
