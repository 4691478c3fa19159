//! A calculate call paid by an API key, from its body to its batch: the Idempotency-Key claimed (or its answer
//! replayed), the body read as a keyed call's entry, the entry prepared, and the job recorded. A call that ends
//! before the batch gives its key back.

use std::sync::Arc;

use serde_json::Value;

use super::Read;
use super::{Answer, Entry, Job, Ledger, Payer, Refusal, Source};
use crate::clock::Clock;
use crate::idempotency::{self, body_hash, Begin};

/// How a keyed call ended.
pub enum Keyed {
    /// The stored answer of an earlier call with the same Idempotency-Key.
    Replay(String),
    /// The batch's answer, with the call's count in its key's burst window.
    Answered(Answer),
    /// Refused before the batch (a body that is no calculate request, a request the engine cannot answer as sent):
    /// the batch did not count it in the key's burst window.
    Refused(Refusal),
}

impl Ledger {
    /// Records a keyed calculate call paid by `payer` (an API key of an account), made at `now_ms` (the time its burst
    /// window is counted and reported by): its body as sent, and as the API read it.
    pub async fn keyed_call(
        self: &Arc<Self>,
        payer: Payer,
        idempotency_key: Option<String>,
        body: &Value,
        read: Read,
        clock: &Clock,
        now_ms: i64,
    ) -> Result<Keyed, idempotency::Refused> {
        let entity_id = payer.entity_id().to_string();
        let entity_id = entity_id.as_str();
        if let Some(k) = &idempotency_key {
            if let Begin::Replay { body, .. } = idempotency::begin(&self.store, clock, entity_id, k, &body_hash("calculate", body)).await? {
                return Ok(Keyed::Replay(body));
            }
        }
        let give_back = || async {
            if let Some(k) = &idempotency_key {
                idempotency::release(&self.store, entity_id, k).await;
            }
        };
        let entry = match Entry::live(read, body, "") {
            Ok(entry) => entry,
            Err(errors) => {
                give_back().await;
                return Ok(Keyed::Refused(Refusal::Input(errors)));
            }
        };
        let source = Source::Calculate { idempotency_key: idempotency_key.clone() };
        let mut job = Job { payer, entries: vec![entry], source, now_ms };
        if let Err(refusal) = self.prepare_job(&mut job).await {
            give_back().await;
            return Ok(Keyed::Refused(refusal));
        }
        let answer = self.record(job).await;
        if answer.result.is_err() {
            give_back().await;
        }
        Ok(Keyed::Answered(answer))
    }
}
