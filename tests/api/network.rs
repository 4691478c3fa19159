//! The agent network: profiles, the public directory and feed, signup's join_network, and the counterparties
//! calculate recognizes.

use levy::config::Limits;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::{json, Value};

use crate::harness::{num, Backend, TestApp};
use crate::on_both;

fn profile(agent_id: &str, name: &str, work_type: &str, description: &str) -> Value {
    json!({"agent_id": agent_id, "entity_name": name, "entity_state": "TX", "work_type": work_type, "description": description})
}

async fn page(app: &TestApp, query: &str) -> crate::harness::Reply {
    app.get(&format!("/api/v1/network-directory{query}"), None).await
}

/// Every text a keyless reader gets must be free of owners-only data.
fn assert_public(text: &str) {
    for secret in ["contact_email", "ein_last4", "@acme.example", "4321", "visibility"] {
        assert!(!text.contains(secret), "`{secret}` in a public answer: {text}");
    }
}

async fn profiles_are_saved_and_read_by_their_owner(app: TestApp) {
    let a = app.signup("net-owner@example.com").await;
    let b = app.signup("net-other@example.com").await;
    let body = json!({
        "agent_id": "acme-invoicer", "entity_name": "Acme Invoicing", "entity_state": "tx", "description": "Invoices for agents",
        "work_type": "compute",
        "principal": {"legal_name": "Acme Invoicing LLC", "entity_type": "llc", "state_of_incorporation": "DE", "ein_last4": "4321",
                      "contact_email": "ops@acme.example", "is_business": true},
    });
    let r = app.post("/api/v1/network", Some(&a.key), &body).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json["created"], json!(true));
    let p = &r.json["profile"];
    assert_eq!(
        (p["agent_id"].clone(), p["entity_state"].clone(), p["visibility"].clone()),
        (json!("acme-invoicer"), json!("TX"), json!("public"))
    );
    assert_eq!(
        p["principal"],
        json!({"legal_name": "Acme Invoicing LLC", "entity_type": "llc", "state_of_incorporation": "DE", "ein_last4": "4321",
               "contact_email": "ops@acme.example", "is_business": true})
    );
    assert_eq!(p["joined_at"], json!("2026-11-21T10:00:00.000Z"));

    // The owner updates it (the body replaces the profile); the join time stays.
    app.clock.advance_ms(60_000);
    let mut update = body.clone();
    update["description"] = json!("Invoices and receipts");
    update["visibility"] = json!("private");
    let r = app.post("/api/v1/network", Some(&a.key), &update).await;
    assert_eq!((r.status, r.json["created"].clone()), (200, json!(false)), "{}", r.text);
    assert_eq!(r.json["profile"]["description"], json!("Invoices and receipts"));
    assert_eq!(
        (r.json["profile"]["joined_at"].clone(), r.json["profile"]["updated_at"].clone()),
        (json!("2026-11-21T10:00:00.000Z"), json!("2026-11-21T10:01:00.000Z"))
    );
    // Another account cannot take or see it.
    let r = app.post("/api/v1/network", Some(&b.key), &body).await;
    assert_eq!((r.status, r.code()), (409, "RESOURCE_CONFLICT"), "{}", r.text);
    let r = app.get("/api/v1/network?agent_id=acme-invoicer", Some(&b.key)).await;
    assert_eq!((r.status, r.code()), (404, "RESOURCE_NOT_FOUND"), "{}", r.text);
    let r = app.get("/api/v1/network?agent_id=acme%20invoicer", Some(&a.key)).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    assert!(r.text.contains("agent_id: may contain only letters"), "{}", r.text);
    let r = app.get("/api/v1/network", Some(&b.key)).await;
    assert_eq!(r.status, 404, "B has no profile yet");
    // The owner's GET: the first profile by default, or the one named.
    app.post("/api/v1/network", Some(&a.key), &profile("acme-second", "Acme Two", "research", "")).await;
    let r = app.get("/api/v1/network", Some(&a.key)).await;
    assert_eq!((r.status, r.json["profile"]["agent_id"].clone()), (200, json!("acme-invoicer")), "{}", r.text);
    let r = app.get("/api/v1/network?agent_id=acme-second", Some(&a.key)).await;
    assert_eq!(r.json["profile"]["agent_id"], json!("acme-second"));

    // Input errors, every field at once; a whole EIN is refused.
    let bad = json!({"agent_id": "has space", "entity_name": "", "entity_state": "XX", "visibility": "secret", "work_type": "mining",
        "principal": {"ein_last4": "123456789", "contact_email": "not-an-email", "state_of_incorporation": "ZZ", "ein": "123456789"}});
    let r = app.post("/api/v1/network", Some(&a.key), &bad).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    let errors = r.errors();
    for field in [
        "agent_id:",
        "entity_name:",
        "entity_state:",
        "visibility:",
        "work_type:",
        "principal.ein:",
        "principal.ein_last4:",
        "principal.contact_email:",
        "principal.state_of_incorporation:",
    ] {
        assert!(errors.iter().any(|e| e.starts_with(field)), "no error for {field} in {errors:?}");
    }
    assert!(errors.contains(&"principal.ein_last4: must be at most 4 characters".to_string()), "{errors:?}");
    let r = app.post("/api/v1/network", None, &body).await;
    assert_eq!(r.status, 401);
}

async fn the_directory_pages_filters_and_searches(app: TestApp) {
    let owners = [app.signup("dir-1@example.com").await, app.signup("dir-2@example.com").await, app.signup("dir-3@example.com").await];
    // 45 public profiles (every third a research agent; the 7th says "Ledger" in its description), and 5 private ones.
    for i in 0..50 {
        app.clock.advance_ms(1_000);
        let work_type = if i % 3 == 0 { "research" } else { "compute" };
        let description = if i == 7 { "Reconciles the General LEDGER nightly" } else { "an agent" };
        let mut body = profile(&format!("agent-{i:02}"), &format!("Entity {i:02}"), work_type, description);
        if i >= 45 {
            body["visibility"] = json!("private");
            body["entity_name"] = json!(format!("Hidden {i}"));
        }
        body["principal"] = json!({"contact_email": "ops@acme.example", "ein_last4": "4321", "is_business": true});
        let r = app.post("/api/v1/network", Some(&owners[i % 3].key), &body).await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let ids = |v: &Value| v["profiles"].as_array().unwrap().iter().map(|p| p["agent_id"].as_str().unwrap().to_string()).collect::<Vec<_>>();

    let r = page(&app, "").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_public(&r.text);
    assert_eq!((r.json["page"].clone(), r.json["per_page"].clone(), r.json["total"].clone()), (json!(1), json!(20), json!(45)));
    assert_eq!(ids(&r.json).first().map(String::as_str), Some("agent-00"), "oldest first");
    assert_eq!(ids(&r.json).len(), 20);
    let r2 = page(&app, "?page=2").await;
    assert_eq!(ids(&r2.json).first().map(String::as_str), Some("agent-20"));
    let r3 = page(&app, "?page=3").await;
    assert_eq!(ids(&r3.json), (40..45).map(|i| format!("agent-{i:02}")).collect::<Vec<_>>(), "the last 5; no private one");
    assert_eq!(ids(&page(&app, "?page=4").await.json), Vec::<String>::new());
    // work_type: research is every third of 0..45 (15); a value that is not a work type is ignored.
    let r = page(&app, "?work_type=research").await;
    assert_eq!(r.json["total"], json!(15));
    assert!(r.json["profiles"].as_array().unwrap().iter().all(|p| p["work_type"] == json!("research")));
    assert_eq!(page(&app, "?work_type=mining").await.json["total"], json!(45));
    // search: any case, over agent id, entity name and description.
    assert_eq!(ids(&page(&app, "?search=AGENT-1").await.json), (10..20).map(|i| format!("agent-{i:02}")).collect::<Vec<_>>());
    assert_eq!(ids(&page(&app, "?search=entity%2033").await.json), ["agent-33"]);
    assert_eq!(ids(&page(&app, "?search=general%20ledger").await.json), ["agent-07"]);
    assert_eq!(page(&app, "?search=hidden").await.json["total"], json!(0), "private profiles are never listed");
    assert_eq!(page(&app, "?search=50%25").await.json["total"], json!(0), "LIKE's wildcards are text");
    assert_eq!(page(&app, "?search=research&work_type=research").await.json["total"], json!(0), "search does not look at work_type");
    // One profile by agent id; a private one is as if absent.
    let r = page(&app, "?agent_id=agent-07").await;
    assert_eq!((r.status, r.json["profile"]["entity_name"].clone()), (200, json!("Entity 07")), "{}", r.text);
    assert_eq!(
        r.json["profile"]["principal"],
        json!({"legal_name": null, "entity_type": null, "state_of_incorporation": null, "is_business": true})
    );
    assert_public(&r.text);
    let r = page(&app, "?agent_id=agent-47").await;
    assert_eq!((r.status, r.code()), (404, "RESOURCE_NOT_FOUND"), "{}", r.text);
    // Malformed parameters are refused, also beside an agent id whose lookup does not use them.
    let long = "x".repeat(201);
    for (bad, field) in [
        ("?page=0".to_string(), "page"),
        ("?page=x".to_string(), "page"),
        ("?page=100001".to_string(), "page"),
        (format!("?search={long}"), "search: must be at most 200 characters"),
        (format!("?agent_id=agent-07&search={long}"), "search: must be at most 200 characters"),
        ("?agent_id=agent-07&page=0".to_string(), "page"),
        ("?agent_id=has%20space".to_string(), "agent_id: may contain only letters, digits and _ - . : @"),
    ] {
        let r = page(&app, &bad).await;
        assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{bad}: {}", r.text);
        assert!(r.text.contains(field), "{bad}: {}", r.text);
    }
    assert_eq!(page(&app, &format!("?search={}", "x".repeat(200))).await.status, 200, "200 characters are allowed");
}

async fn signup_with_join_network_makes_a_profile(app: TestApp) {
    let body = json!({"email": "joiner@example.com", "password": "correct horse battery", "agent_name": "Joiner bot",
        "agent_work_type": "research", "agent_description": "Finds things", "company_name": "Joiner Co", "state": "ca",
        "join_network": true});
    let r = app.request("POST", "/api/v1/auth/signup", None, &[("X-Forwarded-For", "2001:db8::77")], Some(&body.to_string())).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let agent_id = r.json["agent_id"].as_str().unwrap().to_string();
    assert_eq!(r.json["network_profile"], json!({"agent_id": agent_id, "visibility": "public"}));
    let d = app.get(&format!("/api/v1/network-directory?agent_id={agent_id}"), None).await;
    assert_eq!(d.status, 200, "{}", d.text);
    assert_eq!(
        (d.json["profile"]["entity_name"].clone(), d.json["profile"]["entity_state"].clone(), d.json["profile"]["work_type"].clone()),
        (json!("Joiner Co"), json!("CA"), json!("research"))
    );
    assert_eq!(d.json["profile"]["description"], json!("Finds things"));
    let f = app.get("/api/v1/network-feed", None).await;
    assert_eq!(f.json["events"][0]["event"], json!("joined"));
    assert_eq!(f.json["events"][0]["profile"]["agent_id"], json!(agent_id));

    // Private: the owner sees it, nobody else does.
    let body = json!({"email": "quiet@example.com", "password": "correct horse battery", "agent_name": "Quiet",
        "agent_work_type": "compute", "join_network": true, "network_visibility": "private"});
    let r = app.request("POST", "/api/v1/auth/signup", None, &[("X-Forwarded-For", "2001:db8::78")], Some(&body.to_string())).await;
    let quiet_agent = r.json["agent_id"].as_str().unwrap().to_string();
    let key = r.json["api_key"]["key"].as_str().unwrap().to_string();
    assert_eq!(app.get(&format!("/api/v1/network-directory?agent_id={quiet_agent}"), None).await.status, 404);
    let own = app.get("/api/v1/network", Some(&key)).await;
    assert_eq!((own.json["profile"]["visibility"].clone(), own.json["profile"]["entity_state"].clone()), (json!("private"), json!(null)));
    // Without join_network, no profile.
    let plain = app.signup("plain@example.com").await;
    let r = app.get("/api/v1/network", Some(&plain.key)).await;
    assert_eq!(r.status, 404);
}

async fn the_feed_lists_public_joins_and_changes_newest_first(app: TestApp) {
    let a = app.signup("feed-a@example.com").await;
    app.post("/api/v1/network", Some(&a.key), &profile("feed-one", "One", "compute", "")).await;
    app.clock.advance_ms(1_000);
    let mut private = profile("feed-secret", "Secret", "compute", "");
    private["visibility"] = json!("private");
    app.post("/api/v1/network", Some(&a.key), &private).await;
    app.clock.advance_ms(1_000);
    app.post("/api/v1/network", Some(&a.key), &profile("feed-two", "Two", "compute", "")).await;
    app.clock.advance_ms(1_000);
    app.post("/api/v1/network", Some(&a.key), &profile("feed-one", "One, renamed", "research", "")).await;
    let f = app.get("/api/v1/network-feed", None).await;
    assert_eq!(f.status, 200, "{}", f.text);
    assert_public(&f.text);
    let seen: Vec<(String, String, String)> = f.json["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["event"].as_str().unwrap().into(), e["profile"]["agent_id"].as_str().unwrap().into(), e["at"].as_str().unwrap().into()))
        .collect();
    assert_eq!(
        seen,
        [
            ("updated".into(), "feed-one".into(), "2026-11-21T10:00:03.000Z".into()),
            ("joined".into(), "feed-two".into(), "2026-11-21T10:00:02.000Z".into()),
            ("joined".into(), "feed-one".into(), "2026-11-21T10:00:00.000Z".into()),
        ]
    );
    // Each event shows the profile as it is now.
    assert_eq!(f.json["events"][2]["profile"]["entity_name"], json!("One, renamed"));
    // A profile made private leaves the feed.
    let mut gone = profile("feed-one", "One", "compute", "");
    gone["visibility"] = json!("private");
    app.post("/api/v1/network", Some(&a.key), &gone).await;
    let f = app.get("/api/v1/network-feed", None).await;
    let ids: Vec<&str> = f.json["events"].as_array().unwrap().iter().map(|e| e["profile"]["agent_id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["feed-two"]);
    assert_eq!(app.get("/api/v1/network-feed?page=2", None).await.json["events"], json!([]));
}

/// The body stored in the ledger for the account's latest row.
async fn stored_body(app: &TestApp, entity_id: &str) -> Value {
    use levy::store::entity::transaction;
    let rows = transaction::Entity::find().filter(transaction::Column::EntityId.eq(entity_id)).all(&app.state.store.db).await.unwrap();
    let latest = rows.iter().max_by_key(|r| (r.created_at, r.id.clone())).unwrap();
    serde_json::from_str(&latest.result).unwrap()
}

async fn calculate_knows_network_counterparties(app: TestApp) {
    let vendor = app.signup("md-vendor@example.com").await;
    let buyer = app.signup("md-buyer@example.com").await;
    let business = json!({"legal_name": "Chesapeake Data LLC", "is_business": true});
    let mut public = profile("chesapeake-data", "Chesapeake Data", "compute", "data processing");
    public["principal"] = business.clone();
    public["entity_state"] = json!("MD");
    assert_eq!(app.post("/api/v1/network", Some(&vendor.key), &public).await.status, 201);
    let mut private = public.clone();
    private["agent_id"] = json!("chesapeake-quiet");
    private["visibility"] = json!("private");
    assert_eq!(app.post("/api/v1/network", Some(&vendor.key), &private).await.status, 201);

    // A 1,000 USD SaaS purchase in Maryland: 3% for a business buyer, 6% otherwise (rules/states/md.yaml: Md. Code, Tax-Gen. §11-104(l)(1)).
    let buy = |counterparty: &str, is_b2b: Option<bool>| {
        let mut b =
            json!({"amount": 1000, "buyer_state": "MD", "role": "buyer", "transaction_type": "saas", "counterparty_id": counterparty});
        if let Some(x) = is_b2b {
            b["is_b2b"] = json!(x);
        }
        b
    };
    let r = app.post("/api/v1/calculate", Some(&buyer.key), &buy("chesapeake-data", None)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(num(&r.json["total_tax"]), 30.0);
    assert_eq!(
        r.json["b2b_detection"],
        json!({"is_b2b": true, "method": "network_verified", "counterparty_principal": "Chesapeake Data LLC",
               "note": "the counterparty's network profile says its principal is a business"})
    );
    assert_eq!(
        r.json["network_profile"],
        json!({"agent_id": "chesapeake-data", "entity_name": "Chesapeake Data", "entity_state": "MD", "work_type": "compute",
               "legal_name": "Chesapeake Data LLC", "is_business": true})
    );
    assert_eq!(stored_body(&app, &buyer.entity_id).await["b2b_detection"]["method"], json!("network_verified"), "recorded as answered");

    // The private profile verifies nothing for another account.
    let r = app.post("/api/v1/calculate", Some(&buyer.key), &buy("chesapeake-quiet", None)).await;
    assert_eq!(num(&r.json["total_tax"]), 60.0, "{}", r.text);
    assert_eq!(r.json["b2b_detection"]["method"], json!("default"));
    assert!(r.json.get("network_profile").is_none(), "{}", r.text);

    // A declaration wins; one that contradicts the profile carries the advisory.
    let r = app.post("/api/v1/calculate", Some(&buyer.key), &buy("chesapeake-data", Some(false))).await;
    assert_eq!(num(&r.json["total_tax"]), 60.0, "{}", r.text);
    assert_eq!(r.json["b2b_detection"]["method"], json!("declared"));
    let codes: Vec<&str> = r.json["advisories"].as_array().unwrap().iter().map(|a| a["code"].as_str().unwrap()).collect();
    assert!(codes.contains(&"B2B_DECLARATION_DIFFERS_FROM_NETWORK"), "{codes:?}");
    let r = app.post("/api/v1/calculate", Some(&buyer.key), &buy("chesapeake-data", Some(true))).await;
    assert_eq!(num(&r.json["total_tax"]), 30.0);
    let codes: Vec<&str> = r.json["advisories"].as_array().unwrap().iter().map(|a| a["code"].as_str().unwrap()).collect();
    assert!(!codes.contains(&"B2B_DECLARATION_DIFFERS_FROM_NETWORK"), "{codes:?}");

    // A profile made private stops verifying at once, though this instance last saw it public (the ledger batch
    // reads the profile in its transaction), and so does it on another instance.
    let other = TestApp::on(app.db.clone(), app.backend, app.clock.clone()).await;
    assert_eq!(
        other.post("/api/v1/calculate", Some(&buyer.key), &buy("chesapeake-data", None)).await.json["b2b_detection"]["method"],
        json!("network_verified")
    );
    let mut hidden = public.clone();
    hidden["visibility"] = json!("private");
    assert_eq!(other.post("/api/v1/network", Some(&vendor.key), &hidden).await.status, 200);
    for instance in [&app, &other] {
        let r = instance.post("/api/v1/calculate", Some(&buyer.key), &buy("chesapeake-data", None)).await;
        assert_eq!((num(&r.json["total_tax"]), r.json["b2b_detection"]["method"].clone()), (60.0, json!("default")), "{}", r.text);
    }
    assert_eq!(app.post("/api/v1/network", Some(&vendor.key), &public).await.status, 200);

    // The owner's own private profile is known to the owner.
    let r = app.post("/api/v1/calculate", Some(&vendor.key), &buy("chesapeake-quiet", None)).await;
    assert_eq!((num(&r.json["total_tax"]), r.json["b2b_detection"]["method"].clone()), (30.0, json!("network_verified")));

    // A seller without nexus in TX: the buyer, a network member, is told it owes use tax (1,000 × 80% × 8.25% = 66.00
    // in Austin: TX taxes data processing on 80% of the price, Tex. Tax Code §151.351).
    let mut to_buyer = profile("austin-buyer", "Austin Buyer", "compute", "");
    to_buyer["principal"] = json!({"legal_name": "Austin Buyer Inc", "is_business": true});
    app.post("/api/v1/network", Some(&buyer.key), &to_buyer).await;
    let sale =
        json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "transaction_type": "saas", "counterparty_id": "austin-buyer"});
    let r = app.post("/api/v1/calculate", Some(&vendor.key), &sale).await;
    assert_eq!((r.status, r.json["audit_trail"]["final_determination"].clone()), (200, json!("no_nexus")), "{}", r.text);
    let tax_if_nexus = r.json["tax_if_nexus"]["total_tax"].clone();
    assert_eq!(num(&tax_if_nexus), 66.0, "{}", r.text);
    assert_eq!(
        r.json["counterparty_notice"],
        json!({"counterparty_id": "austin-buyer", "on_agenttax": true, "forward_to_counterparty": true,
               "message": "The seller does not collect Texas sales tax on this sale (it has no nexus in Texas): as the buyer, you may owe Texas use tax of 66.00 USD on it."})
    );
    // The same for a counterparty not on the network.
    let mut off = sale.clone();
    off["counterparty_id"] = json!("someone-else");
    let r = app.post("/api/v1/calculate", Some(&vendor.key), &off).await;
    assert_eq!(r.json["counterparty_notice"]["on_agenttax"], json!(false), "{}", r.text);
    assert!(r.json.get("network_profile").is_none());
    // With nexus there is nothing to tell.
    app.set_nexus(&vendor.key, &["TX"]).await;
    let r = app.post("/api/v1/calculate", Some(&vendor.key), &sale).await;
    assert!(r.json.get("counterparty_notice").is_none(), "{}", r.text);
}

async fn a_vendor_over_the_1099_threshold_is_told(app: TestApp) {
    let payer = app.signup("payer-1099@example.com").await;
    // Buyer-role payments to one vendor: 1,500 then 600 USD (2,100 ≥ 2,000, the threshold from tax year 2026).
    let pay = |amount: i64| json!({"amount": amount, "buyer_state": "OR", "role": "buyer", "transaction_type": "saas", "counterparty_id": "vendor-9"});
    let r = app.post("/api/v1/calculate", Some(&payer.key), &pay(1500)).await;
    assert!(r.json.get("counterparty_notice").is_none(), "below the threshold: {}", r.text);
    let r = app.post("/api/v1/calculate", Some(&payer.key), &pay(600)).await;
    assert_eq!(r.json["tracking_1099"]["threshold_exceeded"], json!(true), "{}", r.text);
    let form = r.json["tracking_1099"]["form_required"].as_str().unwrap().to_string();
    assert_eq!(
        r.json["counterparty_notice"]["message"],
        json!(format!(
            "Payments to you from this payer total 2100.00 USD in 2026, at or over the 2000.00 USD threshold: a Form {form} will be filed for 2026; send your Form W-9 if you have not."
        ))
    );
    assert_eq!(stored_body(&app, &payer.entity_id).await["counterparty_notice"], r.json["counterparty_notice"], "recorded as answered");
}

on_both!(
    profiles_are_saved_and_read_by_their_owner,
    the_directory_pages_filters_and_searches,
    signup_with_join_network_makes_a_profile,
    the_feed_lists_public_joins_and_changes_newest_first,
    calculate_knows_network_counterparties,
    a_vendor_over_the_1099_threshold_is_told
);

/// The directory and the feed share one per-address limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directory_and_feed_are_limited_per_address() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let limits = Limits { network_per_minute: 3, ..Limits::default() };
        let Some(app) = TestApp::start_with(backend, limits).await else { continue };
        let ip = [("X-Forwarded-For", "203.0.113.9")];
        for path in ["/api/v1/network-directory", "/api/v1/network-feed", "/api/v1/network-directory"] {
            assert_eq!(app.request("GET", path, None, &ip, None).await.status, 200);
        }
        let r = app.request("GET", "/api/v1/network-feed", None, &ip, None).await;
        assert_eq!((r.status, r.code()), (429, "RATE_LIMITED"), "{}", r.text);
        // 10:00:00 → the minute ends in 60 s.
        assert_eq!(r.header("retry-after").as_deref(), Some("60"));
        let other = [("X-Forwarded-For", "203.0.113.10")];
        assert_eq!(app.request("GET", "/api/v1/network-feed", None, &other, None).await.status, 200, "another address");
    }
}
