//! Starting the service: load and check the rules (a rule error stops start-up with the analyst's
//! diagnostics), open the data key, connect and migrate the database, then serve until SIGINT/SIGTERM.

use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use poem::http::uri::Scheme;
use poem::web::{LocalAddr, RemoteAddr};
use poem::{Endpoint, EndpointExt};

use crate::api::{app, AppState};
use crate::clock::Clock;
use crate::config::Config;
use crate::plans::Plans;
use crate::rules::registry::Registry;
use crate::security::DataKey;
use crate::store::Store;

/// Logs as structured lines; RUST_LOG filters (default info). With LEVY_LOG_FORMAT=json, one JSON object per line
/// (see [`json_logs`]).
pub fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn,sea_orm=warn"));
    if crate::config::Observability::from_env().json_logs {
        let _ = json_logs(std::io::stderr).with_env_filter(filter).try_init();
    } else {
        let _ = tracing_subscriber::fmt().with_env_filter(filter).with_target(false).try_init();
    }
}

/// The JSON log format: one object per line, the event's fields at the top level beside `timestamp`, `level` and
/// `message`, and the request's (`request_id`, `operation`, `method`, `path`) in `span`. A request's closing line
/// (`handled`) has its `status` and `elapsed_us`.
pub fn json_logs<W>(
    writer: W,
) -> tracing_subscriber::fmt::SubscriberBuilder<
    tracing_subscriber::fmt::format::JsonFields,
    tracing_subscriber::fmt::format::Format<tracing_subscriber::fmt::format::Json>,
    tracing_subscriber::filter::LevelFilter,
    W,
>
where
    W: for<'a> tracing_subscriber::fmt::MakeWriter<'a> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(true)
        .with_span_list(false)
        .with_target(false)
        .with_writer(writer)
}

/// The rules, checked; `Err` after printing every diagnostic.
pub fn load_rules(dir: &Path) -> Result<Registry, String> {
    if !dir.join("registry.yaml").is_file() {
        return Err(format!(
            "no rules directory at {} (expected {}); name one with --rules or LEVY_RULES, or set neither to use the rules compiled in",
            dir.display(),
            dir.join("registry.yaml").display()
        ));
    }
    crate::rules::load::load_or_report(dir)
        .map(|(r, _)| r)
        .ok_or_else(|| format!("the rules in {} have errors (listed above); fix them and start again", dir.display()))
}

/// The rules the service runs: the directory given (`--rules` / LEVY_RULES), else those compiled into the binary
/// (build.rs), checked the same way.
pub fn configured_rules(dir: Option<&Path>) -> Result<Registry, String> {
    if let Some(dir) = dir {
        return load_rules(dir);
    }
    // The loader reads a directory: the compiled-in files are written to a fresh one, loaded, and removed.
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let dir = std::env::temp_dir().join(format!("levy-rules-{}-{nanos}", std::process::id()));
    let result = crate::rules::embedded::write_to(&dir)
        .map_err(|e| format!("cannot write the compiled-in rules to {}: {e}", dir.display()))
        .and_then(|()| {
            crate::rules::load::load_or_report(&dir)
                .map(|(r, _)| r)
                .ok_or_else(|| "the rules compiled into this binary have errors (listed above)".to_string())
        });
    let _ = std::fs::remove_dir_all(&dir);
    result
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
    let registry = Arc::new(configured_rules(config.rules_dir.as_deref())?);
    let plans = Arc::new(Plans::configured(config.rules_dir.as_deref(), &config.x402)?);
    let store = Store::connect("sqlite::memory:").await.map_err(|e| e.to_string())?;
    Ok(Arc::new(
        AppState::with_plans(store, registry, plans, Clock::system(), config.limits.clone(), DataKey::generate())
            .with_x402(&config.x402)?
            .with_mpp(&config.mpp, config.public_url.as_deref())?
            .with_billing(&config.billing)?,
    ))
}

pub async fn serve(config: Config) -> Result<(), String> {
    let registry = Arc::new(configured_rules(config.rules_dir.as_deref())?);
    let plans = Arc::new(Plans::configured(config.rules_dir.as_deref(), &config.x402)?);
    crate::blog::articles().map_err(|errors| errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n"))?;
    let data_key = data_key(&config)?;
    let store = connect_and_migrate(&config.database_url).await?;
    let state = Arc::new(
        AppState::with_plans(store.clone(), registry, plans, Clock::system(), config.limits.clone(), data_key)
            .with_x402(&config.x402)?
            .with_mpp(&config.mpp, config.public_url.as_deref())?
            .with_billing(&config.billing)?
            .with_metrics_token(config.observability.metrics_token.as_deref()),
    );
    let endpoint = app(state.clone(), config.trust_forwarded_for);
    if let Some(bind) = &config.observability.metrics_bind {
        let listener =
            tokio::net::TcpListener::bind(bind).await.map_err(|e| format!("cannot listen on {bind} (LEVY_METRICS_BIND): {e}"))?;
        tracing::info!(bind = %bind, "metrics at /metrics");
        let metrics = crate::api::operate::metrics_app(state.clone());
        let timeout = config.limits.bounds.header_timeout;
        tokio::spawn(accept_until_shutdown(listener, metrics, timeout, std::future::pending()));
    }
    tokio::spawn(prune_counters(state));
    let backend = if config.database_url.starts_with("postgres") { "postgres" } else { "sqlite" };
    let listener = tokio::net::TcpListener::bind(&config.bind).await.map_err(|e| format!("cannot listen on {}: {e}", config.bind))?;
    tracing::info!(bind = %config.bind, database = backend, "levy listening; docs at /docs");
    accept_until_shutdown(listener, endpoint, config.limits.bounds.header_timeout, shutdown_signal()).await;
    tracing::info!("shut down cleanly");
    Ok(())
}

/// The most a connection's read buffer holds (the headers must fit in it).
const READ_BUFFER_BYTES: usize = 64 << 10;

/// Serves HTTP/1 and HTTP/2 connections from `listener` until `shutdown` resolves, then lets in-flight requests
/// finish for up to 10 seconds. An HTTP/1 request's headers must arrive within `header_timeout`.
pub async fn accept_until_shutdown(
    listener: tokio::net::TcpListener,
    endpoint: impl Endpoint<Output = poem::Response> + 'static,
    header_timeout: Duration,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let endpoint = Arc::new(endpoint.boxed());
    let local = listener.local_addr().map(|a| LocalAddr(a.into())).unwrap_or_default();
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // A connection's read buffer holds at most 64 KiB (hyper's default is about 400 KiB): what a request's
    // headers may take, and what a body being read costs beside its own bytes.
    builder.http1().timer(TokioTimer::new()).header_read_timeout(header_timeout).max_buf_size(READ_BUFFER_BYTES);
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (socket, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(pair) => pair,
                Err(e) => {
                    // Out of file descriptors and the like: wait a moment rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let (endpoint, local) = (endpoint.clone(), local.clone());
        let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
            let (endpoint, local) = (endpoint.clone(), local.clone());
            async move {
                let req = poem::Request::from((req, local, RemoteAddr(remote.into()), Scheme::HTTP));
                Ok::<_, Infallible>(hyper::Response::from(endpoint.get_response(req).await))
            }
        });
        let connection = graceful.watch(builder.serve_connection_with_upgrades(TokioIo::new(socket), service).into_owned());
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(Duration::from_secs(10)) => tracing::warn!("in-flight requests still running after 10 s; stopping"),
    }
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
