//! Linked wallets, and the accounts that stand for unlinked x402 payers.

use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};

use super::entity::{entity, wallet};
use super::{Store, StoreError};

/// What linking a wallet did.
#[derive(Debug, PartialEq)]
pub enum Linked {
    /// Linked now, or already linked to this account (its label and chain updated).
    Ok(wallet::Model),
    /// Another account holds the wallet.
    HeldElsewhere,
}

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
}
