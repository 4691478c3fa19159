//! The contract as reviewers see it: snapshots of a full and a demo response and of the OpenAPI
//! document, and a check that live responses use only fields the document describes.

use std::path::Path;

use serde_json::{json, Value};

use super::harness::{Backend, TestApp};

fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(Path::new(env!("CARGO_MANIFEST_DIR")).join("snapshots"));
    s.set_prepend_module_to_snapshot(false);
    s
}

/// Pretty JSON as the wire shows numbers (exact decimals such as 0.00).
fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

fn redact(mut v: Value) -> Value {
    for k in ["transaction_id", "timestamp", "entity_id"] {
        if v.get(k).is_some() {
            v[k] = json!(format!("[{k}]"));
        }
    }
    v
}

fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
    &doc["components"]["schemas"][name]
}

/// Every key of `body` is a documented property of `schema_name`, and every required property is present.
fn conforms(doc: &Value, body: &Value, schema_name: &str) {
    let s = schema(doc, schema_name);
    let props = s["properties"].as_object().unwrap_or_else(|| panic!("{schema_name} has no properties"));
    for k in body.as_object().unwrap().keys() {
        assert!(props.contains_key(k), "{schema_name}: field `{k}` is not in the OpenAPI document");
    }
    for r in s["required"].as_array().into_iter().flatten() {
        assert!(body.get(r.as_str().unwrap()).is_some(), "{schema_name}: required `{r}` missing");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_and_document_snapshots() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let a = app.signup("contract@example.com").await;
    app.set_nexus(&a.key, &["IL"]).await;
    // Chicago 60601: SaaS in Illinois, plus the Chicago lease tax that does not depend on nexus.
    let full = app.post("/api/v1/calculate", Some(&a.key), &json!({"amount": 1000, "buyer_state": "IL", "buyer_zip": "60601", "counterparty_id": "acme-corp", "role": "buyer", "is_b2b": true})).await;
    assert_eq!(full.status, 200, "{}", full.text);
    let demo = app
        .post(
            "/api/v1/calculate",
            None,
            &json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "acme-corp"}),
        )
        .await;
    assert_eq!(demo.status, 200, "{}", demo.text);
    let doc: Value = serde_json::from_str(&levy::api::openapi_json(app.state.clone())).unwrap();
    conforms(&doc, &full.json, "FullCalculation");
    conforms(&doc, &demo.json, "DemoCalculation");
    conforms(&doc, &full.json["audit_trail"], "AuditTrail");
    settings().bind(|| {
        insta::assert_snapshot!("api_calculate_full", pretty(&redact(full.json.clone())));
        insta::assert_snapshot!("api_calculate_demo", pretty(&redact(demo.json.clone())));
        insta::assert_snapshot!("api_openapi", pretty(&doc));
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn document_is_served_and_complete() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let r = app.get("/api/v1/openapi.json", None).await;
    assert_eq!(r.status, 200);
    let doc = r.json;
    // The interface version of the spec's Versioning section, not the crate's.
    assert_eq!(doc["info"]["version"], json!("1.5.0"));
    // The frozen error enum has exactly the spec's 16 codes.
    let codes = schema(&doc, "ErrorCode")["enum"].as_array().unwrap().clone();
    assert_eq!(codes.len(), 16);
    for c in [
        "INVALID_INPUT",
        "INVALID_JSON_BODY",
        "UNAUTHORIZED",
        "PAYMENT_REQUIRED",
        "FORBIDDEN",
        "TIER_LIMIT_REACHED",
        "RESOURCE_NOT_FOUND",
        "METHOD_NOT_ALLOWED",
        "RESOURCE_CONFLICT",
        "IDEMPOTENCY_KEY_CONFLICT",
        "IDEMPOTENCY_KEY_INVALID",
        "NEXUS_NOT_REACHED",
        "RATE_LIMITED",
        "WEBHOOK_SIGNATURE_INVALID",
        "INTERNAL",
        "DB_UNAVAILABLE",
    ] {
        assert!(codes.contains(&json!(c)), "{c}");
    }
    // Every operation is documented with a summary and its error statuses.
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            assert!(op["summary"].as_str().is_some_and(|s| !s.is_empty()), "{method} {path} has no summary");
            let statuses: Vec<&String> = op["responses"].as_object().unwrap().keys().collect();
            assert!(statuses.iter().any(|s| s.starts_with('2')), "{method} {path}: no success status");
            assert!(statuses.iter().any(|s| s.as_str() == "500"), "{method} {path}: 500 not documented");
            // Any operation refuses a query parameter it does not list (`api::query`).
            assert!(statuses.iter().any(|s| s.as_str() == "400"), "{method} {path}: 400 not documented");
        }
    }
    let calc = &doc["paths"]["/api/v1/calculate"]["post"];
    for s in ["200", "400", "401", "402", "409", "429", "503"] {
        assert!(calc["responses"].get(s).is_some(), "calculate lacks {s}");
    }
    assert!(calc["parameters"].as_array().unwrap().iter().any(|p| p["name"] == json!("Idempotency-Key")));
    let r = app.get("/docs/", None).await;
    assert_eq!(r.status, 200);
    assert!(r.text.contains("swagger"), "the docs page renders the document");
}

/// Every gains response is described by the document: each key documented, each required key present.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gains_responses_conform() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let a = app.signup("gains-contract@example.com").await;
    let doc: Value = serde_json::from_str(&levy::api::openapi_json(app.state.clone())).unwrap();
    let buy = app.post("/api/v1/trades", Some(&a.key), &json!({"asset_symbol": "AAA", "trade_type": "buy", "quantity": 10, "price_per_unit": 50, "trade_date": "2026-01-05T00:00:00Z", "asset_class": "stock"})).await;
    assert_eq!(buy.status, 201, "{}", buy.text);
    // A second buy within 30 days before the loss sale: it becomes the replacement.
    let again = app
        .post(
            "/api/v1/trades",
            Some(&a.key),
            &json!({"asset_symbol": "AAA", "trade_type": "buy", "quantity": 2, "price_per_unit": 45, "trade_date": "2026-01-20T00:00:00Z"}),
        )
        .await;
    assert_eq!(again.status, 201, "{}", again.text);
    let sell = app.post("/api/v1/trades", Some(&a.key), &json!({"asset_symbol": "AAA", "trade_type": "sell", "quantity": 4, "price_per_unit": 40, "trade_date": "2026-02-01T00:00:00Z", "resident_state": "NY", "estimated_annual_income": 90000, "filing_status": "mfj"})).await;
    assert_eq!(sell.status, 201, "{}", sell.text);
    conforms(&doc, &buy.json, "TradeResult");
    conforms(&doc, &buy.json["lot"], "LotView");
    conforms(&doc, &buy.json["wash_sale"], "WashSaleInfo");
    conforms(&doc, &sell.json, "TradeResult");
    conforms(&doc, &sell.json["lots_consumed"][0], "ConsumedLot");
    conforms(&doc, &sell.json["lots_consumed"][0]["wash_sale"], "DispositionWash");
    conforms(&doc, &sell.json["lots_consumed"][0]["wash_sale"]["replacements"][0], "Replacement");
    conforms(&doc, &sell.json["totals"], "SellTotals");
    conforms(&doc, &sell.json["estimates"]["federal"], "FederalEstimate");
    conforms(&doc, &sell.json["estimates"]["state"], "StateEstimate");
    let list = app.get("/api/v1/trades", Some(&a.key)).await;
    conforms(&doc, &list.json, "TradeList");
    conforms(&doc, &list.json["trades"][0], "TradeRecord");
    conforms(&doc, &list.json["summary"], "TradeSummary");
    conforms(&doc, &list.json["summary"]["assets"][0], "AssetSummary");
    let export = app.get("/api/v1/export/1099-da?year=2026", Some(&a.key)).await;
    conforms(&doc, &export.json, "Export1099Da");
    conforms(&doc, &export.json["entries"][0], "Form1099DaEntry");
    conforms(&doc, &export.json["totals"]["all"], "Form1099DaTotal");
    let rates = app.get("/api/v1/rates/capital-gains?state=NY&explain=true", None).await;
    conforms(&doc, &rates.json, "FullGainsRates");
    conforms(&doc, &rates.json["states"]["NY"], "StateGainsRate");
}

/// The values the service validates a request enum field against, by the field's name: the engine's fact
/// schema (`rules::schema`) for calculate's fields, the gains tracker's lists for a trade's. `None` for a name
/// with no such list.
fn validated_values(field: &str) -> Option<Vec<&'static str>> {
    use levy::rules::schema::{Fact, FactKind, ASSET_CLASSES, FILING_STATUSES, STATES, WORK_TYPES};
    if let Some(FactKind::Enum(values)) = Fact::by_name(field).map(|f| f.def().kind) {
        return Some(values.to_vec());
    }
    Some(match field {
        "agent_work_type" => WORK_TYPES.to_vec(),
        "resident_state" => STATES.to_vec(),
        "trade_type" => levy::gains::request::TRADE_TYPES.to_vec(),
        "accounting_method" => levy::gains::Method::NAMES.to_vec(),
        "tax_entity_type" => levy::gains::EntityType::NAMES.to_vec(),
        "filing_status" => FILING_STATUSES.to_vec(),
        "asset_class" => ASSET_CLASSES.to_vec(),
        // A wallet's chain: the networks x402 payments are taken on (src/api/wallets.rs).
        "chain" => levy::payments::x402::NETWORKS.iter().map(|n| n.name).collect(),
        // Checked where they are read, with these literal lists (src/api/accounts.rs, src/api/keys.rs).
        "network_visibility" | "visibility" => vec!["public", "private"],
        // A network profile's work type (src/api/network.rs).
        "work_type" => WORK_TYPES.to_vec(),
        // Query parameters of GET /rates/capital-gains, read with the list they document (src/api/trades/mod.rs).
        "format" => levy::api::schema::param::GainsFormat::VALUES.to_vec(),
        "explain" => vec!["true", "false"],
        // Signup's state and the query parameters' states are read in either case (compared upper-cased below).
        "state" | "entity_state" | "state_of_incorporation" => STATES.to_vec(),
        // `test` passes the list check and is then refused: test keys are on the spec's roadmap, not available.
        "type" => vec!["live"],
        // A checkout's product and tiers (src/api/billing.rs): the products, and the plans file's paid tiers.
        "product" => levy::billing::Product::ALL.iter().map(|p| p.id()).collect(),
        "tier" | "tax_tier" | "gains_tier" => {
            let plans = levy::plans::Plans::compiled_in(&Default::default(), &mut Default::default()).unwrap();
            let paid = plans.tiers.into_iter().map(|t| t.id).filter(|id| id != levy::plans::DEFAULT_PLAN);
            paid.map(|id| &*Box::leak(id.into_boxed_str())).collect()
        }
        _ => return None,
    })
}

/// Every enum a request body or query parameter documents, as (where, field, values), found by walking the
/// document from each operation's request body and parameters.
fn documented_request_enums(doc: &Value) -> Vec<(String, String, Vec<String>)> {
    fn resolve<'a>(doc: &'a Value, s: &'a Value) -> &'a Value {
        match s.get("$ref").and_then(Value::as_str) {
            Some(r) => resolve(doc, &doc["components"]["schemas"][r.trim_start_matches("#/components/schemas/")]),
            None => match s.get("allOf").and_then(Value::as_array).and_then(|a| a.iter().find(|x| x.get("$ref").is_some())) {
                Some(inner) => resolve(doc, inner),
                None => s,
            },
        }
    }
    fn walk(doc: &Value, at: &str, field: &str, schema: &Value, seen: &mut Vec<String>, out: &mut Vec<(String, String, Vec<String>)>) {
        let s = resolve(doc, schema);
        if let Some(values) = s.get("enum").and_then(Value::as_array) {
            // A null in the list is the document's "may be null" (`api::document`), not a value the field takes.
            out.push((at.to_string(), field.to_string(), values.iter().filter_map(|v| v.as_str()).map(str::to_string).collect()));
        }
        for key in ["items", "additionalProperties"] {
            if let Some(inner) = s.get(key).filter(|v| v.is_object()) {
                walk(doc, at, field, inner, seen, out);
            }
        }
        for variant in ["oneOf", "anyOf"].iter().filter_map(|k| s.get(*k).and_then(Value::as_array)).flatten() {
            walk(doc, at, field, variant, seen, out);
        }
        let name = s.get("title").and_then(Value::as_str).unwrap_or(at).to_string();
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            let key = format!("{at}.{field}:{}", props.keys().cloned().collect::<Vec<_>>().join(","));
            if seen.contains(&key) {
                return;
            }
            seen.push(key);
            for (p, ps) in props {
                walk(doc, &name, p, ps, seen, out);
            }
        }
    }
    let mut out = Vec::new();
    let mut seen = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let at = format!("{} {path}", method.to_ascii_uppercase());
            for content in op["requestBody"]["content"].as_object().into_iter().flatten().map(|(_, c)| c) {
                walk(doc, &at, "body", &content["schema"], &mut seen, &mut out);
            }
            for p in op["parameters"].as_array().into_iter().flatten() {
                walk(doc, &at, p["name"].as_str().unwrap(), &p["schema"], &mut seen, &mut out);
            }
        }
    }
    out
}

/// No documented request enum drifts from the list the service validates it against: each enum reachable from a
/// request body or parameter is compared, value for value and in order, with the engine's (or gains tracker's)
/// list for its field, and one without such a list fails the test until it is given one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documented_request_enums_are_the_validated_lists() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let doc: Value = serde_json::from_str(&levy::api::openapi_json(app.state.clone())).unwrap();
    let enums = documented_request_enums(&doc);
    let mut fields: Vec<&str> = enums.iter().map(|(_, f, _)| f.as_str()).collect();
    fields.sort();
    fields.dedup();
    // Calculate's and ingest's enums (by fact), the nested attestation and maintenance facts, signup, keys and trades.
    for f in [
        "buyer_state",
        "transaction_type",
        "work_type",
        "role",
        "use_context",
        "digital_content_type",
        "payment_provider_type",
        "it_support_scope",
        "marketplace_role",
        "deliverable",
        "delivery",
        "support_kind",
        "update_delivery",
        "agent_work_type",
        "network_visibility",
        "type",
        "trade_type",
        "accounting_method",
        "tax_entity_type",
        "filing_status",
        "asset_class",
        "resident_state",
    ] {
        assert!(fields.contains(&f), "the walk did not reach `{f}` (found {fields:?})");
    }
    for (at, field, documented) in &enums {
        // A state read in either case documents both; signup's state may also be empty.
        let documented = &if field.ends_with("state") || field == "state_of_incorporation" {
            let mut upper: Vec<String> = Vec::new();
            for v in documented.iter().filter(|v| !v.is_empty()).map(|v| v.to_ascii_uppercase()) {
                if !upper.contains(&v) {
                    upper.push(v);
                }
            }
            upper
        } else {
            documented.clone()
        };
        // GET /rates reads its format with the list it documents (src/api/rates.rs, RatesFormat::VALUES).
        let rates_format = (at == "GET /api/v1/rates" && field == "format").then(|| levy::api::schema::rates::RatesFormat::VALUES.to_vec());
        // GET /reports/liability reads its period and format with the lists it documents (src/api/filing.rs).
        let report = match (at == "GET /api/v1/reports/liability", field.as_str()) {
            (true, "period") => Some(levy::ledger::report::Granularity::VALUES.to_vec()),
            (true, "format") => Some(levy::api::schema::filing::ReportFormat::VALUES.to_vec()),
            _ => None,
        };
        let Some(validated) = rates_format.or(report).or_else(|| validated_values(field)) else {
            panic!("{at}: `{field}` documents an enum with no validated list to compare with: {documented:?}")
        };
        assert_eq!(documented, &validated, "{at}: `{field}` documents {documented:?}, the service validates {validated:?}");
    }
    // The two that drifted: maintenance support_kind (documented `full`, never accepted) and the attestation's deliverable.
    assert_eq!(schema(&doc, "SupportKind")["enum"], json!(["help_desk_only", "technical"]));
    assert_eq!(schema(&doc, "Deliverable")["enum"], json!(["source_code", "compiled_artifact", "hosted_access", "other"]));
}

/// The document's bounds and patterns are the constants the service checks with, not copies that can drift.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documented_constraints_are_the_checked_ones() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let doc: Value = serde_json::from_str(&levy::api::openapi_json(app.state.clone())).unwrap();
    // The smallest amount is the smallest kept (28 decimal places, cut toward zero).
    let min = schema(&doc, "CalculateRequest")["properties"]["amount"]["minimum"].as_f64().unwrap();
    assert_eq!(min, format!("1e-{}", levy::engine::money::MAX_SCALE).parse::<f64>().unwrap());
    // The asset symbol: the body's attribute and the query parameter's agree.
    let symbol = levy::api::schema::pattern::SYMBOL_PATTERN;
    assert_eq!(schema(&doc, "TradeBody")["properties"]["asset_symbol"]["pattern"], json!(symbol));
    let list = doc["paths"]["/api/v1/trades"]["get"]["parameters"].as_array().unwrap();
    let param = list.iter().find(|p| p["name"] == json!("asset_symbol")).unwrap();
    assert_eq!(param["schema"]["pattern"], json!(symbol));
    let body = &schema(&doc, "TradeBody")["properties"]["asset_symbol"];
    assert_eq!((&param["schema"]["minLength"], &param["schema"]["maxLength"]), (&body["minLength"], &body["maxLength"]));
    // The Idempotency-Key, on both operations that take it.
    for path in ["/api/v1/calculate", "/api/v1/trades"] {
        let list = doc["paths"][path]["post"]["parameters"].as_array().unwrap();
        let header = list.iter().find(|p| p["name"] == json!("Idempotency-Key")).unwrap();
        assert_eq!(header["schema"]["pattern"], json!(levy::idempotency::key_pattern()), "{path}");
        assert_eq!(header["schema"]["maxLength"], json!(levy::idempotency::MAX_KEY_LEN), "{path}");
    }
}

/// A documented pattern is checked by `api::conform` with its compiled expressions; poem-openapi's own `pattern`
/// validator compiles its expression on every check (46 µs of a calculate body's read, benches/README.md), so no
/// body field carries one: a patterned string takes a documented type of `api/schema/param.rs`.
#[test]
fn no_body_field_compiles_its_pattern_per_request() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/api");
    let mut found = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (i, line) in text.lines().enumerate() {
                    if line.contains("#[oai(") && line.contains("validator(") && line.contains("pattern") {
                        found.push(format!("{}:{}", path.display(), i + 1));
                    }
                }
            }
        }
    }
    assert!(found.is_empty(), "poem-openapi pattern validators (compiled on every request): {found:?}");
}

/// The figures that the document's header descriptions state (poem-openapi takes them only as literals) are the
/// ones the server sends: the per-key and demo limits of X-RateLimit-Limit, and the public reads' Cache-Control.
#[tokio::test]
async fn documented_header_figures_are_the_ones_sent() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let doc: Value = serde_json::from_str(&levy::api::openapi_json(app.state.clone())).unwrap();
    let described = |path: &str, method: &str, status: &str, header: &str| {
        let d = &doc["paths"][path][method]["responses"][status]["headers"][header]["description"];
        d.as_str().unwrap_or_else(|| panic!("{method} {path} {status} documents no {header}")).to_string()
    };
    // The number in parentheses that follows `after` in `text`: "… for this key (120)." → "120".
    let figure = |text: &str, after: &str| {
        let rest = &text[text.find(after).unwrap_or_else(|| panic!("`{after}` in `{text}`")) + after.len()..];
        rest.trim_start().strip_prefix('(').and_then(|r| r.split_once(')')).map(|(n, _)| n.to_string())
    };
    let a = app.signup("documented@example.com").await;
    let calc = json!({"amount": 10, "buyer_state": "TX", "counterparty_id": "c"});
    let keyed = app.post("/api/v1/calculate", Some(&a.key), &calc).await;
    let demo = app.request("POST", "/api/v1/calculate", None, &[("X-Forwarded-For", "203.0.113.9")], Some(&calc.to_string())).await;
    assert_eq!((keyed.status, demo.status), (200, 200), "{} {}", keyed.text, demo.text);
    let limit = described("/api/v1/calculate", "post", "200", "X-RATELIMIT-LIMIT");
    assert_eq!(keyed.header("x-ratelimit-limit"), figure(&limit, "for this key"));
    assert_eq!(demo.header("x-ratelimit-limit"), figure(&limit, "per UTC day"));

    let buy = json!({"asset_symbol": "BTC", "trade_type": "buy", "quantity": "1", "price_per_unit": "100", "trade_date": "2026-01-05T12:00:00Z", "asset_class": "crypto"});
    let trade = app.post("/api/v1/trades", Some(&a.key), &buy).await;
    assert_eq!(trade.status, 201, "{}", trade.text);
    let limit = described("/api/v1/trades", "post", "201", "X-RATELIMIT-LIMIT");
    assert_eq!(trade.header("x-ratelimit-limit"), figure(&limit, "for this key"));

    let rates = app.get("/api/v1/rates/capital-gains", None).await;
    assert_eq!(rates.status, 200);
    let cache = described("/api/v1/rates/capital-gains", "get", "200", "CACHE-CONTROL");
    assert_eq!(rates.header("cache-control").as_deref(), cache.strip_suffix('.'));
}
