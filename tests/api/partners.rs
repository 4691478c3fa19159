//! The partner program: provisioning (once per external id), claim links, usage and revenue share with figures
//! worked out by hand, the signed webhook and its forgeries, the spec's transitions table, tenancy, deactivation,
//! the per-partner rate limit, secret rotation and the operator's command line.

use std::process::Command;

use chrono::{DateTime, Utc};
use levy::partners::sign_webhook;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{json, Value};

use crate::harness::{Backend, Reply, TestApp};
use crate::{on_both, on_each_backend};

pub struct Partner {
    pub key: String,
    pub secret: String,
}

/// A partner made as the operator makes one (`levy partners create`), its key and secret read from what it prints.
pub async fn create_partner(app: &TestApp, slug: &str, revshare: &str, wholesale: &str, free: i64, rate: Option<&str>) -> Partner {
    let terms = levy::cli::partners::Terms {
        revshare: Some(revshare.into()),
        wholesale_per_call: Some(wholesale.into()),
        free_calls_per_user: Some(free),
        rate_limit: rate.map(str::to_string),
    };
    let out = levy::cli::partners::create(&app.state.store, slug, &format!("{slug} Inc."), &terms, app.clock.now_ms()).await.unwrap();
    let after = |label: &str| out.lines().find_map(|l| l.strip_prefix(label)).unwrap_or_else(|| panic!("{label} in {out}")).to_string();
    Partner { key: after("partner key (shown once): "), secret: after("webhook signing secret (shown once): ") }
}

fn calc() -> Value {
    json!({"amount": 10, "buyer_state": "TX", "counterparty_id": "c"})
}

async fn provision(app: &TestApp, p: &Partner, external_id: &str) -> Reply {
    app.post("/api/v1/partner/provision", Some(&p.key), &json!({"external_id": external_id})).await
}

/// A webhook delivery: the body signed with `secret` at `t`, with the partner's slug, a nonce and an event.
async fn deliver(app: &TestApp, slug: &str, secret: &str, t: i64, nonce: &str, event: &str, body: &str) -> Reply {
    let sig = sign_webhook(secret, t, body.as_bytes());
    let headers =
        [("X-Service-Signature", sig.as_str()), ("X-Service-Partner", slug), ("X-Service-Nonce", nonce), ("X-Service-Event", event)];
    app.request("POST", "/api/v1/partner/webhook", None, &headers, Some(body)).await
}

fn now_secs(app: &TestApp) -> i64 {
    app.clock.now_ms() / 1000
}

async fn partner_users(app: &TestApp) -> u64 {
    levy::store::entity::partner_user::Entity::find().count(&app.state.store.db).await.unwrap()
}

async fn deleted_users(app: &TestApp) -> u64 {
    levy::store::entity::partner_user::Entity::find()
        .filter(levy::store::entity::partner_user::Column::DeletedAt.is_not_null())
        .count(&app.state.store.db)
        .await
        .unwrap()
}

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

async fn provisioning_is_once_per_external_id(app: TestApp) {
    let p = create_partner(&app, "acme", "20", "0.002", 0, None).await;
    let first = provision(&app, &p, "user-1").await;
    assert_eq!(first.status, 201, "{}", first.text);
    let j = &first.json;
    assert_eq!(j["already_provisioned"], json!(false));
    assert_eq!(j["claimed"], json!(false));
    assert!(j["api_key"].as_str().unwrap().starts_with("svc_live_"));
    let url = j["claim_url"].as_str().unwrap();
    assert!(url.contains("/api/v1/partner/claim?token=clm_"), "{url}");
    // Provisioned at 2026-11-21T10:00Z; the link lasts 7 days.
    assert_eq!(j["claim_expires_at"], json!("2026-11-28T10:00:00.000Z"));
    let again = provision(&app, &p, "user-1").await;
    assert_eq!(again.status, 200, "{}", again.text);
    assert_eq!(again.json["already_provisioned"], json!(true));
    assert_eq!((again.json["api_key"].clone(), again.json["claim_url"].clone()), (Value::Null, Value::Null), "no credentials again");
    assert_eq!(again.json["agenttax_account_id"], j["agenttax_account_id"]);
    assert_eq!(again.json["partner_user_id"], j["partner_user_id"]);
    // The first key still works: credentials were not rotated.
    assert_eq!(app.post("/api/v1/calculate", j["api_key"].as_str(), &calc()).await.status, 200);
    // 20 parallel provisions of one new external id: one account, one 201.
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let client = app.client.clone();
        let key = p.key.clone();
        tasks.push(tokio::spawn(async move {
            let resp = client
                .post("/api/v1/partner/provision")
                .header("X-API-Key", key)
                .content_type("application/json")
                .body(json!({"external_id": "parallel"}).to_string())
                .send()
                .await;
            let status = resp.0.status().as_u16();
            let body: Value = serde_json::from_str(&resp.0.into_body().into_string().await.unwrap()).unwrap();
            (status, body["agenttax_account_id"].as_str().unwrap().to_string())
        }));
    }
    let mut created = 0;
    let mut accounts = std::collections::BTreeSet::new();
    for t in tasks {
        let (status, account) = t.await.unwrap();
        assert!(status == 201 || status == 200, "{status}");
        created += usize::from(status == 201);
        accounts.insert(account);
    }
    assert_eq!((created, accounts.len()), (1, 1));
    assert_eq!(partner_users(&app).await, 2);
    // Field checks, all at once.
    let r = app.post("/api/v1/partner/provision", Some(&p.key), &json!({"external_id": "", "email": "nope", "extra": 1})).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.errors().len(), 3, "{:?}", r.errors());
    let long = "x".repeat(257);
    assert_eq!(provision(&app, &p, &long).await.status, 400);
    assert_eq!(provision(&app, &p, &"x".repeat(256)).await.status, 201);
}

async fn claim_links_are_single_use_and_expire(app: TestApp) {
    let p = create_partner(&app, "acme", "20", "0.002", 0, None).await;
    let first = provision(&app, &p, "user-1").await;
    let url = first.json["claim_url"].as_str().unwrap();
    let path = &url[url.find("/api/").unwrap()..];
    let body = json!({"email": "Ada@Example.com", "password": "a long password"});
    let r = app.post(path, None, &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!((r.json["claimed"].clone(), r.json["email"].clone()), (json!(true), json!("ada@example.com")));
    // The user logs in with what it set; the partner sees claimed true.
    let login = app.post("/api/v1/auth/login", None, &json!({"email": "ada@example.com", "password": "a long password"})).await;
    assert_eq!(login.status, 200, "{}", login.text);
    assert_eq!(provision(&app, &p, "user-1").await.json["claimed"], json!(true));
    // Used: 409; unknown: 404.
    let again = app.post(path, None, &json!({"email": "eve@example.com", "password": "a long password"})).await;
    assert_eq!((again.status, again.code()), (409, "RESOURCE_CONFLICT"), "{}", again.text);
    assert!(again.json["error"].as_str().unwrap().contains("was used"));
    let unknown = app.post(&format!("/api/v1/partner/claim?token=clm_{}", "0".repeat(64)), None, &body).await;
    assert_eq!((unknown.status, unknown.code()), (404, "RESOURCE_NOT_FOUND"));
    let malformed = app.post("/api/v1/partner/claim?token=clm_nothing", None, &json!({"email": "x", "password": "short"})).await;
    assert_eq!(malformed.status, 400);
    assert_eq!(malformed.errors().len(), 3, "email, password and token: {:?}", malformed.errors());
    assert_eq!(app.post("/api/v1/partner/claim", None, &body).await.status, 400, "no token");
    // Expired: 7 days and a second later, a clear 400 naming the token.
    let second = provision(&app, &p, "user-2").await;
    let url = second.json["claim_url"].as_str().unwrap();
    let path = url[url.find("/api/").unwrap()..].to_string();
    app.clock.advance_ms(7 * 24 * 3600 * 1000 + 1000);
    let r = app.post(&path, None, &json!({"email": "bob@example.com", "password": "a long password"})).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    assert!(r.errors()[0].starts_with("token: this claim link expired at 2026-11-28T10:00:00.000Z"), "{:?}", r.errors());
    // A taken email is a 409, and the link stays usable.
    let third = provision(&app, &p, "user-3").await;
    let url = third.json["claim_url"].as_str().unwrap();
    let path = url[url.find("/api/").unwrap()..].to_string();
    let r = app.post(&path, None, &json!({"email": "ada@example.com", "password": "a long password"})).await;
    assert_eq!((r.status, r.code()), (409, "RESOURCE_CONFLICT"), "{}", r.text);
    assert_eq!(app.post(&path, None, &json!({"email": "cy@example.com", "password": "a long password"})).await.status, 200);
}

async fn forged_webhooks_change_nothing(app: TestApp) {
    let p = create_partner(&app, "acme", "20", "0.002", 0, None).await;
    let other = create_partner(&app, "other", "20", "0.002", 0, None).await;
    let body = r#"{"external_id":"u-1"}"#;
    let t = now_secs(&app);
    let refused = |r: &Reply, what: &str| {
        assert_eq!((r.status, r.code()), (401, "WEBHOOK_SIGNATURE_INVALID"), "{what}: {}", r.text);
    };
    refused(&deliver(&app, "acme", "wrong secret", t, "nonce-0001", "user.created", body).await, "wrong secret");
    let sig = sign_webhook(&p.secret, t, body.as_bytes());
    let headers = |nonce: &'static str| {
        vec![
            ("X-Service-Signature", sig.clone()),
            ("X-Service-Partner", "acme".to_string()),
            ("X-Service-Nonce", nonce.to_string()),
            ("X-Service-Event", "user.created".to_string()),
        ]
    };
    let send = |headers: Vec<(&'static str, String)>, body: &'static str| {
        let app = &app;
        async move {
            let refs: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
            app.request("POST", "/api/v1/partner/webhook", None, &refs, Some(body)).await
        }
    };
    refused(&send(headers("nonce-0002"), r#"{"external_id":"u-2"}"#).await, "body changed after signing");
    refused(&deliver(&app, "acme", &p.secret, t - 301, "nonce-0003", "user.created", body).await, "t 301 s in the past");
    refused(&deliver(&app, "acme", &p.secret, t + 301, "nonce-0004", "user.created", body).await, "t 301 s in the future");
    refused(&deliver(&app, "acme", &p.secret, t, "1234567", "user.created", body).await, "a nonce of 7");
    refused(&deliver(&app, "acme", &p.secret, t, &"n".repeat(129), "user.created", body).await, "a nonce of 129");
    for missing in 0..4 {
        let mut headers = headers("nonce-0005");
        headers.remove(missing);
        refused(&send(headers, r#"{"external_id":"u-1"}"#).await, "a missing header");
    }
    refused(&deliver(&app, "other", &p.secret, t, "nonce-0006", "user.created", body).await, "another partner's slug");
    refused(&deliver(&app, "acme", &other.secret, t, "nonce-0007", "user.created", body).await, "another partner's secret");
    refused(&deliver(&app, "acme", &p.secret, t, "nonce-0008", "user.updated", body).await, "an unknown event");
    refused(&deliver(&app, "nobody", &p.secret, t, "nonce-0009", "user.created", body).await, "an unknown partner");
    assert_eq!(partner_users(&app).await, 0, "no forgery provisioned anything");
    // At the edges of the window (300 s either way) the same body is taken; its nonce then cannot be used again.
    let ok = deliver(&app, "acme", &p.secret, t - 300, "nonce-0010", "user.created", body).await;
    assert_eq!(ok.status, 200, "{}", ok.text);
    assert_eq!(ok.json["already_provisioned"], json!(false));
    let edge = deliver(&app, "acme", &p.secret, t + 300, "nonce-0011", "user.created", body).await;
    assert_eq!((edge.status, edge.json["already_provisioned"].clone()), (200, json!(true)));
    let deleted = r#"{"external_id":"u-1"}"#;
    refused(&deliver(&app, "acme", &p.secret, t, "nonce-0010", "user.deleted", deleted).await, "a replayed nonce");
    assert_eq!(deleted_users(&app).await, 0, "the replay deleted nothing");
    // The same nonce is another partner's own to use.
    let theirs = deliver(&app, "other", &other.secret, t, "nonce-0010", "user.created", body).await;
    assert_eq!(theirs.status, 200, "{}", theirs.text);
    assert_eq!(partner_users(&app).await, 2);
}

async fn the_transitions_table_holds_row_by_row(app: TestApp) {
    let p = create_partner(&app, "acme", "20", "0.002", 0, None).await;
    let t = now_secs(&app);
    // POST provision, first call: provisioned, unclaimed; 201; api_key and claim_url once.
    let first = provision(&app, &p, "row-1").await;
    assert_eq!((first.status, first.json["claimed"].clone()), (201, json!(false)));
    let key = first.json["api_key"].as_str().unwrap().to_string();
    // POST provision, repeat: unchanged; 200; already_provisioned; no api_key.
    let again = provision(&app, &p, "row-1").await;
    assert_eq!((again.status, again.json["already_provisioned"].clone(), again.json["api_key"].clone()), (200, json!(true), Value::Null));
    // webhook user.created, external_id new: provisioned; already_provisioned false.
    let created =
        deliver(&app, "acme", &p.secret, t, "created-1", "user.created", r#"{"external_id":"row-2","email":"x@example.com"}"#).await;
    assert_eq!((created.status, created.json["already_provisioned"].clone()), (200, json!(false)), "{}", created.text);
    assert_eq!((created.json["ok"].clone(), created.json["event"].clone()), (json!(true), json!("user.created")));
    assert!(created.json["partner_user_id"].as_str().unwrap().starts_with("pu_"));
    // webhook user.created, external_id exists: unchanged; already_provisioned true.
    let exists = deliver(&app, "acme", &p.secret, t, "created-2", "user.created", r#"{"external_id":"row-1"}"#).await;
    assert_eq!((exists.status, exists.json["already_provisioned"].clone()), (200, json!(true)));
    assert_eq!(exists.json["agenttax_account_id"], first.json["agenttax_account_id"]);
    assert_eq!(partner_users(&app).await, 2);
    // The key works and its calls are in the ledger.
    assert_eq!(app.post("/api/v1/calculate", Some(&key), &calc()).await.status, 200);
    let entity = first.json["agenttax_account_id"].as_str().unwrap().to_string();
    assert_eq!(app.ledger_rows(&entity).await, 1);
    // webhook user.deleted, account found: deleted; found true; its key stops working, its ledger is kept.
    let gone = deliver(&app, "acme", &p.secret, t, "deleted-1", "user.deleted", r#"{"external_id":"row-1"}"#).await;
    assert_eq!(gone.status, 200, "{}", gone.text);
    assert_eq!(
        (gone.json["found"].clone(), gone.json["already_deleted"].clone(), gone.json["entity_id"].clone()),
        (json!(true), json!(false), json!(entity))
    );
    assert_eq!(app.post("/api/v1/calculate", Some(&key), &calc()).await.status, 401);
    assert_eq!(app.ledger_rows(&entity).await, 1);
    // webhook user.deleted, already deleted: unchanged; already_deleted true.
    let twice = deliver(&app, "acme", &p.secret, t, "deleted-2", "user.deleted", r#"{"external_id":"row-1"}"#).await;
    assert_eq!((twice.json["found"].clone(), twice.json["already_deleted"].clone()), (json!(true), json!(true)));
    let unknown = deliver(&app, "acme", &p.secret, t, "deleted-3", "user.deleted", r#"{"external_id":"nobody"}"#).await;
    assert_eq!((unknown.status, unknown.json["found"].clone()), (200, json!(false)));
    // A deleted user is not provisioned again by user.created.
    let back = deliver(&app, "acme", &p.secret, t, "created-3", "user.created", r#"{"external_id":"row-1"}"#).await;
    assert_eq!(back.json["already_provisioned"], json!(true));
    assert_eq!(app.post("/api/v1/calculate", Some(&key), &calc()).await.status, 401);
    // A signed body that is not the event's: 400, and its nonce is not used up.
    let bad = deliver(&app, "acme", &p.secret, t, "deleted-4", "user.deleted", r#"{"external_id":"row-2","email":"x@example.com"}"#).await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    // End user follows the claim link before expiry: claimed true, taken over directly.
    let third = provision(&app, &p, "row-3").await;
    let url = third.json["claim_url"].as_str().unwrap();
    app.clock.advance_ms(7 * 24 * 3600 * 1000 - 1000);
    let claimed =
        app.post(&url[url.find("/api/").unwrap()..], None, &json!({"email": "row3@example.com", "password": "a long password"})).await;
    assert_eq!((claimed.status, claimed.json["claimed"].clone()), (200, json!(true)), "{}", claimed.text);
}

async fn usage_counts_calls_and_truncates(app: TestApp) {
    // 2 free calls per user per month, 0.002 USD per billable call.
    let p = create_partner(&app, "acme", "20", "0.002", 2, None).await;
    let a = provision(&app, &p, "a").await;
    let b = provision(&app, &p, "b").await;
    let (ka, kb) = (a.json["api_key"].as_str().unwrap().to_string(), b.json["api_key"].as_str().unwrap().to_string());
    for _ in 0..3 {
        assert_eq!(app.post("/api/v1/calculate", Some(&ka), &calc()).await.status, 200);
    }
    assert_eq!(app.post("/api/v1/calculate", Some(&kb), &calc()).await.status, 200);
    // Another account's calls are not the partner's.
    let stranger = app.signup("stranger@example.com").await;
    assert_eq!(app.post("/api/v1/calculate", Some(&stranger.key), &calc()).await.status, 200);
    // a: 3 calls, 2 free, 1 billable = 0.002; b: 1 call, free. Totals: 4 calls, 3 free, 1 billable, 0.002000.
    let r = app.get("/api/v1/partner/usage", Some(&p.key)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["period"], json!({"from": "2026-11-01", "to": "2026-11-30"}), "the current month by default");
    assert_eq!(
        r.json["totals"],
        json!({"calls": 4, "free_tier_calls": 3, "billable_calls": 1, "wholesale_cost_usd": "0.002000", "total_users": 2})
    );
    assert_eq!(
        r.json["per_user"][0],
        json!({"external_id": "a", "partner_user_id": a.json["partner_user_id"], "calls": 3, "free": 2, "billable": 1, "cost_usd": "0.002000"})
    );
    assert_eq!(r.json["per_user"][1]["cost_usd"], json!("0.000000"));
    assert_eq!(r.json["pagination"], json!({"per_user_returned": 2, "per_user_cap": 5000, "truncated": false, "truncation_note": null}));
    // A period from the 22nd: a's calls were on the 21st, so nothing; the free calls count per calendar month.
    app.clock.advance_ms(24 * 3600 * 1000);
    assert_eq!(app.post("/api/v1/calculate", Some(&ka), &calc()).await.status, 200);
    let r = app.get("/api/v1/partner/usage?from=2026-11-22&to=2026-11-22", Some(&p.key)).await;
    // a's 4th call of November: its 2 free calls were used on the 21st, so it is billable.
    assert_eq!((r.json["totals"]["calls"].clone(), r.json["totals"]["billable_calls"].clone()), (json!(1), json!(1)));
    // Bad periods: every field named.
    let r = app.get("/api/v1/partner/usage?from=2026-13-01&to=yesterday&per_user_cap=0", Some(&p.key)).await;
    assert_eq!(r.status, 400, "{}", r.text);
    let r = app.get("/api/v1/partner/usage?from=2026-11-30&to=2026-11-01", Some(&p.key)).await;
    assert_eq!(r.status, 400);
    assert_eq!(app.get("/api/v1/partner/usage?from=2025-01-01&to=2026-11-30", Some(&p.key)).await.status, 400, "over 366 days");
    // 5,001 users: per_user stops at 5,000 with its note; the totals count them all.
    let partner_id = levy::cli::partners::list(&app.state.store, true).await.unwrap();
    let partner_id = serde_json::from_str::<Value>(&partner_id).unwrap()[0]["id"].as_str().unwrap().to_string();
    let now = app.clock.now_ms();
    let rows: Vec<levy::store::entity::partner_user::ActiveModel> = (0..4999)
        .map(|i| {
            levy::store::entity::partner_user::Model {
                id: format!("pu_bulk{i:05}"),
                partner_id: partner_id.clone(),
                external_id: format!("bulk-{i}"),
                entity_id: format!("ent_bulk{i:05}"),
                email: None,
                display_name: None,
                claim_token_hash: None,
                claim_expires_at: now,
                claimed_at: None,
                deleted_at: None,
                first_upgrade_at: None,
                locked_revshare_pct: None,
                created_at: now + 1,
            }
            .into()
        })
        .collect();
    for chunk in rows.chunks(500) {
        levy::store::entity::partner_user::Entity::insert_many(chunk.to_vec()).exec(&app.state.store.db).await.unwrap();
    }
    assert_eq!(partner_users(&app).await, 5001);
    let r = app.get("/api/v1/partner/usage", Some(&p.key)).await;
    assert_eq!(r.json["totals"]["total_users"], json!(5001));
    assert_eq!(r.json["totals"]["calls"], json!(5));
    assert_eq!(r.json["per_user"].as_array().unwrap().len(), 5000);
    assert_eq!(r.json["per_user"][0]["external_id"], json!("a"), "in the order provisioned");
    let pg = &r.json["pagination"];
    assert_eq!(
        (pg["per_user_returned"].clone(), pg["per_user_cap"].clone(), pg["truncated"].clone()),
        (json!(5000), json!(5000), json!(true))
    );
    assert!(pg["truncation_note"].as_str().unwrap().starts_with("per_user lists the first 5000 of 5001 users"), "{pg}");
    let r = app.get("/api/v1/partner/usage?per_user_cap=10", Some(&p.key)).await;
    assert_eq!((r.json["per_user"].as_array().unwrap().len(), r.json["pagination"]["truncated"].clone()), (10, json!(true)));
}

async fn revshare_locks_the_rate_and_ends_with_the_window(app: TestApp) {
    let p = create_partner(&app, "acme", "20", "0.002", 0, None).await;
    let a = provision(&app, &p, "a").await;
    let b = provision(&app, &p, "b").await;
    let email = |r: &Reply| format!("{}@partner.invalid", r.json["partner_user_id"].as_str().unwrap());
    let r = app.get("/api/v1/partner/revshare", Some(&p.key)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["partner"]["revshare_triggered_at"], Value::Null);
    assert_eq!(r.json["totals"], json!({"attributed_entities": 0, "attributed_mrr_usd": "0.000000", "payout_usd": "0.000000"}));
    // a upgrades to starter (25 USD a month) at 20%; then the partner's rate becomes 10%; b upgrades a day later.
    let store = &app.state.store;
    store.set_plan(&email(&a), Some("starter"), None, app.clock.now_ms()).await.unwrap().unwrap();
    levy::cli::partners::set_terms(store, "acme", &levy::cli::partners::Terms { revshare: Some("10".into()), ..Default::default() })
        .await
        .unwrap();
    app.clock.set(at("2026-11-22T12:00:00Z"));
    store.set_plan(&email(&b), Some("starter"), None, app.clock.now_ms()).await.unwrap().unwrap();
    // A second upgrade of a (to growth) locks nothing new.
    store.set_plan(&email(&a), Some("growth"), None, app.clock.now_ms()).await.unwrap().unwrap();
    store.set_plan(&email(&a), Some("starter"), None, app.clock.now_ms()).await.unwrap().unwrap();
    // November 2026: a 25 × 20% = 5; b 25 × 10% = 2.5; totals 2 accounts, 50 of MRR, 7.5.
    let r = app.get("/api/v1/partner/revshare", Some(&p.key)).await;
    assert_eq!(r.json["partner"]["revshare_pct"], json!("10"));
    assert_eq!(r.json["partner"]["revshare_triggered_at"], json!("2026-11-21T10:00:00.000Z"));
    assert_eq!(r.json["totals"], json!({"attributed_entities": 2, "attributed_mrr_usd": "50.000000", "payout_usd": "7.500000"}));
    let ea = &r.json["per_entity"][0];
    assert_eq!(
        ea,
        &json!({"external_id": "a", "partner_user_id": a.json["partner_user_id"], "entity_id": a.json["agenttax_account_id"],
                "revshare_pct": "20", "mrr_usd": "25.000000", "payout_usd": "5.000000", "window_ends_at": "2027-11-21T10:00:00.000Z"})
    );
    assert_eq!(
        (r.json["per_entity"][1]["revshare_pct"].clone(), r.json["per_entity"][1]["payout_usd"].clone()),
        (json!("10"), json!("2.500000"))
    );
    // 2027: January to October are in both windows (10 months): a 10 × 5 = 50, b 10 × 2.5 = 25.
    let r = app.get("/api/v1/partner/revshare?from=2027-01-01&to=2027-12-31", Some(&p.key)).await;
    assert_eq!(r.json["totals"], json!({"attributed_entities": 2, "attributed_mrr_usd": "50.000000", "payout_usd": "75.000000"}));
    // November 2027, after both windows end: nothing.
    app.clock.set(at("2027-11-25T12:00:00Z"));
    let r = app.get("/api/v1/partner/revshare", Some(&p.key)).await;
    assert_eq!(r.json["period"], json!({"from": "2027-11-01", "to": "2027-11-30"}));
    assert_eq!(r.json["totals"]["attributed_entities"], json!(0));
    assert_eq!(r.json["per_entity"], json!([]));
    // October 2027 still pays one month each.
    let r = app.get("/api/v1/partner/revshare?from=2027-10-01&to=2027-10-31", Some(&p.key)).await;
    assert_eq!(r.json["totals"]["payout_usd"], json!("7.500000"));
}

async fn partners_see_only_their_own(app: TestApp) {
    let p = create_partner(&app, "acme", "20", "0.002", 0, None).await;
    let q = create_partner(&app, "rival", "20", "0.002", 0, None).await;
    let mine = provision(&app, &p, "same-id").await;
    let theirs = provision(&app, &q, "same-id").await;
    assert_eq!(theirs.status, 201, "one external id per partner: the rival's is its own user");
    assert_ne!(mine.json["agenttax_account_id"], theirs.json["agenttax_account_id"]);
    let id = theirs.json["partner_user_id"].as_str().unwrap();
    let r = app.get(&format!("/api/v1/partner/usage?partner_user_id={id}"), Some(&p.key)).await;
    assert_eq!((r.status, r.code()), (403, "FORBIDDEN"), "{}", r.text);
    let r = app.get("/api/v1/partner/usage?partner_user_id=pu_nobody", Some(&p.key)).await;
    assert_eq!(r.status, 404);
    let r = app.get(&format!("/api/v1/partner/usage?partner_user_id={}", "u".repeat(201)), Some(&p.key)).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    assert!(r.text.contains("partner_user_id: must be at most 200 characters"), "{}", r.text);
    let own = mine.json["partner_user_id"].as_str().unwrap();
    let r = app.get(&format!("/api/v1/partner/usage?partner_user_id={own}"), Some(&p.key)).await;
    assert_eq!((r.status, r.json["totals"]["total_users"].clone()), (200, json!(1)));
    // Keys do not cross: a user's key is no partner key, a partner key no user key.
    let user_key = mine.json["api_key"].as_str().unwrap();
    assert_eq!(app.get("/api/v1/partner/usage", Some(user_key)).await.status, 401);
    assert_eq!(app.post("/api/v1/calculate", Some(&p.key), &calc()).await.status, 401);
    assert_eq!(app.get("/api/v1/partner/usage", None).await.status, 401);
    assert_eq!(app.get("/api/v1/partner/usage", Some("partner_live_00000000000000000000000000000000")).await.status, 401);
}

async fn a_deactivated_partner_is_refused(app: TestApp) {
    let p = create_partner(&app, "acme", "20", "0.002", 0, None).await;
    assert_eq!(provision(&app, &p, "u").await.status, 201);
    levy::cli::partners::set_active(&app.state.store, "acme", false).await.unwrap();
    let t = now_secs(&app);
    for r in [
        provision(&app, &p, "v").await,
        app.get("/api/v1/partner/usage", Some(&p.key)).await,
        app.get("/api/v1/partner/revshare", Some(&p.key)).await,
        deliver(&app, "acme", &p.secret, t, "nonce-0001", "user.created", r#"{"external_id":"w"}"#).await,
    ] {
        assert_eq!((r.status, r.code()), (403, "FORBIDDEN"), "{}", r.text);
    }
    assert_eq!(partner_users(&app).await, 1);
    // A forgery is still a 401, not a 403 that would say the partner exists.
    let r = deliver(&app, "acme", "wrong", t, "nonce-0002", "user.created", r#"{"external_id":"w"}"#).await;
    assert_eq!(r.status, 401);
    levy::cli::partners::set_active(&app.state.store, "acme", true).await.unwrap();
    assert_eq!(provision(&app, &p, "v").await.status, 201);
}

async fn rotated_secrets_keep_a_grace_period(app: TestApp) {
    let p = create_partner(&app, "acme", "20", "0.002", 0, None).await;
    let out = levy::cli::partners::rotate_secret(&app.state.store, "acme", app.clock.now_ms()).await.unwrap();
    assert!(out.contains("the previous one verifies until 2026-11-22T10:00:00.000Z"), "{out}");
    let new = out.lines().find_map(|l| l.strip_prefix("webhook signing secret (shown once): ")).unwrap().to_string();
    let t = now_secs(&app);
    assert_eq!(deliver(&app, "acme", &new, t, "nonce-0001", "user.created", r#"{"external_id":"a"}"#).await.status, 200);
    assert_eq!(deliver(&app, "acme", &p.secret, t, "nonce-0002", "user.created", r#"{"external_id":"b"}"#).await.status, 200);
    // 24 hours on, the old secret no longer verifies.
    app.clock.advance_ms(24 * 3600 * 1000);
    let t = now_secs(&app);
    assert_eq!(deliver(&app, "acme", &p.secret, t, "nonce-0003", "user.created", r#"{"external_id":"c"}"#).await.status, 401);
    assert_eq!(deliver(&app, "acme", &new, t, "nonce-0004", "user.created", r#"{"external_id":"c"}"#).await.status, 200);
    assert_eq!(partner_users(&app).await, 3);
}

async fn the_partner_rate_limit_counts(app: TestApp) {
    let p = create_partner(&app, "acme", "20", "0.002", 0, Some("3/min")).await;
    for i in 0..3 {
        let r = app.get("/api/v1/partner/usage", Some(&p.key)).await;
        assert_eq!(r.status, 200, "call {i}");
        assert_eq!(r.header("X-RateLimit-Remaining").as_deref(), Some((2 - i).to_string().as_str()));
    }
    let r = provision(&app, &p, "u").await;
    assert_eq!((r.status, r.code()), (429, "RATE_LIMITED"));
    assert!(r.header("Retry-After").is_some());
    app.clock.advance_ms(60_000);
    assert_eq!(provision(&app, &p, "u").await.status, 201);
}

/// A partner provisions a user, the user claims the account, calls calculate with its key and upgrades; usage and
/// revshare show the figures a hand calculation gives.
async fn a_partner_user_from_provision_to_payout(app: TestApp) {
    // 1 free call per user per month, 0.0015 USD per billable call, 30% of revenue.
    let p = create_partner(&app, "acme", "30", "0.0015", 1, None).await;
    let r = provision(&app, &p, "ext-ada").await;
    let key = r.json["api_key"].as_str().unwrap().to_string();
    let url = r.json["claim_url"].as_str().unwrap();
    let claim =
        app.post(&url[url.find("/api/").unwrap()..], None, &json!({"email": "ada@example.com", "password": "a long password"})).await;
    assert_eq!(claim.status, 200, "{}", claim.text);
    for _ in 0..3 {
        assert_eq!(app.post("/api/v1/calculate", Some(&key), &calc()).await.status, 200);
    }
    let out = levy::cli::accounts::set_plan(&app.state.store, &app.state.plans, "ada@example.com", "growth", "tax").await.unwrap();
    assert!(out.starts_with("ok: ada@example.com"), "{out}");
    // Usage: 3 calls, 1 free, 2 billable × 0.0015 = 0.003.
    let u = app.get("/api/v1/partner/usage", Some(&p.key)).await;
    assert_eq!(
        u.json["totals"],
        json!({"calls": 3, "free_tier_calls": 1, "billable_calls": 2, "wholesale_cost_usd": "0.003000", "total_users": 1})
    );
    // Revshare: growth is 99 USD a month; 30% = 29.70. (set-plan runs at the real time, so the period is the upgrade's month.)
    let month = Utc::now().format("%Y-%m").to_string();
    let r = app.get(&format!("/api/v1/partner/revshare?from={month}-01&to={month}-01"), Some(&p.key)).await;
    assert_eq!(
        r.json["totals"],
        json!({"attributed_entities": 1, "attributed_mrr_usd": "99.000000", "payout_usd": "29.700000"}),
        "{}",
        r.text
    );
    assert_eq!(r.json["per_entity"][0]["revshare_pct"], json!("30"));
}

/// Two instances on one database: a nonce used through one is a replay through the other, and the partner's
/// minute is counted once for both.
async fn two_instances_share_nonces_and_limits(backend: Backend) {
    let app = TestApp::start(backend).await.unwrap();
    let other = TestApp::on(app.db.clone(), app.backend, app.clock.clone()).await;
    let p = create_partner(&app, "acme", "20", "0.002", 0, Some("4/min")).await;
    let t = now_secs(&app);
    let body = r#"{"external_id":"u"}"#;
    assert_eq!(deliver(&app, "acme", &p.secret, t, "shared-nonce", "user.created", body).await.status, 200);
    let r = deliver(&other, "acme", &p.secret, t, "shared-nonce", "user.deleted", body).await;
    assert_eq!((r.status, r.code()), (401, "WEBHOOK_SIGNATURE_INVALID"));
    // The same nonce sent to both at once: one applies it.
    let (x, y) = tokio::join!(
        deliver(&app, "acme", &p.secret, t, "race-nonce", "user.deleted", body),
        deliver(&other, "acme", &p.secret, t, "race-nonce", "user.deleted", body)
    );
    let mut statuses = [x.status, y.status];
    statuses.sort();
    assert_eq!(statuses, [200, 401]);
    for (i, inst) in [&app, &other, &app, &other].into_iter().enumerate() {
        assert_eq!(inst.get("/api/v1/partner/usage", Some(&p.key)).await.status, 200, "call {i}");
    }
    assert_eq!(other.get("/api/v1/partner/usage", Some(&p.key)).await.status, 429);
    assert_eq!(app.get("/api/v1/partner/revshare", Some(&p.key)).await.status, 429);
}

/// The operator's command line: create prints the key and secret once; list, deactivate, reactivate, rotate-secret,
/// set-terms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn partners_from_the_command_line() {
    let app = TestApp::start(Backend::Sqlite).await.unwrap();
    let levy = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_levy")).args(["partners", "--database-url", &app.db.url]).args(args).output().unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (code, out, err) = levy(&[
        "create",
        "--slug",
        "acme",
        "--name",
        "Acme Agents",
        "--revshare",
        "20",
        "--wholesale-per-call",
        "0.002",
        "--rate-limit",
        "100/min",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let key = out.lines().find_map(|l| l.strip_prefix("partner key (shown once): ")).unwrap().to_string();
    assert!(levy::partners::looks_like_partner_key(&key));
    assert_eq!(provision(&app, &Partner { key: key.clone(), secret: String::new() }, "u").await.status, 201);
    let (code, _, err) = levy(&["create", "--slug", "acme", "--name", "Again", "--revshare", "20", "--wholesale-per-call", "0.002"]);
    assert_eq!((code, err.trim()), (Some(1), "error: a partner with the slug acme exists"));
    let (code, _, err) = levy(&["create", "--slug", "bad", "--name", "B", "--revshare", "101", "--wholesale-per-call", "0.002"]);
    assert_eq!(code, Some(1), "{err}");
    let (code, out, _) = levy(&["list", "--json"]);
    assert_eq!(code, Some(0));
    let rows: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (rows[0]["slug"].clone(), rows[0]["rate_limit_per_minute"].clone(), rows[0]["active"].clone()),
        (json!("acme"), json!(100), json!(true))
    );
    assert!(!out.contains(&key) && !out.contains("pwhsec_"), "no key or secret in a listing");
    assert_eq!(levy(&["deactivate", "acme"]).0, Some(0));
    assert_eq!(app.get("/api/v1/partner/usage", Some(&key)).await.status, 403);
    assert_eq!(levy(&["reactivate", "acme"]).0, Some(0));
    assert_eq!(app.get("/api/v1/partner/usage", Some(&key)).await.status, 200);
    let (code, out, _) = levy(&["rotate-secret", "acme"]);
    assert_eq!(code, Some(0));
    assert!(out.contains("webhook signing secret (shown once): pwhsec_"), "{out}");
    let (code, out, _) = levy(&["set-terms", "acme", "--revshare", "12.5", "--free-calls-per-user", "10"]);
    assert_eq!(code, Some(0));
    assert_eq!(
        out.trim(),
        "ok: partner acme: revshare 12.5%, wholesale 0.002 USD per call, 10 free calls per user per month, 100 calls per minute"
    );
    let (code, _, err) = levy(&["deactivate", "nobody"]);
    assert_eq!((code, err.trim()), (Some(1), "error: no partner has the slug nobody"));
}

on_both!(
    provisioning_is_once_per_external_id,
    claim_links_are_single_use_and_expire,
    forged_webhooks_change_nothing,
    the_transitions_table_holds_row_by_row,
    usage_counts_calls_and_truncates,
    revshare_locks_the_rate_and_ends_with_the_window,
    partners_see_only_their_own,
    a_deactivated_partner_is_refused,
    rotated_secrets_keep_a_grace_period,
    the_partner_rate_limit_counts,
    a_partner_user_from_provision_to_payout,
);

on_each_backend!(two_instances_share_nonces_and_limits);
