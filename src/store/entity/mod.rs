//! sea-orm entities, one per table of `migrations/` (timestamps in Unix milliseconds, sums in micro-dollars).

pub mod agent;
pub mod api_key;
pub mod billing_event;
pub mod counter;
pub mod disposition;
#[allow(clippy::module_inception, reason = "the accounts table is `entities`, the spec's word for an account")]
pub mod entity;
pub mod filed_period;
pub mod idempotency;
pub mod lot;
pub mod network_event;
pub mod network_profile;
pub mod nexus_state;
pub mod paid_call;
pub mod partner;
pub mod partner_nonce;
pub mod partner_user;
pub mod position;
pub mod report_run;
pub mod session;
pub mod state_revenue;
pub mod trade;
pub mod transaction;
pub mod vendor_ytd;
pub mod wallet;
