//! A webhook nonce a partner has used: the primary key makes it single use on every instance.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "partner_nonces")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub partner_id: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub nonce: String,
    pub used_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
