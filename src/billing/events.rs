//! A payment processor's billing event, taken once: what it does to the account it names (`changes::apply`), recorded
//! with the event in one database transaction (`Store::take_billing_event`, `Store::settle_billing_event`).

use super::changes::{apply, Change};
use crate::store::billing::EventRow;
use crate::store::{Store, StoreError};

/// A billing event as delivered.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub id: String,
    pub kind: String,
    /// The event's `created` time, in Unix ms.
    pub created_ms: i64,
    pub change: Change,
}

/// What taking a billing event did.
#[derive(Debug, PartialEq)]
pub enum Applied {
    /// Applied now to this account; what it did, in words.
    Applied { entity_id: String, outcome: String },
    /// Recorded, changing nothing: why (no account it names, a newer event applied first, or nothing to act on).
    Nothing(String),
    /// This event id was taken before: nothing changed.
    Duplicate,
}

/// Takes a verified billing event: its id is recorded first, so that a second delivery changes nothing; an event
/// older than one applied about the same subscription changes nothing either; otherwise the account it names (by
/// id, or by the subscription paying for its plans) is changed as `changes::apply` says.
pub async fn take(store: &Store, event: &Event, now_ms: i64) -> Result<Applied, StoreError> {
    let subscription = event.change.subscription();
    let row = EventRow { id: &event.id, kind: &event.kind, subscription, created_ms: event.created_ms };
    let Some(mut taken) = store.take_billing_event(row, event.change.entity_id(), now_ms).await? else {
        return Ok(Applied::Duplicate);
    };
    if taken.superseded {
        let why = "a newer event about this subscription was applied before; this one changes nothing";
        store.settle_billing_event(taken, None, why, now_ms).await?;
        return Ok(Applied::Nothing(why.into()));
    }
    match taken.account.take() {
        Some(mut account) => {
            let outcome = apply(&mut account, &event.change, event.created_ms);
            store.settle_billing_event(taken, Some(&account), &outcome, now_ms).await?;
            Ok(Applied::Applied { entity_id: account.id, outcome })
        }
        None => {
            let why = match &event.change {
                Change::Nothing(why) => why.clone(),
                _ => "no levy account is named by the event or paid for by its subscription".to_string(),
            };
            store.settle_billing_event(taken, None, &why, now_ms).await?;
            Ok(Applied::Nothing(why))
        }
    }
}
