//! A dictionary the ledger's packed calculate bodies were compressed against, kept as long as rows name it.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "ledger_dictionaries")]
pub struct Model {
    /// The first 32 hex digits of the content's SHA-256: the same content gets the same id on every instance.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub created_at: i64,
    pub content: Vec<u8>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
