//! POST /api/v1/calculate, and the recording of a keyed calculation in the ledger (shared with ingest).

use std::sync::Arc;

use super::schema::param::{IdempotencyKey, Param};
use crate::clock::iso;
use poem_openapi::param::Header;
use poem_openapi::{ApiResponse, OpenApi};
use serde_json::Value;

use super::auth::{KeyAuth, KeyOrDemo};
use super::context::client_ip;
use super::error::ApiError;
use super::idempotency::{body_hash, parse_key, Begin};
use super::payload::{JsonBody, JsonText};
use super::schema::calculate::{CalculateRequest, Calculation};
use super::{ApiTags, AppState};
use crate::engine::{determine, parse_request, render, Input, Request};
use crate::error_responses;
use crate::ledger::{Entry, Job, Payer, Source};
use crate::security::new_id;

pub struct CalculateApi(pub Arc<AppState>);

#[derive(ApiResponse)]
#[oai(
    header(name = "X-Request-Id", ty = "String", description = "The request id."),
    header(
        name = "X-RateLimit-Limit",
        ty = "i64",
        description = "Keyed: calls allowed per 60-second window for this key (120). Demo: calls allowed per UTC day (50)."
    ),
    header(name = "X-RateLimit-Remaining", ty = "i64", description = "Calls left in that window."),
    header(name = "X-RateLimit-Reset", ty = "i64", description = "Unix time (seconds) at which that window resets."),
    header(
        name = "X-Idempotency-Status",
        ty = "Option<String>",
        description = "`cached` when this is the stored response of an earlier request with the same Idempotency-Key."
    )
)]
pub enum CalculateResponse {
    /// The determination: the full answer with an API key (recorded in the ledger), the demo answer without.
    #[oai(status = 200)]
    Ok(JsonText<Calculation>),
}

error_responses!(CalculateErrors {
    400 => BadRequest: "INVALID_INPUT (errors names each field), INVALID_JSON_BODY, or IDEMPOTENCY_KEY_INVALID.",
    401 => Unauthorized: "UNAUTHORIZED: the API key is malformed, unknown or revoked.",
    402 => PaymentRequired: "PAYMENT_REQUIRED: the keyless demo's 50 calls per UTC day are used up; the body carries `signup` and `pay_per_call`.",
    409 => Conflict: "IDEMPOTENCY_KEY_CONFLICT (same key, different body) or RESOURCE_CONFLICT (same key still running after 5 s; Retry-After sent).",
    429 => TooManyRequests: "RATE_LIMITED: the key's 120 calls per 60 s or the demo's 30 per minute (Retry-After sent), or the free plan's monthly allowance (error says Monthly limit reached; no Retry-After).",
    503 => DbUnavailable: "DB_UNAVAILABLE: the database does not answer; retry.",
});

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Calculate")]
impl CalculateApi {
    /// Calculate sales or use tax for one transaction
    ///
    /// With an API key: the full determination (sourcing, rate layers, the rule that fired and its citation,
    /// 1099 tracking, nexus alerts), written to the ledger with the counterparty's 1099 total and the state's
    /// revenue in one database transaction. A seller call for a state without stored nexus answers total_tax 0
    /// with `tax_if_nexus`. `nexus_override` and `vendor_ytd_override` are demo-only and rejected here.
    ///
    /// Without a key: the demo answer (totals, no breakdown, nothing written), limited per client address to
    /// 30 calls per minute and 50 per UTC day; every call counts, invalid ones included.
    #[oai(path = "/calculate", method = "post", operation_id = "calculate")]
    async fn calculate(
        &self,
        auth: KeyOrDemo,
        /// Makes a keyed retry safe: same key and body within 24 hours replays the stored response.
        #[oai(name = "Idempotency-Key")]
        _idempotency_key: Header<Option<Param<IdempotencyKey>>>,
        req: &poem::Request,
        body: JsonBody<CalculateRequest>,
    ) -> Result<CalculateResponse, CalculateErrors> {
        let s = &self.0;
        let Some(key) = auth.key() else {
            return Ok(s.demo_calculation(&body).await?);
        };
        match s.keyed_calculation(&key, super::idempotency::header_text(req).as_deref(), &body).await {
            Ok(text) => Ok(CalculateResponse::Ok(JsonText::new(text))),
            // The key came from this instance's cache: a refusal that did not come from the ledger batch (which
            // checks the key) is a 401 if the key has been revoked meanwhile.
            Err(e) => Err(s.recheck_key(&key, e).await.into()),
        }
    }
}

/// The fields a live call may not send (they bypass the account's own records).
const DEMO_ONLY_FIELDS: &[&str] = &["nexus_override", "vendor_ytd_override"];

/// A validated live request: the engine's view plus the raw object to store.
pub struct LiveRequest {
    pub request: Request,
    pub raw: Value,
    /// What the request's field names are prefixed with in error messages (`records[3].` for an ingest record).
    pub prefix: String,
}

/// Validates a calculate body for a live (keyed) call: the spec's checks plus the demo-only fields.
pub fn parse_live(value: &Value, prefix: &str) -> Result<LiveRequest, Vec<String>> {
    let mut errors: Vec<String> = Vec::new();
    if let Some(obj) = value.as_object() {
        for f in DEMO_ONLY_FIELDS {
            if obj.contains_key(*f) {
                errors.push(format!(
                    "{prefix}{f}: only honoured on keyless demo calls; live calls use the account's stored nexus and ledger"
                ));
            }
        }
    }
    match parse_request(value) {
        Ok(request) if errors.is_empty() => Ok(LiveRequest { request, raw: value.clone(), prefix: prefix.to_string() }),
        Ok(_) => Err(errors),
        Err(fields) => {
            errors.extend(fields.iter().map(|e| format!("{prefix}{}: {}", e.field, e.message)));
            Err(errors)
        }
    }
}

/// Where a keyed call goes after [`AppState::before_batch`].
enum Next {
    /// The stored response of an earlier call with the same Idempotency-Key.
    Replay(String),
    /// To the ledger batch, with the Idempotency-Key it claimed.
    Record(Box<LiveRequest>, Option<String>),
}

impl AppState {
    /// A keyed calculation: the response text, stored under the Idempotency-Key when one was sent. The call is
    /// counted in its key's burst window by the ledger batch, or here if it ends before it (a 400, a replay).
    async fn keyed_calculation(
        self: &Arc<Self>,
        key: &KeyAuth,
        idempotency_key: Option<&str>,
        body: &JsonBody<CalculateRequest>,
    ) -> Result<String, ApiError> {
        let owner = self.ledger_key(key).await?;
        let now_ms = self.clock.now_ms();
        let (live, idem) = match self.before_batch(key, &owner.entity_id, idempotency_key, body).await {
            Ok(Next::Record(live, idem)) => (live, idem),
            Ok(Next::Replay(text)) => {
                self.count_burst(&owner.key_id, now_ms).await?;
                return Ok(text);
            }
            Err(e) => {
                self.count_burst(&owner.key_id, now_ms).await?;
                return Err(e);
            }
        };
        let LiveRequest { request, raw, prefix } = *live;
        let entry = Entry::new(request, raw, prefix, None, None);
        let source = Source::Calculate { idempotency_key: idem.clone() };
        let payer = Payer::ApiKey { key_id: owner.key_id.clone(), entity_id: owner.entity_id.clone() };
        let mut job = Job { payer, entries: vec![entry], source, now_ms };
        // A request the engine cannot answer as sent (an origin-sourced sale without seller_zip) ends here, as
        // the other 400s do: counted in the key's window, its Idempotency-Key released.
        if let Err(e) = self.ledger.prepare_job(&mut job).await.map_err(ApiError::from) {
            self.count_burst(&owner.key_id, now_ms).await?;
            if let Some(k) = &idem {
                self.release_idempotency_key(&owner.entity_id, k).await;
            }
            return Err(e);
        }
        let result = self.record(job).await.map(|r| r.response);
        if let (Err(_), Some(k)) = (&result, &idem) {
            self.release_idempotency_key(&owner.entity_id, k).await;
        }
        result
    }

    /// What a keyed call does before the ledger batch: validate, and claim (or replay) the Idempotency-Key.
    async fn before_batch(
        &self,
        key: &KeyAuth,
        entity_id: &str,
        idempotency_key: Option<&str>,
        body: &JsonBody<CalculateRequest>,
    ) -> Result<Next, ApiError> {
        let value = body.value()?;
        let idem = parse_key(idempotency_key)?;
        if let Some(k) = &idem {
            if let Begin::Replay { body, .. } = self.begin_idempotent(entity_id, k, &body_hash("calculate", value)).await? {
                // A replay does not reach the ledger batch, which checks the key again: check it here.
                self.authenticate(key).await?;
                return Ok(Next::Replay(body));
            }
        }
        match parse_live(value, "") {
            Ok(live) => Ok(Next::Record(Box::new(live), idem)),
            Err(errors) => {
                if let Some(k) = &idem {
                    self.release_idempotency_key(entity_id, k).await;
                }
                Err(ApiError::invalid(errors))
            }
        }
    }

    async fn demo_calculation(&self, body: &JsonBody<CalculateRequest>) -> Result<CalculateResponse, ApiError> {
        self.check_demo(&client_ip()).await?;
        let value = body.value()?;
        let request = parse_request(value).map_err(|e| ApiError::fields(&e))?;
        let now = self.clock.now();
        let input = Input { request: &request, nexus: request.nexus_override.as_ref(), vendor_ytd: None, as_of: now.date_naive() };
        let det = determine(&self.registry, &input).map_err(|e| ApiError::engine(e, ""))?;
        let free_tier = self.plans.free_allowance();
        let upgrade = [
            ("message", "Demo answers omit the jurisdiction breakdown, advisories and audit trail, and are not recorded. Sign up for a free key for full, recorded answers."),
            ("signup", "/api/v1/auth/signup"),
            ("free_tier", free_tier.as_str()),
        ];
        let text = render::demo(&det, &[("transaction_id", &new_id("demo")), ("timestamp", &iso(now.timestamp_millis()))], Some(&upgrade));
        Ok(CalculateResponse::Ok(JsonText::new(text)))
    }
}
