//! GET /api/v1/agents: the integration guide for software agents, as plain text. It is generated when the
//! application is built (`api::app`) from what the service itself serves, so it cannot drift from it:
//! - the operations, their summaries, their credentials and their error codes: the OpenAPI document;
//! - one example per operation: its `code_sample` labelled `example` (`x-code-samples` in the document), written
//!   beside the handler (a test fails when an operation has no example, and another runs every example, in the
//!   document's order);
//! - the limits: the service's settings (`config::Limits`) and the plans (`rules/plans.yaml`);
//! - the engine and rule-set versions: the loaded registry.

use std::sync::Arc;

use poem_openapi::payload::PlainText;
use poem_openapi::OpenApi;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{ApiTags, AppState};
use crate::plans::{thousands, Plan};
use crate::{error_responses, ok_responses};

/// Where the guide is served; errors an agent can act on link to it (`agent_guide` in the envelope).
pub const GUIDE_PATH: &str = "/api/v1/agents";

/// The label of an operation's `code_sample` that is its example.
const EXAMPLE_LABEL: &str = "example";

/// One example call of an operation, and what its answer holds.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Example {
    /// The query string, without `?`.
    #[serde(default)]
    pub query: Option<String>,
    /// The JSON body.
    #[serde(default)]
    pub body: Option<Value>,
    /// Headers beyond the credentials and Content-Type (an Idempotency-Key, say).
    #[serde(default)]
    pub headers: Map<String, Value>,
    /// `none` to show an operation that also answers without credentials (the demo) without them; otherwise the
    /// credentials are the document's.
    #[serde(default)]
    pub auth: Option<String>,
    /// The status of the answer.
    pub status: u16,
    /// Fields of the answer (JSON pointers) and their values.
    #[serde(default)]
    pub expect: Map<String, Value>,
    /// For a text answer: a line it contains.
    #[serde(default)]
    pub contains: Option<String>,
}

/// Each operation's example, by operation id, in the document's order.
pub fn examples(doc: &Value) -> Result<Vec<(String, Example)>, String> {
    let mut out = Vec::new();
    for ops in doc["paths"].as_object().into_iter().flat_map(Map::values) {
        for op in ops.as_object().into_iter().flat_map(Map::values) {
            let id = op["operationId"].as_str().unwrap_or_default();
            let samples = op["x-code-samples"].as_array().into_iter().flatten();
            for source in samples.filter(|s| s["label"] == EXAMPLE_LABEL).filter_map(|s| s["source"].as_str()) {
                let example = serde_json::from_str(source).map_err(|e| format!("the example of `{id}`: {e}"))?;
                out.push((id.to_string(), example));
            }
        }
    }
    Ok(out)
}

/// The credentials an operation takes, from its `security` in the document.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Credentials {
    None,
    Key,
    /// A key, or nothing (the keyless demo of calculate).
    KeyOrNone,
    Session,
    /// A partner key (`partner_live_…`), issued out of band.
    Partner,
}

impl Credentials {
    fn of(op: &Value) -> Credentials {
        let Some(list) = op["security"].as_array() else { return Credentials::None };
        let names: Vec<&str> = list.iter().filter_map(|s| s.as_object()).flat_map(|o| o.keys().map(String::as_str)).collect();
        let optional = list.iter().any(|s| s.as_object().is_some_and(|o| o.is_empty()));
        if names.contains(&"PartnerKeyHeader") {
            return Credentials::Partner;
        }
        match (names.contains(&"SessionToken"), names.contains(&"ApiKeyHeader"), optional) {
            (true, _, _) => Credentials::Session,
            (_, true, true) => Credentials::KeyOrNone,
            (_, true, false) => Credentials::Key,
            _ => Credentials::None,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Credentials::None => "none",
            Credentials::Key => "API key",
            Credentials::KeyOrNone => "API key, or none (demo)",
            Credentials::Session => "session token",
            Credentials::Partner => "partner key",
        }
    }
}

/// One operation of the document.
#[derive(Clone, Debug)]
pub struct Operation {
    pub id: String,
    pub method: String,
    pub path: String,
    pub summary: String,
    pub credentials: Credentials,
    /// The statuses its responses document.
    pub statuses: Vec<String>,
}

/// Every operation of the document, in its order.
pub fn operations(doc: &Value) -> Vec<Operation> {
    let mut out = vec![];
    for (path, ops) in doc["paths"].as_object().into_iter().flatten() {
        for (method, op) in ops.as_object().into_iter().flatten() {
            let statuses = op["responses"].as_object().map(|r| r.keys().cloned().collect()).unwrap_or_default();
            out.push(Operation {
                id: op["operationId"].as_str().unwrap_or_default().to_string(),
                method: method.to_ascii_uppercase(),
                path: path.clone(),
                summary: op["summary"].as_str().unwrap_or_default().to_string(),
                credentials: Credentials::of(op),
                statuses,
            });
        }
    }
    out
}

/// An example as a request: the method, the path with its query, the headers and the body. Credentials and path
/// parameters are placeholders: `<API_KEY>`, `<SESSION_TOKEN>`, `<TRANSACTION_ID>`.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
}

pub fn call(op: &Operation, example: &Example) -> Call {
    let mut headers = vec![];
    let credentials = if example.auth.as_deref() == Some("none") { Credentials::None } else { op.credentials };
    match credentials {
        Credentials::Key | Credentials::KeyOrNone => headers.push(("X-API-Key".to_string(), "<API_KEY>".to_string())),
        Credentials::Session => headers.push(("Authorization".to_string(), "Bearer <SESSION_TOKEN>".to_string())),
        Credentials::Partner => headers.push(("X-API-Key".to_string(), "<PARTNER_KEY>".to_string())),
        Credentials::None => {}
    }
    for (name, value) in &example.headers {
        headers.push((name.clone(), value.as_str().map_or_else(|| value.to_string(), str::to_string)));
    }
    // A body never holds a single quote, so that it can stand in '…' in a shell: JSON escapes it.
    let body = example.body.as_ref().map(|b| b.to_string().replace('\'', "\\u0027"));
    if body.is_some() {
        headers.push(("Content-Type".to_string(), "application/json".to_string()));
    }
    // A path parameter is a placeholder in capitals: `{transaction_id}` is `<TRANSACTION_ID>`.
    let path: Vec<String> = op
        .path
        .split('/')
        .map(|seg| match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(name) => format!("<{}>", name.to_ascii_uppercase()),
            None => seg.to_string(),
        })
        .collect();
    let path = path.join("/");
    let target = match &example.query {
        Some(q) if !q.is_empty() => format!("{path}?{q}"),
        _ => path,
    };
    Call { method: op.method.clone(), target, headers, body }
}

/// The call as one curl command line (`$LEVY` is the service's base URL).
pub fn curl(c: &Call) -> String {
    let mut line = String::from("curl -sS");
    if c.method != "GET" {
        line += &format!(" -X {}", c.method);
    }
    line += &format!(" \"$LEVY{}\"", c.target);
    for (name, value) in &c.headers {
        line += &format!(" -H '{name}: {value}'");
    }
    if let Some(body) = &c.body {
        line += &format!(" -d '{body}'");
    }
    line
}

/// What the example's answer holds, in words.
fn answer(example: &Example) -> String {
    let mut parts = vec![example.status.to_string()];
    for (pointer, value) in &example.expect {
        parts.push(format!("{} = {value}", pointer.trim_start_matches('/').replace('/', ".")));
    }
    if let Some(text) = &example.contains {
        parts.push(format!("a line \"{text}\""));
    }
    parts.join("; ")
}

fn allowance(p: &Plan) -> String {
    let calls = p.monthly_calls.map_or_else(|| "no call allowance".to_string(), |n| format!("{} calls per month", thousands(n)));
    let price = p.price_usd_monthly.map_or_else(|| "price by contract".to_string(), |v| format!("{} USD per month", v.normalize()));
    let past = match &p.overage {
        crate::plans::Overage::HardCutoff => "past it: 429 RATE_LIMITED \"Monthly limit reached\" until the month ends".to_string(),
        crate::plans::Overage::Meter(v) => format!("past it: served, {} USD per call", v.normalize()),
        crate::plans::Overage::Custom => format!("past it: by contract ({})", p.contact.as_deref().unwrap_or("contact us")),
    };
    format!("  {} ({}): {price}; {calls}; {past}; {}", p.name, p.id, p.reports_allowance())
}

/// The error codes and their meaning, from the ErrorCode schema's description (`- CODE (status): meaning`).
fn error_codes(doc: &Value) -> Vec<String> {
    let schema = &doc["components"]["schemas"]["ErrorCode"];
    let description = schema["description"].as_str().unwrap_or_default();
    schema["enum"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|code| {
            let line =
                description.lines().map(str::trim).find(|l| l.strip_prefix("- ").is_some_and(|l| l.starts_with(&format!("{code} "))));
            format!("  {}", line.map_or(code, |l| l.trim_start_matches("- ")))
        })
        .collect()
}

/// The guide, from the served document `doc` (JSON text) and the state's settings, plans and rules.
pub fn guide(doc: &str, state: &AppState) -> String {
    let doc: Value = serde_json::from_str(doc).unwrap_or_default();
    let examples = examples(&doc).unwrap_or_default();
    let plans = &state.plans;
    let limits = &state.limits;
    let free = plans.plan(crate::plans::DEFAULT_PLAN);
    let ppc = &plans.pay_per_call;
    let mut out = String::new();
    let mut line = |s: &str| {
        out += s;
        out.push('\n');
    };
    line("levy: integration guide for software agents");
    line(&format!(
        "Interface {}, engine {}, rule set {}. Generated from the OpenAPI document (/api/v1/openapi.json), the plans and the service's settings.",
        doc["info"]["version"].as_str().unwrap_or_default(),
        state.registry.engine_version,
        state.registry.version
    ));
    line("");
    line("In the examples, $LEVY is the service's base URL (e.g. http://127.0.0.1:8080). Every route is under /api/v1;");
    line("bodies are JSON; every response carries X-Request-Id (quote it when asking for help).");
    line("");
    line("AUTHENTICATION");
    line("  API key: header X-API-Key: <API_KEY>, or Authorization: Bearer <API_KEY>. Sign up for one with");
    line(&format!(
        "    POST /api/v1/auth/signup (the {} plan: {}, no card). The key is shown once; keep it secret.",
        free.name,
        plans.free_allowance()
    ));
    line("  Session token: POST /api/v1/auth/login answers one; send it as Authorization: Bearer <SESSION_TOKEN> to the");
    line("    operations marked \"session token\" below.");
    line("  Partner key: platforms that provision accounts for their users get a key partner_live_… from the operator; send");
    line("    it as X-API-Key: <PARTNER_KEY> (or Authorization: Bearer) to the operations marked \"partner key\". Their");
    line("    webhook is signed instead (X-Service-Signature, see POST /api/v1/partner/webhook).");
    line(&format!(
        "  Demo: no credentials, on POST /api/v1/calculate only: {} calls per minute and {} per UTC day per address; answers",
        limits.demo_per_minute, limits.demo_per_day
    ));
    line("    carry mode \"demo\" and are not recorded. Past the daily cap: 402 PAYMENT_REQUIRED with the ways to continue.");
    line(&format!(
        "  x402 (pay per call, POST /api/v1/calculate): {} USD in USDC per call on {}, through the facilitator {}.",
        ppc.price_usd_per_call.normalize(),
        ppc.network,
        ppc.facilitator
    ));
    if state.x402.is_some() {
        line("    A call without payment past the demo's cap is 402 with the requirements (body `accepts`, x402 v1; header");
        line("    PAYMENT-REQUIRED, v2). Send a signed authorization in X-PAYMENT (v1) or PAYMENT-SIGNATURE (v2): the answer has");
        line("    mode \"x402\" and its receipt in X-PAYMENT-RESPONSE / PAYMENT-RESPONSE. One authorization pays for one call.");
        line("    Link the paying wallet (POST /api/v1/wallets) to have its calls recorded to your account.");
    } else {
        line("    NOT ACCEPTED by this server: no payee is configured (LEVY_X402_PAYEE); a payment header is refused with 402.");
    }
    match &state.mpp {
        Some(m) => {
            line(&format!(
                "  MPP (machine payments through a payment processor, POST /api/v1/calculate): {:.2} USD per call (amount {}, in",
                plans.mpp.price_usd_per_call, m.amount
            ));
            line("    cents of usd), the Payment HTTP authentication scheme with Stripe's charge method. A call without payment");
            line("    past the demo's cap is 402 with WWW-Authenticate: Payment id, realm, method \"stripe\", intent \"charge\",");
            line("    request (base64url JSON {amount, currency, description, methodDetails {networkId, paymentMethodTypes}}),");
            line("    expires, opaque. Have Stripe grant a Shared Payment Token for that amount and networkId, then repeat the call");
            line("    with Authorization: Payment <base64url JSON {challenge: the challenge's parameters, echoed; payload: {spt}}>");
            line("    (MPP clients such as pympp or mppx do this). The answer has mode \"mpp\" and its receipt in Payment-Receipt.");
            line("    A refusal is 402 whose `type` names the problem (https://paymentauth.org/problems/...), with a fresh");
            line("    challenge; Stripe not answering is 503. One challenge pays for one call, within 5 minutes of its issue;");
            line("    an Idempotency-Key replay never charges again.");
        }
        None => line(
            "  MPP (machine payments through a payment processor): NOT ACCEPTED by this server: no challenge secret is configured \
             (LEVY_MPP_SECRET); a Payment credential is refused with 402.",
        ),
    }
    line("");
    line("OPERATIONS (one example each; the answer's status and key fields follow it)");
    for op in operations(&doc) {
        line("");
        line(&format!("{} {}  [{}; credentials: {}]", op.method, op.path, op.id, op.credentials.describe()));
        if !op.summary.is_empty() {
            line(&format!("  {}", op.summary));
        }
        match examples.iter().find(|(id, _)| *id == op.id) {
            Some((_, ex)) => {
                line(&format!("  $ {}", curl(&call(&op, ex))));
                line(&format!("  -> {}", answer(ex)));
            }
            None => line("  (no example)"),
        }
        line(&format!("  statuses: {}", op.statuses.join(", ")));
    }
    line("");
    line("MCP (Model Context Protocol): the same operations as tools");
    line("  Streamable HTTP at $LEVY/mcp (stateless; JSON answers), with the credentials REST takes (X-API-Key or Authorization:");
    line("  Bearer); without them, the demo and the free tools. Or on stdio, for a desktop agent: `levy mcp --url $LEVY` with");
    line("  LEVY_API_KEY in its environment. A tool's arguments are its operation's JSON body, or its query parameters; its");
    line("  result is the operation's answer; any other status is a tool error whose content is the envelope below.");
    line("  A desktop agent's configuration (e.g. claude_desktop_config.json; docs/operating.md, MCP):");
    line(r#"    {"mcpServers": {"levy": {"command": "levy", "args": ["mcp", "--url", "$LEVY"], "env": {"LEVY_API_KEY": "<API_KEY>"}}}}"#);
    line(r#"  Over HTTP: {"url": "$LEVY/mcp", "headers": {"X-API-Key": "<API_KEY>"}}. Tools (name, operation, effect):"#);
    let ops = operations(&doc);
    for tool in crate::api::mcp::tools::TOOLS {
        if let Some(op) = ops.iter().find(|o| o.id == tool.operation) {
            let effect = match tool.effect {
                crate::api::mcp::tools::Effect::Reads => "read-only",
                crate::api::mcp::tools::Effect::Records => "records",
                crate::api::mcp::tools::Effect::Replaces => "replaces settings",
            };
            line(&format!("  {:<24} {} {}  [{effect}]", tool.name, op.method, op.path));
        }
    }
    line("");
    line("LIMITS");
    line(&format!(
        "  Per API key: {} calls per 60 seconds (X-RateLimit-Limit, -Remaining, -Reset describe this window); past it, 429",
        limits.burst_per_minute
    ));
    line("    RATE_LIMITED with Retry-After.");
    line("  Monthly allowance by plan (GET /api/v1/pricing has the same figures):");
    for p in &plans.tiers {
        line(&allowance(p));
    }
    line(&format!(
        "  Pay per call: no call cap; x402 {} USD per call, MPP {:.2} USD per call (Stripe's smallest charge).",
        ppc.price_usd_per_call.normalize(),
        plans.mpp.price_usd_per_call
    ));
    line("");
    line("ERROR CODES (the envelope: success false, code, error, request_id, errors per field; branch on code)");
    for l in error_codes(&doc) {
        line(&l);
    }
    line(&format!("  401, 402 and 429 envelopes carry agent_guide: {GUIDE_PATH}. A 400 names each bad field in errors: fix and resend."));
    line("");
    line("RETRIES");
    line("  429 with Retry-After: wait that many seconds, then retry.");
    line("  429 without Retry-After whose error says \"Monthly limit reached\": do not retry; upgrade the plan or wait for the month.");
    line("  Otherwise (429, 500 INTERNAL, 503 DB_UNAVAILABLE): exponential backoff from 1 second (1, 2, 4, 8, 16 s), at most");
    line("    5 retries, each wait varied by plus or minus 20% (jitter).");
    line("  Other 4xx: do not retry unchanged; fix the request.");
    line("  POST /api/v1/calculate and POST /api/v1/trades take an Idempotency-Key header (24 hours): a retry with the same key");
    line("    and body is answered from the first call, without a second ledger entry.");
    out
}

pub struct AgentsApi(pub Arc<AppState>);

ok_responses!(GuideResponse {
    200 => Ok(PlainText<String>): "The guide.",
});

error_responses!(GuideErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter this operation does not take.",
});

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Guide")]
impl AgentsApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const AGENTS_GUIDE_EXAMPLE: &'static str = r#"{
        "status": 200,
        "contains": "levy: integration guide for software agents"
    }"#;

    /// Integration guide for software agents (plain text)
    ///
    /// How to authenticate (API key, session, demo; what pay-per-call modes are not yet accepted), every
    /// operation with one example request and what it answers, the limits of each plan, the error codes and
    /// when to retry. Generated from this document, the plans and the service's settings. No key needed.
    #[oai(
        path = "/agents",
        method = "get",
        operation_id = "agentsGuide",
        code_sample(lang = "json", label = "example", source = "Self::AGENTS_GUIDE_EXAMPLE")
    )]
    async fn guide(&self) -> Result<GuideResponse, GuideErrors> {
        let s = &self.0;
        let text = match s.agents_guide.get() {
            Some(text) => text.clone(),
            None => guide(&super::openapi_json(s.clone()), s),
        };
        Ok(GuideResponse::Ok(PlainText(text)))
    }
}
