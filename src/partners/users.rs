//! A partner's users: an account provisioned for each (once per external id, with its first API key and a claim
//! link), taken over by the user through the link.

use super::{Refused, CLAIM_LIFETIME_MS};
use crate::clock::iso;
use crate::security::{hash_password_off_thread, new_id, new_ordered_id, sha256_hex};
use crate::store::entity::{agent, api_key, entity, partner, partner_user};
use crate::store::partners::{Claimed, NewPartnerUser, Nonce, Provisioned};
use crate::store::{Store, StoreError};

/// A user as the partner names it (provision, and the `user.created` event).
pub struct UserFields {
    pub external_id: String,
    /// Trimmed and lower case.
    pub email: Option<String>,
    pub display_name: Option<String>,
}

/// A new account's credentials, each shown once: its API key and its claim token.
pub struct Credentials {
    pub api_key: String,
    pub claim_token: String,
}

/// Provisions (or finds) the account of a partner's user; with a webhook nonce, used up in the same transaction.
/// The credentials are those of the account made now (none are given for an account found).
pub async fn provision(
    store: &Store,
    p: &partner::Model,
    user: &UserFields,
    nonce: Option<Nonce<'_>>,
    now: i64,
) -> Result<(Provisioned, Credentials), StoreError> {
    let pu_id = new_ordered_id("pu", now);
    let entity_id = new_id("ent");
    let (api_key, key) = api_key::Model::fresh(&entity_id, "Partner", now);
    let claim_token = super::new_claim_token();
    let name: String = user.display_name.clone().unwrap_or_else(|| user.external_id.chars().take(200).collect());
    let mut account = entity::Model::payer_account(
        entity_id.clone(),
        format!("{pu_id}@partner.invalid"),
        &name,
        format!("provisioned by partner {}", p.slug),
        now,
    );
    account.agent_name = name.clone();
    let new = NewPartnerUser {
        user: partner_user::Model {
            id: pu_id,
            partner_id: p.id.clone(),
            external_id: user.external_id.clone(),
            entity_id: entity_id.clone(),
            email: user.email.clone(),
            display_name: user.display_name.clone(),
            claim_token_hash: Some(sha256_hex(claim_token.as_bytes())),
            claim_expires_at: now + CLAIM_LIFETIME_MS,
            claimed_at: None,
            deleted_at: None,
            first_upgrade_at: None,
            locked_revshare_pct: None,
            created_at: now,
        },
        account,
        agent: agent::Model {
            id: new_id("agt"),
            entity_id,
            name,
            work_type: "compute".into(),
            description: String::new(),
            created_at: now,
        },
        key,
    };
    Ok((store.provision(new, nonce).await?, Credentials { api_key, claim_token }))
}

/// Why a claim link cannot be used now, if it cannot.
fn link_refusal(link: Option<&partner_user::Model>, now_ms: i64) -> Option<Refused> {
    let unknown = || Refused::NotFound("no claimable account has this claim link".into());
    let Some(u) = link else { return Some(unknown()) };
    if u.deleted_at.is_some() {
        return Some(unknown());
    }
    if u.claimed_at.is_some() {
        return Some(Refused::Conflict("this claim link was used: the account is claimed; log in instead".into()));
    }
    if u.claim_expires_at <= now_ms {
        let at = iso(u.claim_expires_at);
        return Some(Refused::Field("token", format!("this claim link expired at {at}; ask the platform that provisioned the account")));
    }
    None
}

/// The user takes its account over with the claim link's `token`: it logs in with `email` (trimmed, lower case) and
/// `password` from now on. The link is checked before the password is hashed (argon2 is spent on valid links only),
/// and again in the claim's transaction.
pub async fn claim(store: &Store, token: &str, email: &str, password: String, now: i64) -> Result<partner_user::Model, Refused> {
    let hash = sha256_hex(token.as_bytes());
    if let Some(refused) = link_refusal(store.claim_link(&hash).await?.as_ref(), now) {
        return Err(refused);
    }
    let password_hash = hash_password_off_thread(password).await.map_err(Refused::Internal)?;
    match store.claim(&hash, email, &password_hash, now).await? {
        Claimed::Now(u) => Ok(*u),
        Claimed::EmailTaken => Err(Refused::Conflict("an account with this email already exists; claim with another email".into())),
        Claimed::Used => Err(Refused::Conflict("this claim link was used: the account is claimed; log in instead".into())),
        Claimed::Expired(at) => Err(Refused::Field("token", format!("this claim link expired at {}", iso(at)))),
        Claimed::Unknown | Claimed::Deleted => Err(Refused::NotFound("no claimable account has this claim link".into())),
    }
}
