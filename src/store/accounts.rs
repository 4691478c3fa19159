//! Accounts, agents, API keys and sessions.

use sea_orm::{
    ColumnTrait, DbBackend, EntityTrait, FromQueryResult, PaginatorTrait, QueryFilter, QueryOrder, QueryResult, QuerySelect,
    TransactionTrait,
};

use super::entity::{agent, api_key, entity, network_profile, session, transaction};
use super::prepared::KEY_OWNERS;
use super::script::{Execute, Sql};
use super::{Store, StoreError};

/// Who a valid API key belongs to.
#[derive(Clone, Debug)]
pub struct KeyOwner {
    pub key_id: String,
    pub entity: entity::Model,
}

impl Store {
    /// Creates the account, its first agent, its first key and (when it joins the network) its first agent's
    /// network profile, with the feed's event, in one transaction. A taken email is `StoreError::Conflict` and writes
    /// nothing.
    pub async fn create_account(
        &self,
        account: entity::Model,
        first_agent: agent::Model,
        first_key: api_key::Model,
        profile: Option<network_profile::Model>,
    ) -> Result<(), StoreError> {
        let txn = self.db.begin().await?;
        entity::Entity::insert(entity::ActiveModel::from(account)).exec_without_returning(&txn).await?;
        agent::Entity::insert(agent::ActiveModel::from(first_agent)).exec_without_returning(&txn).await?;
        api_key::Entity::insert(api_key::ActiveModel::from(first_key)).exec_without_returning(&txn).await?;
        if let Some(p) = profile {
            Store::insert_profile(&txn, p).await?;
        }
        txn.commit().await?;
        Ok(())
    }

    pub async fn entity_by_email(&self, email: &str) -> Result<Option<entity::Model>, StoreError> {
        Ok(entity::Entity::find().filter(entity::Column::Email.eq(email)).one(&self.db).await?)
    }

    pub async fn entity_by_id(&self, id: &str) -> Result<Option<entity::Model>, StoreError> {
        Ok(entity::Entity::find_by_id(id.to_string()).one(&self.db).await?)
    }

    /// The owner of an unrevoked key with this SHA-256 (one query).
    pub async fn key_owner(&self, key_hash: &str) -> Result<Option<KeyOwner>, StoreError> {
        let found = api_key::Entity::find()
            .find_also_related(entity::Entity)
            .filter(api_key::Column::KeyHash.eq(key_hash))
            .filter(api_key::Column::RevokedAt.is_null())
            .one(&self.db)
            .await?;
        Ok(found.and_then(|(key, owner)| owner.map(|entity| KeyOwner { key_id: key.id, entity })))
    }

    /// The owners of those of these keys (by id) that are not revoked, in one query; read with [`Store::key_owners_from`].
    pub fn key_owners_sql<'a>(backend: DbBackend, key_ids: &[&'a str]) -> Sql<'a> {
        let mut sql = Sql::new(backend);
        sql.push(r#"SELECT "k"."id" AS "key_id", "e".* FROM "api_keys" AS "k" JOIN "entities" AS "e" ON "e"."id" = "k"."entity_id" WHERE "k"."id""#);
        sql.in_list(key_ids.iter().copied()).push(r#" AND "k"."revoked_at" IS NULL"#);
        sql.prepared(|| Execute::new(KEY_OWNERS.name).array(key_ids.iter().copied(), "text"));
        sql
    }

    /// The accounts with these ids, in one query (for jobs a per-call payment attributes to an account).
    pub fn entities_sql<'a>(backend: DbBackend, ids: &[&'a str]) -> Sql<'a> {
        let mut sql = Sql::new(backend);
        sql.push(r#"SELECT * FROM "entities" WHERE "id""#).in_list(ids.iter().copied());
        sql
    }

    pub fn key_owners_from(rows: &[QueryResult]) -> Result<Vec<KeyOwner>, StoreError> {
        rows.iter().map(|r| Ok(KeyOwner { key_id: r.try_get("", "key_id")?, entity: entity::Model::from_query_result(r, "")? })).collect()
    }

    /// The account's keys, oldest first, revoked ones included (they show `revoked_at`).
    pub async fn keys(&self, entity_id: &str) -> Result<Vec<api_key::Model>, StoreError> {
        Ok(api_key::Entity::find()
            .filter(api_key::Column::EntityId.eq(entity_id))
            .order_by_asc(api_key::Column::CreatedAt)
            .order_by_asc(api_key::Column::Id)
            .all(&self.db)
            .await?)
    }

    /// Revokes the account's live keys with this prefix; returns how many were revoked.
    pub async fn revoke_keys(&self, entity_id: &str, prefix: &str, now: i64) -> Result<u64, StoreError> {
        let res = api_key::Entity::update_many()
            .col_expr(api_key::Column::RevokedAt, now.into())
            .filter(api_key::Column::EntityId.eq(entity_id))
            .filter(api_key::Column::Prefix.eq(prefix))
            .filter(api_key::Column::RevokedAt.is_null())
            .exec(&self.db)
            .await?;
        Ok(res.rows_affected)
    }

    /// The account of an unexpired session token hash.
    pub async fn session_entity(&self, token_hash: &str, now: i64) -> Result<Option<entity::Model>, StoreError> {
        let Some(s) = session::Entity::find_by_id(token_hash.to_string()).filter(session::Column::ExpiresAt.gt(now)).one(&self.db).await?
        else {
            return Ok(None);
        };
        self.entity_by_id(&s.entity_id).await
    }

    pub async fn agents(&self, entity_id: &str) -> Result<Vec<agent::Model>, StoreError> {
        Ok(agent::Entity::find()
            .filter(agent::Column::EntityId.eq(entity_id))
            .order_by_asc(agent::Column::CreatedAt)
            .order_by_asc(agent::Column::Id)
            .all(&self.db)
            .await?)
    }

    pub async fn recent_transactions(&self, entity_id: &str, n: u64) -> Result<Vec<transaction::Model>, StoreError> {
        let rows = transaction::Entity::find()
            .filter(transaction::Column::EntityId.eq(entity_id))
            .order_by_desc(transaction::Column::CreatedAt)
            .limit(n)
            .all(&self.db)
            .await?;
        Ok(rows)
    }
}

impl Store {
    /// True when another account holds a key with this prefix (to answer 403 rather than 404).
    pub async fn prefix_taken_elsewhere(&self, entity_id: &str, prefix: &str) -> Result<bool, StoreError> {
        let n = api_key::Entity::find()
            .filter(api_key::Column::Prefix.eq(prefix))
            .filter(api_key::Column::EntityId.ne(entity_id))
            .count(&self.db)
            .await?;
        Ok(n > 0)
    }
}
