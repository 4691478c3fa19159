//! Starting the service: load and check the rules (a rule error stops start-up with the analyst's
//! diagnostics), open the data key, connect and migrate the database, then serve until SIGINT/SIGTERM.

use std::path::Path;
use std::sync::Arc;

use poem::listener::TcpListener;
use poem::Server;

use crate::api::{app, AppState};
use crate::clock::Clock;
use crate::config::Config;
use crate::rules::registry::Registry;
use crate::security::DataKey;
use crate::store::Store;

/// Logs as structured lines; RUST_LOG filters (default info).
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn,sea_orm=warn"));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_target(false).try_init();
}

/// The rules, checked; `Err` after printing every diagnostic.
pub fn load_rules(dir: &Path) -> Result<Registry, String> {
    if !dir.join("registry.yaml").is_file() {
        return Err(format!("no rules directory at {} (expected {}); run from the repository root or set LEVY_RULES", dir.display(), dir.join("registry.yaml").display()));
    }
    crate::rules::load::load_or_report(dir).map(|(r, _)| r).ok_or_else(|| format!("the rules in {} have errors (listed above); fix them and start again", dir.display()))
}

/// The EIN key: LEVY_DATA_KEY, else `<data_dir>/data.key`, generated (mode 0600) on first start.
pub fn data_key(config: &Config) -> Result<DataKey, String> {
    if let Some(hex) = &config.data_key {
        return DataKey::from_hex(hex);
    }
    let path = config.data_dir.join("data.key");
    match std::fs::read_to_string(&path) {
        Ok(text) => DataKey::from_hex(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(&config.data_dir).map_err(|e| format!("cannot create {}: {e}", config.data_dir.display()))?;
            let key = DataKey::generate();
            write_private(&path, &key.to_hex()).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            tracing::info!(path = %path.display(), "generated a new data key for EIN encryption; back it up with the database");
            Ok(key)
        }
        Err(e) => Err(format!("cannot read {}: {e}", path.display())),
    }
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    opts.open(path)?.write_all(text.as_bytes())
}

pub async fn connect_and_migrate(url: &str) -> Result<Store, String> {
    let store = Store::connect(url).await.map_err(|e| format!("cannot open the database: {e}"))?;
    store.migrate().await.map_err(|e| format!("cannot migrate the database: {e}"))?;
    Ok(store)
}

/// A state for producing the OpenAPI document without a database (an in-memory SQLite).
pub async fn offline_state(config: &Config) -> Result<Arc<AppState>, String> {
    let registry = Arc::new(load_rules(&config.rules_dir)?);
    let store = Store::connect("sqlite::memory:").await.map_err(|e| e.to_string())?;
    Ok(Arc::new(AppState::new(store, registry, Clock::system(), config.limits.clone(), DataKey::generate())))
}

pub async fn serve(config: Config) -> Result<(), String> {
    let registry = Arc::new(load_rules(&config.rules_dir)?);
    let data_key = data_key(&config)?;
    let store = connect_and_migrate(&config.database_url).await?;
    let state = Arc::new(AppState::new(store.clone(), registry, Clock::system(), config.limits.clone(), data_key));
    // The ledger's dictionary, built and recorded now rather than by the first keyed call (a failure is left to
    // that call, which tries again).
    if let Err(e) = state.ledger_dictionary().await {
        tracing::warn!(error = %e.message, "ledger dictionary not ready");
    }
    let trust = std::env::var("LEVY_TRUST_FORWARDED_FOR").is_ok_and(|v| v == "1");
    let endpoint = app(state.clone(), trust);
    tokio::spawn(prune_counters(state));
    let backend = if config.database_url.starts_with("postgres") { "postgres" } else { "sqlite" };
    tracing::info!(bind = %config.bind, database = backend, "levy listening; docs at /docs");
    Server::new(TcpListener::bind(config.bind.clone()))
        .run_with_graceful_shutdown(endpoint, shutdown_signal(), Some(std::time::Duration::from_secs(10)))
        .await
        .map_err(|e| format!("server error on {}: {e}", config.bind))?;
    tracing::info!("shut down cleanly");
    Ok(())
}

async fn prune_counters(state: Arc<AppState>) {
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(600)).await;
        if let Err(e) = state.store.prune_counters(state.clock.now_ms()).await {
            tracing::warn!(error = %e, "pruning expired limiter windows failed");
        }
    }
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { _ = ctrl_c => {}, _ = term => {} }
    tracing::info!("shutdown signal received; finishing in-flight requests");
}
