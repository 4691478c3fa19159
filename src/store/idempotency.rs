//! Idempotency-Key records. The first request with a key inserts an `in_progress` row (the primary key makes
//! that race-free across instances); a retry finds it and either waits, replays the stored response, or
//! reports a different body. The finished response is written in the same database transaction as the
//! ledger row, so a key never stands for a write that did not happen, nor a write for two keys.

use sea_orm::{ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, QueryFilter, Set};

use super::entity::idempotency::{self, Column};
use super::script::{Arg, Sql};
use super::{Store, StoreError};

pub const IN_PROGRESS: &str = "in_progress";
pub const DONE: &str = "done";
/// An in-progress claim older than this is taken to be abandoned (its instance died mid-request).
pub const STALE_CLAIM_MS: i64 = 60_000;

#[derive(Debug, PartialEq)]
pub enum Claim {
    /// This request owns the key; run it and then finish or abandon the key.
    Started,
    /// A request with the same key and body finished; here is its response.
    Replay { status: u16, body: String },
    /// The key was used with a different body.
    Mismatch,
    /// A request with the same key and body is still running.
    InProgress,
}

impl Store {
    pub async fn claim_idempotency_key(
        &self,
        entity_id: &str,
        key: &str,
        request_hash: &str,
        now: i64,
        ttl_ms: i64,
    ) -> Result<Claim, StoreError> {
        let row = idempotency::ActiveModel {
            entity_id: Set(entity_id.into()),
            key: Set(key.into()),
            request_hash: Set(request_hash.into()),
            state: Set(IN_PROGRESS.into()),
            status: Set(None),
            body: Set(None),
            created_at: Set(now),
            expires_at: Set(now + ttl_ms),
        };
        match idempotency::Entity::insert(row).exec_without_returning(&self.writer).await {
            Ok(_) => return Ok(Claim::Started),
            Err(e) => match StoreError::from(e) {
                StoreError::Conflict(_) => {}
                other => return Err(other),
            },
        }
        let Some(existing) = idempotency::Entity::find_by_id((entity_id.to_string(), key.to_string())).one(&self.writer).await? else {
            // Deleted between our insert and read (an abandoned attempt): the caller may try again.
            return Ok(Claim::InProgress);
        };
        let stale = existing.state == IN_PROGRESS && existing.created_at <= now - STALE_CLAIM_MS;
        if existing.expires_at <= now || stale {
            // An expired key, or an abandoned claim, starts afresh; the conditional update lets only one retry take it.
            let taken = idempotency::Entity::update_many()
                .col_expr(Column::RequestHash, request_hash.into())
                .col_expr(Column::State, IN_PROGRESS.into())
                .col_expr(Column::Status, sea_orm::sea_query::Expr::value(Option::<i32>::None))
                .col_expr(Column::Body, sea_orm::sea_query::Expr::value(Option::<String>::None))
                .col_expr(Column::CreatedAt, now.into())
                .col_expr(Column::ExpiresAt, (now + ttl_ms).into())
                .filter(Column::EntityId.eq(entity_id))
                .filter(Column::Key.eq(key))
                .filter(Column::CreatedAt.eq(existing.created_at))
                .filter(Column::State.eq(existing.state.as_str()))
                .exec(&self.writer)
                .await?;
            return Ok(if taken.rows_affected == 1 { Claim::Started } else { Claim::InProgress });
        }
        if existing.request_hash != request_hash {
            return Ok(Claim::Mismatch);
        }
        match (existing.state.as_str(), existing.status, existing.body) {
            (DONE, Some(status), Some(body)) => Ok(Claim::Replay { status: u16::try_from(status).unwrap_or(200), body }),
            _ => Ok(Claim::InProgress),
        }
    }

    /// Stores the response for a key; call inside the transaction that made the writes it reports.
    pub async fn finish_idempotency_key<C: ConnectionTrait>(
        conn: &C,
        entity_id: &str,
        key: &str,
        status: u16,
        body: &str,
    ) -> Result<(), StoreError> {
        conn.execute(Store::finish_idempotency_key_sql(conn.get_database_backend(), entity_id, key, status, body).statement()).await?;
        Ok(())
    }

    pub fn finish_idempotency_key_sql<'a>(
        backend: DbBackend,
        entity_id: &'a str,
        key: &'a str,
        status: u16,
        body: impl Into<Arg<'a>>,
    ) -> Sql<'a> {
        let mut sql = Sql::new(backend);
        sql.push(r#"UPDATE "idempotency_keys" SET "state" = "#)
            .arg(DONE)
            .push(r#", "status" = "#)
            .arg(i64::from(status))
            .push(r#", "body" = "#)
            .arg(body);
        sql.push(r#" WHERE "entity_id" = "#).arg(entity_id).push(r#" AND "key" = "#).arg(key);
        sql
    }

    /// Releases a key whose request failed, so that a corrected retry can use it.
    pub async fn abandon_idempotency_key(&self, entity_id: &str, key: &str) -> Result<(), StoreError> {
        idempotency::Entity::delete_many()
            .filter(Column::EntityId.eq(entity_id))
            .filter(Column::Key.eq(key))
            .filter(Column::State.eq(IN_PROGRESS))
            .exec(&self.writer)
            .await?;
        Ok(())
    }
}
