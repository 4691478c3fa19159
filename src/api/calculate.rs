//! POST /api/v1/calculate, and the recording of a keyed calculation in the ledger (shared with ingest).

use std::sync::Arc;

use super::schema::param::{IdempotencyKey, Param};
use crate::clock::iso;
use poem_openapi::param::Header;
use poem_openapi::{ApiResponse, OpenApi};

use super::auth::{KeyAuth, KeyOrDemo};
use super::context::client_ip;
use super::error::ApiError;
use super::idempotency::{parse_key, replayed};
use super::payload::{JsonBody, JsonText};
use super::schema::calculate::{read_request, CalculateRequest, Calculation};
use super::{ApiTags, AppState};
use crate::engine::{determine, render, Input};
use crate::error_responses;
use crate::ledger::keyed::Keyed;
use crate::ledger::Payer;
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
    ),
    header(
        name = "X-PAYMENT-RESPONSE",
        ty = "Option<String>",
        description = "x402 v1, on a call paid with X-PAYMENT: base64 of the settlement JSON {success, transaction, network, payer}; replayed with a stored answer."
    ),
    header(
        name = "PAYMENT-RESPONSE",
        ty = "Option<String>",
        description = "x402 v2, on a call paid with PAYMENT-SIGNATURE: the same settlement JSON, base64."
    ),
    header(
        name = "Payment-Receipt",
        ty = "Option<String>",
        description = "MPP, on a call paid with `Authorization: Payment`: base64url (no padding) of the receipt JSON {method stripe, reference (the PaymentIntent id), status success, timestamp}; replayed with a stored answer."
    ),
    header(
        name = "Cache-Control",
        ty = "Option<String>",
        description = "`private` on a call paid per call (x402, MPP): the answer is its payer's."
    )
)]
pub enum CalculateResponse {
    /// The determination: the full answer with an API key (`mode` live), an x402 payment (`mode` x402) or an MPP
    /// payment (`mode` mpp), recorded in the ledger; the demo answer without any.
    #[oai(status = 200)]
    Ok(JsonText<Calculation>),
}

error_responses!(CalculateErrors {
    400 => BadRequest: "INVALID_INPUT (errors names each field), INVALID_JSON_BODY, or IDEMPOTENCY_KEY_INVALID.",
    401 => Unauthorized: "UNAUTHORIZED: the API key is malformed, unknown or revoked.",
    402 [
        header(
            name = "PAYMENT-REQUIRED",
            ty = "Option<String>",
            description = "x402 v2: base64 of the PaymentRequired JSON {x402Version 2, error, resource, accepts}; sent while x402 is on."
        ),
        header(
            name = "WWW-Authenticate",
            ty = "Option<String>",
            description = "MPP: `Payment id=\"…\", realm=\"…\", method=\"stripe\", intent=\"charge\", request=\"…\", expires=\"…\", opaque=\"…\", description=\"…\"`; request is base64url of the JSON {amount (cents), currency usd, description, methodDetails {networkId, paymentMethodTypes}}; sent while MPP is on."
        ),
        header(name = "Cache-Control", ty = "Option<String>", description = "`no-store`: a payment challenge is never cached.")
    ] => PaymentRequired: "PAYMENT_REQUIRED: the keyless demo's 50 calls per UTC day are used up, or an x402 payment or MPP credential\n\
        was refused (the message gives the reason; for MPP, `type` is the problem type) or that protocol is not\n\
        configured. The body carries `signup` and `pay_per_call` (with its `mpp` part), and while x402 is on, x402 v1's\n\
        `x402Version` and `accepts` (the v2 offer is the PAYMENT-REQUIRED header; MPP's is WWW-Authenticate).",
    409 => Conflict: "IDEMPOTENCY_KEY_CONFLICT (same key, different body) or RESOURCE_CONFLICT (same key still running after 5 s; Retry-After sent).",
    429 => TooManyRequests: "RATE_LIMITED: the key's 120 calls per 60 s, the demo's 30 per minute, or 30 refused payments (x402, MPP) per minute from one address (Retry-After sent), or the free plan's monthly allowance (error says Monthly limit reached; no Retry-After).",
    503 => DbUnavailable: "DB_UNAVAILABLE: the database, the x402 facilitator or the MPP payment processor of a paid call does not\n\
        answer (nothing recorded; a credential is charged at most once); retry.",
});

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Calculate")]
impl CalculateApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    pub(crate) const CALCULATE_EXAMPLE: &'static str = r#"{
        "body": {"amount": 100, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "cust-42"},
        "headers": {"Idempotency-Key": "order-42"},
        "status": 200,
        "expect": {"/mode": "live", "/jurisdiction": "Austin, TX", "/combined_rate": 0.0825, "/total_tax": 6.6}
    }"#;

    /// Calculate sales or use tax for one transaction
    ///
    /// With an API key: the full determination (sourcing, rate layers, the rule that fired and its citation,
    /// 1099 tracking, nexus alerts), written to the ledger with the counterparty's 1099 total and the state's
    /// revenue in one database transaction. A seller call for a state without stored nexus answers total_tax 0
    /// with `tax_if_nexus`. `nexus_override` and `vendor_ytd_override` are rejected here.
    ///
    /// Without a key, paid per call with x402 (`X-PAYMENT`, or v2's `PAYMENT-SIGNATURE`): 0.005 USD in USDC,
    /// checked against the 402's requirements, verified and settled by the configured facilitator, answered in full
    /// with `mode` x402 and the receipt header, and recorded to the account that linked the paying wallet (else to
    /// the wallet's own account). A refused payment is 402 with the reason; a facilitator that does not answer is
    /// 503; neither records nor charges anything. An authorization pays for one call.
    ///
    /// Or paid with MPP (`Authorization: Payment <credential>`, Stripe's charge method with a Shared Payment Token)
    /// for the 402's `WWW-Authenticate: Payment` challenge: answered in full with `mode` mpp and `Payment-Receipt`,
    /// recorded to an account of its own. A refused credential is 402 whose `type` is the MPP problem type; Stripe
    /// not answering is 503. A challenge pays for one call. Paid calls may send `nexus_override`; their answers
    /// carry `upgrade`.
    ///
    /// Without a key or payment: the demo answer (totals, no breakdown, nothing written), limited per client
    /// address to 30 calls per minute and 50 per UTC day; every call counts, invalid ones included. Past the day's
    /// 50, the 402 offers x402.
    #[oai(
        path = "/calculate",
        method = "post",
        operation_id = "calculate",
        code_sample(lang = "json", label = "example", source = "Self::CALCULATE_EXAMPLE")
    )]
    async fn calculate(
        &self,
        auth: KeyOrDemo,
        /// Makes a keyed or paid retry safe: same key and body within 24 hours replays the stored response (and a
        /// paid call's receipt), without paying again.
        #[oai(name = "Idempotency-Key")]
        _idempotency_key: Header<Option<Param<IdempotencyKey>>>,
        /// x402 v1: base64 of the PaymentPayload JSON {x402Version 1, scheme exact, network, payload {signature,
        /// authorization {from, to, value, validAfter, validBefore, nonce}}} for one of the 402's `accepts`. Ignored with an API key.
        #[oai(name = "X-PAYMENT", validator(max_length = 8192))]
        _x_payment: Header<Option<String>>,
        /// x402 v2: base64 of the PaymentPayload JSON {x402Version 2, accepted, payload} for the PAYMENT-REQUIRED offer. Ignored with an API key.
        #[oai(name = "PAYMENT-SIGNATURE", validator(max_length = 8192))]
        _payment_signature: Header<Option<String>>,
        req: &poem::Request,
        body: JsonBody<CalculateRequest>,
    ) -> Result<CalculateResponse, CalculateErrors> {
        let s = &self.0;
        let (mode, result) = s.calculation(auth, req, &body).await;
        s.metrics.calculation(mode, &outcome(&result));
        if mode == "x402" || mode == "mpp" {
            let (paid, reason) = match &result {
                Ok(_) => ("paid", None),
                Err(e) => match e.status.as_u16() {
                    402 => ("refused", Some(e.payment_reason.as_deref().unwrap_or("other"))),
                    503 => ("unavailable", None),
                    429 => ("rate_limited", None),
                    400..=499 => ("invalid", None),
                    _ => ("error", None),
                },
            };
            s.metrics.payment(mode, paid, reason);
        }
        result.map_err(Into::into)
    }
}

/// The `outcome` label of a calculate call: `ok`, or its error code in lower case.
fn outcome(result: &Result<CalculateResponse, ApiError>) -> String {
    match result {
        Ok(_) => "ok".into(),
        Err(e) => poem_openapi::types::ToJSON::to_json(&e.code)
            .and_then(|v| v.as_str().map(str::to_ascii_lowercase))
            .unwrap_or_else(|| "internal".into()),
    }
}

impl AppState {
    /// A calculate call by whichever way it is paid: its mode (`demo`, `live`, `x402`, `mpp`) and its answer.
    async fn calculation(
        self: &Arc<Self>,
        auth: KeyOrDemo,
        req: &poem::Request,
        body: &JsonBody<CalculateRequest>,
    ) -> (&'static str, Result<CalculateResponse, ApiError>) {
        let s = self;
        let Some(key) = auth.key() else {
            let Some(way) = super::paid::Way::of(req) else { return ("demo", s.demo_calculation(req, body).await) };
            let mode = way.mode();
            if let Err(e) = s.check_payment_attempt(&client_ip()).await {
                return (mode, Err(e));
            }
            let idempotency_key = super::idempotency::header_text(req);
            let result = s.paid_calculation(req, way, idempotency_key.as_deref(), body).await;
            if result.is_ok() {
                s.payment_taken(&client_ip()).await;
            }
            return (mode, result.map(|text| CalculateResponse::Ok(JsonText::new(text))));
        };
        let result = match s.keyed_calculation(&key, super::idempotency::header_text(req).as_deref(), body).await {
            Ok(text) => Ok(CalculateResponse::Ok(JsonText::new(text))),
            // The key came from this instance's cache: a refusal that did not come from the ledger batch (which
            // checks the key) is a 401 if the key has been revoked meanwhile.
            Err(e) => Err(s.recheck_key(&key, e).await),
        };
        ("live", result)
    }
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
        let keyed = match (body.value(), parse_key(idempotency_key)) {
            (Ok(value), Ok(idem)) => {
                let payer = Payer::ApiKey { key_id: owner.key_id.clone(), entity_id: owner.entity_id.clone() };
                self.ledger.keyed_call(payer, idem, value, read_request(value), &self.clock, now_ms).await.map_err(ApiError::from)
            }
            (Err(e), _) | (_, Err(e)) => Err(e),
        };
        match keyed {
            Ok(Keyed::Answered(answer)) => self.answered(now_ms, answer).map(|r| r.response),
            Ok(Keyed::Replay(text)) => {
                self.count_burst(&owner.key_id, now_ms).await?;
                // A replay does not reach the ledger batch, which checks the key again: check it here.
                self.authenticate(key).await?;
                replayed();
                Ok(text)
            }
            Ok(Keyed::Refused(refusal)) => {
                self.count_burst(&owner.key_id, now_ms).await?;
                Err(refusal.into())
            }
            Err(e) => {
                self.count_burst(&owner.key_id, now_ms).await?;
                Err(e)
            }
        }
    }

    async fn demo_calculation(&self, req: &poem::Request, body: &JsonBody<CalculateRequest>) -> Result<CalculateResponse, ApiError> {
        self.check_demo(&client_ip()).await.map_err(|mut e| {
            self.offer_x402(&mut e, req, "demo_limit_reached");
            e
        })?;
        let value = body.value()?;
        let request = read_request(value).map_err(|e| ApiError::fields(&e))?;
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

#[cfg(test)]
#[path = "calculate_contract.rs"]
mod contract_tests;
