//! A seller's sales into one state in one calendar month (yyyymm), for nexus thresholds.
//! Monthly buckets let every threshold period (calendar year, trailing 12 months, four quarters) be summed.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "state_revenue")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub entity_id: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub state: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub month: i32,
    pub sales_micros: i64,
    pub tx_count: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
