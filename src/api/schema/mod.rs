//! The documented shapes of request and response bodies. They drive the OpenAPI document; the bodies
//! themselves are validated by `crate::validate` / `crate::engine::request` (every field error at once)
//! and rendered by `crate::engine::render`, and tests compare live responses with these schemas.

pub mod accounts;
pub mod calculate;
pub mod gains;
pub mod ledger;
