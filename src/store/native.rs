//! Scripts run on the SQLite writer connection's own handle, on the caller's thread.
//!
//! sqlx runs each SQLite connection on a worker thread of its own: every query is a message to that thread and
//! every row a message back, and under load each of those waits for the thread to be scheduled (about 80 µs for
//! the ledger batch's first script, 130 for its second, at half of the keyed maximum). A batch here takes the
//! connection's handle once (`lock_handle`, one message), runs its scripts through SQLite's C interface while
//! holding it, and hands it back when the connection goes back to its pool. (The checkpoint a batch may make
//! first stays on the worker thread: it copies pages and syncs the file, which should not stop one of the
//! runtime's threads.)
//!
//! Statements are prepared once per connection (`SQLITE_PREPARE_PERSISTENT`) and kept with it: the cache hangs
//! on the connection as client data. sqlx closes its connections with `sqlite3_close`, which refuses (and sqlx
//! then panics) while any statement is unfinalized; SQLite calls a `SQLITE_TRACE_CLOSE` trace before it makes
//! that check, and the cache's trace finalizes every statement it holds there. So the connection can close
//! whenever sqlx decides (idle timeout, lifetime, pool closed, a transaction abandoned).
//!
//! Rows come back as sea-orm rows whose values take their type from the column's declared type, as sea-orm's
//! models expect them: `integer` an `i32`, `bigint` an `i64`, `boolean` a `bool` (the types the migrations
//! declare); a column without one (an expression) by what it holds.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::ops::Range;
use std::ptr::{self, NonNull};
use std::sync::Arc;

use libsqlite3_sys as ffi;
use sea_orm::sqlx::pool::PoolConnection;
use sea_orm::sqlx::sqlite::LockedSqliteHandle;
use sea_orm::sqlx::Sqlite;
use sea_orm::{ProxyRow, QueryResult, Value};

use super::script::Arg;
use super::StoreError;

/// A pooled SQLite connection and, once taken, its handle. The handle is held until [`Held::conn`] or drop.
pub struct Held {
    /// Owned: made by `Box::leak` in [`Held::new`], given back in `Drop`. A pointer rather than a box, because
    /// `lock` borrows the connection for as long as it is held.
    conn: NonNull<PoolConnection<Sqlite>>,
    /// Borrows `*conn`; always dropped before the connection is touched otherwise.
    lock: Option<LockedSqliteHandle<'static>>,
}

// SAFETY: `Held` owns the connection alone (the pointer is never shared), and both it and the lock are `Send`.
unsafe impl Send for Held {}

impl Held {
    pub fn new(conn: PoolConnection<Sqlite>) -> Held {
        Held { conn: NonNull::from(Box::leak(Box::new(conn))), lock: None }
    }

    /// Runs statements (see [`run`]) on the connection's handle.
    pub async fn run(&mut self, sql: &str, spans: &[Range<usize>], args: &[Arg<'_>]) -> Result<Vec<Vec<QueryResult>>, StoreError> {
        let db = self.handle().await.map_err(|e| StoreError::from(super::script::sqlx_err(e)))?;
        // SAFETY: the handle is held (by `lock`) until this borrow of `self` ends.
        Ok(unsafe { run(db, sql, spans, args) }?)
    }

    /// Whether the connection is inside a transaction (as far as this hold of its handle knows: without the
    /// handle, nothing ran).
    pub fn in_transaction(&mut self) -> bool {
        match &mut self.lock {
            // SAFETY: the handle is held.
            Some(lock) => unsafe { ffi::sqlite3_get_autocommit(lock.as_raw_handle().as_ptr()) == 0 },
            None => false,
        }
    }

    /// The connection's handle, taken from its worker thread on first use and held from then on.
    async fn handle(&mut self) -> Result<NonNull<ffi::sqlite3>, sea_orm::sqlx::Error> {
        if self.lock.is_none() {
            // SAFETY: the connection lives until `Drop`, which drops the lock first; while the lock is held
            // nothing else reaches the connection (`conn` drops the lock before lending it).
            let conn: &'static mut PoolConnection<Sqlite> = unsafe { &mut *self.conn.as_ptr() };
            self.lock = Some(conn.lock_handle().await?);
        }
        Ok(self.lock.as_mut().expect("just taken").as_raw_handle())
    }

    /// The connection itself, its handle given back to its worker thread first.
    pub fn conn(&mut self) -> &mut PoolConnection<Sqlite> {
        self.lock = None;
        // SAFETY: owned (see `conn`), and the lock that borrowed it is gone.
        unsafe { self.conn.as_mut() }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.lock = None;
        // SAFETY: made by `Box::leak` in `new`; the lock that borrowed it is gone.
        drop(unsafe { Box::from_raw(self.conn.as_ptr()) });
    }
}

/// A failure SQLite reported: its extended result code and message.
#[derive(Debug)]
pub struct SqliteFailure {
    pub code: c_int,
    pub message: String,
}

impl SqliteFailure {
    fn of(db: *mut ffi::sqlite3, code: c_int) -> SqliteFailure {
        // SAFETY: a live handle; the message is copied before any other call on it.
        let message = unsafe { CStr::from_ptr(ffi::sqlite3_errmsg(db)) }.to_string_lossy().into_owned();
        // SAFETY: as above.
        let extended = unsafe { ffi::sqlite3_extended_errcode(db) };
        SqliteFailure { code: if extended != 0 { extended } else { code }, message }
    }

    fn misuse(message: impl Into<String>) -> SqliteFailure {
        SqliteFailure { code: ffi::SQLITE_MISUSE, message: message.into() }
    }

    /// The database could not be reached or written at all (busy past the timeout, I/O, full, read-only), as
    /// opposed to a statement that failed.
    pub fn is_unavailable(&self) -> bool {
        matches!(self.code & 0xff, ffi::SQLITE_BUSY | ffi::SQLITE_LOCKED | ffi::SQLITE_IOERR | ffi::SQLITE_CANTOPEN | ffi::SQLITE_FULL | ffi::SQLITE_READONLY | ffi::SQLITE_NOMEM)
    }

    /// A unique or primary-key constraint refused a row.
    pub fn is_unique_violation(&self) -> bool {
        self.code == ffi::SQLITE_CONSTRAINT_UNIQUE || self.code == ffi::SQLITE_CONSTRAINT_PRIMARYKEY
    }
}

impl std::fmt::Display for SqliteFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (SQLite code {})", self.message, self.code)
    }
}

/// Runs the statements of `sql` at `spans`, in order, binding `args` to their parameters in order; the rows
/// of each. On a failure the statements after it do not run (an open transaction stays open).
///
/// SAFETY: `db` is an open connection that nothing else uses during the call.
unsafe fn run(db: NonNull<ffi::sqlite3>, sql: &str, spans: &[Range<usize>], args: &[Arg<'_>]) -> Result<Vec<Vec<QueryResult>>, SqliteFailure> {
    // SAFETY: as the caller promises.
    let cache = unsafe { Cache::of(db) }?;
    // Every statement prepared (or found) before any runs, so that values that do not match the parameters
    // are refused with nothing run.
    if cache.statements.len() + spans.len() > CAPACITY {
        cache.finalize_all();
    }
    let statements = spans.iter().map(|span| cache.statement(db, &sql[span.clone()])).collect::<Result<Vec<_>, _>>()?;
    // SAFETY: statements of this connection.
    let params: usize = statements.iter().map(|s| unsafe { ffi::sqlite3_bind_parameter_count(s.stmt.as_ptr()) } as usize).sum();
    if params != args.len() {
        return Err(SqliteFailure::misuse(format!("{} values for the statements' {params} parameters", args.len())));
    }
    let mut args = args.iter();
    statements.into_iter().map(|s| s.run(db, &mut args)).collect()
}

/// How a column's values are typed for sea-orm, from its declared type.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Int32,
    Int64,
    Bool,
    /// By what the value holds: integer `i64`, real `f64`, text, blob.
    Stored,
}

impl Kind {
    fn declared(decltype: Option<&str>) -> Kind {
        match decltype.map(str::to_ascii_lowercase).as_deref() {
            Some("integer" | "int" | "int4") => Kind::Int32,
            Some("bigint" | "int8") => Kind::Int64,
            Some("boolean" | "bool") => Kind::Bool,
            _ => Kind::Stored,
        }
    }
}

/// A prepared statement kept with its connection, and its result columns.
#[derive(Clone)]
struct Statement {
    stmt: NonNull<ffi::sqlite3_stmt>,
    columns: Arc<[(String, Kind)]>,
}

/// The statements prepared on one connection, by text. Hangs on the connection as client data (`KEY`).
#[derive(Default)]
struct Cache {
    statements: HashMap<String, Statement>,
}

/// The client-data name the cache hangs on.
const KEY: &CStr = c"levy.native.statements";
/// Statements kept per connection; past it the cache starts again (shapes are few: a statement's text
/// depends only on how many rows it writes, up to `store::ROWS_PER_STATEMENT`).
const CAPACITY: usize = 512;

impl Cache {
    /// The connection's cache, made and hung on it on first use.
    ///
    /// SAFETY: `db` is an open connection that nothing else uses while the reference lives.
    unsafe fn of<'h>(db: NonNull<ffi::sqlite3>) -> Result<&'h mut Cache, SqliteFailure> {
        let db = db.as_ptr();
        // SAFETY: a live handle, held by the caller alone for as long as the reference is used.
        let found = unsafe { ffi::sqlite3_get_clientdata(db, KEY.as_ptr()) }.cast::<Cache>();
        if let Some(mut found) = NonNull::new(found) {
            // SAFETY: made below for this connection; only reached while its handle is held.
            return Ok(unsafe { found.as_mut() });
        }
        let cache = Box::into_raw(Box::<Cache>::default());
        // SAFETY: the destructor frees the box when the connection is gone (after `closing` emptied it); the
        // trace finalizes the statements when the connection starts to close.
        unsafe {
            let rc = ffi::sqlite3_set_clientdata(db, KEY.as_ptr(), cache.cast(), Some(free_cache));
            if rc != ffi::SQLITE_OK {
                drop(Box::from_raw(cache));
                return Err(SqliteFailure::of(db, rc));
            }
            let rc = ffi::sqlite3_trace_v2(db, ffi::SQLITE_TRACE_CLOSE as c_uint, Some(closing), cache.cast());
            if rc != ffi::SQLITE_OK {
                // (The client data frees the box with the connection.)
                return Err(SqliteFailure::of(db, rc));
            }
            Ok(&mut *cache)
        }
    }

    /// The statement of this text, prepared on first use. (The caller keeps the cache within `CAPACITY`, so
    /// that no statement it holds is finalized under it.)
    fn statement(&mut self, db: NonNull<ffi::sqlite3>, text: &str) -> Result<Statement, SqliteFailure> {
        if let Some(s) = self.statements.get(text) {
            return Ok(s.clone());
        }
        let prepared = Statement::prepare(db, text)?;
        self.statements.insert(text.to_string(), prepared.clone());
        Ok(prepared)
    }

    fn finalize_all(&mut self) {
        for (_, s) in self.statements.drain() {
            // SAFETY: prepared on this connection, finalized once (drained from the cache).
            unsafe { ffi::sqlite3_finalize(s.stmt.as_ptr()) };
        }
    }
}

/// `SQLITE_TRACE_CLOSE`: the connection is closing; its statements are finalized so that it can.
unsafe extern "C" fn closing(event: c_uint, context: *mut c_void, _db: *mut c_void, _unused: *mut c_void) -> c_int {
    if event == ffi::SQLITE_TRACE_CLOSE as c_uint {
        if let Some(mut cache) = NonNull::new(context.cast::<Cache>()) {
            // SAFETY: the cache hung on this connection, alive until `free_cache`, which SQLite calls later.
            unsafe { cache.as_mut() }.finalize_all();
        }
    }
    0
}

/// The client data's destructor: the connection is gone.
unsafe extern "C" fn free_cache(cache: *mut c_void) {
    if !cache.is_null() {
        // SAFETY: made by `Box::into_raw` in `Cache::of`; SQLite calls this once. (Its statements were
        // finalized by `closing`: SQLite closes no connection that has any.)
        drop(unsafe { Box::from_raw(cache.cast::<Cache>()) });
    }
}

impl Statement {
    fn prepare(db: NonNull<ffi::sqlite3>, text: &str) -> Result<Statement, SqliteFailure> {
        let db = db.as_ptr();
        let len = c_int::try_from(text.len()).map_err(|_| SqliteFailure::misuse("statement too long"))?;
        let (mut stmt, mut tail) = (ptr::null_mut(), ptr::null());
        // SAFETY: `text` outlives the call; SQLite reads `len` bytes of it.
        let rc = unsafe { ffi::sqlite3_prepare_v3(db, text.as_ptr().cast::<c_char>(), len, ffi::SQLITE_PREPARE_PERSISTENT as c_uint, &mut stmt, &mut tail) };
        if rc != ffi::SQLITE_OK {
            return Err(SqliteFailure::of(db, rc));
        }
        let Some(stmt) = NonNull::new(stmt) else { return Err(SqliteFailure::misuse(format!("no statement in {text:?}"))) };
        // SAFETY: `tail` points into `text`, at or after its start.
        let used = unsafe { tail.cast::<u8>().offset_from(text.as_ptr()) } as usize;
        if !text[used..].trim_matches(|c: char| c.is_whitespace() || c == ';').is_empty() {
            // SAFETY: just prepared, and kept nowhere.
            unsafe { ffi::sqlite3_finalize(stmt.as_ptr()) };
            return Err(SqliteFailure::misuse(format!("more than one statement in {text:?}")));
        }
        // SAFETY: a prepared statement; names and declared types are read before anything else runs on it.
        let columns = unsafe {
            let n = ffi::sqlite3_column_count(stmt.as_ptr());
            (0..n)
                .map(|i| {
                    let name = CStr::from_ptr(ffi::sqlite3_column_name(stmt.as_ptr(), i)).to_string_lossy().into_owned();
                    let decl = ffi::sqlite3_column_decltype(stmt.as_ptr(), i);
                    let decl = (!decl.is_null()).then(|| CStr::from_ptr(decl).to_string_lossy());
                    (name, Kind::declared(decl.as_deref()))
                })
                .collect::<Vec<_>>()
        };
        Ok(Statement { stmt, columns: columns.into() })
    }

    /// Binds the next values to the parameters, steps to the end, and leaves the statement reset and unbound.
    fn run<'v>(&self, db: NonNull<ffi::sqlite3>, args: &mut impl Iterator<Item = &'v Arg<'v>>) -> Result<Vec<QueryResult>, SqliteFailure> {
        let (db, stmt) = (db.as_ptr(), self.stmt.as_ptr());
        let result = (|| {
            // SAFETY: a statement of this connection, whose handle the caller holds.
            let params = unsafe { ffi::sqlite3_bind_parameter_count(stmt) };
            for i in 1..=params {
                let arg = args.next().ok_or_else(|| SqliteFailure::misuse("fewer values than parameters"))?;
                // SAFETY: as above; `i` is a parameter's index; SQLite copies text and blobs (TRANSIENT).
                let rc = unsafe { bind(stmt, i, arg) };
                if rc != ffi::SQLITE_OK {
                    return Err(SqliteFailure::of(db, rc));
                }
            }
            let mut rows = Vec::new();
            loop {
                // SAFETY: as above.
                match unsafe { ffi::sqlite3_step(stmt) } {
                    ffi::SQLITE_ROW => rows.push(self.row()?),
                    ffi::SQLITE_DONE => return Ok(rows),
                    rc => return Err(SqliteFailure::of(db, rc)),
                }
            }
        })();
        // SAFETY: as above. (reset repeats a failed step's code, already taken.)
        unsafe {
            ffi::sqlite3_reset(stmt);
            ffi::sqlite3_clear_bindings(stmt);
        }
        result
    }

    /// The current row, as sea-orm reads it.
    fn row(&self) -> Result<QueryResult, SqliteFailure> {
        let stmt = self.stmt.as_ptr();
        let mut values = BTreeMap::new();
        for (i, (name, kind)) in self.columns.iter().enumerate() {
            let i = i as c_int;
            // SAFETY: the statement stands on a row; `i` is one of its columns; text and blobs are copied
            // before the next call on the statement.
            let value = unsafe {
                match ffi::sqlite3_column_type(stmt, i) {
                    ffi::SQLITE_NULL => Value::String(None),
                    ffi::SQLITE_INTEGER => {
                        let v = ffi::sqlite3_column_int64(stmt, i);
                        match kind {
                            Kind::Int32 => Value::Int(Some(i32::try_from(v).map_err(|_| SqliteFailure::misuse(format!("{name}: {v} is out of range for its integer column")))?)),
                            Kind::Bool => Value::Bool(Some(v != 0)),
                            Kind::Int64 | Kind::Stored => Value::BigInt(Some(v)),
                        }
                    }
                    ffi::SQLITE_FLOAT => Value::Double(Some(ffi::sqlite3_column_double(stmt, i))),
                    ffi::SQLITE_TEXT => {
                        let bytes = column_bytes(stmt, i, ffi::sqlite3_column_text(stmt, i));
                        let text = std::str::from_utf8(bytes).map_err(|_| SqliteFailure::misuse(format!("{name}: text that is not UTF-8")))?;
                        Value::String(Some(Box::new(text.to_string())))
                    }
                    _ => Value::Bytes(Some(Box::new(column_bytes(stmt, i, ffi::sqlite3_column_blob(stmt, i).cast()).to_vec()))),
                }
            };
            values.insert(name.clone(), value);
        }
        Ok(ProxyRow::new(values).into())
    }
}

/// The bytes of the column value at `data` (text or blob), valid until the next call on the statement.
///
/// SAFETY: `data` is what `sqlite3_column_text` or `sqlite3_column_blob` just returned for this column.
unsafe fn column_bytes<'s>(stmt: *mut ffi::sqlite3_stmt, i: c_int, data: *const u8) -> &'s [u8] {
    let len = unsafe { ffi::sqlite3_column_bytes(stmt, i) };
    if data.is_null() || len <= 0 {
        return &[];
    }
    unsafe { std::slice::from_raw_parts(data, len as usize) }
}

/// Binds one value to parameter `i`.
///
/// SAFETY: `stmt` is a live statement whose connection the caller holds, and `i` one of its parameters.
unsafe fn bind(stmt: *mut ffi::sqlite3_stmt, i: c_int, arg: &Arg<'_>) -> c_int {
    let too_big = ffi::SQLITE_TOOBIG;
    unsafe {
        match arg {
            Arg::Text(t) => match c_int::try_from(t.len()) {
                Ok(len) => ffi::sqlite3_bind_text(stmt, i, t.as_ptr().cast::<c_char>(), len, ffi::SQLITE_TRANSIENT()),
                Err(_) => too_big,
            },
            Arg::Int(v) => ffi::sqlite3_bind_int64(stmt, i, *v),
            Arg::Bool(b) => ffi::sqlite3_bind_int64(stmt, i, i64::from(*b)),
            // (A null pointer would bind NULL: an empty blob is a zero-length blob.)
            Arg::Blob(b) if b.is_empty() => ffi::sqlite3_bind_zeroblob(stmt, i, 0),
            Arg::Blob(b) => match c_int::try_from(b.len()) {
                Ok(len) => ffi::sqlite3_bind_blob(stmt, i, b.as_ptr().cast::<c_void>(), len, ffi::SQLITE_TRANSIENT()),
                Err(_) => too_big,
            },
            Arg::Null => ffi::sqlite3_bind_null(stmt, i),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sea_orm::{FromQueryResult, TryGetable};

    /// A connection of our own, opened and closed through the C interface, so that the test sees what
    /// `sqlite3_close` answers.
    struct Raw(NonNull<ffi::sqlite3>);

    impl Raw {
        fn open() -> Raw {
            let mut db = ptr::null_mut();
            // SAFETY: a fresh in-memory database; the out-pointer is a local.
            let rc = unsafe { ffi::sqlite3_open(c":memory:".as_ptr(), &mut db) };
            assert_eq!(rc, ffi::SQLITE_OK);
            Raw(NonNull::new(db).unwrap())
        }

        fn run(&self, sql: &str, args: &[Arg]) -> Result<Vec<Vec<QueryResult>>, SqliteFailure> {
            let mut spans = Vec::new();
            let mut at = 0;
            for part in sql.split_inclusive(';') {
                spans.push(at..at + part.trim_end_matches(';').len());
                at += part.len();
            }
            // SAFETY: this test's own connection.
            unsafe { run(self.0, sql, &spans, args) }
        }

        fn close(self) -> c_int {
            // SAFETY: opened by `open`; nothing else holds it.
            unsafe { ffi::sqlite3_close(self.0.as_ptr()) }
        }
    }

    #[derive(Debug, PartialEq, FromQueryResult)]
    struct Row {
        id: String,
        small: i32,
        big: i64,
        flag: bool,
        note: Option<String>,
        body: Option<Vec<u8>>,
    }

    const SCHEMA: &str = "CREATE TABLE t (id text PRIMARY KEY, small integer NOT NULL, big bigint NOT NULL, flag boolean NOT NULL, note text, body blob);";

    #[test]
    fn values_go_in_as_bound_and_come_back_typed_by_their_declared_types() {
        let db = Raw::open();
        db.run(SCHEMA, &[]).unwrap();
        let insert = "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?) RETURNING *;SELECT * FROM t ORDER BY id;SELECT count(*) AS n, 'x''y' AS s, 1.5 AS r FROM t";
        let args = [
            Arg::from("a 'quoted' \\ é 税"),
            Arg::Int(-7),
            Arg::Int(i64::MAX),
            Arg::Bool(true),
            Arg::Null,
            Arg::Blob(vec![0, 1, 255].into()),
            Arg::from("b"),
            Arg::Int(i32::MAX.into()),
            Arg::Int(0),
            Arg::Bool(false),
            Arg::from("with\u{0}nul"),
            Arg::Blob(Vec::new().into()),
        ];
        let sets = db.run(insert, &args).unwrap();
        let a = Row { id: "a 'quoted' \\ é 税".into(), small: -7, big: i64::MAX, flag: true, note: None, body: Some(vec![0, 1, 255]) };
        let b = Row { id: "b".into(), small: i32::MAX, big: 0, flag: false, note: Some("with\u{0}nul".into()), body: Some(Vec::new()) };
        let rows = |set: &Vec<QueryResult>| set.iter().map(|r| Row::from_query_result(r, "").unwrap()).collect::<Vec<_>>();
        // (RETURNING columns carry their declared types too.)
        assert_eq!(rows(&sets[0]), vec![a, b]);
        assert_eq!(rows(&sets[1]), rows(&sets[0]));
        // Expressions have no declared type: by what they hold.
        let stats = &sets[2][0];
        assert_eq!(i64::try_get(stats, "", "n").unwrap(), 2);
        assert_eq!(String::try_get(stats, "", "s").unwrap(), "x'y");
        assert_eq!(f64::try_get(stats, "", "r").unwrap(), 1.5);
        assert_eq!(db.close(), ffi::SQLITE_OK);
    }

    #[test]
    fn failures_name_their_cause_and_leave_the_statement_reusable() {
        let db = Raw::open();
        db.run(SCHEMA, &[]).unwrap();
        let insert = "INSERT INTO t VALUES (?, 1, 2, 0, NULL, NULL)";
        db.run(insert, &["k".into()]).unwrap();
        let dup = db.run(insert, &["k".into()]).unwrap_err();
        assert!(dup.is_unique_violation() && !dup.is_unavailable(), "{dup}");
        assert!(dup.message.contains("UNIQUE constraint failed: t.id"), "{dup}");
        assert!(matches!(StoreError::from(dup), StoreError::Conflict(_)));
        // The cached statement was reset: it runs again with a new value.
        db.run(insert, &["k2".into()]).unwrap();
        assert_eq!(db.run(insert, &[]).unwrap_err().message, "0 values for the statements' 1 parameters");
        let two = format!("{insert};{insert}");
        assert_eq!(db.run(&two, &["k3".into(), "k4".into(), "extra".into()]).unwrap_err().message, "3 values for the statements' 2 parameters");
        let e = db.run("SELECT nope FROM t", &[]).unwrap_err();
        assert_eq!(e.code, ffi::SQLITE_ERROR);
        assert!(e.message.contains("no such column: nope"), "{e}");
        assert!(db.run("SELECT 1; SELECT 2", &[]).is_ok(), "(split in two by the helper)");
        let whole = "SELECT 1; SELECT 2";
        // SAFETY: as in `Raw::run`.
        let e = unsafe { run(db.0, whole, std::slice::from_ref(&(0..whole.len())), &[]) }.unwrap_err();
        assert!(e.message.contains("more than one statement"), "{e}");
        let rows = db.run("SELECT count(*) AS n FROM t", &[]).unwrap();
        assert_eq!(i64::try_get(&rows[0][0], "", "n").unwrap(), 2, "k and k2: the failed statements wrote nothing");
        assert_eq!(db.close(), ffi::SQLITE_OK);
    }

    #[test]
    fn the_kept_statements_are_finalized_when_the_connection_closes() {
        let db = Raw::open();
        db.run(SCHEMA, &[]).unwrap();
        db.run("SELECT * FROM t WHERE id = ?", &["x".into()]).unwrap();
        // SAFETY: the cache this connection holds; nothing else runs on it.
        let kept = unsafe { Cache::of(db.0) }.unwrap().statements.len();
        assert_eq!(kept, 2);
        // sqlite3_close (as sqlx closes) refuses a connection with unfinalized statements: the close trace
        // finalized them first.
        assert_eq!(db.close(), ffi::SQLITE_OK);

        // Without the trace, the same close is refused.
        let db = Raw::open();
        db.run(SCHEMA, &[]).unwrap();
        // SAFETY: removes the trace; the statements stay in the cache.
        unsafe { ffi::sqlite3_trace_v2(db.0.as_ptr(), 0, None, ptr::null_mut()) };
        let stmt_left = db.0;
        assert_eq!(db.close(), ffi::SQLITE_BUSY);
        // (Finalize and close, so the test leaks nothing.)
        // SAFETY: the connection was not closed; its cache is still hung on it.
        unsafe {
            Cache::of(stmt_left).unwrap().finalize_all();
            assert_eq!(ffi::sqlite3_close(stmt_left.as_ptr()), ffi::SQLITE_OK);
        }
    }

    #[test]
    fn the_cache_starts_again_past_its_capacity() {
        let db = Raw::open();
        for i in 0..CAPACITY - 1 {
            db.run(&format!("SELECT {i} AS n"), &[]).unwrap();
        }
        // A script that would take it past: the cache starts again before it, and keeps all of it.
        let rows = db.run("SELECT 'a' AS n;SELECT 'b' AS n;SELECT 'c' AS n", &[]).unwrap();
        assert_eq!(rows.iter().map(|r| String::try_get(&r[0], "", "n").unwrap()).collect::<Vec<_>>(), ["a", "b", "c"]);
        // SAFETY: as above.
        assert_eq!(unsafe { Cache::of(db.0) }.unwrap().statements.len(), 3);
        assert_eq!(db.close(), ffi::SQLITE_OK);
    }
}
