//! POST /api/v1/transactions/ingest and GET /api/v1/transactions.

use std::sync::Arc;

use poem_openapi::param::Query;
use poem_openapi::OpenApi;
use serde_json::{Map, Number, Value};

use super::auth::KeyAuth;
use super::conform::contract;
use super::error::ApiError;
use super::payload::{Json, JsonBody};
use super::schema::calculate::{CalculateRequest, Role, TransactionType};
use super::schema::ledger::{
    IngestBody, IngestRecord, IngestResponse, IngestedRecord, Metadata, RecordedCalculation, RefundResult, TransactionList,
    TransactionRecord, TransactionStatus, MAX_BATCH,
};
use super::schema::number::{Exact, Usd};
use super::schema::param::{text, DateOrDateTime, Param, StateParam};
use super::{ApiTags, AppState};
use crate::clock::iso;
use crate::ledger::report::day_of;
use crate::ledger::{Entry, EntryOutcome, Job, Payer, Source, EXTRA_FIELDS};
use crate::rules::diag::did_you_mean;
use crate::rules::schema::{state_index, Fact, STATES, TRANSACTION_TYPES};
use crate::store::entity::transaction;
use crate::store::ledger::TransactionFilter;
use crate::{error_responses, ok_responses};
use poem_openapi::types::ParseFromJSON;

pub struct LedgerApi(pub Arc<AppState>);

ok_responses!(IngestResponses {
    201 => Created(Json<IngestResponse>): "At least one record was written.",
    200 => Replayed(Json<IngestResponse>): "Every record was a duplicate: the originals are returned and nothing was written.",
});

error_responses!(IngestErrors {
    400 => BadRequest: "INVALID_INPUT: errors name each record by index and field (records[3].amount: …); nothing is written. Or INVALID_JSON_BODY.",
    401 => Unauthorized: "UNAUTHORIZED.",
    409 => Conflict: "RESOURCE_CONFLICT: another request recorded the same external_tx_id at the same moment; retry to receive it as a duplicate.",
    429 => TooManyRequests: "RATE_LIMITED: the free plan's monthly allowance is used up (Monthly limit reached).",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(ListResponses {
    200 => Ok(Json<TransactionList>): "The account's transactions, newest first, each with its recorded calculation.",
});

error_responses!(ListErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter is invalid (role, state, buyer_state, transaction_type, since, limit, offset) or a parameter it does not list.",
    401 => Unauthorized: "UNAUTHORIZED.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

/// Reads one record: checked against `IngestRecord`'s schema, its calculate fields then read as a calculate body
/// (`CalculateRequest`; poem cannot parse a flattened object that takes no other fields). Errors are prefixed
/// with the record's place in a batch.
fn parse_item(v: &Value, prefix: &str, errors: &mut Vec<String>) -> Option<Entry> {
    let at = |field: &str| match field {
        "body" if !prefix.is_empty() => prefix.trim_end_matches('.').to_string(),
        _ => format!("{prefix}{field}"),
    };
    let mut checked = v.clone();
    let problems = contract::<IngestRecord>().check(&mut checked);
    if !problems.is_empty() {
        errors.extend(problems.iter().map(|e| format!("{}: {}", at(&e.field), e.message)));
        return None;
    }
    let (Value::Object(mut checked), Value::Object(mut sent)) = (checked, v.clone()) else { return None };
    let text = |f: &str| sent.get(f).and_then(Value::as_str).map(str::to_string);
    let reference = text("external_tx_id").or_else(|| text("transaction_id"));
    let metadata = sent.get("metadata").and_then(Value::as_object).cloned();
    for f in EXTRA_FIELDS {
        checked.remove(*f);
        sent.remove(*f);
    }
    let sent = Value::Object(sent);
    let read = CalculateRequest::read_checked(Value::Object(checked), &sent);
    match Entry::live(read, &sent, prefix) {
        Ok(mut entry) => {
            (entry.raw, entry.external_tx_id, entry.metadata) = (v.clone(), reference, metadata);
            Some(entry)
        }
        Err(e) => {
            errors.extend(e);
            None
        }
    }
}

/// The calculation and metadata stored with a ledger row.
fn stored(row: &transaction::Model) -> (RecordedCalculation, Option<Metadata>) {
    let calculation: Value = serde_json::from_str(&row.result).unwrap_or(Value::Null);
    let metadata = row.metadata.as_deref().and_then(|m| serde_json::from_str(m).ok()).map(Metadata);
    (RecordedCalculation(calculation), metadata)
}

/// A number of the recorded calculation's (its amount, its total_tax), or else the row's own column.
fn recorded_number(calculation: &RecordedCalculation, key: &str, column: &str) -> Number {
    calculation.0.get(key).and_then(Value::as_number).cloned().or_else(|| column.parse().ok()).unwrap_or_else(|| Number::from(0))
}

fn record_view(row: &transaction::Model, index: u32) -> IngestedRecord {
    let (calculation, metadata) = stored(row);
    IngestedRecord {
        index,
        transaction_id: row.id.clone(),
        external_tx_id: row.external_tx_id.clone(),
        duplicate: true,
        created_at: iso(row.created_at),
        total_tax: Usd(recorded_number(&calculation, "total_tax", &row.total_tax)),
        metadata,
        calculation,
    }
}

pub fn transaction_view(row: &transaction::Model) -> TransactionRecord {
    let (calculation, metadata) = stored(row);
    // A refund's row keeps the refund's answer where a calculation's keeps the calculation.
    let (calculation, refund) = match row.refund_of {
        None => (Some(calculation), None),
        Some(_) => (None, RefundResult::parse_from_json(Some(calculation.0.clone())).ok()),
    };
    let amount = calculation.as_ref().map_or_else(|| row.amount.parse().ok(), |c| Some(recorded_number(c, "amount", &row.amount)));
    let total_tax =
        calculation.as_ref().map_or_else(|| row.total_tax.parse().ok(), |c| Some(recorded_number(c, "total_tax", &row.total_tax)));
    TransactionRecord {
        transaction_id: row.id.clone(),
        created_at: iso(row.created_at),
        source: row.source.clone(),
        status: if row.voided_at.is_some() { TransactionStatus::Voided } else { TransactionStatus::Recorded },
        dated: day_of(row.dated).to_string(),
        voided_at: row.voided_at.map(iso),
        refund_of: row.refund_of.clone(),
        refunds: row.refunds.max(0) as u32,
        role: row.role.clone(),
        buyer_state: row.buyer_state.clone(),
        counterparty_id: row.counterparty_id.clone(),
        amount: Exact(amount.unwrap_or_else(|| Number::from(0))),
        total_tax: Usd(total_tax.unwrap_or_else(|| Number::from(0))),
        external_tx_id: row.external_tx_id.clone(),
        metadata,
        calculation,
        refund,
    }
}

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Transactions")]
impl LedgerApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const INGEST_TRANSACTIONS_EXAMPLE: &'static str = r#"{
        "body": {"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "cust-7", "external_tx_id": "inv-1001"},
        "status": 201,
        "expect": {"/written": 1, "/records/0/duplicate": false}
    }"#;

    /// Ingest transactions (one record or a batch of 1 to 100)
    ///
    /// Each record takes every calculate field plus external_tx_id, transaction_id and metadata. Each is
    /// determined as a live calculate call and recorded. A record whose external_tx_id (or, without one, whose
    /// transaction_id) was already recorded is not written again: the original comes back with duplicate true.
    /// A batch with any invalid record is rejected whole, errors naming record index and field; nothing is written.
    /// The whole batch is one database transaction. It counts as one call against the monthly allowance.
    #[oai(
        path = "/transactions/ingest",
        method = "post",
        operation_id = "ingestTransactions",
        code_sample(lang = "json", label = "example", source = "Self::INGEST_TRANSACTIONS_EXAMPLE")
    )]
    async fn ingest(&self, auth: KeyAuth, body: JsonBody<IngestBody>) -> Result<IngestResponses, IngestErrors> {
        let s = &self.0;
        match s.ingest(&auth, &body).await {
            Ok(r) => Ok(r),
            // As for calculate: a refusal outside the ledger batch is a 401 if the cached key was revoked since.
            Err(e) => Err(s.recheck_key(&auth, e).await.into()),
        }
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const LIST_TRANSACTIONS_EXAMPLE: &'static str = r#"{
        "query": "limit=10",
        "status": 200,
        "expect": {"/count": 2}
    }"#;

    /// List recorded transactions, newest first
    ///
    /// Filters combine (all must hold). `buyer_state` is another name for `state` (the reference SDK's); sent
    /// together they must agree. `limit` and `offset` page through the list, newest first.
    #[oai(
        path = "/transactions",
        method = "get",
        operation_id = "listTransactions",
        code_sample(lang = "json", label = "example", source = "Self::LIST_TRANSACTIONS_EXAMPLE")
    )]
    #[allow(clippy::too_many_arguments)]
    async fn list(
        &self,
        auth: KeyAuth,
        /// seller or buyer.
        role: Query<Option<Param<Role>>>,
        /// Two-letter buyer state (lowercase accepted).
        state: Query<Option<Param<StateParam>>>,
        /// The same filter as `state`, under the reference SDK's name; with both, a record must match both (two different states match none).
        buyer_state: Query<Option<Param<StateParam>>>,
        /// One of the 19 transaction types; a record that sent none is saas (the contract's default).
        transaction_type: Query<Option<Param<TransactionType>>>,
        /// Lower bound on the record time: an ISO 8601 date (2026-01-01, from 00:00 UTC) or date-time.
        since: Query<Option<Param<DateOrDateTime>>>,
        /// 1 to 1000, default 100.
        #[oai(validator(minimum(value = "1"), maximum(value = "1000")))]
        limit: Query<Option<i64>>,
        /// Records to skip, newest first (default 0).
        #[oai(validator(minimum(value = "0")))]
        offset: Query<Option<i64>>,
    ) -> Result<ListResponses, ListErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let (role, state, buyer_state, since) = (text(role), text(state), text(buyer_state), text(since));
        let mut errors = Vec::new();
        let role = role.0.filter(|r| {
            let ok = r == "seller" || r == "buyer";
            if !ok {
                errors.push(format!("role: `{r}` is not one of: seller, buyer"));
            }
            ok
        });
        let mut state_of = |name: &str, value: Option<String>| match value {
            None => None,
            Some(st) => match state_index(&st.to_ascii_uppercase()) {
                Some(_) => Some(st.to_ascii_uppercase()),
                None => {
                    let hint = did_you_mean(&st.to_ascii_uppercase(), STATES.iter().copied())
                        .map(|x| format!(" (did you mean `{x}`?)"))
                        .unwrap_or_default();
                    errors.push(format!("{name}: `{st}` is not a two-letter US state code or DC{hint}"));
                    None
                }
            },
        };
        let (by_state, by_buyer_state) = (state_of("state", state.0), state_of("buyer_state", buyer_state.0));
        // Filters combine: two different states select nothing (a record has one buyer state).
        let disjoint = matches!((&by_state, &by_buyer_state), (Some(a), Some(b)) if a != b);
        let state = by_state.or(by_buyer_state);
        let transaction_type = transaction_type.0.and_then(|tt| tt.check_into("transaction_type", &mut errors));
        let since_ms = match since.0.as_deref().map(parse_since) {
            None => None,
            Some(Ok(ms)) => Some(ms),
            Some(Err(e)) => {
                errors.push(format!("since: {e}"));
                None
            }
        };
        // (The validators above have checked both ranges.)
        let limit = limit.0.unwrap_or(100).clamp(1, 1000) as u64;
        let offset = offset.0.unwrap_or(0).max(0) as u64;
        ApiError::check(errors)?;
        let default_transaction_type =
            Fact::transaction_type.def().default.and_then(|i| TRANSACTION_TYPES.get(i as usize)).copied().unwrap_or("saas");
        let filter = TransactionFilter { role, state, transaction_type, default_transaction_type, since_ms, limit, offset };
        let rows =
            if disjoint { Vec::new() } else { s.store.list_transactions(&owner.entity.id, &filter).await.map_err(ApiError::from)? };
        let transactions: Vec<TransactionRecord> = rows.iter().map(transaction_view).collect();
        Ok(ListResponses::Ok(Json(TransactionList { success: true, count: transactions.len() as u32, transactions })))
    }
}

/// An ISO 8601 date (midnight UTC) or date-time, as Unix ms.
pub fn parse_since(text: &str) -> Result<i64, String> {
    if let Ok(dt) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(dt.timestamp_millis());
    }
    if let Ok(dt) = chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S") {
        return Ok(dt.and_utc().timestamp_millis());
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(crate::clock::day_start_ms(d));
    }
    Err(format!("`{text}` is not an ISO 8601 date (2026-01-31) or date-time (2026-01-31T12:00:00Z)"))
}

/// What an ingest record showed of itself: its external id and metadata, as sent.
type Shown = (Option<String>, Option<Map<String, Value>>);

impl AppState {
    /// Validates and records an ingest request (see `LedgerApi::ingest`).
    async fn ingest(self: &Arc<Self>, auth: &KeyAuth, body: &JsonBody<IngestBody>) -> Result<IngestResponses, ApiError> {
        let s = self;
        let key = s.ledger_key(auth).await?;
        let value = body.value()?;
        let (records, batch): (Vec<&Value>, bool) = match value {
            Value::Array(a) => (a.iter().collect(), true),
            other => (vec![other], false),
        };
        if batch && (records.is_empty() || records.len() > MAX_BATCH) {
            return Err(ApiError::field("body", format!("a batch holds 1 to {MAX_BATCH} records; this one has {}", records.len())));
        }
        let mut errors = Vec::new();
        let mut items = Vec::new();
        for (i, r) in records.iter().enumerate() {
            let prefix = if batch { format!("records[{i}].") } else { String::new() };
            items.push(parse_item(r, &prefix, &mut errors));
        }
        ApiError::check(errors)?;
        let entries: Vec<Entry> = items.into_iter().flatten().collect();
        // The same external id twice in one batch is the caller's retry folded in: the second is its duplicate.
        let now_ms = s.clock.now_ms();
        let shown: Vec<Shown> = entries.iter().map(|i| (i.external_tx_id.clone(), i.metadata.clone())).collect();
        let payer = Payer::ApiKey { key_id: key.key_id.clone(), entity_id: key.entity_id.clone() };
        let mut job = Job { payer, entries, source: Source::Ingest, now_ms };
        // Records the engine cannot answer as sent reject the whole request, as invalid fields do; nothing is written.
        s.ledger.prepare_job(&mut job).await?;
        let recorded = s.record(job).await?;
        let mut out = Vec::new();
        let (mut written, mut duplicates) = (0u32, 0u32);
        for (i, (outcome, (ext, metadata))) in recorded.entries.into_iter().zip(shown).enumerate() {
            let index = i as u32;
            match outcome {
                EntryOutcome::Duplicate(row) => {
                    duplicates += 1;
                    out.push(record_view(&row, index));
                }
                EntryOutcome::New { calculation } => {
                    written += 1;
                    let body: Value =
                        serde_json::from_str(&calculation).map_err(|e| ApiError::internal(format!("stored calculation: {e}")))?;
                    let calculation = RecordedCalculation(body);
                    let transaction_id = calculation.0.get("transaction_id").and_then(Value::as_str).unwrap_or_default().to_string();
                    let total_tax = Usd(recorded_number(&calculation, "total_tax", ""));
                    out.push(IngestedRecord {
                        index,
                        transaction_id,
                        external_tx_id: ext,
                        duplicate: false,
                        created_at: iso(now_ms),
                        total_tax,
                        metadata: metadata.map(|m| Metadata(Value::Object(m))),
                        calculation,
                    });
                }
            }
        }
        let response = IngestResponse { success: true, count: out.len() as u32, written, duplicates, records: out };
        Ok(if written > 0 { IngestResponses::Created(Json(response)) } else { IngestResponses::Replayed(Json(response)) })
    }
}
