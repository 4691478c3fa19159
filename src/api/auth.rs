//! Credentials: API keys (X-API-Key or Authorization: Bearer), dashboard session tokens, and keyless demo calls.

use std::sync::Arc;

use poem_openapi::auth::{ApiKey, Bearer};
use poem_openapi::SecurityScheme;

use super::error::ApiError;
use super::AppState;
use crate::security::{looks_like_api_key, sha256_hex};
use crate::store::accounts::KeyOwner;
use crate::store::entity::entity;

/// A live API key (`svc_live_` followed by 32 hex characters) in the X-API-Key header.
#[derive(SecurityScheme)]
#[oai(rename = "ApiKeyHeader", ty = "api_key", key_name = "X-API-Key", key_in = "header")]
pub struct ApiKeyHeader(ApiKey);

/// A live API key sent as `Authorization: Bearer svc_live_…`.
#[derive(SecurityScheme)]
#[oai(rename = "ApiKeyBearer", ty = "bearer")]
pub struct ApiKeyBearer(Bearer);

/// An API key, in either header.
#[derive(SecurityScheme)]
pub enum KeyAuth {
    Header(ApiKeyHeader),
    Bearer(ApiKeyBearer),
}

/// An API key, or nothing: without one, calculate answers in demo mode.
#[derive(SecurityScheme)]
pub enum KeyOrDemo {
    Header(ApiKeyHeader),
    Bearer(ApiKeyBearer),
    #[oai(fallback)]
    Demo,
}

/// A dashboard session token from POST /api/v1/auth/login, as `Authorization: Bearer sess_…`.
#[derive(SecurityScheme)]
#[oai(rename = "SessionToken", ty = "bearer")]
pub struct SessionAuth(Bearer);

impl KeyAuth {
    fn raw(&self) -> &str {
        match self {
            KeyAuth::Header(h) => &h.0.key,
            KeyAuth::Bearer(b) => &b.0.token,
        }
    }
}

/// The SHA-256 under which a well-formed key is stored; 401 for a malformed one.
fn key_hash(auth: &KeyAuth) -> Result<String, ApiError> {
    let raw = auth.raw().trim();
    if !looks_like_api_key(raw) {
        return Err(ApiError::unauthorized("invalid API key: expected svc_live_ followed by 32 hex characters"));
    }
    Ok(sha256_hex(raw.as_bytes()))
}

impl KeyOrDemo {
    pub fn key(self) -> Option<KeyAuth> {
        match self {
            KeyOrDemo::Header(h) => Some(KeyAuth::Header(h)),
            KeyOrDemo::Bearer(b) => Some(KeyAuth::Bearer(b)),
            KeyOrDemo::Demo => None,
        }
    }
}

/// A key as the ledger batch takes it: which key, whose account.
pub struct KeyRef {
    pub key_id: String,
    pub entity_id: String,
}

/// The keys this instance has looked up, by SHA-256. Used only where what the call does is checked again
/// against the database in the ledger batch's transaction (keyed calculate and ingest), so that a revoked key
/// is still refused on its next call, on whichever instance it was revoked; a call that the batch would not
/// see (an Idempotency-Key replay) looks its key up again.
pub type KeyCache = crate::cache::Seen<Arc<KeyRef>>;

impl KeyCache {
    /// Forgets an account's keys (after one is revoked here).
    pub fn forget_account(&self, entity_id: &str) {
        self.retain(|k| k.entity_id != entity_id);
    }
}

impl AppState {
    /// The key and account behind an API key, for a call the ledger batch checks again (see [`KeyCache`]);
    /// 401 for a malformed or unknown key, and for a key known to be revoked.
    pub async fn ledger_key(&self, auth: &KeyAuth) -> Result<Arc<KeyRef>, ApiError> {
        let hash = key_hash(auth)?;
        if let Some(k) = self.keys.get(&hash) {
            return Ok(k);
        }
        let owner = self.store.key_owner(&hash).await?.ok_or_else(|| ApiError::unauthorized("unknown or revoked API key"))?;
        let key = Arc::new(KeyRef { key_id: owner.key_id, entity_id: owner.entity.id });
        self.keys.put(&hash, key.clone());
        Ok(key)
    }

    /// `refusal`, unless the key (taken from the cache) has been revoked since: then 401.
    pub async fn recheck_key(&self, auth: &KeyAuth, refusal: ApiError) -> ApiError {
        if refusal.status == poem::http::StatusCode::UNAUTHORIZED {
            return refusal;
        }
        match self.authenticate(auth).await {
            Ok(_) => refusal,
            Err(e) if e.status == poem::http::StatusCode::UNAUTHORIZED => e,
            Err(_) => refusal,
        }
    }

    /// The account behind an API key; 401 for a malformed, unknown or revoked key.
    pub async fn authenticate(&self, auth: &KeyAuth) -> Result<KeyOwner, ApiError> {
        self.store.key_owner(&key_hash(auth)?).await?.ok_or_else(|| ApiError::unauthorized("unknown or revoked API key"))
    }

    /// The account behind an unexpired session token; 401 otherwise.
    pub async fn session(&self, auth: &SessionAuth) -> Result<entity::Model, ApiError> {
        let token = auth.0.token.trim();
        let now = self.clock.now_ms();
        self.store
            .session_entity(&sha256_hex(token.as_bytes()), now)
            .await?
            .ok_or_else(|| ApiError::unauthorized("unknown or expired session token; log in again"))
    }
}

/// A partner provisioning key (`partner_live_` followed by 32 hex characters), issued out of band, in the X-API-Key
/// header.
#[derive(SecurityScheme)]
#[oai(rename = "PartnerKeyHeader", ty = "api_key", key_name = "X-API-Key", key_in = "header")]
pub struct PartnerKeyHeader(ApiKey);

/// A partner provisioning key sent as `Authorization: Bearer partner_live_…`.
#[derive(SecurityScheme)]
#[oai(rename = "PartnerKeyBearer", ty = "bearer")]
pub struct PartnerKeyBearer(Bearer);

/// A partner key, in either header.
#[derive(SecurityScheme)]
pub enum PartnerAuth {
    Header(PartnerKeyHeader),
    Bearer(PartnerKeyBearer),
}

impl PartnerAuth {
    pub fn raw(&self) -> &str {
        match self {
            PartnerAuth::Header(h) => &h.0.key,
            PartnerAuth::Bearer(b) => &b.0.token,
        }
    }
}
