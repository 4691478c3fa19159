//! A call paid per call (x402, MPP): its payment's single-use claim, and the receipt sent with its answer.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "paid_calls")]
pub struct Model {
    /// The protocol, `:`, and its id of the payment (x402: SHA-256 hex of network, asset, payer and nonce; MPP: the
    /// challenge id).
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// `x402` or `mpp`.
    pub protocol: String,
    /// x402: the paying wallet, lowercase.
    pub payer: Option<String>,
    /// MPP: SHA-256 hex of the Shared Payment Token; unique, so that a token pays once.
    pub token_hash: Option<String>,
    pub entity_id: String,
    /// `pending` (claimed, being taken), `settled` (taken) or `unrecorded` (taken, its call not written).
    pub state: String,
    pub idempotency_key: Option<String>,
    /// The receipt header's value sent with the answer.
    pub receipt: Option<String>,
    pub created_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
