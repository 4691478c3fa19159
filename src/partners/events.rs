//! A partner's signed events (`user.created`, `user.deleted`): the signature and its nonce checked, then the event
//! applied with the nonce used up in the same transaction, so that a replay changes nothing.

use super::users::{provision, UserFields};
use super::{signature_problem, Refused, EVENTS, WEBHOOK_TOLERANCE_SECS};
use crate::store::entity::{partner, partner_user};
use crate::store::partners::{Deleted, Nonce, Provisioned};
use crate::store::Store;

/// An event as sent: its four headers (trimmed; `None` when missing or empty) and its raw body.
pub struct Signed<'a> {
    pub signature: Option<&'a str>,
    pub partner: Option<&'a str>,
    pub nonce: Option<&'a str>,
    pub event: Option<&'a str>,
    pub body: &'a [u8],
}

/// An event whose signature verified, from an active partner.
pub struct Verified<'a> {
    pub partner: partner::Model,
    pub nonce: &'a str,
    pub event: &'a str,
}

/// What an event did.
pub enum Applied {
    /// `user.created`: the user's account, made now or found (`already`).
    Provisioned { user: partner_user::Model, already: bool },
    /// `user.deleted`: the user marked deleted now, or before (`already`).
    Deleted { user: partner_user::Model, already: bool },
    /// `user.deleted` of an external id the partner never provisioned.
    NotFound,
}

fn invalid(message: impl Into<String>) -> Refused {
    Refused::SignatureInvalid(message.into())
}

/// Checks an event's headers and signature at `now_ms`: every header present, a nonce of 8 to 128 characters, a known
/// event, a known partner and a `v1` that verifies with its secret (or its previous one, within its grace); then that
/// the partner is active. The body is not read before this.
pub async fn verify<'a>(store: &Store, signed: &Signed<'a>, now_ms: i64) -> Result<Verified<'a>, Refused> {
    let (Some(signature), Some(slug), Some(nonce), Some(event)) = (signed.signature, signed.partner, signed.nonce, signed.event) else {
        return Err(invalid("X-Service-Signature, X-Service-Partner, X-Service-Nonce and X-Service-Event are all required"));
    };
    if !(8..=128).contains(&nonce.chars().count()) {
        return Err(invalid("X-Service-Nonce must be 8 to 128 characters"));
    }
    if !EVENTS.contains(&event) {
        return Err(invalid(format!("X-Service-Event `{event}` is not one of: {}", EVENTS.join(", "))));
    }
    let Some(partner) = store.partner_by_slug(slug).await? else {
        return Err(invalid("the signature does not verify for this partner"));
    };
    let mut secrets = vec![partner.secret.as_str()];
    if let (Some(old), Some(until)) = (partner.previous_secret.as_deref(), partner.previous_secret_until) {
        if now_ms < until {
            secrets.push(old);
        }
    }
    if let Some(problem) = signature_problem(&secrets, signature, signed.body, now_ms.div_euclid(1000)) {
        return Err(invalid(problem));
    }
    if !partner.active {
        return Err(Refused::Forbidden("this partner is deactivated; its operator can reactivate it".into()));
    }
    Ok(Verified { partner, nonce, event })
}

/// Applies a verified event to `user` (read from its body), using up its nonce.
pub async fn apply(store: &Store, v: &Verified<'_>, user: &UserFields, now_ms: i64) -> Result<Applied, Refused> {
    let p = &v.partner;
    let nonce = Nonce { partner_id: &p.id, nonce: v.nonce, now_ms, forget_before_ms: now_ms - 2 * WEBHOOK_TOLERANCE_SECS * 1000 };
    let replayed = || invalid("this X-Service-Nonce was used before: a replay changes nothing");
    let applied = if v.event == "user.created" {
        match provision(store, p, user, Some(nonce), now_ms).await?.0 {
            Provisioned::New(user) => Applied::Provisioned { user, already: false },
            Provisioned::Existing(user) => Applied::Provisioned { user, already: true },
            Provisioned::Replayed => return Err(replayed()),
        }
    } else {
        match store.delete_partner_user(&p.id, &user.external_id, nonce).await? {
            Deleted::Now(user) => Applied::Deleted { user: *user, already: false },
            Deleted::Before(user) => Applied::Deleted { user: *user, already: true },
            Deleted::NotFound => Applied::NotFound,
            Deleted::Replayed => return Err(replayed()),
        }
    };
    tracing::info!(partner = %p.slug, event = v.event, "partner event");
    Ok(applied)
}
