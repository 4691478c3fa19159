//! levy's operations as Model Context Protocol tools (rmcp, the official Rust SDK; docs/decisions.md, "MCP").
//!
//! - A tool is an operation of the OpenAPI document (`tools::TOOLS` names which): its input schema is the
//!   operation's request body schema, or an object of its query parameters, with its path parameters as required
//!   properties beside them; its method and path are the operation's. Nothing of an operation is written twice.
//! - A call is the REST call it stands for, made with the caller's credentials: in-process on the service's own
//!   `/mcp` (`http`), or over HTTP to a levy server from `levy mcp` on stdio (`stdio`). Limits, payment and
//!   authentication are therefore the REST API's, and so are its answers: a 2xx is the tool's result, any other
//!   status a tool error carrying the API's envelope.

pub mod http;
pub mod stdio;
pub mod tools;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value};

use poem::http::{HeaderMap, Method, StatusCode};

use crate::api::error::{ApiError, ErrorCode};
use tools::{Effect, TOOLS};

/// The REST call a tool call stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestCall {
    pub method: Method,
    /// Path and query, e.g. `/api/v1/rates/local?zip=78701`.
    pub target: String,
    /// The JSON body, for an operation that takes one.
    pub body: Option<Vec<u8>>,
}

/// What the REST API answered.
#[derive(Debug, Clone)]
pub struct RestAnswer {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    /// The headers of `KEPT_HEADERS` it carried.
    pub headers: Vec<(String, String)>,
}

/// The answer's headers that say what to do next: when to retry, how to pay. A tool result cannot carry headers, so
/// they follow the body as a second text block, `Name: value` a line.
pub const KEPT_HEADERS: [&str; 6] =
    ["retry-after", "x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "payment-required", "www-authenticate"];

impl RestAnswer {
    /// An answer from its status, headers (its content type and the `KEPT_HEADERS` among them) and body.
    pub fn new(status: u16, headers: &HeaderMap, body: Vec<u8>) -> RestAnswer {
        let content_type = headers.get("content-type").and_then(|v| v.to_str().ok()).map(str::to_string);
        let headers = headers
            .iter()
            .filter(|(name, _)| KEPT_HEADERS.contains(&name.as_str()))
            .map(|(name, value)| (name.as_str().to_string(), String::from_utf8_lossy(value.as_bytes()).into_owned()))
            .collect();
        RestAnswer { status, content_type, body, headers }
    }

    /// The answer for a call that never got one: a 503 with the API's envelope (DB_UNAVAILABLE is the API's code
    /// for a service that cannot answer now; the message says which).
    pub fn unanswered(message: String) -> RestAnswer {
        let error = ApiError::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::DbUnavailable, message);
        let body = poem_openapi::types::ToJSON::to_json(&error.envelope()).unwrap_or_default().to_string().into_bytes();
        RestAnswer { status: 503, content_type: Some("application/json".into()), body, headers: Vec::new() }
    }
}

/// How a tool's arguments reach its operation.
#[derive(Debug, Clone)]
enum Input {
    /// The arguments are the JSON body.
    Body,
    /// The arguments are query parameters.
    Query,
}

#[derive(Debug, Clone)]
struct Operation {
    method: Method,
    /// With `{name}` where a path parameter goes.
    path: String,
    /// The arguments that fill the path, not the body or the query.
    path_params: Vec<String>,
    input: Input,
}

/// The tools, as built from the OpenAPI document.
#[derive(Debug)]
pub struct Catalog {
    tools: Vec<Tool>,
    operations: HashMap<String, Operation>,
}

impl Catalog {
    /// The catalog of `tools::TOOLS` from the served OpenAPI document. Panics if a tool names an operation the
    /// document lacks, or one that takes both a body and query parameters (a test builds it from the real one).
    pub fn from_document(doc: &Value) -> Catalog {
        let mut tools = Vec::new();
        let mut operations = HashMap::new();
        for spec in TOOLS {
            let (method, path, op) = find_operation(doc, spec.operation)
                .unwrap_or_else(|| panic!("tool {}: no operation {} in the document", spec.name, spec.operation));
            let (input, schema) = input_schema(doc, op);
            let path_params = parameters(op, "path").iter().filter_map(|p| p["name"].as_str().map(str::to_string)).collect();
            let mut annotations = ToolAnnotations::new();
            annotations = match spec.effect {
                Effect::Reads => annotations.read_only(true).destructive(false).idempotent(true),
                Effect::Records => annotations.read_only(false).destructive(false).idempotent(false),
                Effect::Replaces => annotations.read_only(false).destructive(true).idempotent(true),
            };
            let title = op["summary"].as_str().map(str::to_string);
            let mut tool = Tool::new(spec.name, spec.description, Arc::new(schema)).annotate(annotations);
            if let Some(title) = title {
                tool = tool.with_title(title);
            }
            tools.push(tool);
            operations.insert(spec.name.to_string(), Operation { method, path, path_params, input });
        }
        Catalog { tools, operations }
    }

    pub fn tools(&self) -> &[Tool] {
        &self.tools
    }

    /// The REST call for a call of tool `name`, or `None` for a tool that does not exist.
    pub fn call(&self, name: &str, arguments: Option<&JsonObject>) -> Option<RestCall> {
        let op = self.operations.get(name)?;
        let mut args = arguments.cloned().unwrap_or_default();
        // The path parameters come out of the arguments into the path (a missing one leaves an empty segment,
        // which no route matches).
        let mut path = op.path.clone();
        for p in &op.path_params {
            let value = match args.remove(p) {
                Some(Value::String(s)) => s,
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            path = path.replace(&format!("{{{p}}}"), &percent_encoding::utf8_percent_encode(&value, SEGMENT).to_string());
        }
        let args = &args;
        Some(match op.input {
            Input::Body => RestCall {
                method: op.method.clone(),
                target: path,
                body: Some(serde_json::to_vec(&Value::Object(args.clone())).unwrap_or_default()),
            },
            Input::Query => {
                let query: Vec<String> = args
                    .iter()
                    .filter_map(|(k, v)| {
                        let value = match v {
                            Value::Null => return None,
                            Value::String(s) => s.clone(),
                            Value::Number(n) => n.to_string(),
                            Value::Bool(b) => b.to_string(),
                            // Not a parameter's shape: sent as JSON text, for the API to refuse by name.
                            other => other.to_string(),
                        };
                        Some(format!("{}={}", encode(k), encode(&value)))
                    })
                    .collect();
                let target = if query.is_empty() { path } else { format!("{path}?{}", query.join("&")) };
                RestCall { method: op.method.clone(), target, body: None }
            }
        })
    }
}

/// What a path segment leaves as it is: the unreserved characters (RFC 3986 §2.3).
const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

fn encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// The method, path and object of the operation whose `operationId` is `id`.
fn find_operation<'d>(doc: &'d Value, id: &str) -> Option<(Method, String, &'d Value)> {
    for (path, item) in doc["paths"].as_object()? {
        for (method, op) in item.as_object()? {
            if op["operationId"].as_str() == Some(id) {
                let method = Method::from_bytes(method.to_ascii_uppercase().as_bytes()).ok()?;
                return Some((method, path.clone(), op));
            }
        }
    }
    None
}

/// The operation's input as one JSON Schema object: its JSON body schema, with the components it refers to under
/// `$defs`; or, for an operation without a body, an object whose properties are its query parameters. Header
/// parameters (Idempotency-Key, payment proofs, If-None-Match) are not tool arguments.
fn input_schema(doc: &Value, op: &Value) -> (Input, JsonObject) {
    let query = parameters(op, "query");
    let path = parameters(op, "path");
    if let Some(body) = op["requestBody"]["content"]["application/json"]["schema"].as_object() {
        assert!(query.is_empty(), "an operation with a body and query parameters is not a tool: {}", op["operationId"]);
        let mut schema = object_branch(doc, &Value::Object(body.clone()));
        // The body's object (resolved) with the path parameters beside its properties.
        add_parameters(&mut schema, &path);
        return (Input::Body, standalone(doc, schema));
    }
    let mut schema = serde_json::json!({"type": "object", "properties": {}});
    add_parameters(&mut schema, &path);
    add_parameters(&mut schema, &query);
    schema["additionalProperties"] = false.into();
    (Input::Query, standalone(doc, schema))
}

/// The operation's parameters found `in` the path or the query.
fn parameters<'o>(op: &'o Value, place: &str) -> Vec<&'o Value> {
    op["parameters"].as_array().into_iter().flatten().filter(|p| p["in"] == place).collect()
}

/// `schema` (an object) with each parameter as a property, its description carried over, required if it is.
fn add_parameters(schema: &mut Value, params: &[&Value]) {
    for p in params {
        let name = p["name"].as_str().unwrap_or_default().to_string();
        let mut property = p["schema"].clone();
        if let Some(description) = p.get("description") {
            property["description"] = description.clone();
        }
        if p["required"] == true {
            match schema["required"].as_array_mut() {
                Some(required) => required.push(Value::String(name.clone())),
                None => schema["required"] = Value::Array(vec![Value::String(name.clone())]),
            }
        }
        schema["properties"][name] = property;
    }
}

/// A schema with its `$ref` to a component followed.
fn resolved<'d>(doc: &'d Value, schema: &'d Value) -> &'d Value {
    match schema["$ref"].as_str().and_then(|r| r.strip_prefix(COMPONENTS)) {
        Some(name) => &doc["components"]["schemas"][name],
        None => schema,
    }
}

/// `schema` with the components it refers to under `$defs`, its references pointing there.
fn standalone(doc: &Value, mut schema: Value) -> JsonObject {
    let mut names = Vec::new();
    crate::api::schema::collect_refs(doc, &schema, &mut names);
    let defs: Map<String, Value> = names.iter().map(|n| (n.clone(), doc["components"]["schemas"][n.as_str()].clone())).collect();
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    relocate_refs(&mut schema);
    schema.as_object().cloned().unwrap_or_default()
}

const COMPONENTS: &str = "#/components/schemas/";

/// The schema a tool's arguments follow for a body schema: the schema, its `$ref` followed; of a body that is one
/// object or an array of them (ingest's), the object, since MCP arguments are always an object.
fn object_branch(doc: &Value, schema: &Value) -> Value {
    let resolved = resolved(doc, schema);
    let alternatives = resolved["anyOf"].as_array().or_else(|| resolved["oneOf"].as_array());
    if let Some(alternatives) = alternatives {
        let objects: Vec<&Value> = alternatives.iter().filter(|a| a["type"] != "array").collect();
        if let [only] = objects.as_slice() {
            return object_branch(doc, only);
        }
    }
    resolved.clone()
}

/// `#/components/schemas/X` → `#/$defs/X`, so that the schema stands alone.
fn relocate_refs(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref") {
                if let Some(name) = r.strip_prefix(COMPONENTS) {
                    *r = format!("#/$defs/{name}");
                }
            }
            map.values_mut().for_each(relocate_refs);
        }
        Value::Array(items) => items.iter_mut().for_each(relocate_refs),
        _ => {}
    }
}

/// The tool result for the REST answer: a 2xx is the result (its JSON object also as structured content), any
/// other status a tool error whose content is the API's envelope.
pub fn result_of(answer: &RestAnswer) -> CallToolResult {
    let text = String::from_utf8_lossy(&answer.body).into_owned();
    let json = answer
        .content_type
        .as_deref()
        .filter(|c| c.starts_with("application/json") || c.ends_with("+json"))
        .and_then(|_| serde_json::from_slice::<Value>(&answer.body).ok())
        .filter(Value::is_object);
    let mut content = vec![ContentBlock::text(text)];
    if !answer.headers.is_empty() {
        let lines: Vec<String> = answer.headers.iter().map(|(name, value)| format!("{name}: {value}")).collect();
        content.push(ContentBlock::text(lines.join("\n")));
    }
    let mut result = if (200..300).contains(&answer.status) { CallToolResult::success(content) } else { CallToolResult::error(content) };
    result.structured_content = json;
    result
}

/// A tool error for a call that never reached the API (an unknown tool, a server that did not answer), in the
/// API's envelope so that a caller reads one shape.
pub fn failure(error: &ApiError) -> CallToolResult {
    let envelope = poem_openapi::types::ToJSON::to_json(&error.envelope()).unwrap_or_default();
    let mut result = CallToolResult::error(vec![ContentBlock::text(envelope.to_string())]);
    result.structured_content = Some(envelope);
    result
}

/// Where a tool call's REST call goes.
pub trait Rest: Send + Sync + 'static {
    fn send(&self, call: RestCall, context: &RequestContext<RoleServer>) -> impl Future<Output = RestAnswer> + Send;
}

/// The MCP server: the catalog's tools, each answered by its REST call through `rest`.
pub struct Tools<R> {
    catalog: Arc<Catalog>,
    rest: Arc<R>,
}

impl<R> Clone for Tools<R> {
    fn clone(&self) -> Self {
        Tools { catalog: self.catalog.clone(), rest: self.rest.clone() }
    }
}

impl<R: Rest> Tools<R> {
    pub fn new(catalog: Arc<Catalog>, rest: Arc<R>) -> Self {
        Tools { catalog, rest }
    }
}

impl<R: Rest> ServerHandler for Tools<R> {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("levy", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "levy answers US sales and use tax (51 jurisdictions, with the law it applied), tracks nexus and 1099 \
                 thresholds, and tracks capital gains on digital assets. Start with calculate_tax; read-only tools \
                 are free. Errors come back as tool errors carrying levy's envelope {success:false, code, error, \
                 errors}.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.catalog.tools().to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.catalog.tools().iter().find(|t| t.name == name).cloned()
    }

    async fn call_tool(&self, request: CallToolRequestParams, context: RequestContext<RoleServer>) -> Result<CallToolResponse, ErrorData> {
        let Some(call) = self.catalog.call(&request.name, request.arguments.as_ref()) else {
            let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
            let error = ApiError::not_found(format!("no tool {}: the tools are {}", request.name, names.join(", ")));
            return Ok(failure(&error).into());
        };
        let answer = self.rest.send(call, &context).await;
        Ok(result_of(&answer).into())
    }
}
