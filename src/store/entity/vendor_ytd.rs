//! Payments to one counterparty in one tax year, for the 1099 threshold.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "vendor_ytd")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub entity_id: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub counterparty_id: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub tax_year: i32,
    pub total_micros: i64,
    pub payments: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
