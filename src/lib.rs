//! levy: US sales and use tax rules as dated, cited data, the engine that evaluates them, and its REST API.
#![forbid(unsafe_code)]

pub mod accounts;
pub mod api;
pub mod billing;
pub mod blog;
pub mod cache;
pub mod cli;
pub mod clock;
pub mod config;
pub mod csv;
pub mod engine;
pub mod gains;
pub mod idempotency;
pub mod ledger;
pub mod metrics;
pub mod partners;
pub mod payments;
pub mod plans;
pub mod postal;
pub mod rules;
pub mod scenarios;
pub mod security;
pub mod server;
pub mod store;
pub mod trades;
