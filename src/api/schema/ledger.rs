//! Ingest, transaction history, nexus settings and alerts, health.

use std::collections::BTreeMap;

use super::calculate::Obj;
use poem_openapi::{Object, Union};

use super::calculate::{CalculateRequest, FullCalculation, NexusAlert};

/// One ingest record: every calculate field, plus the caller's references and metadata.
#[derive(Object)]
pub struct IngestRecord {
    #[oai(flatten)]
    pub request: CalculateRequest,
    /// The caller's idempotency key for this record: a duplicate returns the original with duplicate true.
    /// No control characters (U+0000–U+001F, U+007F–U+009F).
    #[oai(validator(min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"))]
    pub external_tx_id: Option<String>,
    /// The caller's reference (never the record id). Used as external_tx_id when that is absent; ignored when both are sent.
    /// No control characters.
    #[oai(validator(min_length = 1, max_length = 200, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$"))]
    pub transaction_id: Option<String>,
    /// Free-form, stored as sent.
    pub metadata: Option<Obj>,
}

/// One record or an array of 1 to 100.
#[derive(Union)]
pub enum IngestBody {
    One(Box<IngestRecord>),
    Many(Vec<IngestRecord>),
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
    pub total_tax: f64,
    pub metadata: Option<Obj>,
    pub calculation: FullCalculation,
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
    /// calculate or ingest.
    pub source: String,
    pub role: String,
    pub buyer_state: String,
    pub counterparty_id: String,
    pub amount: f64,
    pub total_tax: f64,
    pub external_tx_id: Option<String>,
    pub metadata: Option<Obj>,
    /// The full calculate response recorded for it.
    pub calculation: FullCalculation,
}

#[derive(Object)]
pub struct TransactionList {
    pub success: bool,
    pub count: u32,
    pub transactions: Vec<TransactionRecord>,
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
