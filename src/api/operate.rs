//! The operator's endpoints, outside the API document: `GET /livez` (the process answers), `GET /readyz` (the
//! database answers, its migrations are applied, the rules are loaded) and `GET /metrics` (the Prometheus text
//! format). `/metrics` is served on the public port only with a bearer token (LEVY_METRICS_TOKEN), else on a
//! listener of its own (LEVY_METRICS_BIND, [`metrics_app`]); with neither it is not served at all.

use std::sync::Arc;
use std::time::Duration;

use poem::http::{header, StatusCode};
use poem::{Endpoint, EndpointExt, Request, Response, Route};
use serde_json::json;

use super::error::ApiError;
use super::AppState;

/// How long a readiness check waits for the database before it says it does not answer (the pool's own wait is
/// 3 s; an orchestrator's probe usually gives up after 1 to 5).
const READINESS_WAIT: Duration = Duration::from_secs(2);

fn json_response(status: StatusCode, body: serde_json::Value) -> Response {
    Response::builder().status(status).content_type("application/json").header(header::CACHE_CONTROL, "no-store").body(body.to_string())
}

/// `GET /livez`: the process is up and serving (nothing else is checked: a restart would not mend the database).
pub fn livez() -> Response {
    json_response(StatusCode::OK, json!({"status": "live"}))
}

/// A round trip to the database, tried up to 3 times: a pooled connection the server (or the network) dropped while
/// it sat idle fails once and is discarded, and the next try opens a fresh one. A database that is down fails all 3.
async fn ping(state: &AppState) -> Result<(), crate::store::StoreError> {
    let mut result = state.store.ping().await;
    for _ in 1..3 {
        if result.is_ok() {
            break;
        }
        result = state.store.ping().await;
    }
    result
}

/// `GET /readyz`: 200 when this instance can answer, 503 naming what is not ready.
pub async fn readyz(state: &AppState) -> Response {
    let database = match tokio::time::timeout(READINESS_WAIT, ping(state)).await {
        Ok(Ok(())) => "ok".to_string(),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "readiness: the database does not answer");
            "unreachable".to_string()
        }
        Err(_) => "unreachable".to_string(),
    };
    let migrations = if database != "ok" {
        "unknown".to_string()
    } else {
        match tokio::time::timeout(READINESS_WAIT, state.store.pending_migrations()).await {
            Ok(Ok(0)) => "ok".to_string(),
            Ok(Ok(n)) => format!("{n} pending"),
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "readiness: cannot read the applied migrations");
                "unknown".to_string()
            }
            Err(_) => "unknown".to_string(),
        }
    };
    let jurisdictions = state.registry.all_jurisdictions().count();
    let rules = if jurisdictions > 0 { "ok" } else { "none loaded" };
    let ready = database == "ok" && migrations == "ok" && rules == "ok";
    let body = json!({
        "status": if ready { "ready" } else { "not ready" },
        "checks": {"database": database, "migrations": migrations, "rules": rules},
        "rules_version": state.registry.version,
        "jurisdictions": jurisdictions,
    });
    json_response(if ready { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE }, body)
}

/// The exposition of the instance's metrics.
pub fn exposition(state: &AppState) -> Response {
    Response::builder()
        .content_type(crate::metrics::CONTENT_TYPE)
        .header(header::CACHE_CONTROL, "no-store")
        .body(state.metrics.render(&state.store.pool_readings()))
}

/// Whether `Authorization` carries `token` as a bearer token (compared in constant time).
fn bearer_matches(req: &Request, token: &str) -> bool {
    let Some(sent) = req.header(header::AUTHORIZATION).and_then(|v| v.strip_prefix("Bearer ").or_else(|| v.strip_prefix("bearer "))) else {
        return false;
    };
    let (a, b) = (crate::security::sha256_hex(sent.trim().as_bytes()), crate::security::sha256_hex(token.as_bytes()));
    a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `GET /metrics` on the public port: 404 unless a token is configured, 401 without it.
pub fn public_metrics(state: &AppState, req: &Request) -> Result<Response, ApiError> {
    let Some(token) = state.metrics_token.as_deref() else {
        return Err(ApiError::not_found(format!("no endpoint at {}", req.uri().path())));
    };
    if !bearer_matches(req, token) {
        return Err(ApiError::unauthorized("send the metrics token as Authorization: Bearer"));
    }
    Ok(exposition(state))
}

/// The routes of the public port outside the API document.
pub fn routes(route: Route, state: Arc<AppState>) -> Route {
    let (ready, metrics) = (state.clone(), state);
    route
        .at("/livez", poem::get(poem::endpoint::make_sync(|_| livez())))
        .at(
            "/readyz",
            poem::get(poem::endpoint::make(move |_| {
                let state = ready.clone();
                async move { Ok::<_, poem::Error>(readyz(&state).await) }
            })),
        )
        .at(
            "/metrics",
            poem::get(poem::endpoint::make_sync(move |req| match public_metrics(&metrics, &req) {
                Ok(resp) => resp,
                Err(e) => super::middleware::envelope_response(&e),
            })),
        )
}

/// The listener of LEVY_METRICS_BIND: `/metrics` without a token (the operator's network reaches it), and nothing
/// else.
pub fn metrics_app(state: Arc<AppState>) -> impl Endpoint<Output = Response> {
    Route::new().at("/metrics", poem::get(poem::endpoint::make_sync(move |_| exposition(&state)))).map_to_response()
}
