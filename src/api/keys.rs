//! GET, POST and DELETE /api/v1/keys.

use std::sync::Arc;

use poem::http::StatusCode;
use poem_openapi::param::Query;
use poem_openapi::OpenApi;

use super::auth::KeyAuth;
use super::error::{ApiError, ErrorCode};
use super::payload::{Body, Json, OptionalBody};
use super::schema::accounts::{KeyCreateRequest, KeyCreated, KeyList, KeySummary, NewApiKey, RevokeRequest, RevokeResponse};
use super::{ApiTags, AppState};
use crate::clock::iso;
use crate::store::entity::api_key;
use crate::store::Store;
use crate::{error_responses, ok_responses};

pub struct KeysApi(pub Arc<AppState>);

pub fn key_view(raw: &str, row: &api_key::Model) -> NewApiKey {
    NewApiKey {
        key: raw.to_string(),
        prefix: row.prefix.clone(),
        note: "Shown once: only its SHA-256 is stored. Send it as X-API-Key or Authorization: Bearer. Revoke it with DELETE /api/v1/keys {\"prefix\": \"…\"}.".to_string(),
        name: row.name.clone(),
        created_at: iso(row.created_at),
    }
}

pub fn summary(k: &api_key::Model) -> KeySummary {
    KeySummary {
        prefix: k.prefix.clone(),
        name: k.name.clone(),
        created_at: iso(k.created_at),
        revoked_at: k.revoked_at.map(iso),
        active: k.revoked_at.is_none(),
    }
}

ok_responses!(ListKeysResponses {
    200 => Ok(Json<KeyList>): "The account's keys, by prefix only.",
});

error_responses!(ListKeysErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter this operation does not take.",
    401 => Unauthorized: "UNAUTHORIZED.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(CreateKeyResponses {
    201 => Created(Json<KeyCreated>): "The new key, shown once.",
});

error_responses!(CreateKeyErrors {
    400 => BadRequest: "INVALID_INPUT (type test: test keys are not available yet) or INVALID_JSON_BODY.",
    401 => Unauthorized: "UNAUTHORIZED.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(RevokeKeyResponses {
    200 => Ok(Json<RevokeResponse>): "The key is revoked; its next call gets 401.",
});

error_responses!(RevokeKeyErrors {
    400 => BadRequest: "INVALID_INPUT: prefix missing or not 16 characters; or INVALID_JSON_BODY.",
    401 => Unauthorized: "UNAUTHORIZED.",
    403 => Forbidden: "FORBIDDEN: the prefix belongs to another account's key.",
    404 => NotFound: "RESOURCE_NOT_FOUND: no active key with this prefix.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Keys")]
impl KeysApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const LIST_KEYS_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/success": true}
    }"#;

    /// List the account's API keys (prefixes only)
    #[oai(
        path = "/keys",
        method = "get",
        operation_id = "listKeys",
        code_sample(lang = "json", label = "example", source = "Self::LIST_KEYS_EXAMPLE")
    )]
    async fn list(&self, auth: KeyAuth) -> Result<ListKeysResponses, ListKeysErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let keys = s.store.keys(&owner.entity.id).await.map_err(ApiError::from)?;
        Ok(ListKeysResponses::Ok(Json(KeyList { success: true, keys: keys.iter().map(summary).collect() })))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const CREATE_KEY_EXAMPLE: &'static str = r#"{
        "body": {"name": "ci"},
        "status": 201,
        "expect": {"/success": true, "/api_key/name": "ci"}
    }"#;

    /// Create an API key (live only; shown once)
    #[oai(
        path = "/keys",
        method = "post",
        operation_id = "createKey",
        code_sample(lang = "json", label = "example", source = "Self::CREATE_KEY_EXAMPLE")
    )]
    async fn create(&self, auth: KeyAuth, body: OptionalBody<KeyCreateRequest>) -> Result<CreateKeyResponses, CreateKeyErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let req = body.parse().map_err(|mut e| {
            // `test` is a type the spec names but the service does not offer yet: say so, not just "not one of".
            if let Some(m) = e.errors.iter_mut().find(|m| m.starts_with("type: `test`")) {
                *m = format!(
                    "type: test keys are not available yet (they are on the roadmap); create a live key — the free plan's {} cover testing",
                    s.plans.free_allowance()
                );
            }
            e
        })?;
        let name = req.name.unwrap_or_else(|| "Default".into());
        let (raw, row) = api_key::Model::fresh(&owner.entity.id, &name, s.clock.now_ms());
        Store::insert(&s.store.db, row.clone()).await.map_err(ApiError::from)?;
        Ok(CreateKeyResponses::Created(Json(KeyCreated { success: true, api_key: key_view(&raw, &row) })))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const REVOKE_KEY_EXAMPLE: &'static str = r#"{
        "body": {"prefix": "<KEY_PREFIX>"},
        "status": 200,
        "expect": {"/success": true}
    }"#;

    /// Revoke an API key by its prefix
    ///
    /// The prefix (the key's first 16 characters) goes in the body, {"prefix": "svc_live_0123456"}, or as
    /// the `prefix` query parameter. A key may revoke itself.
    #[oai(
        path = "/keys",
        method = "delete",
        operation_id = "revokeKey",
        code_sample(lang = "json", label = "example", source = "Self::REVOKE_KEY_EXAMPLE")
    )]
    async fn revoke(
        &self,
        auth: KeyAuth,
        /// Alternative to the body's prefix: the key's first 16 characters.
        #[oai(validator(min_length = 16, max_length = 16))]
        prefix: Query<Option<String>>,
        body: Body<RevokeRequest>,
    ) -> Result<RevokeKeyResponses, RevokeKeyErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let prefix = match prefix.0 {
            Some(p) if body.raw.iter().all(u8::is_ascii_whitespace) => p,
            _ => body.parse()?.prefix,
        };
        let now = s.clock.now_ms();
        let revoked = s.store.revoke_keys(&owner.entity.id, &prefix, now).await.map_err(ApiError::from)?;
        s.keys.forget_account(&owner.entity.id);
        if revoked == 0 {
            if s.store.prefix_taken_elsewhere(&owner.entity.id, &prefix).await.map_err(ApiError::from)? {
                return Err(ApiError::new(StatusCode::FORBIDDEN, ErrorCode::Forbidden, "this key belongs to another account").into());
            }
            return Err(ApiError::not_found(format!("no active key with prefix {prefix}")).into());
        }
        Ok(RevokeKeyResponses::Ok(Json(RevokeResponse { success: true, prefix, revoked: true, revoked_at: iso(now) })))
    }
}
