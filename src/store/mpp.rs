//! The MPP payments taken, and payments of either protocol that were taken but whose call could not be written.
//!
//! A claim row makes a challenge (and its Shared Payment Token) pay for one call across instances: its primary key
//! is the challenge id, and the token's hash is unique. A payment taken whose ledger row then fails is marked
//! `unrecorded`, keeping its receipt: a retry with the same payment takes that mark (one retry wins) and records
//! the call without charging again, and an operator can list what is left with `state = 'unrecorded'`.

use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

use super::entity::{mpp_payment, x402_payment};
use super::wallets::{PENDING, SETTLED};
use super::{Store, StoreError};

/// A payment taken whose call is not in the ledger.
pub const UNRECORDED: &str = "unrecorded";

impl Store {
    /// Claims a challenge and its token for one call: false when either paid before (or is being paid), on any instance.
    pub async fn claim_mpp_payment(&self, p: mpp_payment::Model) -> Result<bool, StoreError> {
        match mpp_payment::Entity::insert(mpp_payment::ActiveModel::from(p)).exec_without_returning(&self.writer).await {
            Ok(_) => Ok(true),
            Err(e) => match StoreError::from(e) {
                StoreError::Conflict(_) => Ok(false),
                other => Err(other),
            },
        }
    }

    /// Gives up a claim whose payment was refused or not taken.
    pub async fn release_mpp_payment(&self, id: &str) -> Result<(), StoreError> {
        mpp_payment::Entity::delete_many()
            .filter(mpp_payment::Column::Id.eq(id))
            .filter(mpp_payment::Column::State.eq(PENDING))
            .exec(&self.writer)
            .await?;
        Ok(())
    }

    /// Marks a claim charged (or, from `unrecorded`, charged and being recorded again), with its receipt.
    pub async fn settle_mpp_payment(&self, id: &str, receipt: &str) -> Result<(), StoreError> {
        mpp_payment::Entity::update_many()
            .col_expr(mpp_payment::Column::State, SETTLED.into())
            .col_expr(mpp_payment::Column::Receipt, Some(receipt.to_string()).into())
            .filter(mpp_payment::Column::Id.eq(id))
            .exec(&self.writer)
            .await?;
        Ok(())
    }

    /// The receipt of the MPP payment that the account's call with this Idempotency-Key made.
    pub async fn mpp_receipt(&self, entity_id: &str, idempotency_key: &str) -> Result<Option<String>, StoreError> {
        Ok(mpp_payment::Entity::find()
            .filter(mpp_payment::Column::EntityId.eq(entity_id))
            .filter(mpp_payment::Column::IdempotencyKey.eq(idempotency_key))
            .filter(mpp_payment::Column::State.eq(SETTLED))
            .one(&self.writer)
            .await?
            .and_then(|p| p.receipt))
    }

    /// Marks a payment taken whose call could not be written, so that a retry with it can record the call.
    pub async fn mark_unrecorded(&self, payment: Taken<'_>) -> Result<(), StoreError> {
        match payment {
            Taken::X402(id) => {
                x402_payment::Entity::update_many()
                    .col_expr(x402_payment::Column::State, UNRECORDED.into())
                    .filter(x402_payment::Column::Id.eq(id))
                    .exec(&self.writer)
                    .await?;
            }
            Taken::Mpp(id) => {
                mpp_payment::Entity::update_many()
                    .col_expr(mpp_payment::Column::State, UNRECORDED.into())
                    .filter(mpp_payment::Column::Id.eq(id))
                    .exec(&self.writer)
                    .await?;
            }
        }
        Ok(())
    }

    /// Takes an `unrecorded` payment back to record its call: its receipt when this caller won it (one of any number
    /// of retries, on any instance), `None` when the payment is not unrecorded.
    pub async fn take_unrecorded(&self, payment: Taken<'_>) -> Result<Option<String>, StoreError> {
        let (taken, receipt) = match payment {
            Taken::X402(id) => {
                let r = x402_payment::Entity::update_many()
                    .col_expr(x402_payment::Column::State, SETTLED.into())
                    .filter(x402_payment::Column::Id.eq(id))
                    .filter(x402_payment::Column::State.eq(UNRECORDED))
                    .exec(&self.writer)
                    .await?;
                (r.rows_affected == 1, x402_payment::Entity::find_by_id(id.to_string()).one(&self.writer).await?.and_then(|p| p.receipt))
            }
            Taken::Mpp(id) => {
                let r = mpp_payment::Entity::update_many()
                    .col_expr(mpp_payment::Column::State, SETTLED.into())
                    .filter(mpp_payment::Column::Id.eq(id))
                    .filter(mpp_payment::Column::State.eq(UNRECORDED))
                    .exec(&self.writer)
                    .await?;
                (r.rows_affected == 1, mpp_payment::Entity::find_by_id(id.to_string()).one(&self.writer).await?.and_then(|p| p.receipt))
            }
        };
        Ok(if taken { receipt } else { None })
    }
}

/// A payment taken, by its claim's id.
#[derive(Clone, Copy, Debug)]
pub enum Taken<'a> {
    X402(&'a str),
    Mpp(&'a str),
}
