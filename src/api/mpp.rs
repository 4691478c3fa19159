//! Calculate calls paid per call with MPP (`Authorization: Payment`, the Stripe charge method): the challenge on a
//! 402, and a credential taken through to its ledger row.
//!
//! Order, as for x402 (`api::paid`): the body (400, nothing charged); the credential's own checks (402 with the
//! problem type: malformed, a challenge not issued here or altered, expired, another amount); the account it is
//! recorded to (one per challenge: a Stripe token names no payer that could be attributed safely); the
//! Idempotency-Key (a replay answers the stored body and `Payment-Receipt`, never charging again); the claim of
//! the challenge and its token (single use on any instance: a reused credential is 402 `invalid-challenge`); the
//! PaymentIntent (declined: 402 `verification-failed`; Stripe unreachable: 503); the ledger row. Nothing is
//! recorded for a refusal, and the claim is given back. Credentials and receipts are never logged.

use std::sync::Arc;

use poem::http::StatusCode;

use super::calculate::parse_paid;
use super::context::set_header;
use super::error::{ApiError, ErrorCode, MppOffer};
use super::idempotency::parse_key;
use super::paid::Protocol;
use super::payload::JsonBody;
use super::schema::calculate::CalculateRequest;
use super::AppState;
use crate::ledger::{Entry, Job, Payer, Source};
use crate::payments::mpp::{self, Credential, Mpp, Problem};
use crate::store::entity::{entity, mpp_payment};
use crate::store::mpp::Taken;
use crate::store::wallets::PENDING;

/// The response header of a paid answer's receipt.
pub const RECEIPT_HEADER: &str = "Payment-Receipt";

/// The request's `Authorization: Payment …` credential, if it sends one.
pub fn credential_header(req: &poem::Request) -> Option<String> {
    let value = req.headers().get("authorization")?;
    let text = String::from_utf8_lossy(value.as_bytes()).into_owned();
    mpp::scheme_token(&text).is_some().then_some(text)
}

impl AppState {
    /// The MPP part of a 402's `pay_per_call`, with its `WWW-Authenticate: Payment` challenge set while MPP is on.
    pub fn offer_mpp(&self) -> MppOffer {
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

    fn mpp_refused(&self, req: &poem::Request, p: Problem) -> ApiError {
        let mut e = self.payment_required(req, format!("payment refused ({}): {}", p.kind, p.message), p.kind);
        e.problem_type = Some(p.type_uri());
        e
    }

    /// A calculate call paid with MPP: the full answer's text, with its `Payment-Receipt` set.
    pub async fn mpp_calculation(
        self: &Arc<Self>,
        req: &poem::Request,
        authorization: &str,
        idempotency_key: Option<&str>,
        body: &JsonBody<CalculateRequest>,
    ) -> Result<String, ApiError> {
        let value = body.value()?;
        let idem = parse_key(idempotency_key)?;
        let live = parse_paid(value).map_err(ApiError::invalid)?;
        let Some(m) = &self.mpp else {
            return Err(self.payment_required(
                req,
                "MPP payments are not configured on this server; sign up for a free API key",
                "mpp_not_configured",
            ));
        };
        let now_ms = self.clock.now_ms();
        let credential = m.check(authorization, now_ms).map_err(|p| self.mpp_refused(req, p))?;
        let entity_id = self.store.payer_account(challenge_account(&credential.challenge_id, now_ms)).await?;
        let take = self.take_mpp_payment(req, m, &credential, live, &entity_id, idem.clone(), now_ms);
        self.paid_once(Protocol::Mpp, &entity_id, idem, value, take).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn take_mpp_payment(
        &self,
        req: &poem::Request,
        m: &Mpp,
        credential: &Credential,
        live: super::calculate::LiveRequest,
        entity_id: &str,
        idem: Option<String>,
        now_ms: i64,
    ) -> Result<String, ApiError> {
        let super::calculate::LiveRequest { request, raw, prefix } = live;
        let entry = Entry::new(request, raw, prefix, None, None);
        let payer = Payer::PerCall { entity_id: entity_id.to_string(), mode: "mpp" };
        let mut job = Job { payer, entries: vec![entry], source: Source::Calculate { idempotency_key: idem.clone() }, now_ms };
        self.ledger.prepare_job(&mut job).await.map_err(ApiError::from)?;
        let id = credential.challenge_id.clone();
        let claim = mpp_payment::Model {
            id: id.clone(),
            spt_hash: crate::security::sha256_hex(credential.spt.as_bytes()),
            entity_id: entity_id.to_string(),
            state: PENDING.into(),
            idempotency_key: idem,
            receipt: None,
            created_at: now_ms,
        };
        if !self.store.claim_mpp_payment(claim).await? {
            if let Some(receipt) = self.store.take_unrecorded(Taken::Mpp(&id)).await? {
                return self.record_paid(job, Taken::Mpp(&id), RECEIPT_HEADER, &receipt).await;
            }
            return Err(self.mpp_refused(
                req,
                Problem { kind: "invalid-challenge", message: "this challenge, or its payment token, has already paid for a call".into() },
            ));
        }
        let refusal = match m.charge(credential, now_ms).await {
            Ok(Ok(charged)) => {
                tracing::info!(payment_intent = %charged.reference, entity = %entity_id, "MPP payment taken");
                self.store.settle_mpp_payment(&id, &charged.receipt).await?;
                return self.record_paid(job, Taken::Mpp(&id), RECEIPT_HEADER, &charged.receipt).await;
            }
            Ok(Err(p)) => self.mpp_refused(req, p),
            Err(e) => processor_unavailable(e),
        };
        if let Err(err) = self.store.release_mpp_payment(&id).await {
            tracing::warn!(error = %err, "could not release an MPP payment claim");
        }
        Err(refusal)
    }
}

fn processor_unavailable(e: mpp::Unavailable) -> ApiError {
    tracing::warn!(error = %e.0, "Stripe unavailable for an MPP payment");
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        ErrorCode::DbUnavailable,
        "the payment processor did not answer; nothing was recorded, and the same credential is charged at most once; retry shortly",
    )
}

/// The account an MPP payment is recorded to: one per challenge, its id derived from the challenge id, its email
/// under the reserved `.invalid` domain (RFC 2606), no password. A Shared Payment Token says nothing the service
/// could verify about who paid, so payments are never pooled into one account's 1099 and nexus figures.
fn challenge_account(challenge_id: &str, now_ms: i64) -> entity::Model {
    let digest = crate::security::sha256_hex(challenge_id.as_bytes());
    let short = &digest[..32];
    let description = "a caller paying per call with MPP (one account per paid challenge)".to_string();
    entity::Model::payer_account(format!("ent_m{short}"), format!("{short}@mpp.invalid"), "MPP payer", description, now_ms)
}
