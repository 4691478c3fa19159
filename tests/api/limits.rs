//! Burst, monthly and demo limits, and the same limits held by two instances on one database.

use serde_json::json;

use super::harness::TestApp;
use crate::on_both;

async fn seed_counter(app: &TestApp, name: &str, window: i64, count: i64) {
    use levy::store::entity::counter;
    use sea_orm::{EntityTrait, Set};
    let row = counter::ActiveModel { name: Set(name.into()), window_start: Set(window), count: Set(count), expires_at: Set(i64::MAX) };
    counter::Entity::insert(row).exec_without_returning(&app.state.store.db).await.unwrap();
}

fn calc() -> serde_json::Value {
    json!({"amount": 10, "buyer_state": "TX", "counterparty_id": "c"})
}

async fn keyed_burst_limit(app: TestApp) {
    let a = app.signup("burst@example.com").await;
    // 10:00:00 is the start of a 60-second window ending at 10:01:00 = 1795255260.
    // Every call counts, whether the ledger batch counts it or it ends before (an invalid body, a replay).
    for i in 1..=120 {
        let (body, status) = match i {
            60 => (json!({"amount": -1}), 400),
            _ => (calc(), 200),
        };
        let headers = [("Idempotency-Key", if i == 90 || i == 91 { "same" } else { "" })];
        let headers = if headers[0].1.is_empty() { &headers[..0] } else { &headers[..] };
        let r = app.request("POST", "/api/v1/calculate", Some(&a.key), headers, Some(&body.to_string())).await;
        assert_eq!(r.status, status, "call {i}: {}", r.text);
        assert_eq!(r.header("x-ratelimit-remaining"), Some((120 - i).to_string()), "call {i}");
        assert_eq!(r.header("x-ratelimit-limit").as_deref(), Some("120"));
        if i == 91 {
            assert_eq!(r.header("x-idempotency-status").as_deref(), Some("cached"));
        }
    }
    app.clock.advance_ms(15_000);
    let r = app.post("/api/v1/calculate", Some(&a.key), &calc()).await;
    assert_eq!((r.status, r.code()), (429, "RATE_LIMITED"));
    assert_eq!(r.header("retry-after").as_deref(), Some("45"));
    assert_eq!(r.header("x-ratelimit-reset").as_deref(), Some("1795255260"));
    assert_eq!(r.header("x-ratelimit-remaining").as_deref(), Some("0"));
    app.clock.advance_ms(45_000);
    let r = app.post("/api/v1/calculate", Some(&a.key), &calc()).await;
    assert_eq!(r.status, 200, "a new window");
    assert_eq!(app.ledger_rows(&a.entity_id).await, 119, "118 calls of the first window (one invalid, one replayed) and one of the next");
}

async fn monthly_allowance(app: TestApp) {
    let a = app.signup("monthly@example.com").await;
    let b = app.signup("paid@example.com").await;
    // Month of November 2026 = window starting 2026-11-01T00:00:00Z.
    let month = "2026-11-01T00:00:00Z".parse::<chrono::DateTime<chrono::Utc>>().unwrap().timestamp_millis();
    // 1,499 calls already counted this month.
    seed_counter(&app, &format!("usage:{}", a.entity_id), month, 1499).await;
    let r = app.post("/api/v1/calculate", Some(&a.key), &calc()).await;
    assert_eq!(r.status, 200, "call 1,500 is within the free plan");
    let r = app.post("/api/v1/calculate", Some(&a.key), &calc()).await;
    assert_eq!((r.status, r.code()), (429, "RATE_LIMITED"));
    assert!(r.json["error"].as_str().unwrap().starts_with("Monthly limit reached"));
    assert!(r.header("retry-after").is_none(), "no Retry-After on the monthly cutoff");
    assert_eq!(app.ledger_rows(&a.entity_id).await, 1);

    // A paid plan meters instead: starter includes 10,000.
    use sea_orm::{ActiveModelTrait, EntityTrait, Set};
    let row = levy::store::entity::entity::Entity::find_by_id(b.entity_id.clone()).one(&app.state.store.db).await.unwrap().unwrap();
    let mut am: levy::store::entity::entity::ActiveModel = row.into();
    am.plan = Set("starter".into());
    am.update(&app.state.store.db).await.unwrap();
    seed_counter(&app, &format!("usage:{}", b.entity_id), month, 10_000).await;
    for _ in 0..2 {
        let r = app.post("/api/v1/calculate", Some(&b.key), &calc()).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }
    assert_eq!(app.state.store.read_counter(&format!("overage:{}", b.entity_id), month).await.unwrap(), 2);
}

async fn demo_limits(app: TestApp) {
    let ip = [("X-Forwarded-For", "203.0.113.7")];
    let good = calc().to_string();
    // 30 per minute, 400s included: 29 good and one invalid.
    for i in 1..=30 {
        let body = if i == 10 { "{\"amount\": -1}".to_string() } else { good.clone() };
        let r = app.request("POST", "/api/v1/calculate", None, &ip, Some(&body)).await;
        assert_eq!(r.status, if i == 10 { 400 } else { 200 }, "call {i}: {}", r.text);
        // The headers describe the daily window: 50 per UTC day, resetting at 2026-11-22T00:00Z = 1795305600.
        assert_eq!(r.header("x-ratelimit-limit").as_deref(), Some("50"));
        assert_eq!(r.header("x-ratelimit-remaining"), Some((50 - i).to_string()));
        assert_eq!(r.header("x-ratelimit-reset").as_deref(), Some("1795305600"));
    }
    let r = app.request("POST", "/api/v1/calculate", None, &ip, Some(&good)).await;
    assert_eq!((r.status, r.code()), (429, "RATE_LIMITED"));
    assert_eq!(r.header("retry-after").as_deref(), Some("60"));
    // Another address is counted apart.
    let r = app.request("POST", "/api/v1/calculate", None, &[("X-Forwarded-For", "198.51.100.1")], Some(&good)).await;
    assert_eq!(r.status, 200);
    // Next minute: calls 32..50 of the day pass, the 51st is the daily cap → 402 with the ways on.
    app.clock.advance_ms(60_000);
    for i in 32..=50 {
        let r = app.request("POST", "/api/v1/calculate", None, &ip, Some(&good)).await;
        assert_eq!(r.status, 200, "call {i}");
    }
    let r = app.request("POST", "/api/v1/calculate", None, &ip, Some(&good)).await;
    assert_eq!((r.status, r.code()), (402, "PAYMENT_REQUIRED"));
    assert_eq!(r.json["signup"]["url"], json!("/api/v1/auth/signup"));
    assert_eq!(r.json["pay_per_call"]["id"], json!("x402"));
    // The next UTC day starts afresh.
    app.clock.set("2026-11-22T00:00:01Z".parse().unwrap());
    let r = app.request("POST", "/api/v1/calculate", None, &ip, Some(&good)).await;
    assert_eq!(r.status, 200);
}

async fn two_instances_share_limits(app: TestApp) {
    let other = TestApp::on(app.db.clone(), app.backend, app.clock.clone()).await;
    let a = app.signup("shared@example.com").await;
    // 60 calls through each instance use up the key's 120; the next, on either, is refused.
    for i in 0..120 {
        let inst = if i % 2 == 0 { &app } else { &other };
        let r = inst.post("/api/v1/calculate", Some(&a.key), &calc()).await;
        assert_eq!(r.status, 200, "call {i}: {}", r.text);
    }
    assert_eq!(other.post("/api/v1/calculate", Some(&a.key), &calc()).await.status, 429);
    assert_eq!(app.post("/api/v1/calculate", Some(&a.key), &calc()).await.status, 429);
    // The demo's per-minute window too: 15 + 15 across both, then both refuse.
    let ip = [("X-Forwarded-For", "192.0.2.9")];
    let body = calc().to_string();
    for i in 0..30 {
        let inst = if i % 2 == 0 { &app } else { &other };
        assert_eq!(inst.request("POST", "/api/v1/calculate", None, &ip, Some(&body)).await.status, 200);
    }
    assert_eq!(other.request("POST", "/api/v1/calculate", None, &ip, Some(&body)).await.status, 429);
}

async fn calculate_burst_is_exact_across_instances(app: TestApp) {
    // Keyed calculate calls are counted one by one in the ledger batch, not from a lease: one call on A leaves
    // B all of the other 119 (with leases, B would be refused after 106 while A held 13 unused units).
    let other = TestApp::on(app.db.clone(), app.backend, app.clock.clone()).await;
    let a = app.signup("exact@example.com").await;
    assert_eq!(app.post("/api/v1/calculate", Some(&a.key), &calc()).await.status, 200);
    for i in 2..=120 {
        let r = other.post("/api/v1/calculate", Some(&a.key), &calc()).await;
        assert_eq!(r.status, 200, "call {i}: {}", r.text);
    }
    let r = app.post("/api/v1/calculate", Some(&a.key), &calc()).await;
    assert_eq!((r.status, r.header("x-ratelimit-remaining").as_deref()), (429, Some("0")));
    assert_eq!(app.ledger_rows(&a.entity_id).await, 120);
}

async fn leased_units_never_exceed_the_limit(app: TestApp) {
    // Far from the limit an instance reserves a lease: with 120 left, (120 − 64) / 4 = 14 units in one write.
    // Instance A takes one unit (units 1–14 reserved) and goes idle; B then gets units 15–120: 106 within the
    // limit, then one past it although A's 13 units are unused (refusing early, never granting more). A still
    // hands out its 13. Together: exactly 120. (Trades and the demo take their units this way; keyed calculate
    // counts each call exactly, in the ledger batch.)
    let other = TestApp::on(app.db.clone(), app.backend, app.clock.clone()).await;
    let (a, b) = (&app.state.store, &other.state.store);
    let (window, expires) = (1_000_000, i64::MAX);
    assert_eq!(a.take_unit("lease-test", window, expires, 120).await.unwrap(), 1);
    let mut b_ok = 0;
    while b.take_unit("lease-test", window, expires, 120).await.unwrap() <= 120 {
        b_ok += 1;
    }
    assert_eq!(b_ok, 106);
    let mut a_ok = 1;
    while a.take_unit("lease-test", window, expires, 120).await.unwrap() <= 120 {
        a_ok += 1;
    }
    assert_eq!(a_ok + b_ok, 120);
    assert_eq!(levy::store::limits::lease_size(120), 14);
    assert_eq!((levy::store::limits::lease_size(64), levy::store::limits::lease_size(1_000_000)), (1, 16));
}

fn login(email: &str, password: &str) -> String {
    json!({"email": email, "password": password}).to_string()
}

async fn login_failures_are_limited(app: TestApp) {
    let other = TestApp::on(app.db.clone(), app.backend, app.clock.clone()).await;
    app.signup("guess@example.com").await;
    let ip = [("X-Forwarded-For", "203.0.113.20")];
    // 10 wrong passwords in the window 10:00–10:15 are each a plain 401, on either instance.
    for i in 1..=10 {
        let inst = if i % 2 == 0 { &app } else { &other };
        let r = inst.request("POST", "/api/v1/auth/login", None, &ip, Some(&login("guess@example.com", "wrong password"))).await;
        assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED"), "attempt {i}");
    }
    // 100 s later the 11th is refused before any password is checked, even the right one, from another address
    // too, and on the other instance: the window (shared in the database) ends at 10:15, 800 s away.
    app.clock.advance_ms(100_000);
    for (inst, address, password) in [(&app, "203.0.113.20", "wrong password"), (&other, "198.51.100.20", "correct horse battery")] {
        let r = inst
            .request("POST", "/api/v1/auth/login", None, &[("X-Forwarded-For", address)], Some(&login("Guess@Example.com", password)))
            .await;
        assert_eq!((r.status, r.code()), (429, "RATE_LIMITED"), "{}", r.text);
        assert_eq!(r.header("retry-after").as_deref(), Some("800"));
    }
    // The next window: 9 failures, then the right password, which forgets them: 10 more failures pass as 401s.
    app.clock.set("2026-11-21T10:15:00Z".parse().unwrap());
    for _ in 0..9 {
        assert_eq!(
            app.request("POST", "/api/v1/auth/login", None, &ip, Some(&login("guess@example.com", "wrong password"))).await.status,
            401
        );
    }
    let r = app.request("POST", "/api/v1/auth/login", None, &ip, Some(&login("guess@example.com", "correct horse battery"))).await;
    assert_eq!(r.status, 200, "{}", r.text);
    for i in 1..=10 {
        let r = app.request("POST", "/api/v1/auth/login", None, &ip, Some(&login("guess@example.com", "wrong password"))).await;
        assert_eq!(r.status, 401, "failure {i} after the success");
    }
    assert_eq!(app.request("POST", "/api/v1/auth/login", None, &ip, Some(&login("guess@example.com", "wrong password"))).await.status, 429);
}

async fn login_failures_are_limited_per_address(app: TestApp) {
    // Password spraying: one guess at each of many emails (registered or not) from one address. The address
    // has 30 failures per window; the 31st attempt is refused whatever the email, and the 401s do not say which
    // emails exist.
    app.signup("sprayed@example.com").await;
    let ip = [("X-Forwarded-For", "203.0.113.21")];
    for i in 1..=30 {
        let email = if i == 7 { "sprayed@example.com".to_string() } else { format!("nobody{i}@example.com") };
        let r = app.request("POST", "/api/v1/auth/login", None, &ip, Some(&login(&email, "Summer2026!"))).await;
        assert_eq!((r.status, r.json["error"].as_str()), (401, Some("wrong email or password")), "attempt {i}");
    }
    let r = app.request("POST", "/api/v1/auth/login", None, &ip, Some(&login("someone-else@example.com", "Summer2026!"))).await;
    assert_eq!((r.status, r.header("retry-after").as_deref()), (429, Some("900")));
    // Another address is counted apart, and the right password still opens the account from it.
    let r = app
        .request(
            "POST",
            "/api/v1/auth/login",
            None,
            &[("X-Forwarded-For", "198.51.100.21")],
            Some(&login("sprayed@example.com", "correct horse battery")),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
}

fn signup_body(email: &str) -> String {
    json!({"email": email, "password": "correct horse battery", "agent_name": "agent", "agent_work_type": "compute"}).to_string()
}

async fn signups_are_limited_per_address(app: TestApp) {
    let ip = [("X-Forwarded-For", "203.0.113.30")];
    let signup = |email: String| {
        let app = &app;
        async move { app.request("POST", "/api/v1/auth/signup", None, &ip, Some(&signup_body(&email))).await }
    };
    // Invalid signups create nothing and do not count.
    for _ in 0..3 {
        let r = app
            .request(
                "POST",
                "/api/v1/auth/signup",
                None,
                &ip,
                Some(r#"{"email": "no-at-sign", "password": "correct horse battery", "agent_name": "a", "agent_work_type": "compute"}"#),
            )
            .await;
        assert_eq!(r.status, 400);
    }
    // Four accounts and one taken email are the hour's five (10:00–11:00); the sixth is refused for 3600 s.
    for i in 1..=4 {
        assert_eq!(signup(format!("farm{i}@example.com")).await.status, 201);
    }
    assert_eq!(signup("farm1@example.com".into()).await.status, 409);
    let r = signup("farm5@example.com".into()).await;
    assert_eq!((r.status, r.code(), r.header("retry-after").as_deref()), (429, "RATE_LIMITED", Some("3600")), "{}", r.text);
    assert!(app.state.store.entity_by_email("farm5@example.com").await.unwrap().is_none(), "nothing written");
    // Another address is counted apart.
    let r = app
        .request("POST", "/api/v1/auth/signup", None, &[("X-Forwarded-For", "198.51.100.30")], Some(&signup_body("farm5@example.com")))
        .await;
    assert_eq!(r.status, 201);
    // Hours 11, 12 and 13 bring five each, but the UTC day holds 20 (the refused one counted too: 6 + 5 + 5 + 4):
    // at 13:00 the fifth is refused until midnight, 11 hours away.
    for (hour, allowed) in [(11, 5), (12, 5), (13, 4)] {
        app.clock.set(format!("2026-11-21T{hour}:00:00Z").parse().unwrap());
        for i in 1..=allowed {
            let r = signup(format!("farm-{hour}-{i}@example.com")).await;
            assert_eq!(r.status, 201, "{hour}:00 signup {i}: {}", r.text);
        }
    }
    let r = signup("farm-13-5@example.com".into()).await;
    assert_eq!((r.status, r.header("retry-after").as_deref()), (429, Some("39600")), "{}", r.text);
}

on_both!(login_failures_are_limited, login_failures_are_limited_per_address, signups_are_limited_per_address);

on_both!(
    keyed_burst_limit,
    monthly_allowance,
    demo_limits,
    two_instances_share_limits,
    calculate_burst_is_exact_across_instances,
    leased_units_never_exceed_the_limit
);
