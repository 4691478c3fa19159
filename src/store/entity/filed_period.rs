//! A filing period an account has marked filed for a state: its label (`2026-03`, `2026-Q1`, `2026`) and its days
//! (yyyymmdd, inclusive). A row dated inside it may no longer be voided.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "filed_periods")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub entity_id: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub state: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub period: String,
    pub first_day: i32,
    pub last_day: i32,
    pub filed_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
