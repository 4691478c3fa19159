//! The service through its HTTP interface (poem's test client), on SQLite and, when TEST_DATABASE_URL
//! is set, on PostgreSQL (each test in a fresh schema). Every expected figure is worked out by hand in
//! the comments next to it.

mod harness;

mod accounts;
mod agents;
mod batches;
mod billing;
mod bounds;
mod calculate;
mod contract;
mod engine_input;
mod errors;
mod fuzz;
mod gains;
mod guides;
mod idempotency;
mod ingest;
mod limits;
mod listing;
mod mcp;
mod metrics;
mod migrations;
mod mpp;
mod network;
mod nexus;
mod partners;
mod pricing;
mod query;
mod rates;
mod refunds;
mod report;
mod tenancy;
mod wallets;
mod x402;
