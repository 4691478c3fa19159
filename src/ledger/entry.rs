//! What a recorded call may send: the engine's request, as the API read it from the body, with the fields that only
//! the keyless demo honours refused.

use serde_json::Value;

use super::Entry;
use crate::engine::{FieldError, Request};

/// A request body as the API read it: the engine's request, or every problem of the body's.
pub type Read = Result<Request, Vec<FieldError>>;

/// How the API reads a request body (`api::schema::calculate::read_request`), for what rereads a stored one.
pub type Reader = fn(&Value) -> Read;

/// The fields an ingest record holds beside a calculate request's (the caller's references and metadata), kept in
/// its stored request.
pub const EXTRA_FIELDS: &[&str] = &["external_tx_id", "transaction_id", "metadata"];

/// The fields a keyed call may not send (they bypass the account's own records).
const DEMO_ONLY_FIELDS: &[&str] = &["nexus_override", "vendor_ytd_override"];

impl Entry {
    /// A keyed call's body (a calculate call's, an ingest record's without its own fields) as sent and as read, as an
    /// entry; its problems as `field: message`, each field prefixed with `prefix` (`records[3].`).
    pub fn live(read: Read, value: &Value, prefix: &str) -> Result<Entry, Vec<String>> {
        Entry::refusing(
            read,
            value,
            prefix,
            DEMO_ONLY_FIELDS,
            "only honoured on keyless demo calls; live calls use the account's stored nexus and ledger",
        )
    }

    /// The body of a call paid per call (x402, MPP): `nexus_override` is honoured (the spec gives it to "x402 inline
    /// calls"; a keyless payer has no stored nexus to speak of), `vendor_ytd_override` is not (the payer's account
    /// keeps its own 1099 totals).
    pub fn paid(read: Read, value: &Value) -> Result<Entry, Vec<String>> {
        Entry::refusing(
            read,
            value,
            "",
            &["vendor_ytd_override"],
            "only honoured on keyless demo calls; a paid call's 1099 total is its account's own",
        )
    }

    fn refusing(read: Read, value: &Value, prefix: &str, refused: &[&str], why: &str) -> Result<Entry, Vec<String>> {
        let mut errors: Vec<String> = Vec::new();
        if let Some(obj) = value.as_object() {
            errors.extend(refused.iter().filter(|f| obj.contains_key(**f)).map(|f| format!("{prefix}{f}: {why}")));
        }
        match read {
            Ok(request) if errors.is_empty() => Ok(Entry::new(request, value.clone(), prefix.to_string(), None, None)),
            Ok(_) => Err(errors),
            Err(fields) => {
                errors.extend(fields.iter().map(|e| format!("{prefix}{}: {}", e.field, e.message)));
                Err(errors)
            }
        }
    }
}
