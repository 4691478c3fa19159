//! Fixed-window counters kept in the database, so every instance sharing it counts the same calls.
//!
//! A busy limiter window is counted in leases: an instance reserves several units of a counter in
//! one upsert and hands them to its next calls one by one, so a hot window costs one database write
//! per lease instead of one per call. Units are reserved before they are used, so instances
//! together never grant more than the limit. Leases are only taken while the window is far from its
//! limit (more than `EXACT_TAIL` units left); near it, each call reserves exactly its own unit, so a
//! window that is used up is used up exactly, whichever instances the calls went to. Units an idle
//! instance still holds when the window ends are counted but unused: at most `MAX_LEASE` per instance
//! and window, always on the side of refusing early, never of granting more.

use std::collections::HashMap;

use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, Set};

use super::entity::counter::{self, Column};
use super::{Store, StoreError};

/// Units below the limit within which every call reserves exactly one unit.
pub const EXACT_TAIL: i64 = 64;
/// The most units one lease reserves.
pub const MAX_LEASE: i64 = 16;

/// The units of each counter this process has reserved but not yet handed out.
#[derive(Default)]
pub struct Leases(std::sync::Mutex<HashMap<String, Lease>>);

struct Lease {
    window: i64,
    next: i64,
    end: i64,
}

/// How many units to reserve when `remaining` were left at the last look.
pub fn lease_size(remaining: i64) -> i64 {
    if remaining > EXACT_TAIL { ((remaining - EXACT_TAIL) / 4).clamp(1, MAX_LEASE) } else { 1 }
}

impl Store {
    /// The next unit of counter `name` in the window starting at `window_start` (1 for the first call of the
    /// window): handed out from this process's lease, or reserved in the database. A unit above `limit`
    /// means the call is over the limit.
    pub async fn take_unit(&self, name: &str, window_start: i64, expires_at: i64, limit: i64) -> Result<i64, StoreError> {
        let last_seen = {
            let mut m = self.leases.0.lock().unwrap_or_else(|e| e.into_inner());
            match m.get_mut(name) {
                Some(l) if l.window == window_start && l.next <= l.end => {
                    l.next += 1;
                    return Ok(l.next - 1);
                }
                Some(l) if l.window == window_start => l.end,
                _ => 0,
            }
        };
        let size = lease_size(limit.saturating_sub(last_seen));
        let count = self.hit_counter_by(name, window_start, expires_at, size).await?;
        let first = count - size + 1;
        let mut m = self.leases.0.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() > 100_000 {
            // Forgetting leases only wastes their units (refusing early), never grants more.
            m.clear();
        }
        let keep_theirs = m.get(name).is_some_and(|l| l.window == window_start && l.next <= l.end);
        if !keep_theirs {
            m.insert(name.to_string(), Lease { window: window_start, next: first + 1, end: count });
        }
        Ok(first)
    }

    /// Adds one to the counter `name` for the window starting at `window_start` and returns the new count.
    /// A single INSERT … ON CONFLICT DO UPDATE … RETURNING, atomic on SQLite and PostgreSQL alike.
    pub async fn hit_counter(&self, name: &str, window_start: i64, expires_at: i64) -> Result<i64, StoreError> {
        self.hit_counter_by(name, window_start, expires_at, 1).await
    }

    /// Adds `n` to the counter and returns the new count, atomically.
    pub async fn hit_counter_by(&self, name: &str, window_start: i64, expires_at: i64, n: i64) -> Result<i64, StoreError> {
        let row = counter::ActiveModel { name: Set(name.to_string()), window_start: Set(window_start), count: Set(n), expires_at: Set(expires_at) };
        let model = counter::Entity::insert(row)
            .on_conflict(OnConflict::columns([Column::Name, Column::WindowStart]).value(Column::Count, Expr::col((counter::Entity, Column::Count)).add(n)).to_owned())
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
