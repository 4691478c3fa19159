//! Running totals per account and asset: what the trade list summarises, and the row a trade
//! locks first so that trades of one asset are applied one at a time.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "positions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub entity_id: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub asset_symbol: String,
    pub asset_class: Option<String>,
    pub asset_name: Option<String>,
    pub held_quantity: String,
    pub open_lots: i64,
    pub remaining_basis: String,
    pub realized_short_term: String,
    pub realized_long_term: String,
    pub wash_disallowed: String,
    pub buys: i64,
    pub sells: i64,
    pub last_sell_at: Option<i64>,
    pub updated_at: i64,
    pub version: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
