//! Credentials: API keys (X-API-Key or Authorization: Bearer), dashboard session tokens, and keyless demo calls.

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

impl KeyOrDemo {
    pub fn key(self) -> Option<KeyAuth> {
        match self {
            KeyOrDemo::Header(h) => Some(KeyAuth::Header(h)),
            KeyOrDemo::Bearer(b) => Some(KeyAuth::Bearer(b)),
            KeyOrDemo::Demo => None,
        }
    }
}

impl AppState {
    /// The account behind an API key; 401 for a malformed, unknown or revoked key.
    pub async fn authenticate(&self, auth: &KeyAuth) -> Result<KeyOwner, ApiError> {
        let raw = auth.raw().trim();
        if !looks_like_api_key(raw) {
            return Err(ApiError::unauthorized("invalid API key: expected svc_live_ followed by 32 hex characters"));
        }
        self.store.key_owner(&sha256_hex(raw.as_bytes())).await?.ok_or_else(|| ApiError::unauthorized("unknown or revoked API key"))
    }

    /// The account behind an unexpired session token; 401 otherwise.
    pub async fn session(&self, auth: &SessionAuth) -> Result<entity::Model, ApiError> {
        let token = auth.0.token.trim();
        let now = self.clock.now_ms();
        self.store.session_entity(&sha256_hex(token.as_bytes()), now).await?.ok_or_else(|| ApiError::unauthorized("unknown or expired session token; log in again"))
    }
}
