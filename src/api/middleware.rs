//! The outermost layer: request ids, structured request logs, extra response headers, and the error
//! envelope for every failure that did not come from a handler (unknown path, wrong method, bad
//! parameter, missing credentials, panic), and the request's time bound (`Bounds::request_timeout`).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use poem::error::{MethodNotAllowedError, NotFoundError};
use poem::http::{header, HeaderValue, StatusCode};
use poem::{Endpoint, IntoResponse, Request, Response};
use poem_openapi::error::{AuthorizationError, ContentTypeError, ParseParamError, ParseRequestPayloadError};
use tracing::Instrument;

use super::context::{self, RequestContext};
use super::error::{ApiError, ErrorCode};
use super::payload::BodyBudget;
use super::query::QueryParameters;
use crate::config::Bounds;

pub struct Envelope<E> {
    pub inner: E,
    /// Take the client address from X-Forwarded-For (only behind a trusted proxy).
    pub trust_forwarded_for: bool,
    /// Size and time bounds; the body's are read by `payload::read_bounded` from the request's data.
    pub bounds: Bounds,
    /// The body bytes all requests may hold at once, shared through the request's data.
    pub body_budget: BodyBudget,
    /// Each operation's query parameters, from the OpenAPI document (any other is refused before the handler), and
    /// the methods each path answers (405's Allow header).
    pub queries: Arc<QueryParameters>,
    /// Every request is counted and timed here, by operation.
    pub metrics: Arc<crate::metrics::Metrics>,
}

/// The name of a route outside the OpenAPI document, for the metrics and logs (`unmatched` for any path no route
/// answers: never the path itself).
fn undocumented_operation(path: &str) -> &'static str {
    match path {
        "/metrics" => "metrics",
        "/livez" => "livez",
        "/readyz" => "readyz",
        "/api/v1/openapi.json" => "openapi",
        _ if path == "/docs" || path.starts_with("/docs/") => "docs",
        _ => "unmatched",
    }
}

fn valid_request_id(v: &str) -> bool {
    (1..=128).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_graphic())
}

impl<E: Endpoint> Envelope<E> {
    fn client_ip(&self, req: &Request) -> String {
        if self.trust_forwarded_for {
            // Only an address: any other text would let a client name its own limiter window.
            if let Some(ip) =
                req.header("x-forwarded-for").and_then(|v| v.split(',').next()).and_then(|f| f.trim().parse::<std::net::IpAddr>().ok())
            {
                return ip.to_string();
            }
        }
        match req.remote_addr().as_socket_addr() {
            Some(addr) => addr.ip().to_string(),
            None => req.remote_addr().to_string(),
        }
    }

    fn convert(&self, err: poem::Error, method: &str, path: &str) -> (ApiError, Option<String>) {
        if err.is::<NotFoundError>() {
            return (ApiError::not_found(format!("no endpoint at {path}")), None);
        }
        if err.is::<MethodNotAllowedError>() {
            let methods = self.queries.methods_at(path);
            let allow = (!methods.is_empty()).then(|| methods.join(", "));
            let msg = match &allow {
                Some(a) => format!("{method} is not allowed on {path}; use {a}"),
                None => format!("{method} is not allowed on {path}"),
            };
            return (ApiError::new(StatusCode::METHOD_NOT_ALLOWED, ErrorCode::MethodNotAllowed, msg), allow);
        }
        if let Some(e) = err.downcast_ref::<ParseParamError>() {
            // poem-openapi's words for a required parameter left out ("Type \"X\" expects an input value."), in ours.
            let reason = if e.reason.ends_with("expects an input value.") { "required".to_string() } else { e.reason.clone() };
            return (ApiError::field(e.name, reason), None);
        }
        if err.is::<AuthorizationError>() {
            return (ApiError::unauthorized("missing credentials: send the API key as X-API-Key or Authorization: Bearer"), None);
        }
        if let Some(e) = err.downcast_ref::<ParseRequestPayloadError>() {
            return (ApiError::invalid_json(&e.reason), None);
        }
        if err.is::<ContentTypeError>() {
            return (ApiError::invalid_json(err.to_string()), None);
        }
        (from_status(err.status(), &err.to_string()), None)
    }
}

/// A response passed through as it is, or, for a failure that is not JSON (from a lower layer), its envelope.
fn passed_through(resp: Response) -> Result<Response, ApiError> {
    let failed = resp.status().is_client_error() || resp.status().is_server_error();
    if !failed || resp.content_type().is_some_and(|c| c.starts_with("application/json")) {
        return Ok(resp);
    }
    Err(from_status(resp.status(), "request failed"))
}

/// The answer to a request that outlived `Bounds::request_timeout` (its handler is dropped).
fn timed_out(limit: std::time::Duration) -> ApiError {
    tracing::warn!(limit_secs = limit.as_secs(), "request timed out");
    let message = format!("the request did not finish within {} s; retry shortly", limit.as_secs());
    ApiError::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::DbUnavailable, message)
}

/// An envelope for a bare status (a plain-text error from a lower layer, or a panic).
fn from_status(status: StatusCode, detail: &str) -> ApiError {
    match status {
        StatusCode::NOT_FOUND => ApiError::not_found("not found"),
        StatusCode::METHOD_NOT_ALLOWED => ApiError::new(status, ErrorCode::MethodNotAllowed, "method not allowed"),
        StatusCode::UNAUTHORIZED => ApiError::unauthorized("missing or invalid credentials"),
        StatusCode::PAYLOAD_TOO_LARGE | StatusCode::BAD_REQUEST | StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            ApiError::invalid(vec![format!("body: {detail}")])
        }
        _ => ApiError::internal(format!("{status}: {detail}")),
    }
}

pub(crate) fn envelope_response(err: &ApiError) -> Response {
    poem::web::Json(serde_json::to_value(poem_openapi::types::ToJSON::to_json(&err.envelope())).unwrap_or_default())
        .with_status(err.status)
        .into_response()
}

impl<E: Endpoint> Endpoint for Envelope<E> {
    type Output = Response;

    async fn call(&self, mut req: Request) -> poem::Result<Response> {
        req.set_data(self.bounds);
        req.set_data(self.body_budget.clone());
        let request_id = match req.header("x-request-id") {
            Some(v) if valid_request_id(v) => v.to_string(),
            _ => format!("req_{}", uuid::Uuid::new_v4().simple()),
        };
        let method = req.method().to_string();
        let path = req.uri().path().to_string();
        let query = req.uri().query().map(str::to_string);
        let ctx = Arc::new(RequestContext {
            request_id: request_id.clone(),
            client_ip: self.client_ip(&req),
            extra_headers: Mutex::new(Vec::new()),
        });
        let found = self.queries.find(&method, &path);
        let operation = found.map_or_else(|| undocumented_operation(&path), |op| op.id());
        let span = tracing::info_span!("request", request_id = %request_id, operation = %operation, method = %method, path = %path);
        let started = Instant::now();
        let mut resp = context::scope(ctx.clone(), async {
            // A query parameter the operation does not document ends the request here, before any of its effects.
            if let Err(e) = QueryParameters::check_operation(found, query.as_deref()) {
                return envelope_response(&e);
            }
            let limit = self.bounds.request_timeout;
            let outcome = match tokio::time::timeout(limit, self.inner.call(req)).await {
                Ok(Ok(r)) => Ok(r.into_response()),
                // A handler's own error response travels as a poem::Error made from that response: unwrap it.
                Ok(Err(e)) if e.is_from_response() => Ok(e.into_response()),
                Ok(Err(e)) => Err(self.convert(e, &method, &path)),
                Err(_) => Err((timed_out(limit), None)),
            };
            let (err, allow) = match outcome.map(passed_through) {
                Ok(Ok(resp)) => return resp,
                Ok(Err(err)) => (err, None),
                Err(failure) => failure,
            };
            let mut resp = envelope_response(&err);
            if let Some(allow) = allow.and_then(|a| HeaderValue::from_str(&a).ok()) {
                resp.headers_mut().insert(header::ALLOW, allow);
            }
            resp
        })
        .instrument(span.clone())
        .await;
        for (name, value) in context::take_headers(&ctx) {
            if let Ok(v) = HeaderValue::from_str(&value) {
                resp.headers_mut().insert(name, v);
            }
        }
        if let Ok(v) = HeaderValue::from_str(&request_id) {
            resp.headers_mut().insert("x-request-id", v);
        }
        let elapsed = started.elapsed();
        self.metrics.http_request(operation, &method, resp.status().as_u16(), elapsed);
        let _enter = span.enter();
        tracing::info!(status = resp.status().as_u16(), elapsed_us = elapsed.as_micros() as u64, "handled");
        Ok(resp)
    }
}
