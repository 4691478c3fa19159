//! GET /api/v1/transactions/{transaction_id}, and POST …/refund and …/void.

use std::sync::Arc;

use poem_openapi::param::{Header, Path};
use poem_openapi::{ApiResponse, OpenApi};
use serde_json::Value;

use super::auth::KeyAuth;
use super::error::ApiError;
use super::idempotency::{body_hash, parse_key, Begin};
use super::ledger::transaction_view;
use super::payload::{text_of, Body, Json, JsonText};
use super::schema::ledger::{RefundBody, RefundLine, RefundResult, TransactionDetail, TransactionStatus, Unrefunded, VoidResult};
use super::schema::number::Usd;
use super::schema::param::{IdempotencyKey, Param};
use super::{ApiTags, AppState};
use crate::clock::iso;
use crate::ledger::corrections::{self, RefundAsk, Refunded, Refused};
use crate::ledger::liability::Line;
use crate::{error_responses, ok_responses};

pub struct CorrectionsApi(pub Arc<AppState>);

#[derive(ApiResponse)]
#[oai(
    header(name = "X-Request-Id", ty = "String", description = "The request id."),
    header(
        name = "X-Idempotency-Status",
        ty = "Option<String>",
        description = "`cached` when this is the stored response of an earlier request with the same Idempotency-Key."
    )
)]
pub enum RefundResponses {
    /// The refund was recorded: its own ledger row, negative in sales and tax, dated by refund_date.
    #[oai(status = 201)]
    Created(JsonText<RefundResult>),
}

error_responses!(RefundErrors {
    400 => BadRequest: "INVALID_INPUT: amount more than remains unrefunded (the error gives what remains) or nothing left to refund; a tax_lines id that is not one of the transaction's jurisdictions; a refund_date before the transaction's date or after today. Nothing is written. Or INVALID_JSON_BODY, IDEMPOTENCY_KEY_INVALID.",
    401 => Unauthorized: "UNAUTHORIZED.",
    404 => NotFound: "RESOURCE_NOT_FOUND: the account has no such transaction.",
    409 => Conflict: "RESOURCE_CONFLICT: the transaction is voided or is itself a refund, or refund_date falls in a period marked filed for its state; IDEMPOTENCY_KEY_CONFLICT (same key, different body).",
    429 => TooManyRequests: "RATE_LIMITED: the key's 120 calls per 60 s (Retry-After sent).",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(GetResponses {
    200 => Ok(Json<TransactionDetail>): "The transaction, its refunds and what is left to refund.",
});

error_responses!(GetErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter this operation does not take.",
    401 => Unauthorized: "UNAUTHORIZED.",
    404 => NotFound: "RESOURCE_NOT_FOUND: the account has no such transaction.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(VoidResponses {
    200 => Ok(Json<VoidResult>): "The transaction is voided (now, or before: voided_now says which), with its refunds.",
});

error_responses!(VoidErrors {
    400 => BadRequest: "INVALID_INPUT: a body or query parameter this operation does not take.",
    401 => Unauthorized: "UNAUTHORIZED.",
    404 => NotFound: "RESOURCE_NOT_FOUND: the account has no such transaction.",
    409 => Conflict: "RESOURCE_CONFLICT: a period marked filed for the transaction's state holds its date (or a refund's): record a refund instead.",
    429 => TooManyRequests: "RATE_LIMITED: the key's 120 calls per 60 s (Retry-After sent).",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

impl From<Refused> for ApiError {
    fn from(r: Refused) -> Self {
        match r {
            Refused::NotFound(m) => ApiError::not_found(m),
            Refused::Conflict(m) => ApiError::conflict(m),
            Refused::Filed { state, period } => ApiError::conflict(format!(
                "the {state} return for {period} is marked filed: its figures no longer change (a refund dated in an open period corrects it)"
            )),
            Refused::Invalid(p) => ApiError::field(p.field, p.message),
            Refused::Store(e) => e.into(),
        }
    }
}

/// What is left to refund of each line, as the answers show it: the sale amount (the state's line) and the tax.
fn unrefunded(remaining: &[Line]) -> Unrefunded {
    Unrefunded {
        amount: Usd::cents(remaining.first().map(|l| l.gross).unwrap_or_default()),
        tax: Usd::cents(remaining.iter().map(|l| l.tax).sum()),
    }
}

/// The refund's answer.
fn refund_result(r: &Refunded, reason: Option<&str>) -> RefundResult {
    let lines = r
        .liability
        .lines
        .iter()
        .map(|l| RefundLine {
            jurisdiction_id: l.id.clone(),
            level: l.level.clone(),
            name: l.name.clone(),
            sales: Usd::cents(l.gross),
            taxable_sales: Usd::cents(l.taxable),
            tax: Usd::cents(l.tax),
            tax_remaining: Usd::cents(r.remaining.iter().find(|x| x.id == l.id).map(|x| x.tax).unwrap_or_default()),
        })
        .collect();
    RefundResult {
        success: true,
        refund_id: r.id.clone(),
        transaction_id: r.transaction_id.clone(),
        refund_date: r.date.to_string(),
        amount: Usd::cents(r.amount()),
        tax_refunded: Usd::cents(-r.liability.tax()),
        lines,
        remaining: unrefunded(&r.remaining),
        reason: reason.map(str::to_string),
        created_at: iso(r.created_at),
    }
}

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Transactions")]
impl CorrectionsApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const GET_TRANSACTION_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/transaction/external_tx_id": "inv-1001", "/transaction/status": "recorded", "/refunds": [], "/remaining/amount": 1000, "/remaining/tax": 66}
    }"#;

    /// One recorded transaction, its refunds, and what is left to refund
    ///
    /// The transaction as GET /api/v1/transactions lists it, its refunds oldest first (voided ones too, with their
    /// status), and what a refund could still give back: the sale amount and the tax of every line. A refund's own
    /// id shows the refund (`refund_of` names the sale); a refund or a voided transaction has nothing to refund
    /// (`remaining` is null).
    #[oai(
        path = "/transactions/:transaction_id",
        method = "get",
        operation_id = "getTransaction",
        code_sample(lang = "json", label = "example", source = "Self::GET_TRANSACTION_EXAMPLE")
    )]
    async fn get(
        &self,
        auth: KeyAuth,
        /// The transaction's id (GET /api/v1/transactions), or a refund's.
        #[oai(validator(min_length = 1, max_length = 40))]
        transaction_id: Path<String>,
    ) -> Result<GetResponses, GetErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let t = corrections::standing(&s.store, &owner.entity.id, &transaction_id.0).await.map_err(ApiError::from)?;
        Ok(GetResponses::Ok(Json(TransactionDetail {
            success: true,
            transaction: transaction_view(&t.row),
            refunds: t.refunds.iter().map(transaction_view).collect(),
            remaining: t.remaining.as_deref().map(unrefunded),
        })))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const REFUND_TRANSACTION_EXAMPLE: &'static str = r#"{
        "body": {"amount": 100, "reason": "one seat returned"},
        "headers": {"Idempotency-Key": "refund-inv-1001-1"},
        "status": 201,
        "expect": {"/amount": 100, "/tax_refunded": 6.6, "/remaining/amount": 900}
    }"#;

    /// Refund a recorded transaction, in whole or in part
    ///
    /// Records the refund as a ledger row of its own, linked to the transaction, negative in sales and tax and
    /// dated by refund_date, so it lands in that filing period. Without amount, what is left of the transaction is
    /// refunded. The tax refunded is the transaction's tax in proportion to the amount, each jurisdiction's part
    /// rounded so that the parts add up to the total to the cent; the refund that reaches the end gives back exactly
    /// what is left. tax_lines limits the refund to those jurisdictions' tax (a local tax charged in error, say).
    /// Never more than remains unrefunded: concurrent refunds of one transaction are applied one after another.
    /// The counterparty's 1099 total loses the amount when it is refunded in the payment's tax year; nexus revenue
    /// keeps it (thresholds count gross sales). Idempotency-Key works as on calculate.
    #[oai(
        path = "/transactions/:transaction_id/refund",
        method = "post",
        operation_id = "refundTransaction",
        code_sample(lang = "json", label = "example", source = "Self::REFUND_TRANSACTION_EXAMPLE")
    )]
    async fn refund(
        &self,
        auth: KeyAuth,
        /// The transaction's id (GET /api/v1/transactions).
        #[oai(validator(min_length = 1, max_length = 40))]
        transaction_id: Path<String>,
        /// Makes a retry safe: same key and body within 24 hours replays the stored response, writing nothing.
        #[oai(name = "Idempotency-Key")]
        _idempotency_key: Header<Option<Param<IdempotencyKey>>>,
        req: &poem::Request,
        mut body: Body<RefundBody>,
    ) -> Result<RefundResponses, RefundErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        s.check_burst(&owner.key_id).await?;
        let raw = std::mem::take(&mut body.raw);
        let typed = body.parse()?;
        let idem = parse_key(super::idempotency::header_text(req).as_deref())?;
        let today = s.clock.now().date_naive();
        let date = match &typed.refund_date {
            None => today,
            Some(d) => chrono::NaiveDate::parse_from_str(d.text(), "%Y-%m-%d")
                .map_err(|_| ApiError::field("refund_date", format!("`{}` is not a date (YYYY-MM-DD)", d.text())))?,
        };
        let value: Value = serde_json::from_slice(&raw).map_err(ApiError::invalid_json)?;
        let entity_id = owner.entity.id.clone();
        let operation = format!("refund {}", transaction_id.0);
        if let Some(k) = &idem {
            if let Begin::Replay { body, .. } = s.begin_idempotent(&entity_id, k, &body_hash(&operation, &value)).await? {
                return Ok(RefundResponses::Created(JsonText::new(body)));
            }
        }
        let ask = RefundAsk {
            transaction_id: &transaction_id.0,
            amount: typed.amount.as_ref().and_then(|a| super::schema::param::exact(&a.0)),
            tax_lines: typed.tax_lines.map(|ids| ids.into_iter().map(|i| i.text().to_string()).collect()),
            date,
            request: value.to_string(),
        };
        let reason = typed.reason.as_deref();
        let result = corrections::refund(&s.store, &entity_id, &ask, today, s.clock.now_ms(), idem.as_deref(), |r| {
            text_of(&refund_result(r, reason))
        })
        .await;
        if let (Err(_), Some(k)) = (&result, &idem) {
            s.release_idempotency_key(&entity_id, k).await;
        }
        let (_, text) = result.map_err(ApiError::from)?;
        Ok(RefundResponses::Created(JsonText::new(text)))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const VOID_TRANSACTION_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/status": "voided", "/voided_now": true}
    }"#;

    /// Void a recorded transaction
    ///
    /// Takes a mistaken or duplicate transaction out of every total — the liability report, nexus revenue and
    /// transaction counts, the counterparty's 1099 total — together with its refunds. Only while its period is
    /// open: once the state's return for the period holding its date (or a refund's) is marked filed, a void is
    /// refused (409) and a refund is the way. The row stays in GET /api/v1/transactions with status voided. Voiding
    /// a refund takes only that refund back. A second void changes nothing and answers as the first.
    #[oai(
        path = "/transactions/:transaction_id/void",
        method = "post",
        operation_id = "voidTransaction",
        code_sample(lang = "json", label = "example", source = "Self::VOID_TRANSACTION_EXAMPLE")
    )]
    async fn void(
        &self,
        auth: KeyAuth,
        /// The transaction's id (GET /api/v1/transactions).
        #[oai(validator(min_length = 1, max_length = 40))]
        transaction_id: Path<String>,
    ) -> Result<VoidResponses, VoidErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        s.check_burst(&owner.key_id).await?;
        let v = corrections::void(&s.store, &owner.entity.id, &transaction_id.0, s.clock.now_ms()).await.map_err(ApiError::from)?;
        Ok(VoidResponses::Ok(Json(VoidResult {
            success: true,
            transaction_id: v.row.id,
            status: TransactionStatus::Voided,
            voided_at: iso(v.voided_at),
            voided_now: v.now,
            refunds_voided: v.refunds,
        })))
    }
}
