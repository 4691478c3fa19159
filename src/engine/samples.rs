//! Typical full calculate bodies, as the content of the dictionary the ledger compresses its stored bodies
//! against (`store::packing`). A stored body is mostly text every answer for its state and category repeats
//! (citations, notes, labels, member names); with these bodies as the dictionary, a body compresses to a few
//! hundred bytes instead of about 2 KB on its own.
//!
//! The content depends only on the rule set and the engine: the bodies are determined as of the rule set's
//! latest changelog date, with placeholder ids. It changes when the rules do, and then only the compression
//! ratio of new rows changes: every row names the dictionary it was packed with, and old dictionaries stay.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use rust_decimal::Decimal;
use serde_json::{json, Value};

use super::render::FullText;
use super::{determine, parse_request, Input};
use crate::rules::registry::Registry;
use crate::rules::schema::{STATES, TRANSACTION_TYPES};

/// The transaction type each state's whole sample body is determined for; the other types add their strings.
const WHOLE: &str = "saas";

/// The dictionary content for `registry`: the distinct string values of bodies for every state and transaction
/// type, then one whole body per state (zstd finds nearer content cheaper, and whole bodies match the most).
/// Built once per process and rule-set version.
pub fn dictionary(registry: &Registry) -> Arc<Vec<u8>> {
    static BUILT: OnceLock<Mutex<Vec<(String, Arc<Vec<u8>>)>>> = OnceLock::new();
    let key = format!("{}/{}", registry.engine_version, registry.version);
    let built = BUILT.get_or_init(Default::default);
    if let Some((_, content)) = built.lock().unwrap_or_else(|e| e.into_inner()).iter().find(|(k, _)| *k == key) {
        return content.clone();
    }
    let content = Arc::new(build(registry));
    built.lock().unwrap_or_else(|e| e.into_inner()).push((key, content.clone()));
    content
}

fn build(registry: &Registry) -> Vec<u8> {
    let as_of = registry.changelog.iter().map(|c| c.date).max().unwrap_or(registry.coverage_from);
    let nexus: BTreeMap<usize, bool> = (0..STATES.len()).map(|i| (i, true)).collect();
    let mut strings: Vec<u8> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut whole: Vec<u8> = Vec::new();
    for state in STATES {
        for tt in TRANSACTION_TYPES {
            let body = json!({"amount": 100, "buyer_state": state, "transaction_type": tt, "counterparty_id": "counterparty"});
            let Ok(request) = parse_request(&body) else { continue };
            let input = Input { request: &request, nexus: Some(&nexus), vendor_ytd: None, as_of };
            let Ok(det) = determine(registry, &input) else { continue };
            let (tracking, advisories) = det.with_vendor_prior(registry, &request, Decimal::ZERO);
            let extra = [
                ("transaction_id", "tx_00000000000000000000000000"),
                ("timestamp", "2026-01-01T00:00:00.000Z"),
                ("entity_id", "ent_000000000000000000000000"),
                ("mode", "live"),
                ("api_version", "v2"),
            ];
            let text = FullText::new(&det).with(tracking.as_ref(), &advisories, &extra);
            if tt == WHOLE {
                whole.extend_from_slice(text.as_bytes());
            }
            if let Ok(value) = serde_json::from_str::<Value>(&text) {
                collect_strings(&value, &mut seen, &mut strings);
            }
        }
    }
    strings.extend_from_slice(&whole);
    strings
}

/// Appends each string value not seen yet, as JSON text (quoted and escaped, as bodies hold it).
fn collect_strings(value: &Value, seen: &mut HashSet<String>, out: &mut Vec<u8>) {
    match value {
        Value::String(s) if s.len() > 3 => {
            let text = Value::String(s.clone()).to_string();
            if seen.insert(text.clone()) {
                out.extend_from_slice(text.as_bytes());
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, seen, out)),
        Value::Object(members) => members.values().for_each(|v| collect_strings(v, seen, out)),
        _ => {}
    }
}
