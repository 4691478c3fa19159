//! Idempotency-Key: a write sent again with the same key replays the first one's answer instead of writing twice.
//! Shared by keyed and paid calculate, refunds, voids and trades.
//!
//! - The key is scoped to the account, lives 24 hours, and is 1 to 255 visible ASCII characters.
//! - Same key, same body (compared as canonical JSON, so key order and spacing do not matter): the stored answer,
//!   byte for byte; nothing is written again.
//! - Same key, different body: refused ([`Refused::Mismatch`]).
//! - A retry that arrives while the first request is still running waits for it (up to 5 s) and then replays its
//!   answer; if it is still running after that, refused ([`Refused::StillRunning`]).
//! - A request that fails releases its key, so that a corrected retry may use it.

use std::time::Duration;

use serde_json::Value;

use crate::clock::Clock;
use crate::security::sha256_hex;
use crate::store::idempotency::Claim;
use crate::store::{Store, StoreError};

pub const KEY_LIFETIME_MS: i64 = 24 * 3600 * 1000;
const WAIT_FOR_FIRST: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(20);

/// The longest Idempotency-Key, in characters (all visible ASCII, `!` to `~`).
pub const MAX_KEY_LEN: usize = 255;

/// The Idempotency-Key as the document states it.
pub fn key_pattern() -> String {
    format!("^[!-~]{{1,{MAX_KEY_LEN}}}$")
}

/// Whether `key` is an Idempotency-Key: 1 to [`MAX_KEY_LEN`] visible ASCII characters.
pub fn is_key(key: &str) -> bool {
    (1..=MAX_KEY_LEN).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic())
}

/// The hash that tells "same body" from "different body", per operation: the body written with its object keys
/// sorted, so that equal bodies hash equally whatever their key order.
pub fn body_hash(operation: &str, v: &Value) -> String {
    let mut sorted = v.clone();
    sorted.sort_all_objects();
    sha256_hex(format!("{operation}\n{sorted}").as_bytes())
}

pub enum Begin {
    /// Run the request, then store its answer under the key (or release the key on failure).
    Proceed,
    /// Send this stored answer.
    Replay { status: u16, body: String },
}

/// Why a request may not run under its key.
#[derive(Debug)]
pub enum Refused {
    /// The key was used with another body.
    Mismatch,
    /// The request that holds the key is still running after the wait.
    StillRunning,
    Store(StoreError),
}

crate::store_failure!(Refused);

/// Claims `key` of the account for a request whose body hashes to `hash`, or finds the answer to replay; waits
/// (up to 5 s) for a request with the same key that is still running.
pub async fn begin(store: &Store, clock: &Clock, entity_id: &str, key: &str, hash: &str) -> Result<Begin, Refused> {
    let started = tokio::time::Instant::now();
    loop {
        match store.claim_idempotency_key(entity_id, key, hash, clock.now_ms(), KEY_LIFETIME_MS).await? {
            Claim::Started => return Ok(Begin::Proceed),
            Claim::Replay { status, body } => return Ok(Begin::Replay { status, body }),
            Claim::Mismatch => return Err(Refused::Mismatch),
            Claim::InProgress if started.elapsed() < WAIT_FOR_FIRST => tokio::time::sleep(POLL).await,
            Claim::InProgress => return Err(Refused::StillRunning),
        }
    }
}

/// Releases the key after a failed request (best effort: a leftover in-progress row only delays a retry).
pub async fn release(store: &Store, entity_id: &str, key: &str) {
    if let Err(e) = store.abandon_idempotency_key(entity_id, key).await {
        tracing::warn!(error = %e, "could not release idempotency key");
    }
}
