//! Payments for a call itself, made by callers without an API key: x402 (a signed USDC transfer authorization
//! settled through a facilitator). Knows no HTTP routes: `api::paid` takes the headers to these checks.

pub mod x402;
