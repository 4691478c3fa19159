//! Settings, from flags and environment: where to listen, which database, where the rules and secrets are,
//! and the limiter values (the spec's, overridable only for load benchmarks).

use std::path::PathBuf;

#[derive(Clone, Debug)]
pub struct Limits {
    /// Keyed calculate calls per key per 60-second window (spec: 120).
    pub burst_per_minute: i64,
    /// Keyless demo calls per IP per minute (spec: 30).
    pub demo_per_minute: i64,
    /// Keyless demo calls per IP per UTC day (spec: 50).
    pub demo_per_day: i64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { burst_per_minute: 120, demo_per_minute: 30, demo_per_day: 50 }
    }
}

impl Limits {
    /// The spec's limits, except where LEVY_BURST_LIMIT / LEVY_DEMO_MINUTE_LIMIT / LEVY_DEMO_DAY_LIMIT say otherwise.
    pub fn from_env() -> Self {
        let d = Limits::default();
        let get = |name: &str, default: i64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
        Limits {
            burst_per_minute: get("LEVY_BURST_LIMIT", d.burst_per_minute),
            demo_per_minute: get("LEVY_DEMO_MINUTE_LIMIT", d.demo_per_minute),
            demo_per_day: get("LEVY_DEMO_DAY_LIMIT", d.demo_per_day),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    /// Address to listen on (LEVY_BIND, default 127.0.0.1:8080).
    pub bind: String,
    /// DATABASE_URL; default: the SQLite file `<data_dir>/levy.db`.
    pub database_url: String,
    /// The rules directory loaded and checked at start (LEVY_RULES); `None`: the rules compiled into the binary.
    pub rules_dir: Option<PathBuf>,
    /// Where the embedded database and the generated data key live (LEVY_DATA_DIR, default `levy-data`).
    pub data_dir: PathBuf,
    /// The EIN encryption key as 64 hex characters (LEVY_DATA_KEY); default: `<data_dir>/data.key`, created on first start.
    pub data_key: Option<String>,
    pub limits: Limits,
}

impl Config {
    pub fn from_env() -> Self {
        let data_dir = PathBuf::from(std::env::var("LEVY_DATA_DIR").unwrap_or_else(|_| "levy-data".into()));
        let database_url = std::env::var("DATABASE_URL").unwrap_or_else(|_| sqlite_url(&data_dir.join("levy.db")));
        Config {
            bind: std::env::var("LEVY_BIND").unwrap_or_else(|_| "127.0.0.1:8080".into()),
            database_url,
            rules_dir: std::env::var_os("LEVY_RULES").map(PathBuf::from),
            data_dir,
            data_key: std::env::var("LEVY_DATA_KEY").ok(),
            limits: Limits::from_env(),
        }
    }
}

/// A sqlx SQLite URL that creates the file when missing.
pub fn sqlite_url(path: &std::path::Path) -> String {
    format!("sqlite://{}?mode=rwc", path.display())
}
