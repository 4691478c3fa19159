//! SQLite's WAL checkpoints, kept off the write path.
//!
//! In WAL mode a commit appends pages to the log; a checkpoint copies them back into the database file so that
//! the log can start again from its beginning. By default the connection whose commit takes the log past 1,000
//! pages checkpoints there and then, inside that commit, so the ledger batch and every caller waiting on it wait
//! for the copy too: under keyed load that was the whole tail of the latency (p99 7.1–7.6 ms at about half
//! load, against 2.3–2.6 ms with checkpoints off; benches/load.sh).
//!
//! Here a background task checkpoints (PASSIVE: it copies what no reader still needs and never blocks a
//! writer) on a connection of the read pool, every 20 ms while the log file changes. The copy thus happens
//! beside the writer. The log can only start again when a write transaction begins with every page of it
//! copied, which a copy made beside a busy writer rarely leaves; so once the log is long, the writer copies
//! the few pages written since the last background copy itself, before its next transaction
//! ([`Checkpoints::take_restart`]), and that transaction starts the log again.
//!
//! A checkpoint syncs the log before it copies and the database file after, and on this filesystem (ext4)
//! a sync writes out whatever of the file is dirty: the writer's copy, though it copies a few pages, synced
//! everything written to either file since the last restart, and took longer the longer the log (about 5 ms at
//! 1,000 pages, 18 at 10,000, on a machine whose syncs of a few pages take 0.25 ms). So before it asks the
//! writer for that copy, the task syncs both files itself, off the write path ([`sync`]); the writer's syncs
//! then find only what was written in the meantime (its copy took 1.8 ms at 10,000 pages), and the log can be
//! long, which makes those pauses rare: at 10,000 pages (a 40 MB log file) about 3 a second at half of the keyed
//! maximum, instead of 16 at 1,000.
//!
//! The writer's own automatic checkpoint stays as a backstop at a larger size (`WRITER_AUTOCHECKPOINT`):
//! should the background copies stop keeping up, or the log not be found where the URL says (a symlinked
//! path). Only the ledger batch finishes checkpoints; under other writers alone (the limiter,
//! trades) the log starts again whenever a transaction begins with the background copies caught up, which
//! the pauses between their transactions allow, and otherwise at the backstop.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sea_orm::DatabaseConnection;
use tokio::sync::mpsc;

/// Log length (pages) at which the writer finishes a checkpoint so that the log starts again (40 MB of 4 KB
/// pages; SQLite's own automatic checkpoint waits for 1,000).
pub const RESTART_AT: i64 = 10_000;
/// The writer connection's automatic checkpoint (pages): only should the background copies fall behind.
pub const WRITER_AUTOCHECKPOINT: u32 = 25_000;
/// How often the background task copies while the database is written.
const EVERY: Duration = Duration::from_millis(20);

/// The background checkpoints of one SQLite database. The task ends at its next tick after the last clone of
/// the store is dropped (until then it holds the read pool).
pub struct Checkpoints {
    restart: Arc<AtomicBool>,
    _alive: mpsc::Sender<()>,
}

impl Checkpoints {
    /// Starts the background task (inside a Tokio runtime) for the database in the file `file`, whose log is
    /// the file `log`.
    pub fn start(db: DatabaseConnection, file: PathBuf, log: PathBuf) -> Checkpoints {
        let restart = Arc::new(AtomicBool::new(false));
        let (alive, mut ended) = mpsc::channel::<()>(1);
        let flag = restart.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut copied_at = None;
            loop {
                tokio::select! {
                    _ = ended.recv() => return,
                    _ = tick.tick() => {}
                }
                // Only when the log was written since the last copy (a look at the file, not the database); no
                // file, no copy.
                let Some(modified) = std::fs::metadata(&log).and_then(|m| m.modified()).ok() else { continue };
                if copied_at == Some(modified) {
                    continue;
                }
                // (A failure, or another checkpoint under way, is tried again at the next tick.)
                if let Ok(Some((pages, _copied))) = checkpoint(&db).await {
                    copied_at = Some(modified);
                    if pages >= RESTART_AT {
                        // (A failed sync leaves more for the writer's; it syncs in any case.)
                        let files = [log.clone(), file.clone()];
                        let _ = tokio::task::spawn_blocking(move || sync(&files)).await;
                        flag.store(true, Ordering::Relaxed);
                    }
                }
            }
        });
        Checkpoints { restart, _alive: alive }
    }

    /// Whether the writer should finish a checkpoint before its next transaction, so that the log starts
    /// again (asked once: the answer is reset).
    pub fn take_restart(&self) -> bool {
        self.restart.swap(false, Ordering::Relaxed)
    }
}

/// The file a `sqlite:` URL opens, read as sqlx reads it (scheme `sqlite://` or `sqlite:`, path percent-decoded,
/// query ignored); `None` for an in-memory database or another database's URL.
pub fn sqlite_file(url: &str) -> Option<PathBuf> {
    let rest = url.strip_prefix("sqlite://").or_else(|| url.strip_prefix("sqlite:"))?;
    let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
    if path.is_empty() || path == ":memory:" || query.split('&').any(|p| p == "mode=memory") {
        return None;
    }
    let decoded = percent_encoding::percent_decode_str(path).decode_utf8().ok()?;
    Some(PathBuf::from(decoded.as_ref()))
}

/// Writes the files' dirty pages to disk (`fdatasync`, whichever handle of a file was written through).
fn sync(files: &[PathBuf]) -> std::io::Result<()> {
    for f in files {
        std::fs::File::open(f)?.sync_data()?;
    }
    Ok(())
}

/// A PASSIVE checkpoint on a connection of `db`'s pool (see [`passive`]).
async fn checkpoint(db: &DatabaseConnection) -> Result<Option<(i64, i64)>, sea_orm::sqlx::Error> {
    let mut conn = db.get_sqlite_connection_pool().acquire().await?;
    passive(&mut conn).await
}

/// `PRAGMA wal_checkpoint(PASSIVE)` on this connection: the log's length and the pages copied, or `None` when
/// it copied nothing (another checkpoint was under way, or the database is not in WAL mode).
pub async fn passive(conn: &mut sea_orm::sqlx::SqliteConnection) -> Result<Option<(i64, i64)>, sea_orm::sqlx::Error> {
    let (busy, log, copied): (i64, i64, i64) = sea_orm::sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)").fetch_one(conn).await?;
    Ok((busy == 0 && log >= 0).then_some((log, copied)))
}

#[cfg(test)]
mod tests {
    use super::sqlite_file;
    use std::path::PathBuf;

    #[test]
    fn the_file_a_url_names_as_sqlx_reads_it() {
        assert_eq!(sqlite_file("sqlite:///var/lib/levy/levy.db?mode=rwc"), Some(PathBuf::from("/var/lib/levy/levy.db")));
        assert_eq!(sqlite_file("sqlite://data/levy.db"), Some(PathBuf::from("data/levy.db")));
        assert_eq!(sqlite_file("sqlite:levy.db"), Some(PathBuf::from("levy.db")));
        // (sqlx decodes %-escapes, so that a name can hold '?' or '#'.)
        assert_eq!(sqlite_file("sqlite:///tmp/a%20b/levy%3F.db?mode=rwc"), Some(PathBuf::from("/tmp/a b/levy?.db")));
        assert_eq!(sqlite_file("sqlite::memory:"), None);
        assert_eq!(sqlite_file("sqlite://shared?mode=memory&cache=shared"), None);
        assert_eq!(sqlite_file("postgres://localhost/test"), None);
    }

    #[tokio::test]
    async fn a_percent_encoded_path_gets_its_directory_as_decoded() {
        let tmp = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/a%20b/levy.db?mode=rwc", tmp.path().display());
        let store = crate::store::Store::connect(&url).await.unwrap();
        store.migrate().await.unwrap();
        assert!(tmp.path().join("a b/levy.db").is_file());
        assert!(tmp.path().join("a b/levy.db-wal").is_file(), "the log the background task watches");
        assert!(!tmp.path().join("a%20b").exists());
    }

    #[tokio::test]
    async fn a_file_whose_path_says_memory_is_a_file() {
        let tmp = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/memory/levy.db?mode=rwc", tmp.path().display());
        let store = crate::store::Store::connect(&url).await.unwrap();
        assert_eq!(store.writer.get_sqlite_connection_pool().options().get_max_connections(), 1, "its own writer pool of one");
        assert!(store.checkpoints.is_some());
        let memory = crate::store::Store::connect("sqlite::memory:").await.unwrap();
        assert!(memory.checkpoints.is_none());
        assert_eq!(memory.writer.get_sqlite_connection_pool().options().get_max_connections(), 8, "the one pool");
    }
}
