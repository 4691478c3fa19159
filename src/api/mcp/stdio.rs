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
        let mut request = self.client.request(call.method, format!("{}{}", self.base, call.target)).header("accept", "application/json");
        if let Some(key) = &self.api_key {
            request = request.header("x-api-key", key);
        }
        if let Some(body) = call.body {
            request = request.header("content-type", "application/json").body(body);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) => return RestAnswer::unanswered(format!("the levy server at {} did not answer: {e}", self.base)),
        };
        let (status, headers) = (response.status().as_u16(), response.headers().clone());
        match response.bytes().await {
            Ok(body) => RestAnswer::new(status, &headers, body.to_vec()),
            Err(e) => RestAnswer::unanswered(format!("the levy server at {} broke off its answer: {e}", self.base)),
        }
    }
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
