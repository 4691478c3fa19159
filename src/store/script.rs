//! Several statements sent to the database in one round trip, and the hand-written statements they hold.
//!
//! A hot write transaction made of many small statements spends most of its time between them: on SQLite each
//! statement is a hand-off to the connection's worker thread and back, on PostgreSQL a network round trip. A
//! `Script` joins statements into one text that PostgreSQL runs in order (its simple-query protocol), and
//! `Results` splits what comes back by statement. SQLite gets a script in one request to the connection's worker
//! thread too, which prepares its statements in turn and binds the values across them in order.
//!
//! The statements of the hot paths (the ledger batch, the limiter's counters) are written by hand as [`Sql`]:
//! building them with sea-query took more than half of a ledger batch's own CPU time (query objects, boxed
//! values, then the text), and the batch runs one at a time. On SQLite a value is bound as a parameter (`?`),
//! across a script's statements in order, so a statement's text depends only on its shape and SQLite reuses
//! the prepared statement. PostgreSQL's simple-query protocol takes no parameters, so in a script a value is
//! written into the text as a literal; the batch's hot statements run there as `EXECUTE`s of statements
//! prepared on the connection ([`Sql::prepared`], `store::prepared`), so PostgreSQL does not parse and plan them
//! anew each time. A statement run on its own ([`Sql::statement`]) binds `$n` parameters instead, so that its
//! text too depends only on its shape (sqlx caches prepared statements by text). Text
//! literals quote exactly (quotes and backslashes included, whatever `standard_conforming_strings` and
//! `backslash_quote` say); callers keep NUL out of them (the API refuses control characters in identifiers,
//! and JSON text escapes them). Identifiers are double-quoted, so no column name is taken for a keyword.
//!
//! A transaction spans scripts on one held connection ([`ScriptConn`]): the first script begins it, the last
//! commits it; statements run on their own in between ([`ScriptConn::postgres`]) are part of it. A connection
//! dropped while its transaction is open is closed, not returned to the pool, so the database rolls the
//! transaction back.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::ops::Range;

use futures::TryStreamExt;
use sea_orm::sqlx::pool::PoolConnection;
use sea_orm::sqlx::sqlite::SqliteArguments;
use sea_orm::sqlx::{Arguments, Either, Executor, Postgres, Sqlite};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbBackend, DbErr, FromQueryResult, QueryResult, RuntimeErr, Statement};

use super::StoreError;

/// A value in a hand-written statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Arg<'a> {
    Text(Cow<'a, str>),
    Int(i64),
    Null,
}

impl<'a> From<&'a str> for Arg<'a> {
    fn from(v: &'a str) -> Self {
        Arg::Text(Cow::Borrowed(v))
    }
}

impl<'a> From<&'a String> for Arg<'a> {
    fn from(v: &'a String) -> Self {
        Arg::Text(Cow::Borrowed(v))
    }
}

impl From<String> for Arg<'_> {
    fn from(v: String) -> Self {
        Arg::Text(Cow::Owned(v))
    }
}

impl From<i64> for Arg<'_> {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}

impl From<i32> for Arg<'_> {
    fn from(v: i32) -> Self {
        Arg::Int(v.into())
    }
}

impl<'a, T: Into<Arg<'a>>> From<Option<T>> for Arg<'a> {
    fn from(v: Option<T>) -> Self {
        v.map_or(Arg::Null, Into::into)
    }
}

/// One statement written by hand: its text, with each value a parameter (SQLite) or a literal (PostgreSQL).
pub struct Sql<'a> {
    backend: DbBackend,
    text: String,
    /// The values, in order: SQLite's parameters; on PostgreSQL those of `numbered`.
    args: Vec<Arg<'a>>,
    /// PostgreSQL: the text with `$n` parameters, for [`Sql::statement`].
    numbered: String,
    /// PostgreSQL: the same statement as an `EXECUTE` of one prepared on every connection (`store::prepared`),
    /// which a script runs instead of the text.
    execute: Option<String>,
}

impl<'a> Sql<'a> {
    pub fn new(backend: DbBackend) -> Sql<'a> {
        let numbered = if backend == DbBackend::Postgres { String::with_capacity(256) } else { String::new() };
        Sql { backend, text: String::with_capacity(256), args: Vec::new(), numbered, execute: None }
    }

    /// PostgreSQL: has scripts run this statement as `execute` (see [`Execute`]). Elsewhere nothing.
    pub fn prepared(&mut self, execute: impl FnOnce() -> Execute) -> &mut Self {
        if self.backend == DbBackend::Postgres {
            self.execute = Some(execute().0 + ")");
        }
        self
    }

    /// Appends SQL text.
    pub fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        if self.backend == DbBackend::Postgres {
            self.numbered.push_str(text);
        }
        self
    }

    /// Appends a value.
    pub fn arg(&mut self, value: impl Into<Arg<'a>>) -> &mut Self {
        let value = value.into();
        if self.backend == DbBackend::Postgres {
            literal(&mut self.text, &value);
            let _ = write!(self.numbered, "${}", self.args.len() + 1);
        } else {
            self.text.push('?');
        }
        self.args.push(value);
        self
    }

    /// Appends values separated by commas, in parentheses: `(a, b, c)`.
    pub fn tuple<A: Into<Arg<'a>>>(&mut self, values: impl IntoIterator<Item = A>) -> &mut Self {
        self.push("(");
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                self.push(", ");
            }
            self.arg(v);
        }
        self.push(")")
    }

    /// Appends ` IN (a, b, c)`; an empty list matches nothing (` IN (NULL)`).
    pub fn in_list<A: Into<Arg<'a>>>(&mut self, values: impl IntoIterator<Item = A>) -> &mut Self {
        let before = self.args.len();
        let mut values = values.into_iter().peekable();
        if values.peek().is_none() {
            return self.push(" IN (NULL)");
        }
        self.push(" IN ").tuple(values);
        debug_assert!(self.args.len() > before);
        self
    }

    /// As a sea-orm statement, to run on its own through any connection (with parameters on either database).
    pub fn statement(self) -> Statement {
        let text = if self.backend == DbBackend::Postgres { self.numbered } else { self.text };
        if self.args.is_empty() {
            return Statement::from_string(self.backend, text);
        }
        let values = self
            .args
            .into_iter()
            .map(|a| match a {
                Arg::Text(t) => sea_orm::Value::from(t.into_owned()),
                Arg::Int(i) => sea_orm::Value::from(i),
                Arg::Null => sea_orm::Value::String(None),
            })
            .collect::<Vec<_>>();
        Statement::from_sql_and_values(self.backend, text, values)
    }
}

/// PostgreSQL: `EXECUTE "name"(...)` of a statement `store::prepared` prepares on every connection, its
/// arguments written as literals (arrays as `ARRAY[...]::type[]`). Parsing it is parsing the literals: the
/// statement was parsed and planned when it was prepared.
pub struct Execute(String, usize);

impl Execute {
    pub fn new(name: &str) -> Execute {
        Execute(format!("EXECUTE \"{name}\"("), 0)
    }

    /// Before each argument but the first, a comma.
    fn sep(&mut self) {
        if self.1 > 0 {
            self.0.push_str(", ");
        }
        self.1 += 1;
    }

    /// The next argument: one value.
    pub fn arg<'b>(mut self, value: impl Into<Arg<'b>>) -> Execute {
        self.sep();
        literal(&mut self.0, &value.into());
        self
    }

    /// The next argument: an array of `element` (a PostgreSQL type name) holding `values`.
    pub fn array<'b, A: Into<Arg<'b>>>(mut self, values: impl IntoIterator<Item = A>, element: &str) -> Execute {
        self.sep();
        let start = self.0.len();
        self.0.push_str("ARRAY[");
        for (i, v) in values.into_iter().enumerate() {
            if i > 0 {
                self.0.push(',');
            }
            literal(&mut self.0, &v.into());
        }
        if self.0.len() == start + "ARRAY[".len() {
            // (An empty ARRAY[] takes its type from the cast alone, and only in this spelling.)
            self.0.truncate(start);
            self.0.push_str("'{}'");
        } else {
            self.0.push(']');
        }
        let _ = write!(self.0, "::{element}[]");
        self
    }
}

/// A PostgreSQL literal. Text is a standard string with quotes doubled, or, when it holds a backslash, an escape
/// string (`E'...'`) with backslashes doubled and quotes doubled: exact whatever `standard_conforming_strings`
/// and `backslash_quote` say.
fn literal(out: &mut String, value: &Arg) {
    match value {
        Arg::Text(t) => {
            if t.contains('\\') {
                out.push_str("E'");
                for c in t.chars() {
                    match c {
                        '\\' => out.push_str("\\\\"),
                        '\'' => out.push_str("''"),
                        c => out.push(c),
                    }
                }
            } else {
                out.push('\'');
                let mut rest: &str = t;
                while let Some(q) = rest.find('\'') {
                    out.push_str(&rest[..=q]);
                    out.push('\'');
                    rest = &rest[q + 1..];
                }
                out.push_str(rest);
            }
            out.push('\'');
        }
        Arg::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Arg::Null => out.push_str("NULL"),
    }
}

/// Statements to run together, in order.
pub struct Script<'a> {
    backend: DbBackend,
    sql: String,
    /// SQLite: the parameters of every statement, in order.
    args: Vec<Arg<'a>>,
    /// Where each statement's text is in `sql` (without its `;`).
    spans: Vec<Range<usize>>,
    begins: bool,
    commits: bool,
    /// PostgreSQL: the script runs prepared statements.
    executes: bool,
}

impl<'a> Script<'a> {
    pub fn new(backend: DbBackend) -> Script<'a> {
        Script {
            backend,
            sql: String::with_capacity(4096),
            args: Vec::new(),
            spans: Vec::new(),
            begins: false,
            commits: false,
            executes: false,
        }
    }

    /// A script that begins a write transaction (SQLite: IMMEDIATE, taking the write lock at once).
    pub fn begin(backend: DbBackend) -> Script<'a> {
        let mut s = Script::new(backend);
        s.push_sql(if backend == DbBackend::Sqlite { "BEGIN IMMEDIATE" } else { "BEGIN" });
        s.begins = true;
        s
    }

    /// Appends a statement; returns its position. On PostgreSQL a statement that has a prepared form runs as
    /// that (`Sql::prepared`).
    pub fn add(&mut self, stmt: Sql<'a>) -> usize {
        debug_assert_eq!(stmt.backend, self.backend);
        if self.backend != DbBackend::Postgres {
            self.args.extend(stmt.args);
        }
        match &stmt.execute {
            Some(execute) => {
                self.executes = true;
                self.push_sql(execute)
            }
            None => self.push_sql(&stmt.text),
        }
    }

    /// Appends statements; returns their positions.
    pub fn add_all(&mut self, stmts: Vec<Sql<'a>>) -> Range<usize> {
        let start = self.statements();
        for s in stmts {
            self.add(s);
        }
        start..self.statements()
    }

    /// Appends a statement without values.
    pub fn push_sql(&mut self, sql: &str) -> usize {
        let start = self.sql.len();
        self.sql.push_str(sql);
        self.spans.push(start..self.sql.len());
        self.sql.push_str(";\n");
        self.spans.len() - 1
    }

    pub fn backend(&self) -> DbBackend {
        self.backend
    }

    /// How many statements the script holds (the position of the next).
    pub fn statements(&self) -> usize {
        self.spans.len()
    }

    /// Ends the script with the transaction's commit.
    pub fn commit(&mut self) -> usize {
        self.commits = true;
        self.push_sql("COMMIT")
    }
}

/// Runs a script as one simple query: the rows of each statement, and an empty set after the last.
async fn postgres_script(c: &mut sea_orm::sqlx::PgConnection, sql: &str) -> Result<Vec<Vec<QueryResult>>, sea_orm::sqlx::Error> {
    let mut out = vec![Vec::new()];
    result_sets(c.fetch_many(sea_orm::sqlx::raw_sql(sql)), &mut out).await?;
    Ok(out)
}

/// What a script's query streams back, split by statement into `out` (which starts with one empty set): the rows
/// of each, and an empty set opened at each statement's end. On error `out` keeps what came before it: one set
/// past the first for each statement that ended.
async fn result_sets<Q, R: Into<QueryResult>>(
    mut stream: futures::stream::BoxStream<'_, Result<Either<Q, R>, sea_orm::sqlx::Error>>,
    out: &mut Vec<Vec<QueryResult>>,
) -> Result<(), sea_orm::sqlx::Error> {
    while let Some(item) = stream.try_next().await? {
        match item {
            Either::Left(_) => out.push(Vec::new()),
            Either::Right(row) => out.last_mut().expect("one open statement").push(row.into()),
        }
    }
    Ok(())
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

pub(super) fn sqlx_err(e: sea_orm::sqlx::Error) -> DbErr {
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

    /// The PostgreSQL connection, for a statement run on its own inside the transaction (`None` on SQLite).
    pub fn postgres(&mut self) -> Option<&mut sea_orm::sqlx::PgConnection> {
        match &mut self.conn {
            Conn::Postgres(c) => Some(&mut **c),
            Conn::Sqlite(_) => None,
        }
    }

    /// Runs the script; a script that begins a transaction leaves it open until one commits it or
    /// [`ScriptConn::rollback`]. On error the statements after the failing one do not run.
    pub async fn run(&mut self, script: Script<'_>) -> Result<Results, StoreError> {
        let out = match &mut self.conn {
            Conn::Sqlite(c) => {
                // The whole script in one request to the connection's worker thread, which prepares its statements
                // one after another (each cached by the connection) and binds the values across them in order. sqlx
                // 0.8 documents several statements in one prepared query as SQLite-only behaviour it deprecates
                // (launchbadge/sqlx#3108); it is kept because it is what lets 16 connections carry half of the
                // keyed maximum (benches/README.md). Should sqlx drop it, every keyed test fails at once; the way
                // back is a `fetch_all` per statement.
                let mut bound = SqliteArguments::default();
                for a in &script.args {
                    let added = match a {
                        Arg::Text(t) => bound.add(t.as_ref()),
                        Arg::Int(i) => bound.add(*i),
                        Arg::Null => bound.add(None::<i64>),
                    };
                    added.map_err(|e| StoreError::Other(format!("binding a value: {e}")))?;
                }
                let mut sets = vec![Vec::new()];
                let outcome = result_sets((&mut **c).fetch_many(sea_orm::sqlx::query_with(&script.sql, bound)), &mut sets).await;
                // (A transaction is open once its BEGIN has run, until its COMMIT or ROLLBACK has: the statements
                // that ended are those before the last, still open, set.)
                for text in &script.spans[..sets.len() - 1] {
                    match &script.sql[text.clone()] {
                        "BEGIN IMMEDIATE" => self.open = true,
                        "COMMIT" | "ROLLBACK" => self.open = false,
                        _ => {}
                    }
                }
                outcome.map_err(sqlx_err)?;
                sets.pop(); // the empty set opened after the last statement's end
                sets
            }
            Conn::Postgres(c) => {
                // (A transaction a script begins is open from then on, whatever fails, until a script commits it.)
                self.open |= script.begins;
                let mut sets = match postgres_script(c, &script.sql).await {
                    Ok(sets) => sets,
                    // The connection lacks the prepared statements (or holds them from before a migration): the
                    // transaction the script began is aborted; prepare them and run the script again.
                    Err(e) if script.begins && script.executes && super::prepared::missing(&e) => {
                        c.execute(sea_orm::sqlx::raw_sql("ROLLBACK")).await.map_err(sqlx_err)?;
                        super::prepared::prepare(c).await.map_err(sqlx_err)?;
                        postgres_script(c, &script.sql).await.map_err(sqlx_err)?
                    }
                    Err(e) => return Err(sqlx_err(e).into()),
                };
                sets.pop(); // the empty set opened after the last statement's end
                self.open &= !script.commits;
                sets
            }
        };
        if out.len() != script.statements() {
            return Err(StoreError::Other(format!("script of {} statements answered for {}", script.statements(), out.len())));
        }
        Ok(Results(out))
    }

    /// Gives the connection back to its pool (a connection whose transaction is still open is closed instead,
    /// which rolls it back: see `Drop`).
    pub async fn release(self) {}

    /// SQLite: copies the log's pages into the database file (a PASSIVE checkpoint), between transactions, so
    /// that the next transaction starts the log again (see `wal`). Elsewhere nothing.
    pub async fn checkpoint(&mut self) -> Result<(), StoreError> {
        if let (Conn::Sqlite(c), false) = (&mut self.conn, self.open) {
            super::wal::passive(c).await.map_err(sqlx_err)?;
        }
        Ok(())
    }

    /// Ends an open transaction without its writes.
    pub async fn rollback(&mut self) -> Result<(), StoreError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn pg(values: &[Arg]) -> String {
        let mut sql = Sql::new(DbBackend::Postgres);
        sql.tuple(values.iter().cloned());
        sql.text
    }

    #[test]
    fn postgres_literals_quote_exactly() {
        assert_eq!(pg(&["plain".into(), "it's".into(), "''".into()]), "('plain', 'it''s', '''''')");
        // With a backslash: an escape string, whatever standard_conforming_strings says.
        assert_eq!(pg(&[r"a\b".into(), r"\'".into(), r"E'\n'".into()]), r"(E'a\\b', E'\\''', E'E''\\n''')");
        assert_eq!(
            pg(&["é 税 😀\n\t".into(), 42i64.into(), (-7i32).into(), Arg::Null, None::<&str>.into()]),
            "('é 税 😀\n\t', 42, -7, NULL, NULL)"
        );
    }

    #[test]
    fn sqlite_binds_every_value_and_its_text_depends_only_on_the_shape() {
        let write = |name: &'static str, n: i64| {
            let mut sql = Sql::new(DbBackend::Sqlite);
            sql.push("SELECT 1 WHERE x").in_list([name, "b"]).push(" AND y = ").arg(n).push(" AND z").in_list(Vec::<&str>::new());
            sql
        };
        let (a, b) = (write("it's", 1), write(r"\", 2));
        assert_eq!(a.text, "SELECT 1 WHERE x IN (?, ?) AND y = ? AND z IN (NULL)");
        assert_eq!(a.text, b.text);
        assert_eq!(a.args, vec![Arg::from("it's"), Arg::from("b"), Arg::Int(1)]);
    }

    #[test]
    fn a_postgres_statement_on_its_own_binds_numbered_parameters() {
        let mut sql = Sql::new(DbBackend::Postgres);
        sql.push("UPDATE t SET a = ").arg("x'y").push(" WHERE b").in_list([1i64, 2]).push(" AND c").in_list(Vec::<i64>::new());
        assert_eq!(sql.text, "UPDATE t SET a = 'x''y' WHERE b IN (1, 2) AND c IN (NULL)");
        let st = sql.statement();
        assert_eq!(st.sql, "UPDATE t SET a = $1 WHERE b IN ($2, $3) AND c IN (NULL)");
        assert_eq!(st.values.map(|v| v.0.len()), Some(3));
    }

    #[test]
    fn adding_upserts_add_the_added_columns_and_split_long_batches() {
        use crate::store::prepared::Upsert;
        let spec =
            |returning| Upsert { table: "t", columns: &[("k", "text"), ("n", "int8"), ("other", "int4")], keys: 1, added: 1, returning };
        let rows = |n: i64| (0..n).map(|i| [Arg::from(format!("k{i}'")), Arg::Int(i), Arg::Int(9)]).collect();
        let stmts = crate::store::adding_upserts(DbBackend::Postgres, &spec(true), rows(2));
        assert_eq!(stmts.len(), 1);
        assert_eq!(
            stmts[0].text,
            r#"INSERT INTO "t" ("k", "n", "other") VALUES ('k0''', 0, 9), ('k1''', 1, 9) ON CONFLICT ("k") DO UPDATE SET "n" = "t"."n" + "excluded"."n" RETURNING *"#
        );
        // In a script, PostgreSQL runs the prepared upsert, each column's values an array in the rows' order.
        let mut script = Script::new(DbBackend::Postgres);
        script.add_all(stmts);
        assert_eq!(script.sql, "EXECUTE \"levy_add_t\"(ARRAY['k0''','k1''']::text[], ARRAY[0,1]::int8[], ARRAY[9,9]::int4[]);\n");
        let stmts = crate::store::adding_upserts(DbBackend::Sqlite, &spec(false), rows(1001));
        assert_eq!(stmts.iter().map(|s| s.args.len()).collect::<Vec<_>>(), vec![1500, 1500, 3]);
        assert!(stmts[2].text.ends_with(r#"VALUES (?, ?, ?) ON CONFLICT ("k") DO UPDATE SET "n" = "t"."n" + "excluded"."n""#));
        assert!(stmts.iter().all(|s| s.execute.is_none()));
        assert!(crate::store::adding_upserts(DbBackend::Sqlite, &spec(false), rows(0)).is_empty());
        // Empty arrays take their type from the cast; other values are literals.
        let e = Execute::new("q").array(Vec::<&str>::new(), "text").arg(202611).array([Some("a\\b"), None], "text");
        assert_eq!(e.0, r#"EXECUTE "q"('{}'::text[], 202611, ARRAY[E'a\\b',NULL]::text[]"#);
    }
}
