//! Linked wallets, the accounts that stand for unlinked x402 payers, and the x402 payments taken.

use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};

use super::entity::{entity, wallet, x402_payment};
use super::{Store, StoreError};

/// What linking a wallet did.
#[derive(Debug, PartialEq)]
pub enum Linked {
    /// Linked now, or already linked to this account (its label and chain updated).
    Ok(wallet::Model),
    /// Another account holds the wallet.
    HeldElsewhere,
}

pub const PENDING: &str = "pending";
pub const SETTLED: &str = "settled";

impl Store {
    /// Links `w.address` (lowercase) to `w.entity_id`; the primary key keeps one account per wallet across instances.
    pub async fn link_wallet(&self, w: wallet::Model) -> Result<Linked, StoreError> {
        match wallet::Entity::insert(wallet::ActiveModel::from(w.clone())).exec_without_returning(&self.writer).await {
            Ok(_) => return Ok(Linked::Ok(w)),
            Err(e) => match StoreError::from(e) {
                StoreError::Conflict(_) => {}
                other => return Err(other),
            },
        }
        let Some(existing) = wallet::Entity::find_by_id(w.address.clone()).one(&self.writer).await? else {
            return Ok(Linked::HeldElsewhere);
        };
        if existing.entity_id != w.entity_id {
            return Ok(Linked::HeldElsewhere);
        }
        let updated = wallet::Model { created_at: existing.created_at, ..w };
        wallet::Entity::update(wallet::ActiveModel {
            address: Set(updated.address.clone()),
            label: Set(updated.label.clone()),
            chain: Set(updated.chain.clone()),
            ..Default::default()
        })
        .filter(wallet::Column::EntityId.eq(updated.entity_id.as_str()))
        .exec(&self.writer)
        .await?;
        Ok(Linked::Ok(updated))
    }

    /// Unlinks the account's wallet; false when the account holds no such wallet.
    pub async fn unlink_wallet(&self, entity_id: &str, address: &str) -> Result<bool, StoreError> {
        let r = wallet::Entity::delete_many()
            .filter(wallet::Column::Address.eq(address))
            .filter(wallet::Column::EntityId.eq(entity_id))
            .exec(&self.writer)
            .await?;
        Ok(r.rows_affected > 0)
    }

    pub async fn wallets(&self, entity_id: &str) -> Result<Vec<wallet::Model>, StoreError> {
        Ok(wallet::Entity::find()
            .filter(wallet::Column::EntityId.eq(entity_id))
            .order_by_asc(wallet::Column::CreatedAt)
            .order_by_asc(wallet::Column::Address)
            .all(&self.db)
            .await?)
    }

    /// The account a wallet (lowercase) is linked to.
    pub async fn wallet_owner(&self, address: &str) -> Result<Option<String>, StoreError> {
        Ok(wallet::Entity::find_by_id(address.to_string()).one(&self.writer).await?.map(|w| w.entity_id))
    }

    /// The account standing for an unlinked payer wallet, created on its first payment (a second instance racing to
    /// create it meets the primary key and uses the row the first wrote).
    pub async fn payer_account(&self, account: entity::Model) -> Result<String, StoreError> {
        if entity::Entity::find_by_id(account.id.clone()).one(&self.writer).await?.is_some() {
            return Ok(account.id);
        }
        match entity::Entity::insert(entity::ActiveModel::from(account.clone())).exec_without_returning(&self.writer).await {
            Ok(_) => Ok(account.id),
            Err(e) => match StoreError::from(e) {
                StoreError::Conflict(_) => Ok(account.id),
                other => Err(other),
            },
        }
    }

    /// Claims an authorization for one call: false when it was claimed before (a replayed payment), on any instance.
    pub async fn claim_x402_payment(&self, p: x402_payment::Model) -> Result<bool, StoreError> {
        match x402_payment::Entity::insert(x402_payment::ActiveModel::from(p)).exec_without_returning(&self.writer).await {
            Ok(_) => Ok(true),
            Err(e) => match StoreError::from(e) {
                StoreError::Conflict(_) => Ok(false),
                other => Err(other),
            },
        }
    }

    /// Gives up a claim whose payment was refused or not settled, so that nothing stands for it.
    pub async fn release_x402_payment(&self, id: &str) -> Result<(), StoreError> {
        x402_payment::Entity::delete_many()
            .filter(x402_payment::Column::Id.eq(id))
            .filter(x402_payment::Column::State.eq(PENDING))
            .exec(&self.writer)
            .await?;
        Ok(())
    }

    /// Marks a claim settled, with the receipt sent to the caller.
    pub async fn settle_x402_payment(&self, id: &str, receipt: &str) -> Result<(), StoreError> {
        x402_payment::Entity::update_many()
            .col_expr(x402_payment::Column::State, SETTLED.into())
            .col_expr(x402_payment::Column::Receipt, Some(receipt.to_string()).into())
            .filter(x402_payment::Column::Id.eq(id))
            .exec(&self.writer)
            .await?;
        Ok(())
    }

    /// The receipt of the settled payment that the account's call with this Idempotency-Key made.
    pub async fn x402_receipt(&self, entity_id: &str, idempotency_key: &str) -> Result<Option<String>, StoreError> {
        Ok(x402_payment::Entity::find()
            .filter(x402_payment::Column::EntityId.eq(entity_id))
            .filter(x402_payment::Column::IdempotencyKey.eq(idempotency_key))
            .filter(x402_payment::Column::State.eq(SETTLED))
            .one(&self.writer)
            .await?
            .and_then(|p| p.receipt))
    }
}
