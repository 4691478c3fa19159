//! `/mcp` on the service: MCP's streamable HTTP transport (rmcp, stateless, JSON answers), each tool call made
//! in-process as the REST call it stands for, with the MCP request's credentials (X-API-Key or
//! Authorization) and client address, so that the REST API's envelope, limits and payments apply unchanged.

use std::sync::Arc;

use http_body_util::BodyExt;
use poem::endpoint::BoxEndpoint;
use poem::http::HeaderValue;
use poem::web::{LocalAddr, RemoteAddr};
use poem::{Endpoint, Request, RequestParts, Response};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::RoleServer;
use tower_service::Service;

use super::{Catalog, Rest, RestAnswer, RestCall, Tools};

/// The headers of an MCP request that a tool call passes on to its REST call.
const PASSED_ON: [&str; 4] = ["x-api-key", "authorization", "x-forwarded-for", "user-agent"];

/// Where the MCP request came from, kept for the REST calls it makes.
#[derive(Clone)]
struct Caller {
    remote: RemoteAddr,
    local: LocalAddr,
    scheme: poem::http::uri::Scheme,
}

/// The REST API itself, called in-process.
pub struct InProcess {
    api: Arc<BoxEndpoint<'static, Response>>,
}

impl Rest for InProcess {
    async fn send(&self, call: RestCall, context: &RequestContext<RoleServer>) -> RestAnswer {
        let parts = context.extensions.get::<poem::http::request::Parts>();
        let mut builder = poem::http::Request::builder()
            .method(call.method)
            .uri(&call.target)
            .header("content-type", "application/json")
            .header("accept", "application/json");
        if let Some(parts) = parts {
            for name in PASSED_ON {
                for value in parts.headers.get_all(name) {
                    builder = builder.header(name, value.clone());
                }
            }
        }
        let caller = parts.and_then(|p| p.extensions.get::<Caller>()).cloned();
        let Ok(request) = builder.body(()) else {
            return RestAnswer::unanswered(format!("the tool's path {} is not a URI", call.target));
        };
        let (http_parts, ()) = request.into_parts();
        let (local, remote, scheme) = match caller {
            Some(c) => (c.local, c.remote, c.scheme),
            None => (LocalAddr::default(), RemoteAddr::default(), poem::http::uri::Scheme::HTTP),
        };
        let parts = RequestParts::from((http_parts, local, remote, scheme));
        let request = Request::from_parts(parts, call.body.map(poem::Body::from_vec).unwrap_or_else(poem::Body::empty));
        let response = match self.api.call(request).await {
            Ok(response) => response,
            Err(e) => e.into_response(),
        };
        let (status, headers) = (response.status().as_u16(), response.headers().clone());
        RestAnswer::new(status, &headers, response.into_body().into_vec().await.unwrap_or_default())
    }
}

/// The `/mcp` endpoint over `api` (the whole REST application), whose document is `spec`. Hosts other than
/// loopback are accepted when they are LEVY_PUBLIC_URL's (`public_url`): rmcp refuses others, against DNS
/// rebinding. A request body may be as large as a REST one (`max_body_bytes`, LEVY_MAX_BODY_BYTES).
pub fn endpoint(api: Arc<BoxEndpoint<'static, Response>>, spec: &str, public_url: Option<&str>, max_body_bytes: usize) -> McpEndpoint {
    let doc: serde_json::Value = serde_json::from_str(spec).unwrap_or_default();
    let tools = Tools::new(Arc::new(Catalog::from_document(&doc)), Arc::new(InProcess { api }));
    let mut config = StreamableHttpServerConfig::default();
    config.legacy_session_mode = false;
    config.json_response = true;
    config.sse_keep_alive = None;
    config.max_request_body_bytes = max_body_bytes;
    let mut hosts = vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string()];
    if let Some(authority) = public_url.and_then(|u| u.parse::<poem::http::Uri>().ok()).and_then(|u| u.authority().cloned()) {
        hosts.push(authority.host().to_string());
        hosts.push(authority.as_str().to_string());
    }
    config.allowed_hosts = hosts;
    let service = StreamableHttpService::new(move || Ok(tools.clone()), Arc::new(LocalSessionManager::default()), config);
    McpEndpoint { service }
}

pub struct McpEndpoint {
    service: StreamableHttpService<Tools<InProcess>, LocalSessionManager>,
}

impl Endpoint for McpEndpoint {
    type Output = Response;

    async fn call(&self, req: Request) -> poem::Result<Response> {
        let caller = Caller { remote: req.remote_addr().clone(), local: req.local_addr().clone(), scheme: req.scheme().clone() };
        let mut request: poem::http::Request<http_body_util::combinators::BoxBody<bytes::Bytes, std::io::Error>> = req.into();
        request.extensions_mut().insert(caller);
        let response = match self.service.clone().call(request).await {
            Ok(response) => response,
            Err(never) => match never {},
        };
        let (mut parts, body) = response.into_parts();
        parts.headers.entry("cache-control").or_insert(HeaderValue::from_static("no-store"));
        let body = body.map_err(|never| -> std::io::Error { match never {} });
        Ok(poem::http::Response::from_parts(parts, body).into())
    }
}
