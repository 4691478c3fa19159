//! `/mcp` in-process, on both databases: JSON-RPC tool calls are the REST calls they stand for (the ledger row, the
//! envelope), the tool list is stable (a snapshot), and hosts other than loopback and LEVY_PUBLIC_URL's are refused.
//! The official MCP client drives the same tools over HTTP and stdio in tests/server.rs.

use std::path::Path;

use serde_json::{json, Value};

use super::harness::{Backend, TestApp};
use crate::on_both;

/// A JSON-RPC request to /mcp, with the API key when given, from `host`; its status and answer.
async fn rpc(app: &TestApp, key: Option<&str>, host: &str, method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}).to_string();
    let headers = [("Host", host), ("Accept", "application/json, text/event-stream")];
    let r = app.request("POST", "/mcp", key, &headers, Some(&body)).await;
    (r.status, r.json)
}

async fn call(app: &TestApp, key: Option<&str>, tool: &str, arguments: Value) -> Value {
    let (status, answer) = rpc(app, key, "127.0.0.1", "tools/call", json!({"name": tool, "arguments": arguments})).await;
    assert_eq!(status, 200, "{answer}");
    answer["result"].clone()
}

async fn a_tool_call_is_the_rest_call(app: TestApp) {
    let a = app.signup("mcp@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    // 1,000 of SaaS into Austin: 80% taxed at 8.25% = 66.00, recorded in the ledger as a REST call is.
    let before = app.ledger_rows(&a.entity_id).await;
    let sale = json!({"amount": "1000", "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "c-1", "transaction_type": "saas"});
    let result = call(&app, Some(&a.key), "calculate_tax", sale.clone()).await;
    assert_eq!(result["isError"], json!(false), "{result}");
    assert_eq!(result["structuredContent"]["total_tax"].to_string(), "66.00");
    assert_eq!(result["structuredContent"]["mode"], "live");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, result["structuredContent"]);
    assert_eq!(app.ledger_rows(&a.entity_id).await, before + 1);

    // Query tools: the arguments are the query; a wrong one is the API's field error.
    let listed = call(&app, Some(&a.key), "list_transactions", json!({"limit": 1, "state": "TX"})).await;
    assert_eq!(listed["structuredContent"]["transactions"][0]["transaction_id"], result["structuredContent"]["transaction_id"]);
    let wrong = call(&app, Some(&a.key), "list_transactions", json!({"limit": "many", "colour": "red"})).await;
    assert_eq!(wrong["isError"], json!(true));
    assert_eq!(wrong["structuredContent"]["code"], "INVALID_INPUT");
    let errors = wrong["structuredContent"]["errors"].to_string();
    assert!(errors.contains("limit") && errors.contains("colour"), "{errors}");

    // Without a key: the keyed tools give the API's 401 envelope; calculate is the demo, which records nothing.
    let refused = call(&app, None, "get_nexus", json!({})).await;
    assert_eq!(refused["isError"], json!(true));
    assert_eq!(refused["structuredContent"]["code"], "UNAUTHORIZED");
    assert_eq!(refused["structuredContent"]["agent_guide"], "/api/v1/agents");
    let demo =
        call(&app, None, "calculate_tax", json!({"amount": "100", "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "c"}))
            .await;
    assert_eq!(demo["isError"], json!(false), "{demo}");
    assert_eq!(demo["structuredContent"]["mode"], "demo");
    assert_eq!(app.ledger_rows(&a.entity_id).await, before + 1);
}

async fn the_tool_list_is_stable(app: TestApp) {
    let (status, answer) = rpc(&app, None, "localhost", "tools/list", json!({})).await;
    assert_eq!(status, 200, "{answer}");
    // What an agent chooses by: name, title, hints, description, and the arguments each takes (the schemas
    // themselves are the document's, compared in tests/server.rs).
    let tools: Vec<Value> = answer["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let properties: Vec<&String> = t["inputSchema"]["properties"].as_object().map(|p| p.keys().collect()).unwrap_or_default();
            json!({
                "name": t["name"], "title": t["title"], "annotations": t["annotations"], "description": t["description"],
                "arguments": properties, "required": t["inputSchema"]["required"],
            })
        })
        .collect();
    assert_eq!(tools.len(), levy::api::mcp::tools::TOOLS.len());
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("mcp_tools", serde_json::to_string_pretty(&tools).unwrap()));
}

/// The REST limits and payment offers, as tool errors: the demo's per-minute cap (429, with when to retry) and its
/// daily cap (402, with the ways to pay), counted per client address as REST counts them.
async fn limits_and_offers_are_the_rest_ones(backend: Backend) {
    let limits = levy::config::Limits { demo_per_minute: 1, demo_per_day: 2, ..levy::config::Limits::default() };
    let Some(app) = TestApp::start_with(backend, limits).await else { return };
    let sale = json!({"name": "calculate_tax", "arguments": {"amount": "10", "buyer_state": "TX", "counterparty_id": "c"}});
    let from = |address: &'static str| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": sale.clone()}).to_string();
        let app = &app;
        async move {
            let headers = [("Host", "127.0.0.1"), ("Accept", "application/json, text/event-stream"), ("X-Forwarded-For", address)];
            app.request("POST", "/mcp", None, &headers, Some(&body)).await.json["result"].clone()
        }
    };
    assert_eq!(from("203.0.113.9").await["isError"], json!(false));
    let second = from("203.0.113.9").await;
    assert_eq!(second["structuredContent"]["code"], "RATE_LIMITED", "{second}");
    let retry = second["content"][1]["text"].as_str().unwrap();
    assert!(retry.lines().any(|l| l.starts_with("retry-after: ")), "{retry}");
    // Another address has its own window.
    assert_eq!(from("198.51.100.1").await["isError"], json!(false));
    app.clock.advance_ms(60_000);
    let third = from("203.0.113.9").await;
    assert_eq!(third["structuredContent"]["code"], "PAYMENT_REQUIRED", "{third}");
    assert_eq!(third["structuredContent"]["pay_per_call"]["id"], "x402");
    assert_eq!(third["structuredContent"]["signup"]["url"], "/api/v1/auth/signup");
}

crate::on_each_backend!(limits_and_offers_are_the_rest_ones);
on_both!(a_tool_call_is_the_rest_call);
on_both!(the_tool_list_is_stable);

/// rmcp refuses a Host that is not loopback (DNS rebinding); LEVY_PUBLIC_URL's host is accepted. A body larger than
/// a REST one may be (LEVY_MAX_BODY_BYTES, 1 MiB by default) is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_loopback_and_the_public_host_are_served() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let (status, _) = rpc(&app, None, "levy.example.com", "tools/list", json!({})).await;
    assert_eq!(status, 403);
    let (status, _) =
        rpc(&app, None, "127.0.0.1", "tools/call", json!({"name": "verify_rates", "arguments": {"agent_id": "a".repeat(1_100_000)}})).await;
    assert_eq!(status, 413);
    let app = TestApp::start_configured(Backend::Sqlite, |mut s| {
        s.public_url = Some("https://levy.example.com".into());
        s
    })
    .await
    .unwrap();
    let (status, answer) = rpc(&app, None, "levy.example.com", "tools/list", json!({})).await;
    assert_eq!(status, 200, "{answer}");
    let (status, _) = rpc(&app, None, "elsewhere.example.net", "tools/list", json!({})).await;
    assert_eq!(status, 403);
}
