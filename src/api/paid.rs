//! Calculate calls paid per call: the 402 that offers the ways to pay (x402's requirements, MPP's
//! `WWW-Authenticate: Payment` challenge, the signup block), and a paid call read from its headers and handed to
//! `payments::per_call`, whose answer and receipt are written back.
//!
//! Order: the body (400, nothing charged); the payment's own checks against the offer (402: for x402 the
//! requirements; for MPP the problem type, a challenge not issued here or altered, expired, another amount); the
//! account it is recorded to; the Idempotency-Key (a replay answers the stored body and receipt, never paying
//! again); then `payments::per_call::pay_and_record`. Credentials and receipts are never logged.

use std::sync::Arc;

use poem::http::StatusCode;
use serde_json::Value;

use super::context::{public_url, set_header};
use super::error::{ApiError, ErrorCode, MppOffer, PayPerCallOffer};
use super::idempotency::{body_hash, parse_key, Begin};
use super::limits::signup_block;
use super::payload::JsonBody;
use super::schema::calculate::{read_request, CalculateRequest};
use super::AppState;
use crate::ledger::Entry;
use crate::payments::mpp;
use crate::payments::per_call::{pay_and_record, Failure, MppCall, PerCall, Refusal, X402Call};
use crate::payments::x402;

/// How a keyless call pays, as its headers say.
pub enum Way {
    /// `X-PAYMENT` (x402 v1) or `PAYMENT-SIGNATURE` (v2): the version and the header's value.
    X402 { version: u8, value: String },
    /// `Authorization: Payment …` (MPP).
    Mpp(String),
}

impl Way {
    /// The payment the request carries, if any: MPP's credential first, then x402 v2's header, then v1's.
    pub fn of(req: &poem::Request) -> Option<Way> {
        let text = |name: &str| req.headers().get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        if let Some(authorization) = text("authorization").filter(|a| mpp::scheme_token(a).is_some()) {
            return Some(Way::Mpp(authorization));
        }
        text("payment-signature")
            .map(|value| Way::X402 { version: 2, value })
            .or_else(|| text("x-payment").map(|value| Way::X402 { version: 1, value }))
    }

    /// The answer's `mode`.
    pub fn mode(&self) -> &'static str {
        match self {
            Way::X402 { .. } => "x402",
            Way::Mpp(_) => "mpp",
        }
    }
}

/// The operation paid for per call: the resource its payment requirements name (under the public URL).
const PAID_PATH: &str = "/api/v1/calculate";

impl AppState {
    /// A 402 with the ways to pay: x402's requirements in the body (v1) and in PAYMENT-REQUIRED (v2) when x402 is
    /// on, and the signup block; with x402 off, the 402 says so.
    pub fn payment_required(&self, req: &poem::Request, message: impl Into<String>, reason: &str) -> ApiError {
        let mut e = ApiError::new(StatusCode::PAYMENT_REQUIRED, ErrorCode::PaymentRequired, message);
        e.payment_reason = Some(reason.to_string());
        self.offer_x402(&mut e, req, reason);
        e
    }

    /// Adds the ways to pay per call (x402's requirements, MPP's `WWW-Authenticate: Payment` challenge) and the
    /// signup block to a 402, which no cache keeps (`Cache-Control: no-store`, as MPP requires).
    pub fn offer_x402(&self, e: &mut ApiError, req: &poem::Request, reason: &str) {
        if e.status != StatusCode::PAYMENT_REQUIRED {
            return;
        }
        set_header("Cache-Control", "no-store");
        e.signup = Some(signup_block(&self.plans));
        let mut offer = PayPerCallOffer::x402(&self.plans.pay_per_call);
        match &self.x402 {
            Some(x) => {
                let url = public_url(self.public_url.as_deref(), req, PAID_PATH);
                set_header("PAYMENT-REQUIRED", x.payment_required_header(&url, reason));
                e.accepts = Some(vec![x.requirements(&url)]);
                offer.network = Some(x.network.name.to_string());
                offer.payee = Some(x.payee.to_string());
                offer.note =
                    "per-call USDC payment under the x402 protocol (v1 X-PAYMENT or v2 PAYMENT-SIGNATURE); no account needed".into();
            }
            None => offer.note = "x402 payments are not configured on this server; sign up for a free API key instead".into(),
        }
        offer.mpp = Some(self.offer_mpp());
        e.pay_per_call = Some(offer);
    }

    /// The MPP part of a 402's `pay_per_call`, with its `WWW-Authenticate: Payment` challenge set while MPP is on.
    fn offer_mpp(&self) -> MppOffer {
        match &self.mpp {
            Some(m) => {
                set_header("WWW-Authenticate", m.challenge(self.clock.now_ms()));
                MppOffer {
                    method: Some(mpp::METHOD.into()),
                    intent: Some(mpp::INTENT.into()),
                    amount: Some(m.amount.clone()),
                    currency: Some(mpp::CURRENCY.into()),
                    header: Some("Authorization".into()),
                    note: "machine payment (MPP) through Stripe: answer the WWW-Authenticate Payment challenge with \
                           `Authorization: Payment <credential>` carrying a Shared Payment Token; no account needed"
                        .into(),
                }
            }
            None => MppOffer {
                note: "MPP payments are not configured on this server; sign up for a free API key instead".into(),
                ..MppOffer::default()
            },
        }
    }

    /// The 402 of a refused payment, with its reason (and for MPP the problem type).
    fn refused(&self, req: &poem::Request, r: Refusal) -> ApiError {
        let mut e = self.payment_required(req, format!("payment refused ({}): {}", r.reason, r.message), &r.reason);
        e.problem_type = r.problem_type;
        e
    }

    /// A calculate call paid per call: the full answer's text, with its receipt header set.
    pub async fn paid_calculation(
        self: &Arc<Self>,
        req: &poem::Request,
        way: Way,
        idempotency_key: Option<&str>,
        body: &JsonBody<CalculateRequest>,
    ) -> Result<String, ApiError> {
        let value = body.value()?;
        let idem = parse_key(idempotency_key)?;
        let entry = Entry::paid(read_request(value), value).map_err(ApiError::invalid)?;
        let now_ms = self.clock.now_ms();
        match way {
            Way::X402 { version, value: header } => {
                let Some(x) = &self.x402 else {
                    let message = "x402 payments are not configured on this server; sign up for a free API key";
                    return Err(self.payment_required(req, message, "x402_not_configured"));
                };
                let payment = x402::decode(&header, version).map_err(|r| self.refused(req, r.into()))?;
                x.check(&payment, now_ms.div_euclid(1000)).map_err(|r| self.refused(req, r.into()))?;
                let call = X402Call { x402: x, payment, resource: public_url(self.public_url.as_deref(), req, PAID_PATH) };
                self.pay_once(req, &call, idem, value, entry, now_ms).await
            }
            Way::Mpp(authorization) => {
                let Some(m) = &self.mpp else {
                    let message = "MPP payments are not configured on this server; sign up for a free API key";
                    return Err(self.payment_required(req, message, "mpp_not_configured"));
                };
                let credential = m.check(&authorization, now_ms).map_err(|p| self.refused(req, p.into()))?;
                self.pay_once(req, &MppCall { mpp: m, credential }, idem, value, entry, now_ms).await
            }
        }
    }

    /// A paid call under its Idempotency-Key: a replay answers the stored body with the stored receipt, paying
    /// nothing; otherwise the call is paid for and recorded, and a failure releases the key.
    async fn pay_once(
        &self,
        req: &poem::Request,
        call: &impl PerCall,
        idem: Option<String>,
        value: &Value,
        entry: Entry,
        now_ms: i64,
    ) -> Result<String, ApiError> {
        let entity_id = call.account(&self.store, now_ms).await?;
        if let Some(k) = &idem {
            if let Begin::Replay { body, .. } = self.begin_idempotent(&entity_id, k, &body_hash("calculate", value)).await? {
                if let Some(receipt) = self.store.paid_call_receipt(call.protocol(), &entity_id, k).await? {
                    set_header(call.receipt_header(), receipt);
                }
                set_header("Cache-Control", "private");
                return Ok(body);
            }
        }
        match pay_and_record(call, &self.store, &self.ledger, entry, &entity_id, idem.clone(), now_ms).await {
            Ok(paid) => {
                set_header(paid.header, paid.receipt);
                set_header("Cache-Control", "private");
                Ok(paid.body)
            }
            Err(failure) => {
                if let Some(k) = &idem {
                    self.release_idempotency_key(&entity_id, k).await;
                }
                Err(self.failure(req, failure))
            }
        }
    }

    fn failure(&self, req: &poem::Request, failure: Failure) -> ApiError {
        match failure {
            Failure::Refused(r) => self.refused(req, r),
            Failure::Unavailable(u) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::DbUnavailable, u.0),
            Failure::Ledger(refusal) => refusal.into(),
            Failure::Store(e) => e.into(),
            Failure::Unrecorded(refusal) => {
                let unavailable = ApiError::from(refusal).status == StatusCode::SERVICE_UNAVAILABLE;
                let (status, code) = if unavailable {
                    (StatusCode::SERVICE_UNAVAILABLE, ErrorCode::DbUnavailable)
                } else {
                    (StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal)
                };
                ApiError::new(
                    status,
                    code,
                    "the payment was taken but the call could not be recorded; send the same request with the same payment \
                     again: it is recorded and answered without a second charge",
                )
            }
        }
    }
}
