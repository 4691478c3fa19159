//! Idempotency-Key handling shared by POST /calculate and POST /trades.
//!
//! Behaviour (documented in docs/walkthrough.md and the OpenAPI descriptions):
//! - the key is scoped to the account, lives 24 hours, and is 1 to 255 visible ASCII characters;
//! - same key, same body (compared as canonical JSON, so key order and spacing do not matter) → the
//!   stored response, byte for byte, with `X-Idempotency-Status: cached`; nothing is written again;
//! - same key, different body → 409 IDEMPOTENCY_KEY_CONFLICT;
//! - a retry that arrives while the first request is still running waits for it (up to 5 s) and then
//!   replays its response; if it is still running after that, 409 RESOURCE_CONFLICT with Retry-After: 1;
//! - a request that fails (4xx/5xx) releases its key, so a corrected retry may reuse it.

use std::time::Duration;

use poem::http::StatusCode;
use serde_json::Value;

use super::context::set_header;
use super::error::{ApiError, ErrorCode};
use super::AppState;
use crate::security::sha256_hex;
use crate::store::idempotency::Claim;

pub const KEY_LIFETIME_MS: i64 = 24 * 3600 * 1000;
const WAIT_FOR_FIRST: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(20);

/// The longest Idempotency-Key, in characters (all visible ASCII, `!` to `~`).
pub const MAX_KEY_LEN: usize = 255;

/// The Idempotency-Key header as the document states it (`schema::param::IdempotencyKey`).
pub fn key_pattern() -> String {
    format!("^[!-~]{{1,{MAX_KEY_LEN}}}$")
}

/// The Idempotency-Key header as sent, bytes outside visible ASCII included (as U+FFFD or themselves), so that
/// [`parse_key`] refuses them: a typed header parameter would read such a value as no key at all, and the
/// retry it was meant to protect would be recorded twice.
pub fn header_text(req: &poem::Request) -> Option<String> {
    req.headers().get("idempotency-key").map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// The Idempotency-Key header, checked; `None` when absent.
pub fn parse_key(header: Option<&str>) -> Result<Option<String>, ApiError> {
    let Some(k) = header else { return Ok(None) };
    if (1..=MAX_KEY_LEN).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(Some(k.to_string()))
    } else {
        Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::IdempotencyKeyInvalid,
            "Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID is a good choice)",
        ))
    }
}

/// JSON with object keys sorted, so that equal bodies hash equally whatever their key order.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                canonical(&m[k.as_str()], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The hash that tells "same body" from "different body", per operation.
pub fn body_hash(operation: &str, v: &Value) -> String {
    let mut s = String::from(operation);
    s.push('\n');
    canonical(v, &mut s);
    sha256_hex(s.as_bytes())
}

pub enum Begin {
    /// Run the request, then store its response under the key (or release the key on failure).
    Proceed,
    /// Send this stored response.
    Replay { status: u16, body: String },
}

impl AppState {
    pub async fn begin_idempotent(&self, entity_id: &str, key: &str, hash: &str) -> Result<Begin, ApiError> {
        let started = tokio::time::Instant::now();
        loop {
            match self.store.claim_idempotency_key(entity_id, key, hash, self.clock.now_ms(), KEY_LIFETIME_MS).await? {
                Claim::Started => return Ok(Begin::Proceed),
                Claim::Replay { status, body } => {
                    set_header("X-Idempotency-Status", "cached");
                    return Ok(Begin::Replay { status, body });
                }
                Claim::Mismatch => {
                    return Err(ApiError::new(
                        StatusCode::CONFLICT,
                        ErrorCode::IdempotencyKeyConflict,
                        "this Idempotency-Key was used with a different request body; use a new key for a new request",
                    ));
                }
                Claim::InProgress if started.elapsed() < WAIT_FOR_FIRST => tokio::time::sleep(POLL).await,
                Claim::InProgress => {
                    set_header("Retry-After", 1);
                    return Err(ApiError::conflict(
                        "a request with this Idempotency-Key is still being processed; retry shortly to receive its response",
                    ));
                }
            }
        }
    }

    /// Releases the key after a failed request (best effort: a leftover in-progress row only delays a retry).
    pub async fn release_idempotency_key(&self, entity_id: &str, key: &str) {
        if let Err(e) = self.store.abandon_idempotency_key(entity_id, key).await {
            tracing::warn!(error = %e, "could not release idempotency key");
        }
    }
}
