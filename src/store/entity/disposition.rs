//! One lot's share of a sell: the unit of gain, holding period, wash sale and 1099-DA entry.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "dispositions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub entity_id: String,
    pub trade_id: String,
    pub lot_id: String,
    pub asset_symbol: String,
    pub asset_name: Option<String>,
    pub asset_class: Option<String>,
    pub exchange: Option<String>,
    pub quantity: String,
    pub acquired_at: i64,
    pub holding_start: String,
    pub sold_at: i64,
    pub tax_year: i32,
    pub proceeds: String,
    pub cost_basis: String,
    /// `short_term` or `long_term`.
    pub term: String,
    pub holding_days: i64,
    pub wash_applicable: bool,
    pub wash_disallowed: String,
    /// A loss under the wash-sale rule with units not yet matched to a replacement.
    pub wash_open: bool,
    pub wash_open_quantity: String,
    pub wash_open_loss: String,
    /// JSON array of {lot_id, quantity, disallowed_loss}.
    pub replacements: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
