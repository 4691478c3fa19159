//! A wallet linked to an account: x402 payments it signs are recorded to that account.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "wallets")]
pub struct Model {
    /// Lowercase `0x` and 40 hex digits.
    #[sea_orm(primary_key, auto_increment = false)]
    pub address: String,
    pub entity_id: String,
    pub label: Option<String>,
    pub chain: String,
    pub created_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
