//! Per-request context: the request id and the headers a handler wants added to its response.
//! The middleware in `middleware.rs` opens it around every request; handlers reach it through these functions.

use std::sync::{Arc, Mutex};

pub struct RequestContext {
    pub request_id: String,
    pub client_ip: String,
    pub extra_headers: Mutex<Vec<(&'static str, String)>>,
}

tokio::task_local! {
    static CONTEXT: Arc<RequestContext>;
}

pub async fn scope<F: std::future::Future>(ctx: Arc<RequestContext>, f: F) -> F::Output {
    CONTEXT.scope(ctx, f).await
}

/// The current request's id ("" outside a request, e.g. in a unit test).
pub fn request_id() -> String {
    CONTEXT.try_with(|c| c.request_id.clone()).unwrap_or_default()
}

pub fn client_ip() -> String {
    CONTEXT.try_with(|c| c.client_ip.clone()).unwrap_or_default()
}

/// `path` as a full URL: under the configured public base URL (LEVY_PUBLIC_URL), else under the request's Host header
/// over https, else the path alone.
pub fn public_url(base: Option<&str>, req: &poem::Request, path: &str) -> String {
    if let Some(base) = base {
        return format!("{base}{path}");
    }
    match req.headers().get("host").and_then(|h| h.to_str().ok()).filter(|h| !h.is_empty() && h.len() <= 255) {
        Some(h) => format!("https://{h}{path}"),
        None => path.to_string(),
    }
}

/// Adds a header to the response of the current request (rate-limit windows, Retry-After, idempotency status).
pub fn set_header(name: &'static str, value: impl ToString) {
    let _ = CONTEXT.try_with(|c| {
        if let Ok(mut h) = c.extra_headers.lock() {
            h.retain(|(n, _)| *n != name);
            h.push((name, value.to_string()));
        }
    });
}

pub fn take_headers(ctx: &RequestContext) -> Vec<(&'static str, String)> {
    ctx.extra_headers.lock().map(|mut h| std::mem::take(&mut *h)).unwrap_or_default()
}
