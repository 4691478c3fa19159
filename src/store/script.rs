//! Several statements sent to the database in one round trip.
//!
//! A hot write transaction made of many small statements spends most of its time between them: on SQLite each
//! statement is a hand-off to the connection's worker thread and back, on PostgreSQL a network round trip. A
//! `Script` joins statements into one text that the database runs in order (SQLite's multi-statement prepare,
//! PostgreSQL's simple-query protocol), and `Results` splits what comes back by statement.
//!
//! On SQLite the values are bound as parameters, across the statements in order. PostgreSQL's simple-query
//! protocol takes no parameters, so there the text carries its values written in by sea-query's quoting.
//! Identifiers, numbers and JSON text quote exactly; callers keep control characters out of free-text values
//! (the API refuses them in identifiers, and JSON text escapes them).
//!
//! A transaction spans scripts on one held connection ([`ScriptConn`]): the first script begins it, the last
//! commits it. A connection dropped while its transaction is open is closed, not returned to the pool, so the
//! database rolls the transaction back.

use std::ops::Range;

use futures::TryStreamExt;
use sea_orm::sea_query::{PostgresQueryBuilder, QueryStatementWriter, SqliteQueryBuilder};
use sea_orm::sqlx::pool::PoolConnection;
use sea_orm::sqlx::{Either, Executor, Postgres, Sqlite};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, FromQueryResult, QueryResult, RuntimeErr};

/// Statements to run together, in order.
pub struct Script {
    backend: DbBackend,
    sql: String,
    /// SQLite: the parameters of every statement, in order.
    values: Vec<sea_orm::sea_query::Value>,
    statements: usize,
    begins: bool,
    commits: bool,
}

impl Script {
    pub fn new(backend: DbBackend) -> Script {
        Script { backend, sql: String::new(), values: Vec::new(), statements: 0, begins: false, commits: false }
    }

    /// A script that begins a write transaction (SQLite: IMMEDIATE, taking the write lock at once).
    pub fn begin(backend: DbBackend) -> Script {
        let mut s = Script::new(backend);
        s.push_sql(if backend == DbBackend::Sqlite { "BEGIN IMMEDIATE" } else { "BEGIN" });
        s.begins = true;
        s
    }

    /// Appends a statement; returns its position.
    pub fn push(&mut self, stmt: &impl QueryStatementWriter) -> usize {
        let sql = match self.backend {
            DbBackend::Postgres => stmt.to_string(PostgresQueryBuilder),
            _ => {
                let (sql, values) = stmt.build(SqliteQueryBuilder);
                self.values.extend(values.0);
                sql
            }
        };
        self.push_sql(&sql)
    }

    /// Appends statements; returns their positions.
    pub fn push_all<S: QueryStatementWriter>(&mut self, stmts: &[S]) -> Range<usize> {
        let start = self.statements;
        for s in stmts {
            self.push(s);
        }
        start..self.statements
    }

    pub fn push_sql(&mut self, sql: &str) -> usize {
        self.sql.push_str(sql);
        self.sql.push_str(";\n");
        self.statements += 1;
        self.statements - 1
    }

    /// Ends the script with the transaction's commit.
    pub fn commit(&mut self) -> usize {
        self.commits = true;
        self.push_sql("COMMIT")
    }
}

/// The rows each statement of a script returned, by position.
pub struct Results(Vec<Vec<QueryResult>>);

impl Results {
    pub fn rows(&self, statement: usize) -> &[QueryResult] {
        self.0.get(statement).map_or(&[], Vec::as_slice)
    }

    /// The rows of the statements in `range` as models (columns named as the model's, after `prefix`).
    pub fn models<M: FromQueryResult>(&self, range: Range<usize>, prefix: &str) -> Result<Vec<M>, DbErr> {
        range.flat_map(|i| self.rows(i)).map(|r| M::from_query_result(r, prefix)).collect()
    }
}

enum Conn {
    Sqlite(PoolConnection<Sqlite>),
    Postgres(PoolConnection<Postgres>),
}

/// One pooled connection, held for a transaction written as scripts.
pub struct ScriptConn {
    conn: Conn,
    backend: DbBackend,
    /// A transaction has begun and not yet ended.
    open: bool,
}

fn sqlx_err(e: sea_orm::sqlx::Error) -> DbErr {
    DbErr::Query(RuntimeErr::SqlxError(e))
}

impl ScriptConn {
    pub async fn acquire(db: &DatabaseConnection) -> Result<ScriptConn, DbErr> {
        let backend = db.get_database_backend();
        let conn = match backend {
            DbBackend::Postgres => Conn::Postgres(db.get_postgres_connection_pool().acquire().await.map_err(acquire_err)?),
            DbBackend::Sqlite => Conn::Sqlite(db.get_sqlite_connection_pool().acquire().await.map_err(acquire_err)?),
            DbBackend::MySql => return Err(DbErr::Custom("scripts run on SQLite or PostgreSQL".into())),
        };
        Ok(ScriptConn { conn, backend, open: false })
    }

    pub fn backend(&self) -> DbBackend {
        self.backend
    }

    /// Runs the script; a script that begins a transaction leaves it open until one commits it or
    /// [`ScriptConn::rollback`]. On error the statements after the failing one do not run.
    pub async fn run(&mut self, script: Script) -> Result<Results, DbErr> {
        if script.begins {
            self.open = true;
        }
        let mut out: Vec<Vec<QueryResult>> = vec![Vec::new()];
        match &mut self.conn {
            Conn::Sqlite(c) => {
                // sqlx runs the statements of one prepared query one after another on SQLite, binding each its
                // share of the parameters. It marks that behaviour deprecated (launchbadge/sqlx#3108); should a
                // later version drop it, the tests fail and the PostgreSQL path below (values in the text, raw_sql)
                // serves SQLite too, about a fifth slower here (measured with benches/load.sh).
                let values = sea_query_binder::SqlxValues(sea_orm::sea_query::Values(script.values));
                let mut stream = (&mut **c).fetch_many(sea_orm::sqlx::query_with(&script.sql, values));
                while let Some(item) = stream.try_next().await.map_err(sqlx_err)? {
                    match item {
                        Either::Left(_) => out.push(Vec::new()),
                        Either::Right(row) => out.last_mut().expect("one open statement").push(row.into()),
                    }
                }
            }
            Conn::Postgres(c) => {
                let mut stream = (&mut **c).fetch_many(sea_orm::sqlx::raw_sql(&script.sql));
                while let Some(item) = stream.try_next().await.map_err(sqlx_err)? {
                    match item {
                        Either::Left(_) => out.push(Vec::new()),
                        Either::Right(row) => out.last_mut().expect("one open statement").push(row.into()),
                    }
                }
            }
        }
        out.pop(); // the empty set opened after the last statement's end
        if script.commits {
            self.open = false;
        }
        if out.len() != script.statements {
            return Err(DbErr::Custom(format!("script of {} statements answered for {}", script.statements, out.len())));
        }
        Ok(Results(out))
    }

    /// Gives the connection back to its pool. On SQLite the writer pool holds one connection, which the next
    /// transaction waits for: sqlx's drop hands the return (a ping of the connection, then the release) to a
    /// task of its own, which under load waits its turn behind the requests; here it happens at once. On
    /// PostgreSQL the next transaction takes another connection, and the return stays off its path.
    /// (`return_to_pool` is public in sqlx 0.8 but hidden from its docs; Cargo.lock pins 0.8.6. Measured on
    /// the keyed load: the next batch's wait for the connection fell from about 200 µs to 70, plus 45 here.)
    pub async fn release(mut self) {
        if let (Conn::Sqlite(c), false) = (&mut self.conn, self.open) {
            c.return_to_pool().await;
        }
    }

    /// Ends an open transaction without its writes.
    pub async fn rollback(&mut self) -> Result<(), DbErr> {
        if !self.open {
            return Ok(());
        }
        let mut rollback = Script::new(self.backend);
        rollback.push_sql("ROLLBACK");
        self.run(rollback).await?;
        self.open = false;
        Ok(())
    }
}

/// As sea-orm reports a failed acquire: a timeout as such, anything else (a server that does not answer) as a
/// connection error.
fn acquire_err(e: sea_orm::sqlx::Error) -> DbErr {
    match e {
        sea_orm::sqlx::Error::PoolTimedOut => DbErr::ConnectionAcquire(sea_orm::ConnAcquireErr::Timeout),
        other => DbErr::Conn(RuntimeErr::SqlxError(other)),
    }
}

impl Drop for ScriptConn {
    fn drop(&mut self) {
        if self.open {
            // Mid-transaction (a panic, or an error whose rollback failed): the database rolls back on close.
            match &mut self.conn {
                Conn::Sqlite(c) => c.close_on_drop(),
                Conn::Postgres(c) => c.close_on_drop(),
            }
        }
    }
}
