//! A cost-basis lot: made by a buy, or split off one when part of it became a wash-sale replacement.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "lots")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub entity_id: String,
    pub asset_symbol: String,
    pub trade_id: String,
    pub acquired_at: i64,
    /// YYYY-MM-DD: the first day of the holding period (earlier than acquisition after a wash sale).
    pub holding_start: String,
    pub quantity: String,
    pub cost_basis: String,
    pub remaining_quantity: String,
    pub remaining_basis: String,
    pub open: bool,
    /// Disallowed wash-sale loss added to this lot's basis.
    pub wash_adjustment: String,
    /// The disposition whose disallowed loss this lot carries.
    pub replacement_for: Option<String>,
    pub split_from: Option<String>,
    pub created_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
