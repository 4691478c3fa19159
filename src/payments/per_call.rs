//! One call paid for as it is made, whichever protocol pays: x402 (a USDC authorization, verified and settled by a
//! facilitator) and MPP (a Shared Payment Token charged through Stripe) are two implementations of [`PerCall`], and
//! [`pay_and_record`] is the one path a paid call takes.
//!
//! Order, after the payment's own checks (the caller's: they need no database) and the account it is recorded to:
//! the ledger's preparation of the call (an answer the engine cannot give is refused before anything is taken); the
//! payment's single-use claim (`paid_calls`: a payment used before is refused, on any instance, unless it was taken
//! and its call never written, which is then recorded without taking it again); the payment taken; its receipt
//! kept; the ledger row. A refusal, or the other party not answering, gives the claim back and records nothing. A
//! payment taken whose row then cannot be written is marked `unrecorded` with its receipt, so that the same payment
//! sent again records and answers the call.

use std::future::Future;
use std::sync::Arc;

use super::mpp::{self, Credential, Mpp, Problem};
use super::x402::{self, Payment, Refused, X402};
use crate::ledger::{self, Entry, Job, Ledger, Payer, Source};
use crate::security::sha256_hex;
use crate::store::entity::{entity, paid_call};
use crate::store::paid_calls::PENDING;
use crate::store::{Store, StoreError};

/// Why a payment is refused: the protocol's reason (an x402 error code, an MPP problem kind), a sentence, and for MPP
/// the problem type's URI.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub reason: String,
    pub message: String,
    pub problem_type: Option<String>,
}

impl From<Refused> for Refusal {
    fn from(r: Refused) -> Self {
        Refusal { reason: r.reason, message: r.message, problem_type: None }
    }
}

impl From<Problem> for Refusal {
    fn from(p: Problem) -> Self {
        Refusal { reason: p.kind.to_string(), problem_type: Some(p.type_uri()), message: p.message }
    }
}

/// The facilitator or the processor did not answer: nothing was taken. The sentence is the caller's.
#[derive(Debug, Clone, PartialEq)]
pub struct Unavailable(pub &'static str);

/// A payment for one call, checked, of one protocol.
pub trait PerCall {
    /// `x402` or `mpp`: the answer's `mode`, and the claim's protocol.
    fn protocol(&self) -> &'static str;
    /// The response header that carries the receipt.
    fn receipt_header(&self) -> &'static str;
    /// The claim's id: the protocol and its own id of the payment.
    fn claim_id(&self) -> String;
    /// The paying wallet, for a protocol that names one (x402).
    fn payer(&self) -> Option<String>;
    /// The SHA-256 of a secret that pays once whatever the claim (MPP's Shared Payment Token).
    fn token_hash(&self) -> Option<String>;
    /// The refusal of a payment that has paid for a call already.
    fn spent(&self) -> Refusal;
    /// The account the call is recorded to (created on its first payment where it stands for the payer).
    fn account(&self, store: &Store, now_ms: i64) -> impl Future<Output = Result<String, StoreError>> + Send;
    /// Takes the payment: its receipt, or the other party's refusal; `Err` when it does not answer.
    fn take(&self, now_ms: i64) -> impl Future<Output = Result<Result<String, Refusal>, Unavailable>> + Send;
}

/// A call paid for and recorded: the answer's text and the receipt to send with it.
#[derive(Debug)]
pub struct Paid {
    pub body: String,
    pub receipt: String,
    pub header: &'static str,
}

/// Why a paid call was not answered.
#[derive(Debug)]
pub enum Failure {
    /// The payment was refused (402): nothing taken.
    Refused(Refusal),
    /// The facilitator or processor did not answer (503): nothing taken.
    Unavailable(Unavailable),
    /// The ledger refused the call before the payment was taken.
    Ledger(ledger::Refusal),
    Store(StoreError),
    /// The payment was taken but its call could not be written (the ledger's refusal says why); it is marked
    /// `unrecorded`, and the same payment sent again records the call without taking it again.
    Unrecorded(ledger::Refusal),
}

crate::store_failure!(Failure);

/// Pays for one call with `payment` and records it to `entity_id`; see the module's order.
pub async fn pay_and_record<P: PerCall>(
    payment: &P,
    store: &Store,
    ledger: &Arc<Ledger>,
    entry: Entry,
    entity_id: &str,
    idempotency_key: Option<String>,
    now_ms: i64,
) -> Result<Paid, Failure> {
    let payer = Payer::PerCall { entity_id: entity_id.to_string(), mode: payment.protocol() };
    let source = Source::Calculate { idempotency_key: idempotency_key.clone() };
    let mut job = Job { payer, entries: vec![entry], source, now_ms };
    ledger.prepare_job(&mut job).await.map_err(Failure::Ledger)?;
    let id = payment.claim_id();
    let claim = paid_call::Model {
        id: id.clone(),
        protocol: payment.protocol().into(),
        payer: payment.payer(),
        token_hash: payment.token_hash(),
        entity_id: entity_id.into(),
        state: PENDING.into(),
        idempotency_key,
        receipt: None,
        created_at: now_ms,
    };
    if !store.claim_paid_call(claim).await? {
        // Paid before: answered, being answered, or taken without its call written (then written now).
        return match store.take_unrecorded(&id).await? {
            Some(receipt) => record(payment, store, ledger, job, &id, receipt).await,
            None => Err(Failure::Refused(payment.spent())),
        };
    }
    let refusal = match payment.take(now_ms).await {
        Ok(Ok(receipt)) => {
            store.settle_paid_call(&id, &receipt).await?;
            return record(payment, store, ledger, job, &id, receipt).await;
        }
        Ok(Err(r)) => Failure::Refused(r),
        Err(u) => Failure::Unavailable(u),
    };
    if let Err(e) = store.release_paid_call(&id).await {
        tracing::warn!(error = %e, claim = %id, "could not release a payment's claim");
    }
    Err(refusal)
}

/// Records the call of a payment taken. A call that cannot be recorded leaves the payment `unrecorded`, receipt
/// kept.
async fn record<P: PerCall>(
    payment: &P,
    store: &Store,
    ledger: &Arc<Ledger>,
    job: Job,
    id: &str,
    receipt: String,
) -> Result<Paid, Failure> {
    let entity = job.payer.entity_id().to_string();
    match ledger.record(job).await.result {
        Ok(recorded) => Ok(Paid { body: recorded.response, receipt, header: payment.receipt_header() }),
        Err(refusal) => {
            tracing::error!(claim = %id, entity = %entity, error = ?refusal, "payment taken but its call not recorded; marked unrecorded");
            if let Err(e) = store.mark_unrecorded(id).await {
                tracing::error!(claim = %id, error = %e, "could not mark a payment unrecorded");
            }
            Err(Failure::Unrecorded(refusal))
        }
    }
}

/// An x402 payment that passed its own checks, for the resource it names.
pub struct X402Call<'a> {
    pub x402: &'a X402,
    pub payment: Payment,
    pub resource: String,
}

impl PerCall for X402Call<'_> {
    fn protocol(&self) -> &'static str {
        "x402"
    }

    fn receipt_header(&self) -> &'static str {
        x402::receipt_header_name(self.payment.version)
    }

    fn claim_id(&self) -> String {
        format!("x402:{}", self.x402.payment_id(&self.payment))
    }

    fn payer(&self) -> Option<String> {
        Some(self.payment.payer())
    }

    fn token_hash(&self) -> Option<String> {
        None
    }

    fn spent(&self) -> Refusal {
        Refusal {
            reason: "invalid_transaction_state".into(),
            message: "this authorization (its nonce) has already paid for a call".into(),
            problem_type: None,
        }
    }

    /// The account that linked the paying wallet, else the wallet's own.
    async fn account(&self, store: &Store, now_ms: i64) -> Result<String, StoreError> {
        let payer = self.payment.payer();
        if let Some(owner) = store.wallet_owner(&payer).await? {
            return Ok(owner);
        }
        store.payer_account(wallet_account(&payer, now_ms)).await
    }

    /// The facilitator's /verify, then its /settle.
    async fn take(&self, _now_ms: i64) -> Result<Result<String, Refusal>, Unavailable> {
        let unavailable = |e: x402::Unavailable| {
            tracing::warn!(error = %e.0, "x402 facilitator unavailable");
            Unavailable("the x402 facilitator did not answer; nothing was charged or recorded; retry shortly")
        };
        if let Err(r) = self.x402.verify(&self.payment, &self.resource).await.map_err(unavailable)? {
            return Ok(Err(r.into()));
        }
        Ok(self
            .x402
            .settle(&self.payment, &self.resource)
            .await
            .map_err(unavailable)?
            .map(|s| x402::receipt_header(&s))
            .map_err(Refusal::from))
    }
}

/// The account standing for a payer wallet that no account has linked: its id is derived from the address, its
/// email is under the reserved `.invalid` domain (RFC 2606) and it has no password, so no one logs in to it.
fn wallet_account(payer: &str, now_ms: i64) -> entity::Model {
    let digest = sha256_hex(payer.as_bytes());
    let description = format!("the wallet {payer}, paying per call with x402");
    entity::Model::payer_account(format!("ent_w{}", &digest[..32]), format!("{payer}@wallet.invalid"), "x402 payer", description, now_ms)
}

/// An MPP credential that passed its own checks.
pub struct MppCall<'a> {
    pub mpp: &'a Mpp,
    pub credential: Credential,
}

impl PerCall for MppCall<'_> {
    fn protocol(&self) -> &'static str {
        "mpp"
    }

    fn receipt_header(&self) -> &'static str {
        mpp::RECEIPT_HEADER
    }

    fn claim_id(&self) -> String {
        format!("mpp:{}", self.credential.challenge_id)
    }

    fn payer(&self) -> Option<String> {
        None
    }

    fn token_hash(&self) -> Option<String> {
        Some(sha256_hex(self.credential.spt.as_bytes()))
    }

    fn spent(&self) -> Refusal {
        Problem { kind: "invalid-challenge", message: "this challenge, or its payment token, has already paid for a call".into() }.into()
    }

    /// One account per challenge: a Shared Payment Token says nothing the service could verify about who paid, so
    /// payments are never pooled into one account's 1099 and nexus figures.
    async fn account(&self, store: &Store, now_ms: i64) -> Result<String, StoreError> {
        store.payer_account(challenge_account(&self.credential.challenge_id, now_ms)).await
    }

    /// A PaymentIntent confirmed with the token.
    async fn take(&self, now_ms: i64) -> Result<Result<String, Refusal>, Unavailable> {
        match self.mpp.charge(&self.credential, now_ms).await {
            Ok(Ok(charged)) => {
                tracing::info!(payment_intent = %charged.reference, "MPP payment taken");
                Ok(Ok(charged.receipt))
            }
            Ok(Err(p)) => Ok(Err(p.into())),
            Err(e) => {
                tracing::warn!(error = %e.0, "Stripe unavailable for an MPP payment");
                Err(Unavailable(
                    "the payment processor did not answer; nothing was recorded, and the same credential is charged at most once; retry shortly",
                ))
            }
        }
    }
}

/// The account an MPP payment is recorded to: its id derived from the challenge id, its email under the reserved
/// `.invalid` domain (RFC 2606), no password.
fn challenge_account(challenge_id: &str, now_ms: i64) -> entity::Model {
    let digest = sha256_hex(challenge_id.as_bytes());
    let short = &digest[..32];
    let description = "a caller paying per call with MPP (one account per paid challenge)".to_string();
    entity::Model::payer_account(format!("ent_m{short}"), format!("{short}@mpp.invalid"), "MPP payer", description, now_ms)
}
