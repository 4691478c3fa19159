//! Fixed-window counters kept in the database, so every instance sharing it counts the same calls.

use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, Set};

use super::entity::counter::{self, Column};
use super::{Store, StoreError};

impl Store {
    /// Adds one to the counter `name` for the window starting at `window_start` and returns the new count.
    /// A single INSERT … ON CONFLICT DO UPDATE … RETURNING, atomic on SQLite and PostgreSQL alike.
    pub async fn hit_counter(&self, name: &str, window_start: i64, expires_at: i64) -> Result<i64, StoreError> {
        let row = counter::ActiveModel { name: Set(name.to_string()), window_start: Set(window_start), count: Set(1), expires_at: Set(expires_at) };
        let model = counter::Entity::insert(row)
            .on_conflict(OnConflict::columns([Column::Name, Column::WindowStart]).value(Column::Count, Expr::col((counter::Entity, Column::Count)).add(1)).to_owned())
            .exec_with_returning(&self.db)
            .await?;
        Ok(model.count)
    }

    /// The current count of a window, without adding to it.
    pub async fn read_counter(&self, name: &str, window_start: i64) -> Result<i64, StoreError> {
        let row = counter::Entity::find_by_id((name.to_string(), window_start)).one(&self.db).await?;
        Ok(row.map_or(0, |r| r.count))
    }

    /// Drops windows that ended before `now` (called now and then; counters are small).
    pub async fn prune_counters(&self, now: i64) -> Result<u64, StoreError> {
        let res = counter::Entity::delete_many().filter(Column::ExpiresAt.lt(now)).exec(&self.db).await?;
        Ok(res.rows_affected)
    }
}
