//! One recorded trade (buy or sell) with its validated request and the response it got.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "trades")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub entity_id: String,
    pub asset_symbol: String,
    /// `buy` or `sell`.
    pub trade_type: String,
    pub quantity: String,
    pub price_per_unit: String,
    pub fee_amount: String,
    pub trade_date: i64,
    pub created_at: i64,
    pub accounting_method: Option<String>,
    pub specific_lot_id: Option<String>,
    pub asset_class: Option<String>,
    pub asset_name: Option<String>,
    pub counterparty: Option<String>,
    pub exchange: Option<String>,
    pub notes: Option<String>,
    /// A sell's realized gain at the time it was recorded (exact decimal text).
    pub realized_gain: Option<String>,
    pub request: String,
    pub result: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
