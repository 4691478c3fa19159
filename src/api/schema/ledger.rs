//! Ingest, transaction history, nexus settings and alerts, health.

use std::collections::BTreeMap;

use std::borrow::Cow;

use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseResult, Type};
use poem_openapi::Object;

use super::calculate::Obj;
use super::number::{Exact, Usd};

use super::calculate::{CalculateRequest, FullCalculation, NexusAlert};

/// The most records one ingest call takes.
pub const MAX_BATCH: usize = 100;

/// One ingest record: every calculate field, plus the caller's references and metadata.
#[derive(Object)]
pub struct IngestRecord {
    #[oai(flatten)]
    pub request: CalculateRequest,
    /// The caller's idempotency key for this record: a duplicate returns the original with duplicate true.
    /// No control characters (U+0000–U+001F, U+007F–U+009F).
    pub external_tx_id: Option<super::param::Reference>,
    /// The caller's reference (never the record id). Used as external_tx_id when that is absent; ignored when both are sent.
    /// No control characters.
    pub transaction_id: Option<super::param::Reference>,
    /// Free-form, stored as sent.
    pub metadata: Option<Obj>,
}

/// The body of ingest, for the document (`api::ledger` reads each record against `IngestRecord`): one record, or an array of 1 to
/// [`MAX_BATCH`] records. Written by hand because a derived `Union` types every body it documents as an object,
/// which an array is not.
pub struct IngestBody;

impl Type for IngestBody {
    crate::raw_is_self!();

    fn name() -> Cow<'static, str> {
        "IngestBody".into()
    }

    fn schema_ref() -> MetaSchemaRef {
        MetaSchemaRef::Reference(Self::name().into_owned())
    }

    fn register(registry: &mut Registry) {
        registry.create_schema::<Self, _>(Self::name().into_owned(), |registry| {
            IngestRecord::register(registry);
            let batch = MetaSchema {
                items: Some(Box::new(IngestRecord::schema_ref())),
                min_items: Some(1),
                max_items: Some(MAX_BATCH),
                ..MetaSchema::new("array")
            };
            MetaSchema {
                description: Some("One record, or an array of 1 to maxItems records."),
                any_of: vec![IngestRecord::schema_ref(), MetaSchemaRef::Inline(Box::new(batch))],
                ..MetaSchema::ANY
            }
        });
    }
}

#[derive(Object)]
pub struct IngestedRecord {
    /// Position in the request (0 for a single record).
    pub index: u32,
    /// Server-generated record id.
    pub transaction_id: String,
    pub external_tx_id: Option<String>,
    /// True when this external_tx_id was already recorded: the original record is returned and nothing is written.
    pub duplicate: bool,
    pub created_at: String,
    /// The calculation's total_tax (USD).
    pub total_tax: Usd,
    /// As sent with the record, or null.
    pub metadata: Option<Metadata>,
    pub calculation: RecordedCalculation,
}

#[derive(Object)]
pub struct IngestResponse {
    pub success: bool,
    pub count: u32,
    /// How many records were new.
    pub written: u32,
    pub duplicates: u32,
    pub records: Vec<IngestedRecord>,
}

#[derive(Object)]
pub struct TransactionRecord {
    pub transaction_id: String,
    pub created_at: String,
    /// calculate, ingest, or refund (a refund of `refund_of`).
    pub source: String,
    /// recorded, or voided (it counts in no total).
    pub status: TransactionStatus,
    /// The day (UTC, YYYY-MM-DD) that places it in a filing period: the day it was recorded, or a refund's date.
    pub dated: String,
    /// When it was voided; null while it counts.
    pub voided_at: Option<String>,
    /// For a refund: the transaction it refunds; null otherwise.
    pub refund_of: Option<String>,
    /// How many refunds of it were recorded (voided ones included).
    pub refunds: u32,
    pub role: String,
    pub buyer_state: String,
    pub counterparty_id: String,
    /// The calculation's amount (USD, as sent); a refund's is negative.
    pub amount: Exact,
    /// The calculation's total_tax (USD); a refund's is negative.
    pub total_tax: Usd,
    pub external_tx_id: Option<String>,
    /// As sent with the record, or null.
    pub metadata: Option<Metadata>,
    /// The calculation recorded; null for a refund.
    pub calculation: Option<RecordedCalculation>,
    /// For a refund, its answer as POST /transactions/{transaction_id}/refund gave it; null otherwise.
    pub refund: Option<RefundResult>,
}

/// Whether a ledger row counts in the totals.
#[derive(poem_openapi::Enum, Clone, Copy, Debug, PartialEq, Eq)]
#[oai(rename_all = "snake_case")]
pub enum TransactionStatus {
    Recorded,
    Voided,
}

super::param::documented!(
    /// A sale amount refunded: USD greater than 0, at most 100000000, in cents. A decimal string is accepted.
    RefundAmount => MetaSchema { minimum: Some(0.01), maximum: Some(1e8), multiple_of: Some(0.01), ..MetaSchema::new("number") }
);

/// Body of POST /api/v1/transactions/{transaction_id}/refund. Every field is optional: an empty object refunds
/// what is left of the whole transaction, dated today.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct RefundBody {
    /// The sale amount refunded (USD); all that is left when absent. Never more than what remains unrefunded.
    pub amount: Option<RefundAmount>,
    /// The jurisdictions whose tax is refunded (the `jurisdiction_id`s of the transaction's lines, as GET
    /// /api/v1/reports/liability and the refund answer name them: `TX`, `tx.austin`); every one when absent.
    #[oai(validator(min_items = 1, max_items = 50))]
    pub tax_lines: Option<Vec<JurisdictionId>>,
    /// The refund's date (YYYY-MM-DD, UTC): the filing period it lands in. Default today; not before the
    /// transaction's date, not after today, not in a period marked filed.
    pub refund_date: Option<super::param::IsoDate>,
    /// Why, for the record (kept with the refund).
    #[oai(validator(max_length = 500))]
    pub reason: Option<String>,
}

super::param::documented!(
    /// A jurisdiction's id: a state code (`TX`) or a local or special tax's id in the rule files (`tx.austin`).
    JurisdictionId => MetaSchema { min_length: Some(1), max_length: Some(100), ..MetaSchema::new("string") }
);

/// One jurisdiction's part of a refund (negative figures).
#[derive(Object, Clone)]
pub struct RefundLine {
    pub jurisdiction_id: String,
    /// state, a local level (county, city, special_district, …) or special.
    pub level: String,
    pub name: String,
    /// Sales given back on this line (negative).
    pub sales: Usd,
    /// The taxable part of them (negative).
    pub taxable_sales: Usd,
    /// Tax given back (negative): the line's tax in proportion to the amount, to the cent.
    pub tax: Usd,
    /// The line's tax still unrefunded after this refund.
    pub tax_remaining: Usd,
}

/// What remains unrefunded of a transaction.
#[derive(Object, Clone)]
pub struct Unrefunded {
    /// Of the sale amount (at the state's line).
    pub amount: Usd,
    /// Of the tax, every line.
    pub tax: Usd,
}

/// One transaction with its refunds, and what is left to refund of it.
#[derive(Object)]
pub struct TransactionDetail {
    pub success: bool,
    pub transaction: TransactionRecord,
    /// Its refunds, oldest first, voided ones included (each with its status); empty for a refund.
    pub refunds: Vec<TransactionRecord>,
    /// What is left to refund after the refunds that count; null for a refund or a voided transaction, neither of
    /// which can be refunded.
    pub remaining: Option<Unrefunded>,
}

/// A refund recorded: its own ledger row, linked to the transaction, negative in sales and tax.
#[derive(Object, Clone)]
pub struct RefundResult {
    pub success: bool,
    /// The refund's ledger row.
    pub refund_id: String,
    /// The transaction refunded.
    pub transaction_id: String,
    /// YYYY-MM-DD: the filing period it lands in.
    pub refund_date: String,
    /// The sale amount refunded (positive).
    pub amount: Usd,
    /// The tax refunded (positive): the sum of the lines' parts.
    pub tax_refunded: Usd,
    pub lines: Vec<RefundLine>,
    pub remaining: Unrefunded,
    #[oai(skip_serializing_if_is_none)]
    pub reason: Option<String>,
    pub created_at: String,
}

/// A void: the transaction (and its refunds) taken out of every total.
#[derive(Object)]
pub struct VoidResult {
    pub success: bool,
    pub transaction_id: String,
    /// voided.
    pub status: TransactionStatus,
    pub voided_at: String,
    /// False when it was voided before: nothing changed.
    pub voided_now: bool,
    /// Its refunds voided with it.
    pub refunds_voided: Vec<String>,
}

#[derive(Object)]
pub struct TransactionList {
    pub success: bool,
    pub count: u32,
    pub transactions: Vec<TransactionRecord>,
}

super::param::documented!(
    /// Free-form metadata, stored and returned as sent.
    Metadata => MetaSchema::new("object")
);

/// The full calculate response recorded with a ledger row, returned as it was answered when the row was written
/// (a row written by an earlier version of the service keeps that version's answer).
pub struct RecordedCalculation(pub serde_json::Value);

impl Type for RecordedCalculation {
    crate::raw_is_self!();

    fn name() -> Cow<'static, str> {
        FullCalculation::name()
    }

    fn schema_ref() -> MetaSchemaRef {
        FullCalculation::schema_ref()
    }

    fn register(registry: &mut Registry) {
        FullCalculation::register(registry);
    }
}

impl poem_openapi::types::ParseFromJSON for RecordedCalculation {
    fn parse_from_json(value: Option<serde_json::Value>) -> ParseResult<Self> {
        Ok(RecordedCalculation(value.unwrap_or_default()))
    }
}

impl poem_openapi::types::ToJSON for RecordedCalculation {
    fn to_json(&self) -> Option<serde_json::Value> {
        Some(self.0.clone())
    }
}

#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct NexusEntryIn {
    #[oai(rename = "hasNexus")]
    pub has_nexus: bool,
    #[oai(validator(max_length = 500))]
    pub reason: Option<String>,
}

/// Body of POST /api/v1/nexus: only the states present are written (merge); send hasNexus false to remove one.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct NexusRequest {
    /// Two-letter codes (lowercase accepted, DC included) → entry.
    pub nexus: super::param::StateMap<NexusEntryIn>,
}

#[derive(Object)]
pub struct NexusEntryOut {
    #[oai(rename = "hasNexus")]
    pub has_nexus: bool,
    pub reason: Option<String>,
    pub updated_at: String,
}

#[derive(Object)]
pub struct NexusResponse {
    pub success: bool,
    /// False until the account first stores its nexus; seller calls then return total_tax 0.
    pub nexus_configured: bool,
    /// Every state the account has told us about.
    pub nexus: BTreeMap<String, NexusEntryOut>,
    /// The states with hasNexus true.
    pub states_with_nexus: Vec<String>,
}

#[derive(Object)]
pub struct NexusAlertsResponse {
    pub success: bool,
    pub as_of: String,
    /// Jurisdictions checked (all 51).
    pub jurisdictions_checked: u32,
    pub alerts: Vec<NexusAlert>,
}

#[derive(Object)]
pub struct DatabaseHealth {
    pub connected: bool,
    /// sqlite or postgres.
    pub backend: String,
}

#[derive(Object)]
pub struct Health {
    /// ok.
    pub status: String,
    pub database: DatabaseHealth,
    pub engine_version: String,
    pub rules_version: String,
    pub service_version: String,
}
