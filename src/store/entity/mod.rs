//! sea-orm entities, one per table of `migrations/` (timestamps in Unix milliseconds, sums in micro-dollars).

pub mod agent;
pub mod api_key;
pub mod counter;
pub mod entity;
pub mod idempotency;
pub mod nexus_state;
pub mod session;
pub mod state_revenue;
pub mod transaction;
pub mod vendor_ytd;
