//! The calls paid per call (x402, MPP): one claim row per payment, and payments taken whose call could not be written.
//!
//! A claim row makes a payment (an x402 authorization's nonce, an MPP challenge and its Shared Payment Token) pay
//! for one call across instances: its primary key is the protocol's id of the payment, and an MPP token's hash is
//! unique. A payment taken whose ledger row then fails is marked `unrecorded`, keeping its receipt: a retry with the
//! same payment takes that mark (one retry wins) and records the call without charging again, and an operator can
//! list what is left with `state = 'unrecorded'`.

use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

use super::entity::paid_call;
use super::{Store, StoreError};

/// Claimed, being taken.
pub const PENDING: &str = "pending";
/// Taken, its receipt kept.
pub const SETTLED: &str = "settled";
/// Taken, its call not in the ledger.
pub const UNRECORDED: &str = "unrecorded";

impl Store {
    /// Claims a payment for one call: false when it paid before (or is being paid), on any instance.
    pub async fn claim_paid_call(&self, claim: paid_call::Model) -> Result<bool, StoreError> {
        match paid_call::Entity::insert(paid_call::ActiveModel::from(claim)).exec_without_returning(&self.writer).await {
            Ok(_) => Ok(true),
            Err(e) => match StoreError::from(e) {
                StoreError::Conflict(_) => Ok(false),
                other => Err(other),
            },
        }
    }

    /// Gives up a claim whose payment was refused or not taken, so that nothing stands for it.
    pub async fn release_paid_call(&self, id: &str) -> Result<(), StoreError> {
        paid_call::Entity::delete_many()
            .filter(paid_call::Column::Id.eq(id))
            .filter(paid_call::Column::State.eq(PENDING))
            .exec(&self.writer)
            .await?;
        Ok(())
    }

    /// Marks a claim taken (or, from `unrecorded`, taken and being recorded again), with its receipt.
    pub async fn settle_paid_call(&self, id: &str, receipt: &str) -> Result<(), StoreError> {
        paid_call::Entity::update_many()
            .col_expr(paid_call::Column::State, SETTLED.into())
            .col_expr(paid_call::Column::Receipt, Some(receipt.to_string()).into())
            .filter(paid_call::Column::Id.eq(id))
            .exec(&self.writer)
            .await?;
        Ok(())
    }

    /// The receipt of the payment of `protocol` that the account's call with this Idempotency-Key made.
    pub async fn paid_call_receipt(&self, protocol: &str, entity_id: &str, idempotency_key: &str) -> Result<Option<String>, StoreError> {
        Ok(paid_call::Entity::find()
            .filter(paid_call::Column::EntityId.eq(entity_id))
            .filter(paid_call::Column::IdempotencyKey.eq(idempotency_key))
            .filter(paid_call::Column::Protocol.eq(protocol))
            .filter(paid_call::Column::State.eq(SETTLED))
            .one(&self.writer)
            .await?
            .and_then(|p| p.receipt))
    }

    /// Marks a payment taken whose call could not be written, so that a retry with it can record the call.
    pub async fn mark_unrecorded(&self, id: &str) -> Result<(), StoreError> {
        paid_call::Entity::update_many()
            .col_expr(paid_call::Column::State, UNRECORDED.into())
            .filter(paid_call::Column::Id.eq(id))
            .exec(&self.writer)
            .await?;
        Ok(())
    }

    /// Takes an `unrecorded` payment back to record its call: its receipt when this caller won it (one of any number
    /// of retries, on any instance), `None` when the payment is not unrecorded.
    pub async fn take_unrecorded(&self, id: &str) -> Result<Option<String>, StoreError> {
        let won = paid_call::Entity::update_many()
            .col_expr(paid_call::Column::State, SETTLED.into())
            .filter(paid_call::Column::Id.eq(id))
            .filter(paid_call::Column::State.eq(UNRECORDED))
            .exec(&self.writer)
            .await?
            .rows_affected
            == 1;
        if !won {
            return Ok(None);
        }
        Ok(paid_call::Entity::find_by_id(id.to_string()).one(&self.writer).await?.and_then(|p| p.receipt))
    }
}
