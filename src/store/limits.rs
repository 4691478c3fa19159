//! Fixed-window counters kept in the database, so every instance sharing it counts the same calls.
//!
//! A busy limiter window is counted in leases: an instance reserves several units of a counter in
//! one upsert and hands them to its next calls one by one, so a hot window costs one database write
//! per lease instead of one per call. Units are reserved before they are used, so instances
//! together never grant more than the limit. Leases are only taken while the window is far from its
//! limit (more than `EXACT_TAIL` units left); near it, each call reserves exactly its own unit, so a
//! window that is used up is used up exactly, whichever instances the calls went to. Units an idle
//! instance still holds when the window ends are counted but unused: at most `MAX_LEASE` per instance
//! and window, always on the side of refusing early, never of granting more. Reservations of different
//! counters made at the same moment are written together (`group`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use sea_orm::{ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, FromQueryResult, QueryFilter};

use super::entity::counter::{self, Column};
use super::prepared::COUNTERS;
use super::script::Sql;
use super::{Store, StoreError};

/// Units below the limit within which every call reserves exactly one unit.
pub const EXACT_TAIL: i64 = 64;
/// The most units one lease reserves.
pub const MAX_LEASE: i64 = 16;

/// The units of each counter this process has reserved but not yet handed out, and a gate per counter so
/// that one caller at a time reserves more: callers that find the lease used up while a reservation is on its
/// way wait for it instead of each reserving a lease of their own (which would use up the window early).
#[derive(Default)]
pub struct Leases {
    leases: std::sync::Mutex<HashMap<String, Lease>>,
    gates: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

struct Lease {
    window: i64,
    next: i64,
    end: i64,
}

impl Leases {
    /// The next unit of the lease, if it has one left in this window; else the last unit reserved in it (0: none).
    fn take(&self, name: &str, window: i64) -> Result<i64, i64> {
        let mut m = self.leases.lock().unwrap_or_else(|e| e.into_inner());
        match m.get_mut(name) {
            Some(l) if l.window == window && l.next <= l.end => {
                l.next += 1;
                Ok(l.next - 1)
            }
            Some(l) if l.window == window => Err(l.end),
            _ => Err(0),
        }
    }

    fn put(&self, name: &str, lease: Lease) {
        let mut m = self.leases.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() > 100_000 {
            // Forgetting leases only wastes their units (refusing early), never grants more.
            m.clear();
        }
        m.insert(name.to_string(), lease);
    }

    fn gate(&self, name: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut g = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        if g.len() > 100_000 {
            // A forgotten gate lets two callers reserve at once: again only units wasted, never more granted.
            g.clear();
        }
        g.entry(name.to_string()).or_default().clone()
    }
}

/// Counter additions waiting to be written together, each answered with its count.
pub type CounterBatches = super::group::Group<CounterHit, Result<i64, StoreError>>;

/// One addition to a counter window (see [`Store::hit_counters`]).
pub struct CounterHit {
    pub name: String,
    pub window_start: i64,
    pub expires_at: i64,
    pub n: i64,
}

/// How many units to reserve when `remaining` were left at the last look.
pub fn lease_size(remaining: i64) -> i64 {
    if remaining > EXACT_TAIL {
        ((remaining - EXACT_TAIL) / 4).clamp(1, MAX_LEASE)
    } else {
        1
    }
}

impl Store {
    /// The next unit of counter `name` in the window starting at `window_start` (1 for the first call of the
    /// window): handed out from this process's lease, or reserved in the database. A unit above `limit`
    /// means the call is over the limit.
    pub async fn take_unit(&self, name: &str, window_start: i64, expires_at: i64, limit: i64) -> Result<i64, StoreError> {
        if let Ok(unit) = self.leases.take(name, window_start) {
            return Ok(unit);
        }
        let gate = self.leases.gate(name);
        let _one_at_a_time = gate.lock().await;
        let last_seen = match self.leases.take(name, window_start) {
            Ok(unit) => return Ok(unit), // reserved by the caller this one waited for
            Err(last) => last,
        };
        let size = lease_size(limit.saturating_sub(last_seen));
        let count = self.hit_counter_by(name, window_start, expires_at, size).await?;
        let first = count - size + 1;
        self.leases.put(name, Lease { window: window_start, next: first + 1, end: count });
        Ok(first)
    }

    /// Adds `n` to the counter and returns the new count, atomically. Concurrent calls are written together,
    /// as one upsert (see `group`).
    pub async fn hit_counter_by(&self, name: &str, window_start: i64, expires_at: i64, n: i64) -> Result<i64, StoreError> {
        let store = self.clone();
        let hit = CounterHit { name: name.to_string(), window_start, expires_at, n };
        let applied = self
            .counter_batches
            .submit(hit, move |hits, replies| {
                let store = store.clone();
                async move {
                    replies.send(match Store::hit_counters(&store.writer, &hits).await {
                        Ok(counts) => counts.into_iter().map(Ok).collect(),
                        Err(e) => hits.iter().map(|_| Err(e.clone())).collect(),
                    });
                }
            })
            .await;
        applied.unwrap_or_else(|| Err(StoreError::Other("the counter batch failed".into())))
    }

    /// Adds every hit inside `conn`'s transaction (see [`Store::hit_counters_sql`]) and returns, for each hit in
    /// the order given, the count just after it.
    pub async fn hit_counters<C: ConnectionTrait>(conn: &C, hits: &[CounterHit]) -> Result<Vec<i64>, StoreError> {
        let mut rows = Vec::new();
        for stmt in Store::hit_counters_sql(conn.get_database_backend(), hits) {
            rows.extend(counter::Model::find_by_statement(stmt.statement()).all(conn).await?);
        }
        Ok(Store::counts_after(hits, rows))
    }

    /// The upserts that add the hits: one per `ROWS_PER_STATEMENT` windows (hits on the same window summed
    /// first, windows in key order so that concurrent writers lock rows in one order), returning the windows.
    pub fn hit_counters_sql(backend: DbBackend, hits: &[CounterHit]) -> Vec<Sql<'static>> {
        let mut sums: BTreeMap<(&str, i64), (i64, i64)> = BTreeMap::new();
        for h in hits {
            let e = sums.entry((h.name.as_str(), h.window_start)).or_insert((0, h.expires_at));
            e.0 += h.n;
        }
        let rows = sums
            .into_iter()
            .map(|((name, window_start), (n, expires_at))| [name.to_string().into(), window_start.into(), n.into(), expires_at.into()])
            .collect();
        super::adding_upserts(backend, &COUNTERS, rows)
    }

    /// For each hit in the order given, the count just after it, from the windows the upserts returned.
    pub fn counts_after(hits: &[CounterHit], windows: Vec<counter::Model>) -> Vec<i64> {
        let finals: HashMap<(String, i64), i64> = windows.into_iter().map(|m| ((m.name, m.window_start), m.count)).collect();
        let additions: Vec<((String, i64), i64)> = hits.iter().map(|h| ((h.name.clone(), h.window_start), h.n)).collect();
        super::running_totals(&additions, &finals)
    }

    /// The current count of a window, without adding to it.
    pub async fn read_counter(&self, name: &str, window_start: i64) -> Result<i64, StoreError> {
        let row = counter::Entity::find_by_id((name.to_string(), window_start)).one(&self.db).await?;
        Ok(row.map_or(0, |r| r.count))
    }

    /// Drops every window of counter `name` (a successful login forgets the account's failures).
    pub async fn clear_counter(&self, name: &str) -> Result<u64, StoreError> {
        let res = counter::Entity::delete_many().filter(Column::Name.eq(name)).exec(&self.writer).await?;
        Ok(res.rows_affected)
    }

    /// Drops windows that ended before `now` (called now and then; counters are small).
    pub async fn prune_counters(&self, now: i64) -> Result<u64, StoreError> {
        let res = counter::Entity::delete_many().filter(Column::ExpiresAt.lt(now)).exec(&self.db).await?;
        Ok(res.rows_affected)
    }
}
