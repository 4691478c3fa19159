//! `levy mcp`: the tools over stdio, for a desktop agent. Each tool call is the REST call it stands for, made over
//! HTTP to the levy server at `--url` (LEVY_URL) with the API key of LEVY_API_KEY, so that it works against any
//! deployment. Nothing but MCP messages is written to stdout.

use std::sync::Arc;

use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServiceExt};

use super::{Catalog, Rest, RestAnswer, RestCall, Tools};

/// A levy server over HTTP.
pub struct Remote {
    client: reqwest::Client,
    base: String,
    api_key: Option<String>,
}

impl Rest for Remote {
    async fn send(&self, call: RestCall, _context: &RequestContext<RoleServer>) -> RestAnswer {
        let method = reqwest::Method::from_bytes(call.method.as_bytes()).unwrap_or(reqwest::Method::GET);
        let mut request = self.client.request(method, format!("{}{}", self.base, call.target)).header("accept", "application/json");
        if let Some(key) = &self.api_key {
            request = request.header("x-api-key", key);
        }
        if let Some(body) = call.body {
            request = request.header("content-type", "application/json").body(body);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => return no_answer(format!("the levy server at {} did not answer: {e}", self.base)),
        };
        let status = response.status().as_u16();
        let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).map(str::to_string);
        let headers = super::kept(response.headers().iter().map(|(n, v)| (n.as_str(), v.as_bytes())));
        match response.bytes().await {
            Ok(body) => RestAnswer { status, content_type, body: body.to_vec(), headers },
            Err(e) => no_answer(format!("the levy server at {} broke off its answer: {e}", self.base)),
        }
    }
}

/// The answer for a call that never got one: a 503 with the API's envelope (DB_UNAVAILABLE is the API's code for
/// a service that cannot answer now; the message says which).
pub(super) fn no_answer(message: String) -> RestAnswer {
    let error =
        crate::api::error::ApiError::new(poem::http::StatusCode::SERVICE_UNAVAILABLE, crate::api::error::ErrorCode::DbUnavailable, message);
    let body = poem_openapi::types::ToJSON::to_json(&error.envelope()).unwrap_or_default().to_string().into_bytes();
    RestAnswer { status: 503, content_type: Some("application/json".into()), body, headers: Vec::new() }
}

/// Serves the tools of `spec` (the OpenAPI document) on stdin/stdout until the client closes them.
pub async fn serve(spec: &str, url: &str, api_key: Option<String>) -> Result<(), String> {
    let doc: serde_json::Value = serde_json::from_str(spec).map_err(|e| format!("the OpenAPI document: {e}"))?;
    let client = reqwest::Client::builder()
        .user_agent(concat!("levy-mcp/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    let remote = Remote { client, base: url.trim_end_matches('/').to_string(), api_key: api_key.filter(|k| !k.is_empty()) };
    let tools = Tools::new(Arc::new(Catalog::from_document(&doc)), Arc::new(remote));
    let running = tools.serve(rmcp::transport::stdio()).await.map_err(|e| format!("MCP over stdio: {e}"))?;
    running.waiting().await.map_err(|e| format!("MCP over stdio: {e}"))?;
    Ok(())
}
