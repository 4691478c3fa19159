//! levy: US sales and use tax rules as dated, cited data, the engine that evaluates them, and its REST API.
#![forbid(unsafe_code)]

pub mod cli;
pub mod engine;
pub mod gains;
pub mod rules;
pub mod scenarios;
pub mod validate;
pub mod api;
pub mod cache;
pub mod clock;
pub mod config;
pub mod ledger;
pub mod plans;
pub mod security;
pub mod store;
pub mod server;
