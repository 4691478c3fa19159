//! One ledger row: a keyed calculate call or an ingested record, with its request and full result; or a refund of
//! one, negative in amount and tax.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "transactions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub entity_id: String,
    pub created_at: i64,
    pub role: String,
    pub buyer_state: String,
    pub counterparty_id: String,
    /// The exact decimal amount as normalised.
    pub amount: String,
    pub amount_micros: i64,
    pub total_tax: String,
    pub external_tx_id: Option<String>,
    /// `calculate` or `ingest`.
    pub source: String,
    pub metadata: Option<String>,
    /// The validated request body (JSON text).
    pub request: String,
    /// The full calculate response returned for it (JSON text); for a refund, the refund's answer.
    pub result: String,
    /// The UTC day (yyyymmdd) that places the row in a filing period: the day it was recorded, or a refund's date.
    pub dated: i32,
    /// For a refund, the row it refunds.
    pub refund_of: Option<String>,
    /// When the row was voided (then it counts in no total).
    pub voided_at: Option<i64>,
    /// How many refunds of this row were recorded (voided ones included).
    pub refunds: i32,
    /// What the row owes by jurisdiction (`ledger::liability::Liability` as JSON text); none on rows recorded before
    /// refunds existed.
    pub liability: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
