//! An x402 payment taken (or being taken): one per EIP-3009 authorization, so a nonce pays for one call.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "x402_payments")]
pub struct Model {
    /// SHA-256 hex of `network|asset|payer|nonce`, all lowercase.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub entity_id: String,
    pub payer: String,
    /// `pending` (claimed, being verified and settled) or `settled`.
    pub state: String,
    pub idempotency_key: Option<String>,
    /// The receipt header's value sent with the answer.
    pub receipt: Option<String>,
    pub created_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
