//! The Idempotency-Key header of POST /calculate, refunds, voids and POST /trades: read as sent, checked, and the
//! domain's answers (`crate::idempotency`) spoken in HTTP: a replay is marked `X-Idempotency-Status: cached`, a
//! key used with another body is 409 IDEMPOTENCY_KEY_CONFLICT, and one whose first request is still running
//! after the wait is 409 RESOURCE_CONFLICT with `Retry-After: 1`.

use poem::http::StatusCode;

use super::context::set_header;
use super::error::{ApiError, ErrorCode};
use super::AppState;
use crate::idempotency::{self as idem, Refused};
pub use crate::idempotency::{body_hash, Begin};

/// The Idempotency-Key header as sent, bytes outside visible ASCII included (as U+FFFD or themselves), so that
/// [`parse_key`] refuses them: a typed header parameter would read such a value as no key at all, and the
/// retry it was meant to protect would be recorded twice.
pub fn header_text(req: &poem::Request) -> Option<String> {
    req.headers().get("idempotency-key").map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
}

/// The Idempotency-Key header, checked; `None` when absent.
pub fn parse_key(header: Option<&str>) -> Result<Option<String>, ApiError> {
    match header {
        None => Ok(None),
        Some(k) if idem::is_key(k) => Ok(Some(k.to_string())),
        Some(_) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::IdempotencyKeyInvalid,
            "Idempotency-Key must be 1 to 255 visible ASCII characters (a UUID is a good choice)",
        )),
    }
}

impl From<Refused> for ApiError {
    fn from(r: Refused) -> Self {
        match r {
            Refused::Mismatch => ApiError::new(
                StatusCode::CONFLICT,
                ErrorCode::IdempotencyKeyConflict,
                "this Idempotency-Key was used with a different request body; use a new key for a new request",
            ),
            Refused::StillRunning => {
                set_header("Retry-After", 1);
                ApiError::conflict("a request with this Idempotency-Key is still being processed; retry shortly to receive its response")
            }
            Refused::Store(e) => e.into(),
        }
    }
}

/// Marks a replayed answer.
pub fn replayed() {
    set_header("X-Idempotency-Status", "cached");
}

impl AppState {
    pub async fn begin_idempotent(&self, entity_id: &str, key: &str, hash: &str) -> Result<Begin, ApiError> {
        let begun = idem::begin(&self.store, &self.clock, entity_id, key, hash).await?;
        if let Begin::Replay { .. } = begun {
            replayed();
        }
        Ok(begun)
    }

    /// Releases the key after a failed request.
    pub async fn release_idempotency_key(&self, entity_id: &str, key: &str) {
        idem::release(&self.store, entity_id, key).await;
    }
}
