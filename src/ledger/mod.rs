//! The ledger: the write path of recorded calls. Keyed calculate calls and ingest requests become jobs, and the
//! jobs waiting at one moment are written in one database transaction (`batch`, by group commit). Every figure a
//! batch writes — usage and burst counters, 1099 totals, nexus revenue, ledger rows, idempotent responses — is
//! what recording its jobs one after another, in arrival order, would give.
//!
//! A job names who pays for it ([`Payer`]): that decides the account it is recorded to, what is checked again
//! inside the batch, and which limits it counts against. Knows no HTTP: a job is refused with a [`Refusal`],
//! which the API turns into its error envelope.

pub mod alerts;
mod batch;
pub mod corrections;
mod entry;
pub mod keyed;
pub mod liability;
pub mod optimization;
pub mod report;

pub use alerts::{alerts_from, with_alerts};
pub use batch::{Answer, Entry, EntryOutcome, Job, Ledger, Recorded, Source};
pub use entry::{Read, Reader, EXTRA_FIELDS};

use crate::store::limits::CounterHit;
use crate::store::StoreError;

/// Who pays for a job.
#[derive(Clone, Debug, PartialEq)]
pub enum Payer {
    /// An account's API key. The batch checks the key again (one revoked since the caller looked it up is
    /// refused), counts a calculate call in the key's burst window, and counts the job in the account's month
    /// against its plan's allowance.
    ApiKey { key_id: String, entity_id: String },
    /// A payment for the call itself (x402, MPP, a partner's user), attributed to an account: no key to check
    /// again, no burst window, no monthly allowance (the call is paid for as it is made). `mode` is the answer's
    /// `mode` (`x402`, `mpp`).
    PerCall { entity_id: String, mode: &'static str },
}

impl Payer {
    /// The account the job is recorded to.
    pub fn entity_id(&self) -> &str {
        match self {
            Payer::ApiKey { entity_id, .. } | Payer::PerCall { entity_id, .. } => entity_id,
        }
    }

    /// The calculate answer's `mode`: `live` for a key, the payment's protocol otherwise.
    pub fn mode(&self) -> &'static str {
        match self {
            Payer::ApiKey { .. } => "live",
            Payer::PerCall { mode, .. } => mode,
        }
    }

    /// The API key, for a job a key pays for.
    pub fn key_id(&self) -> Option<&str> {
        match self {
            Payer::ApiKey { key_id, .. } => Some(key_id),
            Payer::PerCall { .. } => None,
        }
    }
}

/// Why a job was answered without being recorded.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    /// The API key is unknown, or was revoked after the caller looked it up.
    KeyRevoked,
    /// The account a per-call payment names does not exist.
    UnknownAccount,
    /// The key's burst window is used up.
    BurstExceeded {
        limit: i64,
    },
    /// The account's plan allows no more calls this month; the message says which plan and how many.
    AllowanceUsedUp(String),
    /// The engine cannot answer an entry as sent: `field: problem`, each field prefixed with its entry's place.
    Input(Vec<String>),
    /// The engine failed on a request that is not at fault (a bug, or a server date the rules do not cover).
    Engine(String),
    Store(StoreError),
}

crate::store_failure!(Refusal);

const MINUTE_MS: i64 = 60_000;

/// The hit that counts one call in its key's 60-second window (kept a minute past its end).
pub fn burst_call(key_id: &str, now_ms: i64) -> CounterHit {
    let window = now_ms - now_ms.rem_euclid(MINUTE_MS);
    CounterHit { name: format!("burst:{key_id}"), window_start: window, expires_at: window + 2 * MINUTE_MS, n: 1 }
}
