//! The `levy` binary as a process on loopback: its accept loop's header timeout, the memory that oversized
//! bodies cost it, and a clean stop on SIGTERM.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const MIB: usize = 1 << 20;

struct Server {
    child: Child,
    addr: String,
    _data: tempfile::TempDir,
}

impl Server {
    /// `levy serve` on a free loopback port with its own SQLite file and the repository's rules directory, once
    /// /health answers.
    async fn start(env: &[(&str, &str)]) -> Server {
        Server::launch(env, true).await
    }

    /// As [`Server::start`]; without `repository_rules`, started in its data directory (which holds no rules)
    /// with no rules directory named, as an installed binary is.
    async fn launch(env: &[(&str, &str)], repository_rules: bool) -> Server {
        let data = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let addr = format!("127.0.0.1:{port}");
        let mut command = Command::new(env!("CARGO_BIN_EXE_levy"));
        command.args(["serve", "--bind", &addr]).env("LEVY_DATA_DIR", data.path()).env_remove("DATABASE_URL");
        if repository_rules {
            command.env("LEVY_RULES", concat!(env!("CARGO_MANIFEST_DIR"), "/rules"));
        } else {
            command.env_remove("LEVY_RULES").current_dir(data.path());
        }
        let child = command.env("RUST_LOG", "warn").envs(env.iter().copied()).stdout(Stdio::null()).spawn().unwrap();
        let server = Server { child, addr, _data: data };
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(60) {
            if let Ok(reply) = server.exchange(b"GET /api/v1/health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").await {
                if reply.starts_with("HTTP/1.1 200") {
                    return server;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("the server did not answer /health within 60 s");
    }

    /// Sends `request` on a new connection and reads until the server closes it.
    async fn exchange(&self, request: &[u8]) -> std::io::Result<String> {
        let mut s = TcpStream::connect(&self.addr).await?;
        s.write_all(request).await?;
        let mut reply = Vec::new();
        s.read_to_end(&mut reply).await?;
        Ok(String::from_utf8_lossy(&reply).into_owned())
    }

    /// Resident memory, in KiB.
    fn rss_kib(&self) -> usize {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    fn stop(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// POSTs 50 MB to calculate on its own connection: declared with Content-Length, or chunked. Writes until the
/// server answers (or stops reading), and returns the status line.
async fn post_50_mb(addr: &str, chunked: bool) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let head = if chunked {
        "POST /api/v1/calculate HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".to_string()
    } else {
        format!("POST /api/v1/calculate HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", 50 * MIB)
    };
    s.write_all(head.as_bytes()).await.unwrap();
    let (mut rd, mut wr) = s.into_split();
    let writer = tokio::spawn(async move {
        let chunk = vec![b' '; 64 << 10];
        let framed = [format!("{:x}\r\n", chunk.len()).into_bytes(), chunk.clone(), b"\r\n".to_vec()].concat();
        for _ in 0..(50 * MIB / chunk.len()) {
            let piece = if chunked { &framed } else { &chunk };
            if wr.write_all(piece).await.is_err() {
                break; // the server answered and closed the connection
            }
        }
    });
    let mut reply = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(60), rd.read_to_end(&mut reply)).await;
    writer.abort();
    String::from_utf8_lossy(&reply).lines().next().unwrap_or("").to_string()
}

/// Started from a directory that holds no rules, with none named, the binary serves the rules compiled into it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_outside_the_repository_it_serves_the_compiled_in_rules() {
    let server = Server::launch(&[], false).await;
    // rules/tests/tx.yaml: SaaS into Austin is data processing, taxed on 80% at 6.25% + 1% + 1%: 100 × 80% × 8.25% = 6.60.
    let body = r#"{"amount":100,"buyer_state":"TX","buyer_zip":"78701","transaction_type":"saas","counterparty_id":"c","nexus_override":{"TX":{"hasNexus":true}}}"#;
    let request = format!(
        "POST /api/v1/calculate HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let reply = server.exchange(request.as_bytes()).await.unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let answer: serde_json::Value = serde_json::from_str(&reply[reply.find("\r\n\r\n").unwrap() + 4..]).unwrap();
    assert_eq!(answer["total_tax"].to_string(), "6.60");
    assert!(server.stop().success(), "SIGTERM: a clean stop");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_bodies_leave_memory_flat() {
    // The demo limiter would refuse the 31st call from one address; these calls are about bodies.
    let server = Server::start(&[("LEVY_DEMO_MINUTE_LIMIT", "1000000"), ("LEVY_DEMO_DAY_LIMIT", "1000000")]).await;
    // Warm up: one refused body of each kind, so the idle figure includes the buffers every request uses.
    for chunked in [false, true] {
        assert!(post_50_mb(&server.addr, chunked).await.starts_with("HTTP/1.1 400"));
    }
    let idle = server.rss_kib();
    // Declared lengths are refused unread. Chunked bodies are read up to the 1 MiB limit each, together within
    // the 8 MiB body budget, plus what each connection holds anyway (its 64 KiB read buffer, and a body's first
    // 16 KiB, which the budget does not count): 8 MiB + 64 × 80 KiB = 13 MiB live at the most for 64 connections.
    // Freed, that memory stays in the allocator's arena of the thread that held it, for reuse, and each of the
    // server's threads (two workers on this machine's two cores, and the main thread) may keep one such peak:
    // 3 × 13 MiB. Measured over 36 rounds, the growth after a round came and went between 0 and 22 MiB; unbounded,
    // 8 bodies of 50 MB at once take 400 MB, and 64 take 3.2 GB.
    const HELD_KIB: usize = (3 * 13) << 10;
    for (n, chunked, bound_kib) in
        [(64, false, 4 << 10), (8, true, HELD_KIB), (64, true, HELD_KIB), (64, false, HELD_KIB), (8, true, HELD_KIB), (64, true, HELD_KIB)]
    {
        let calls: Vec<_> = (0..n).map(|_| tokio::spawn(post_50_mb_owned(server.addr.clone(), chunked))).collect();
        for c in calls {
            let status = c.await.unwrap();
            assert!(status.starts_with("HTTP/1.1 400"), "{status}");
        }
        let grown = server.rss_kib().saturating_sub(idle);
        eprintln!(
            "{n} concurrent 50 MB bodies ({}): resident memory {idle} KiB idle, +{grown} KiB",
            if chunked { "chunked" } else { "Content-Length" }
        );
        assert!(grown < bound_kib, "{n} bodies grew the server by {grown} KiB");
    }
    assert!(server.stop().success(), "SIGTERM: a clean stop");
}

async fn post_50_mb_owned(addr: String, chunked: bool) -> String {
    post_50_mb(&addr, chunked).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_or_oversized_headers_are_cut_off() {
    let server = Server::start(&[("LEVY_HEADER_TIMEOUT_SECS", "1")]).await;
    // A request line and one header, then silence: the server closes the connection after the 1 s allowed.
    let mut s = TcpStream::connect(&server.addr).await.unwrap();
    s.write_all(b"POST /api/v1/calculate HTTP/1.1\r\nHost: t\r\n").await.unwrap();
    let started = Instant::now();
    let mut reply = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), s.read_to_end(&mut reply)).await;
    assert!(read.is_ok(), "the connection was still open after 20 s");
    assert!(started.elapsed() >= Duration::from_millis(900), "closed before the timeout: {:?}", started.elapsed());
    let reply = String::from_utf8_lossy(&reply);
    assert!(reply.is_empty() || reply.starts_with("HTTP/1.1 408"), "{reply}");
    // Headers that do not fit the 64 KiB read buffer: 431.
    let big = format!("GET /api/v1/health HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n", "a".repeat(70_000));
    let reply = server.exchange(big.as_bytes()).await.unwrap_or_default();
    assert!(reply.starts_with("HTTP/1.1 431"), "{reply}");
    // A whole request on a new connection is served as ever.
    let reply = server.exchange(b"GET /api/v1/health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").await.unwrap();
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
}

/// The Python of the venv holding the official MCP client library (LEVY_MCP_VENV, default target/mcp-venv; .ci/run
/// creates it). `None`, with the reason printed, when it is missing outside CI; in CI (CI set) a missing venv fails.
fn mcp_python() -> Option<String> {
    let venv = std::env::var("LEVY_MCP_VENV").unwrap_or_else(|_| format!("{}/target/mcp-venv", env!("CARGO_MANIFEST_DIR")));
    let python = format!("{venv}/bin/python");
    let has_client =
        std::path::Path::new(&python).exists() && Command::new(&python).args(["-c", "import mcp"]).status().is_ok_and(|s| s.success());
    if !has_client {
        let how = format!("python3 -m venv {venv} && {venv}/bin/pip install 'mcp==2.3.0' (as .ci/run does)");
        assert!(std::env::var("CI").is_err(), "the MCP tests need the MCP client library at {venv}: {how}");
        eprintln!("SKIPPED: no MCP client library at {venv}: {how}");
        return None;
    }
    Some(python)
}

/// The fields of a keyed calculate answer that are the call's own: its ledger row, its time, and the counterparty's
/// running 1099 total (each call adds 1,000, so the second reaches the 2,000 threshold and says so in an advisory).
const CALL_FIELDS: &[&str] = &["transaction_id", "timestamp", "tracking_1099", "advisories"];

/// The tools as an agent meets them through the official MCP client (tests/mcp/client.py): over streamable HTTP at
/// /mcp and over stdio from `levy mcp`, listed, each called, and the answers the REST API's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_answer_through_the_official_client_over_http_and_stdio() {
    let Some(python) = mcp_python() else { return };
    let server = Server::start(&[]).await;
    let base = format!("http://{}", server.addr);
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .args([concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp/client.py"), &base, env!("CARGO_BIN_EXE_levy")])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    // Every tool of src/api/mcp/tools.rs, in order, annotated by what it does, described for a model.
    let names: Vec<&str> = seen["http"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, levy::api::mcp::tools::TOOLS.iter().map(|t| t.name).collect::<Vec<_>>());
    assert_eq!(names.len(), 23);
    for tool in seen["http"]["tools"].as_array().unwrap() {
        let spec = levy::api::mcp::tools::TOOLS.iter().find(|t| t.name == tool["name"]).unwrap();
        let reads = spec.effect == levy::api::mcp::tools::Effect::Reads;
        assert_eq!(tool["read_only"], reads, "{tool}");
        assert_eq!(tool["destructive"], spec.effect == levy::api::mcp::tools::Effect::Replaces, "{tool}");
        assert_eq!(tool["described"], true, "{tool}");
    }
    for name in ["get_nexus", "get_local_rate", "list_transactions"] {
        assert!(levy::api::mcp::tools::TOOLS.iter().any(|t| t.name == name && t.effect == levy::api::mcp::tools::Effect::Reads));
    }
    // Each tool's input schema is its operation's request schema, as the client compared them with the document.
    let equal = seen["http"]["schemas_equal"].as_object().unwrap();
    assert_eq!(equal.len(), 23);
    assert!(equal.values().all(|v| v == true), "{equal:?}");

    // 1,000 of SaaS into Austin 78701 with nexus in TX: 80% taxed at 6.25% + 1% + 1% = 1000 × 0.8 × 0.0825 = 66.00, the
    // REST answer's figures, over both transports.
    let rest: serde_json::Value = serde_json::from_str(seen["rest_calculate"].as_str().unwrap()).unwrap();
    assert_eq!(rest["total_tax"].to_string(), "66.00");
    for transport in ["http", "stdio"] {
        let calc = &seen[transport]["calculate"];
        assert_eq!(calc["is_error"], false, "{calc}");
        let body: serde_json::Value = serde_json::from_str(calc["text"].as_str().unwrap()).unwrap();
        assert_eq!(body["total_tax"].to_string(), "66.00", "{transport}");
        let (mut body_rest, mut body_tool) = (rest.clone(), body.clone());
        for differs in CALL_FIELDS {
            body_rest.as_object_mut().unwrap().remove(*differs);
            body_tool.as_object_mut().unwrap().remove(*differs);
        }
        let differing: Vec<&String> =
            body_rest.as_object().unwrap().keys().filter(|k| body_rest[k.as_str()] != body_tool[k.as_str()]).collect();
        assert!(differing.is_empty(), "{transport}: {differing:?}");
        assert_eq!(body_tool, body_rest, "{transport}");
        assert_eq!(calc["structured"]["total_tax"], body["total_tax"].as_f64().unwrap(), "{transport}");
    }

    // Every tool is callable with its arguments, and answers.
    let calls = seen["http"]["calls"].as_object().unwrap();
    assert_eq!(calls.len(), 23);
    for (name, call) in calls {
        assert_eq!(call["is_error"], false, "{name}: {}", call["text"]);
    }
    // Austin: 6.25% state + 1% city + 1% transit authority.
    assert_eq!(calls["get_local_rate"]["structured"]["combined_rate"].to_string(), "0.0825");
    assert_eq!(calls["verify_rates"]["structured"]["matches"], serde_json::json!(["TX"]));
    assert_eq!(calls["configure_nexus"]["structured"]["states_with_nexus"], serde_json::json!(["TX"]));
    assert_eq!(calls["get_nexus"]["structured"]["nexus"]["TX"]["hasNexus"], true);
    // A tenth of the 1,000 sale refunded: a tenth of its 66.00, shared 5.00 + 0.80 + 0.80; then the sale voided with it.
    let refund = &calls["refund_transaction"]["structured"];
    assert_eq!((refund["amount"].as_f64(), refund["tax_refunded"].as_f64()), (Some(100.0), Some(6.6)), "{refund}");
    let parts: Vec<f64> = refund["lines"].as_array().unwrap().iter().map(|l| l["tax"].as_f64().unwrap()).collect();
    assert_eq!(parts, [-5.0, -0.8, -0.8], "{refund}");
    assert_eq!(refund["transaction_id"], seen["http"]["calculate"]["structured"]["transaction_id"]);
    // Read back between the two: 900 of the sale and 59.40 of its tax left to refund.
    let standing = &calls["get_transaction"]["structured"];
    assert_eq!((standing["remaining"]["amount"].as_f64(), standing["remaining"]["tax"].as_f64()), (Some(900.0), Some(59.4)), "{standing}");
    assert_eq!(standing["refunds"][0]["transaction_id"], refund["refund_id"]);
    let void = &calls["void_transaction"]["structured"];
    assert_eq!((void["voided_now"].as_bool(), void["refunds_voided"][0].as_str()), (Some(true), refund["refund_id"].as_str()), "{void}");
    assert_eq!(calls["mark_period_filed"]["structured"]["last_day"], "2025-12-31");
    assert_eq!(calls["get_liability_report"]["structured"]["period"], "quarter");

    // A caller's mistake is a tool error carrying the API's envelope and its field errors, never a transport failure.
    let malformed = &seen["http"]["malformed"];
    assert_eq!(malformed["is_error"], true);
    assert_eq!(malformed["structured"]["code"], "INVALID_INPUT");
    let errors: Vec<&str> = malformed["structured"]["errors"].as_array().unwrap().iter().map(|e| e.as_str().unwrap()).collect();
    assert!(errors.iter().any(|e| e.starts_with("amount:")), "{errors:?}");
    assert!(errors.iter().any(|e| e.starts_with("buyer_state:")), "{errors:?}");
    assert_eq!(seen["http"]["unknown_tool"]["structured"]["code"], "RESOURCE_NOT_FOUND");

    // Without a key: a keyed tool is the API's 401 envelope; a free one answers.
    for keyless in [&seen["http_keyless"], &seen["stdio_keyless"]] {
        assert_eq!(keyless["get_nexus"]["is_error"], true, "{keyless}");
        assert_eq!(keyless["get_nexus"]["structured"]["code"], "UNAUTHORIZED", "{keyless}");
    }
    assert_eq!(seen["http_keyless"]["get_local_rate"]["is_error"], false);
    // A levy server that does not answer: a tool error naming it, in the envelope.
    let unreachable = &seen["stdio_unreachable"]["check_health"];
    assert_eq!(unreachable["is_error"], true);
    assert_eq!(unreachable["structured"]["code"], "DB_UNAVAILABLE");
    assert!(unreachable["structured"]["error"].as_str().unwrap().contains("http://127.0.0.1:9"), "{unreachable}");
}
