//! Storage: sea-orm over SQLite (embedded default) or PostgreSQL. Knows nothing of tax rules:
//! it keeps accounts, keys, the ledger, counters, nexus settings and idempotency records.

pub mod accounts;
pub mod billing;
pub mod entity;
pub mod gains;
pub mod group;
pub mod idempotency;
pub mod ledger;
pub mod limits;
pub mod network;
pub mod nexus;
pub mod paid_calls;
pub mod partners;
pub mod prepared;
pub mod reports;
pub mod script;
pub mod wal;
pub mod wallets;

use std::time::Duration;

use levy_migrations::{Migrator, MigratorTrait};
use sea_orm::{
    ActiveModelBehavior, ActiveModelTrait, ConnectOptions, ConnectionTrait, Database, DatabaseConnection, DbBackend, DbErr, EntityTrait,
    IntoActiveModel, SqlErr, Statement,
};

/// What the API needs to know about a storage failure.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum StoreError {
    #[error("database unavailable: {0}")]
    Unavailable(String),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("database error: {0}")]
    Other(String),
}

/// `From<StoreError>` and `From<DbErr>` for a domain's refusal `$t` whose `Store` variant holds a storage failure.
#[macro_export]
macro_rules! store_failure {
    ($t:ident) => {
        impl From<$crate::store::StoreError> for $t {
            fn from(e: $crate::store::StoreError) -> Self {
                $t::Store(e)
            }
        }
        impl From<sea_orm::DbErr> for $t {
            fn from(e: sea_orm::DbErr) -> Self {
                $t::Store(e.into())
            }
        }
    };
}

impl From<DbErr> for StoreError {
    fn from(e: DbErr) -> Self {
        if matches!(e.sql_err(), Some(SqlErr::UniqueConstraintViolation(_))) {
            return StoreError::Conflict(e.to_string());
        }
        match &e {
            DbErr::Conn(_) | DbErr::ConnectionAcquire(_) => StoreError::Unavailable(e.to_string()),
            DbErr::Exec(sea_orm::RuntimeErr::SqlxError(sqlx_err)) | DbErr::Query(sea_orm::RuntimeErr::SqlxError(sqlx_err))
                if is_connection_error(sqlx_err) =>
            {
                StoreError::Unavailable(e.to_string())
            }
            _ => StoreError::Other(e.to_string()),
        }
    }
}

/// A failure to reach the database, rather than of the statement: the connection's, SQLite unable to write, or
/// on PostgreSQL a server refusing work (SQLSTATE class 08, connection exception; 53, insufficient resources,
/// such as too many connections; 57P, a server shutting down or starting, or a connection ended by an
/// administrator).
fn is_connection_error(e: &sea_orm::sqlx::Error) -> bool {
    use sea_orm::sqlx::Error as E;
    match e {
        E::Io(_) | E::PoolTimedOut | E::PoolClosed | E::WorkerCrashed | E::Tls(_) => true,
        E::Database(d) if d.try_downcast_ref::<sea_orm::sqlx::postgres::PgDatabaseError>().is_some() => {
            d.code().is_some_and(|c| c.starts_with("08") || c.starts_with("53") || c.starts_with("57P"))
        }
        // SQLite's primary codes (the low byte of an extended one) for a database that cannot take the write now:
        // BUSY 5, LOCKED 6, READONLY 8, IOERR 10, FULL 13, CANTOPEN 14.
        E::Database(d) if d.try_downcast_ref::<sea_orm::sqlx::sqlite::SqliteError>().is_some() => {
            d.code().and_then(|c| c.parse::<i32>().ok()).is_some_and(|c| matches!(c & 0xff, 5 | 6 | 8 | 10 | 13 | 14))
        }
        _ => false,
    }
}

/// Rows per multi-row statement: 500 rows of the widest table (transactions, 16 columns) bind 8,000 parameters, within
/// SQLite's 32,766 and PostgreSQL's 65,535 (scripts on PostgreSQL write their values into the text instead).
pub const ROWS_PER_STATEMENT: usize = 500;

/// A decimal the store keeps as text (amounts, quantities, rates: it writes only valid ones; 0 for anything else).
pub fn decimal(text: &str) -> rust_decimal::Decimal {
    text.parse().unwrap_or_default()
}

/// For additions applied together as one sum per key: the running total just after each addition, in the
/// order given, from each key's total after all of them. What applying them one by one would have seen.
pub fn running_totals<K: std::hash::Hash + Eq + Clone>(additions: &[(K, i64)], finals: &std::collections::HashMap<K, i64>) -> Vec<i64> {
    let mut later: std::collections::HashMap<K, i64> = std::collections::HashMap::new();
    let mut out = vec![0; additions.len()];
    for (i, (key, n)) in additions.iter().enumerate().rev() {
        let after_this = later.entry(key.clone()).or_insert(0);
        out[i] = finals.get(key).copied().unwrap_or(0) - *after_this;
        *after_this += n;
    }
    out
}

/// Additions summed per key, keys in order (so that concurrent writers take their rows in one order): each key
/// with its sum and the number of additions in it.
pub fn sums_per_key<K: Ord>(additions: impl IntoIterator<Item = (K, i64)>) -> Vec<(K, (i64, i64))> {
    let mut sums: std::collections::BTreeMap<K, (i64, i64)> = std::collections::BTreeMap::new();
    for (key, n) in additions {
        let e = sums.entry(key).or_insert((0, 0));
        e.0 += n;
        e.1 += 1;
    }
    sums.into_iter().collect()
}

/// Inserts of `rows` into `table`, `ROWS_PER_STATEMENT` per statement, written by hand (see `script`): each row
/// holds a value per column of `columns`, and each statement ends with `tail` (a conflict clause, RETURNING).
pub fn inserts<'a, const N: usize>(
    backend: DbBackend,
    table: &str,
    columns: [&str; N],
    rows: Vec<[script::Arg<'a>; N]>,
    tail: &str,
) -> Vec<script::Sql<'a>> {
    let head = format!("INSERT INTO \"{table}\" ({}) VALUES ", quoted(&columns));
    let mut out = Vec::new();
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let mut sql = script::Sql::new(backend);
        sql.push(&head);
        for (i, row) in rows.by_ref().take(ROWS_PER_STATEMENT).enumerate() {
            if i > 0 {
                sql.push(", ");
            }
            sql.tuple(row);
        }
        sql.push(tail);
        out.push(sql);
    }
    out
}

/// Upserts of `rows` into `spec.table` (see [`inserts`]). Of its columns, the first `keys` are the conflict key, the
/// next `added` are added to the stored ones when the key is already stored (`table.column + excluded.column`:
/// read-modify-write in the database, so concurrent writers lose nothing), and the rest are written only with a
/// new row. With `returning`, each statement returns its rows as stored. On PostgreSQL a script runs them as the
/// upsert prepared on the connection (`prepared`), its values as arrays in the order of `rows`.
pub fn adding_upserts<'a, const N: usize>(
    backend: DbBackend,
    spec: &prepared::Upsert,
    rows: Vec<[script::Arg<'a>; N]>,
) -> Vec<script::Sql<'a>> {
    debug_assert_eq!(spec.columns.len(), N);
    let tail = format!(" {}", spec.conflict());
    let columns: [&str; N] = std::array::from_fn(|i| spec.columns[i].0);
    if backend != DbBackend::Postgres || rows.len() > ROWS_PER_STATEMENT {
        return inserts(backend, spec.table, columns, rows, &tail);
    }
    let mut execute = script::Execute::new(&spec.name());
    for (i, (_, element)) in spec.columns.iter().enumerate() {
        execute = execute.array(rows.iter().map(|r| r[i].clone()), element);
    }
    let mut out = inserts(backend, spec.table, columns, rows, &tail);
    if let Some(first) = out.first_mut() {
        first.prepared(|| execute);
    }
    out
}

/// How long a PostgreSQL connection may sit in the pool before it is pinged on its way out of it.
const PING_AFTER_IDLE: Duration = Duration::from_secs(1);

/// PostgreSQL's pool: 16 connections, opened lazily, with `search_path` set to `schema` if given.
///
/// sqlx pings a connection when it goes back to the pool, and (as sea-orm configures it) again when it is taken
/// out: a round trip before every query, which on the keyed load was about 0.2 ms of each ledger batch. Here a
/// connection is pinged on the way out only after it sat idle for [`PING_AFTER_IDLE`]: one used within that time
/// answered its last query and passed the ping on its return, and one the server dropped meanwhile is thus
/// found out before a request uses it.
fn postgres_pool(url: &str, schema: Option<&str>) -> Result<DatabaseConnection, StoreError> {
    use sea_orm::sqlx::postgres::{PgConnectOptions, PgPoolOptions};
    use sea_orm::sqlx::{ConnectOptions as _, Connection as _};
    let mut connect: PgConnectOptions = url.parse().map_err(|e| StoreError::Unavailable(format!("invalid database URL: {e}")))?;
    connect = connect.disable_statement_logging();
    if let Some(schema) = schema {
        connect = connect.options([("search_path", format!("\"{}\"", schema.replace('"', "\"\"")))]);
    }
    let pool = PgPoolOptions::new()
        .max_connections(16)
        .min_connections(0)
        .acquire_timeout(Duration::from_secs(3))
        .test_before_acquire(false)
        .before_acquire(|conn, meta| {
            Box::pin(async move {
                if meta.idle_for >= PING_AFTER_IDLE {
                    conn.ping().await?;
                }
                Ok(true)
            })
        })
        .connect_lazy_with(connect);
    Ok(sea_orm::SqlxPostgresConnector::from_sqlx_postgres_pool(pool))
}

/// Identifiers, double-quoted and separated by commas.
pub(crate) fn quoted(names: &[&str]) -> String {
    names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
}

/// A pool's connections at one moment.
pub struct PoolReading {
    /// `main`, or `writer` (SQLite's writer pool of one).
    pub pool: &'static str,
    pub in_use: i64,
    pub idle: i64,
}

#[derive(Clone)]
pub struct Store {
    /// Reads, and writes that are not on a hot path.
    pub db: DatabaseConnection,
    /// Write transactions on a hot path: the ledger batches, limiter counters, idempotency keys, trades.
    /// On SQLite, which takes one writer at a time, this is a pool of one connection, so writers queue here
    /// in order instead of in SQLite's busy handler (which sleeps and retries); on PostgreSQL it is `db`.
    /// Code holding a transaction on it must not wait for another of its connections.
    pub writer: DatabaseConnection,
    /// Limiter units this process has reserved (see `limits`).
    pub leases: std::sync::Arc<limits::Leases>,
    /// Limiter reservations waiting to be written together (see `limits`).
    pub counter_batches: std::sync::Arc<limits::CounterBatches>,
    /// A SQLite file's log checkpoints, made in the background (see `wal`).
    pub checkpoints: Option<std::sync::Arc<wal::Checkpoints>>,
}

impl Store {
    /// Writes a new row, through `conn` (the pool, or a transaction).
    pub async fn insert<C: ConnectionTrait, A: ActiveModelTrait + ActiveModelBehavior + Send>(
        conn: &C,
        row: impl IntoActiveModel<A>,
    ) -> Result<(), StoreError>
    where
        <A::Entity as EntityTrait>::Model: IntoActiveModel<A>,
    {
        <A::Entity as EntityTrait>::insert(row.into_active_model()).exec_without_returning(conn).await?;
        Ok(())
    }

    /// Writes every column of a row that exists, through `conn`.
    pub async fn save<C: ConnectionTrait, A: ActiveModelTrait + ActiveModelBehavior + Send>(
        conn: &C,
        row: impl IntoActiveModel<A>,
    ) -> Result<(), StoreError>
    where
        <A::Entity as EntityTrait>::Model: IntoActiveModel<A>,
    {
        row.into_active_model().reset_all().update(conn).await?;
        Ok(())
    }

    /// Connects (lazily, so a database that is down at a request answers 503 rather than hanging),
    /// switching SQLite to WAL.
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        Store::connect_in_schema(url, None).await
    }

    /// As [`Store::connect`], with PostgreSQL's search_path set to `schema` (tests isolate runs this way).
    pub async fn connect_in_schema(url: &str, schema: Option<&str>) -> Result<Store, StoreError> {
        // A SQLite file: its directory, made if need be; its log, checkpointed in the background (`wal`).
        let file = wal::sqlite_file(url);
        if let Some(dir) = file.as_deref().and_then(std::path::Path::parent) {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|e| StoreError::Unavailable(format!("cannot create {}: {e}", dir.display())))?;
            }
        }
        let log = file.as_ref().map(|f| {
            let mut log = f.clone().into_os_string();
            log.push("-wal");
            std::path::PathBuf::from(log)
        });
        let sqlite = url.starts_with("sqlite");
        // SQLite's pools (PostgreSQL's is `postgres_pool`).
        let options = |max_connections: u32, autocheckpoint: u32| {
            let mut opt = ConnectOptions::new(url.to_string());
            opt.max_connections(max_connections)
                .min_connections(0)
                .connect_timeout(Duration::from_secs(3))
                .acquire_timeout(Duration::from_secs(if max_connections == 1 { 10 } else { 3 }))
                .connect_lazy(true)
                // A SQLite file cannot drop a connection the way a server can; skipping the ping on every
                // acquire saves a round trip to the connection's worker thread per query.
                .test_before_acquire(false)
                .sqlx_logging(false);
            // WAL with synchronous=NORMAL: commits append to the log without an fsync each (the database
            // cannot be corrupted; a power cut may lose the last commits). Writers queue on busy_timeout.
            opt.map_sqlx_sqlite_opts(move |o| {
                o.journal_mode(sea_orm::sqlx::sqlite::SqliteJournalMode::Wal)
                    .synchronous(sea_orm::sqlx::sqlite::SqliteSynchronous::Normal)
                    .busy_timeout(Duration::from_secs(10))
                    .pragma("wal_autocheckpoint", autocheckpoint.to_string())
            });
            opt
        };
        let db = if sqlite { Database::connect(options(8, wal::RESTART_AT as u32)).await? } else { postgres_pool(url, schema)? };
        // A SQLite file gets its writer pool of one. (A SQLite database in memory belongs to its connection: a
        // second pool would open another one.)
        let writer = match &log {
            Some(_) => Database::connect(options(1, wal::WRITER_AUTOCHECKPOINT)).await?,
            None => db.clone(),
        };
        let checkpoints = file.zip(log).map(|(file, log)| std::sync::Arc::new(wal::Checkpoints::start(db.clone(), file, log)));
        Ok(Store { db, writer, leases: Default::default(), counter_batches: std::sync::Arc::new(group::Group::new(256, 1)), checkpoints })
    }

    pub fn backend(&self) -> DbBackend {
        self.db.get_database_backend()
    }

    /// Applies pending migrations, on the writer: on SQLite one connection, so that no statement of a migration
    /// is parsed against a schema that an earlier statement, on another connection, has changed since.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        Migrator::up(&self.writer, None).await.map_err(StoreError::from)
    }

    /// Migrations of this build not yet applied to the database (read only: unlike sea-orm's own status, which
    /// creates its table first, this never writes, so a readiness probe can ask it every few seconds).
    pub async fn pending_migrations(&self) -> Result<usize, StoreError> {
        let sql = Statement::from_string(self.backend(), "SELECT version FROM seaql_migrations");
        let rows = self.db.query_all(sql).await?;
        let applied: std::collections::HashSet<String> = rows.iter().filter_map(|r| r.try_get::<String>("", "version").ok()).collect();
        Ok(Migrator::migrations().iter().filter(|m| !applied.contains(m.name())).count())
    }

    /// The pools' connections now: in use and idle, for the main pool and (SQLite) the writer of one.
    pub fn pool_readings(&self) -> Vec<PoolReading> {
        let reading = |pool: &'static str, db: &DatabaseConnection| {
            let (size, idle) = match db {
                DatabaseConnection::SqlxPostgresPoolConnection(_) => {
                    let p = db.get_postgres_connection_pool();
                    (p.size(), p.num_idle())
                }
                DatabaseConnection::SqlxSqlitePoolConnection(_) => {
                    let p = db.get_sqlite_connection_pool();
                    (p.size(), p.num_idle())
                }
                _ => (0, 0),
            };
            PoolReading { pool, in_use: i64::from(size).saturating_sub(idle as i64).max(0), idle: idle as i64 }
        };
        let mut out = vec![reading("main", &self.db)];
        if self.backend() == DbBackend::Sqlite && self.checkpoints.is_some() {
            out.push(reading("writer", &self.writer));
        }
        out
    }

    /// One round trip, for the health check.
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.db.execute(Statement::from_string(self.backend(), "SELECT 1")).await?;
        Ok(())
    }
}
