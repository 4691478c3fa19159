//! Calculate calls paid per call with x402: the 402 challenge (with MPP's, `api::mpp`), and a payment taken through
//! to its ledger row.
//!
//! Order: the body (400, nothing charged), then the payment's own checks against the requirements (402), the
//! account it is recorded to (the one that linked the paying wallet, else the wallet's own), the Idempotency-Key
//! (a replay answers the stored body and receipt, never settling again), the authorization's single-use claim
//! (a replayed nonce is 402, on any instance), the facilitator's /verify, the determination, /settle, and the
//! ledger row. A refusal at any step records nothing and gives the claims back; a facilitator that does not
//! answer is 503. A payment settled whose row then cannot be written is marked `unrecorded` with its receipt
//! (`store::mpp`): the same payment sent again records the call and answers it, without settling again.

use std::sync::Arc;

use poem::http::StatusCode;

use super::calculate::parse_paid;
use super::context::set_header;
use super::error::{ApiError, ErrorCode, PayPerCallOffer};
use super::idempotency::{body_hash, parse_key, Begin};
use super::limits::signup_block;
use super::payload::JsonBody;
use super::schema::calculate::CalculateRequest;
use super::AppState;
use crate::ledger::{Entry, Job, Payer, Source};
use crate::payments::x402::{self, Payment, Refused};
use crate::store::entity::{entity, x402_payment};
use crate::store::mpp::Taken;
use crate::store::wallets::PENDING;

/// A payment header as sent: `X-PAYMENT` (x402 v1) or `PAYMENT-SIGNATURE` (v2).
pub struct PaymentHeader {
    pub version: u8,
    pub value: String,
}

/// The payment header of the request, if any (v2's when both are sent).
pub fn payment_header(req: &poem::Request) -> Option<PaymentHeader> {
    let text = |name: &str| req.headers().get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    text("payment-signature")
        .map(|value| PaymentHeader { version: 2, value })
        .or_else(|| text("x-payment").map(|value| PaymentHeader { version: 1, value }))
}

/// The URL paid for, as the requirements name it: under the configured public base URL (LEVY_PUBLIC_URL), else
/// under the request's Host header over https.
fn resource(public_url: Option<&str>, req: &poem::Request) -> String {
    if let Some(base) = public_url {
        return format!("{base}/api/v1/calculate");
    }
    let host = req.headers().get("host").and_then(|h| h.to_str().ok()).filter(|h| !h.is_empty() && h.len() <= 255);
    match host {
        Some(h) => format!("https://{h}/api/v1/calculate"),
        None => "/api/v1/calculate".into(),
    }
}

/// The receipt header for a payment of `version`.
/// The protocol that paid for a call: where its receipts are kept, and the header that carries one.
#[derive(Clone, Copy)]
pub(super) enum Protocol {
    X402 { version: u8 },
    Mpp,
}

impl Protocol {
    fn receipt_header(self) -> &'static str {
        match self {
            Protocol::X402 { version } => receipt_header_name(version),
            Protocol::Mpp => super::mpp::RECEIPT_HEADER,
        }
    }
}

fn receipt_header_name(version: u8) -> &'static str {
    if version == 2 {
        "PAYMENT-RESPONSE"
    } else {
        "X-PAYMENT-RESPONSE"
    }
}

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
                let url = resource(self.public_url.as_deref(), req);
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

    fn refused(&self, req: &poem::Request, r: Refused) -> ApiError {
        self.payment_required(req, format!("payment refused ({}): {}", r.reason, r.message), &r.reason)
    }

    /// A calculate call paid with x402: the full answer's text, with its receipt header set.
    pub async fn paid_calculation(
        self: &Arc<Self>,
        req: &poem::Request,
        header: PaymentHeader,
        idempotency_key: Option<&str>,
        body: &JsonBody<CalculateRequest>,
    ) -> Result<String, ApiError> {
        let value = body.value()?;
        let idem = parse_key(idempotency_key)?;
        let live = parse_paid(value).map_err(ApiError::invalid)?;
        let Some(x) = &self.x402 else {
            return Err(self.payment_required(
                req,
                "x402 payments are not configured on this server; sign up for a free API key",
                "x402_not_configured",
            ));
        };
        let now_ms = self.clock.now_ms();
        let payment = x402::decode(&header.value, header.version).map_err(|r| self.refused(req, r))?;
        x.check(&payment, now_ms.div_euclid(1000)).map_err(|r| self.refused(req, r))?;
        let entity_id = self.payer_entity(&payment, now_ms).await?;
        let take = self.take_payment(req, x, &payment, live, &entity_id, idem.clone(), now_ms);
        self.paid_once(Protocol::X402 { version: header.version }, &entity_id, idem, value, take).await
    }

    /// A paid call under its Idempotency-Key: a replay answers the stored body with the stored receipt, paying
    /// nothing; otherwise `take` pays for and records the call (it starts only here), and a failure releases the key.
    pub(super) async fn paid_once(
        &self,
        protocol: Protocol,
        entity_id: &str,
        idem: Option<String>,
        value: &serde_json::Value,
        take: impl std::future::Future<Output = Result<String, ApiError>>,
    ) -> Result<String, ApiError> {
        if let Some(k) = &idem {
            if let Begin::Replay { body, .. } = self.begin_idempotent(entity_id, k, &body_hash("calculate", value)).await? {
                let receipt = match protocol {
                    Protocol::X402 { .. } => self.store.x402_receipt(entity_id, k).await?,
                    Protocol::Mpp => self.store.mpp_receipt(entity_id, k).await?,
                };
                if let Some(receipt) = receipt {
                    set_header(protocol.receipt_header(), receipt);
                }
                set_header("Cache-Control", "private");
                return Ok(body);
            }
        }
        let result = take.await;
        if let (Err(_), Some(k)) = (&result, &idem) {
            self.release_idempotency_key(entity_id, k).await;
        }
        result
    }

    /// The account a payment is recorded to: the one that linked the paying wallet, else the wallet's own
    /// (created on its first payment).
    async fn payer_entity(&self, payment: &Payment, now_ms: i64) -> Result<String, ApiError> {
        let payer = payment.payer();
        if let Some(owner) = self.store.wallet_owner(&payer).await? {
            return Ok(owner);
        }
        Ok(self.store.payer_account(wallet_account(&payer, now_ms)).await?)
    }

    #[allow(clippy::too_many_arguments)]
    async fn take_payment(
        &self,
        req: &poem::Request,
        x: &x402::X402,
        payment: &Payment,
        live: super::calculate::LiveRequest,
        entity_id: &str,
        idem: Option<String>,
        now_ms: i64,
    ) -> Result<String, ApiError> {
        let super::calculate::LiveRequest { request, raw, prefix } = live;
        let entry = Entry::new(request, raw, prefix, None, None);
        let payer = Payer::PerCall { entity_id: entity_id.to_string(), mode: "x402" };
        let mut job = Job { payer, entries: vec![entry], source: Source::Calculate { idempotency_key: idem.clone() }, now_ms };
        self.ledger.prepare_job(&mut job).await.map_err(ApiError::from)?;
        let id = x.payment_id(payment);
        let claim = x402_payment::Model {
            id: id.clone(),
            entity_id: entity_id.to_string(),
            payer: payment.payer(),
            state: PENDING.into(),
            idempotency_key: idem,
            receipt: None,
            created_at: now_ms,
        };
        let header = receipt_header_name(payment.version);
        if !self.store.claim_x402_payment(claim).await? {
            // Paid before: answered, being answered, or settled without its call recorded (then recorded now).
            if let Some(receipt) = self.store.take_unrecorded(Taken::X402(&id)).await? {
                return self.record_paid(job, Taken::X402(&id), header, &receipt).await;
            }
            return Err(self.refused(
                req,
                Refused {
                    reason: "invalid_transaction_state".into(),
                    message: "this authorization (its nonce) has already paid for a call".into(),
                },
            ));
        }
        let resource = resource(self.public_url.as_deref(), req);
        let outcome = async {
            match x.verify(payment, &resource).await {
                Ok(Ok(())) => {}
                Ok(Err(r)) => return Err(self.refused(req, r)),
                Err(e) => return Err(facilitator_unavailable(e)),
            }
            match x.settle(payment, &resource).await {
                Ok(Ok(settlement)) => Ok(x402::receipt_header(&settlement)),
                Ok(Err(r)) => Err(self.refused(req, r)),
                Err(e) => Err(facilitator_unavailable(e)),
            }
        }
        .await;
        let receipt = match outcome {
            Ok(r) => r,
            Err(e) => {
                if let Err(err) = self.store.release_x402_payment(&id).await {
                    tracing::warn!(error = %err, "could not release an x402 payment claim");
                }
                return Err(e);
            }
        };
        self.store.settle_x402_payment(&id, &receipt).await?;
        self.record_paid(job, Taken::X402(&id), header, &receipt).await
    }

    /// Records the call of a payment taken, and answers it with its receipt (only on success: a receipt is never
    /// sent with an error). A call that cannot be recorded leaves the payment `unrecorded`, receipt kept, so that
    /// the same payment sent again records and answers it without paying twice; the error says so.
    pub(super) async fn record_paid(&self, job: Job, taken: Taken<'_>, header: &'static str, receipt: &str) -> Result<String, ApiError> {
        let entity = job.payer.entity_id().to_string();
        match self.record(job).await {
            Ok(recorded) => {
                set_header(header, receipt);
                set_header("Cache-Control", "private");
                Ok(recorded.response)
            }
            Err(e) => {
                tracing::error!(payment = ?taken, entity = %entity, error = %e.message, "payment taken but its call not recorded; marked unrecorded");
                if let Err(err) = self.store.mark_unrecorded(taken).await {
                    tracing::error!(payment = ?taken, error = %err, "could not mark a payment unrecorded");
                }
                let status = if e.status == StatusCode::SERVICE_UNAVAILABLE { e.status } else { StatusCode::INTERNAL_SERVER_ERROR };
                let code = if status == StatusCode::SERVICE_UNAVAILABLE { ErrorCode::DbUnavailable } else { ErrorCode::Internal };
                Err(ApiError::new(
                    status,
                    code,
                    "the payment was taken but the call could not be recorded; send the same request with the same payment \
                     again: it is recorded and answered without a second charge",
                ))
            }
        }
    }
}

fn facilitator_unavailable(e: x402::Unavailable) -> ApiError {
    tracing::warn!(error = %e.0, "x402 facilitator unavailable");
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::DbUnavailable,
        "the x402 facilitator did not answer; nothing was charged or recorded; retry shortly",
    )
}

/// The account standing for a payer wallet that no account has linked: its id is derived from the address, its
/// email is under the reserved `.invalid` domain (RFC 2606) and it has no password, so no one logs in to it.
fn wallet_account(payer: &str, now_ms: i64) -> entity::Model {
    let digest = crate::security::sha256_hex(payer.as_bytes());
    let description = format!("the wallet {payer}, paying per call with x402");
    entity::Model::payer_account(format!("ent_w{}", &digest[..32]), format!("{payer}@wallet.invalid"), "x402 payer", description, now_ms)
}
