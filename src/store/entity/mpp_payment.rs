//! An MPP payment taken (or being taken): one per challenge, and one per Shared Payment Token.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "mpp_payments")]
pub struct Model {
    /// The challenge id.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// SHA-256 hex of the Shared Payment Token.
    pub spt_hash: String,
    pub entity_id: String,
    /// `pending` (claimed, being charged), `settled` (charged) or `unrecorded` (charged, its call not written).
    pub state: String,
    pub idempotency_key: Option<String>,
    /// The Payment-Receipt value sent with the answer.
    pub receipt: Option<String>,
    pub created_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
