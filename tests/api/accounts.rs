//! Signup, login, the account view, agents and keys.

use serde_json::json;

use super::harness::TestApp;
use crate::on_both;

async fn signup_login_me_and_keys(app: TestApp) {
    let r = app
        .post(
            "/api/v1/auth/signup",
            None,
            &json!({"email": "Owner@Example.com", "password": "correct horse battery", "agent_name": "pricing-bot", "agent_work_type": "consulting",
                    "company_name": "Acme", "state": "tx", "ein": "12-3456789", "utm": {"utm_source": "hn"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let key = r.json["api_key"]["key"].as_str().unwrap().to_string();
    assert!(key.starts_with("svc_live_") && key.len() == 41 && key[9..].bytes().all(|b| b.is_ascii_hexdigit()), "{key}");
    assert_eq!(r.json["api_key"]["prefix"], json!(&key[..16]));
    assert!(r.json["next_steps"].as_array().unwrap().len() >= 3);
    let entity_id = r.json["entity_id"].as_str().unwrap().to_string();

    // At rest: the key only as SHA-256, the EIN only encrypted, the password only as argon2.
    use sea_orm::EntityTrait;
    let row = levy::store::entity::entity::Entity::find_by_id(entity_id.clone()).one(&app.state.store.db).await.unwrap().unwrap();
    assert_eq!(row.email, "owner@example.com");
    assert_eq!(row.state, "TX");
    let sealed = row.ein_ciphertext.unwrap();
    assert!(!sealed.contains("123456789"));
    assert_eq!(app.state.data_key.decrypt(&sealed).unwrap(), "123456789");
    assert!(row.password_hash.starts_with("$argon2"));
    let keys = levy::store::entity::api_key::Entity::find().all(&app.state.store.db).await.unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].key_hash, levy::security::sha256_hex(key.as_bytes()));
    assert!(!keys.iter().any(|k| k.key_hash.contains(&key) || k.prefix.len() != 16));

    // The same email, in other case: 409, nothing written.
    let r = app
        .post(
            "/api/v1/auth/signup",
            None,
            &json!({"email": "owner@example.COM", "password": "another password", "agent_name": "x", "agent_work_type": "compute"}),
        )
        .await;
    assert_eq!((r.status, r.code()), (409, "RESOURCE_CONFLICT"));

    // Every constraint at once.
    let r = app
        .post("/api/v1/auth/signup", None, &json!({"email": "no-at-sign", "password": "short", "agent_name": "", "agent_work_type": "dancing", "ein": "1234", "state": "ZZ", "network_visibility": "secret", "utm": {"utm_source": "x".repeat(201)}, "extra": 1}))
        .await;
    assert_eq!(r.status, 400);
    let errs = r.errors().join("\n");
    for f in [
        "email:",
        "password: must be at least 8",
        "agent_name:",
        "agent_work_type:",
        "ein:",
        "state:",
        "network_visibility:",
        "utm.utm_source:",
        "extra: unknown field",
    ] {
        assert!(errs.contains(f), "{f} not in {errs}");
    }

    // Login and the account view.
    let r = app.post("/api/v1/auth/login", None, &json!({"email": "owner@example.com", "password": "wrong password"})).await;
    assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED"));
    let r = app.post("/api/v1/auth/login", None, &json!({"email": "owner@example.com", "password": "correct horse battery"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let token = r.json["session_token"].as_str().unwrap().to_string();
    let bearer = format!("Bearer {token}");
    let r = app
        .request(
            "POST",
            "/api/v1/auth/agents",
            None,
            &[("Authorization", &bearer)],
            Some(r#"{"agent_name":"second","description":"does research"}"#),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json["agent"]["work_type"], json!("compute"), "default work type");
    app.set_nexus(&key, &["TX"]).await;
    let c = app.post("/api/v1/calculate", Some(&key), &json!({"amount": 100, "buyer_state": "TX", "counterparty_id": "c1"})).await;
    assert_eq!(c.status, 200, "{}", c.text);
    // TX taxes 80% of a SaaS sale at 6.25%: 5.00 on 100.
    assert_eq!(c.json["total_tax"].as_f64(), Some(5.0));
    let r = app.request("GET", "/api/v1/auth/me", None, &[("Authorization", &bearer)], None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["entity"]["entity_id"], json!(entity_id));
    assert_eq!(r.json["entity"]["ein_on_file"], json!(true));
    assert!(!r.text.contains("123456789") && !r.text.contains(&key), "never the EIN or the key");
    assert_eq!(r.json["agents"].as_array().unwrap().len(), 2);
    assert_eq!(r.json["keys"][0]["prefix"], json!(&key[..16]));
    assert_eq!(r.json["usage"]["calls"], json!(1));
    assert_eq!(r.json["usage"]["included"], json!(1500));
    assert_eq!(r.json["recent_transactions"].as_array().unwrap().len(), 1);
    // The figures are numbers, as GET /transactions gives them, money with its cents.
    let t = &r.json["recent_transactions"][0];
    assert_eq!((t["amount"].as_f64(), t["total_tax"].as_f64()), (Some(100.0), Some(5.0)), "{}", r.text);
    assert!(r.text.contains(r#""total_tax":5.00}"#), "{}", r.text);
    // A session token is not an API key, and an API key is not a session.
    let r = app.request("GET", "/api/v1/transactions", None, &[("Authorization", &bearer)], None).await;
    assert_eq!(r.status, 401);
    let r = app.request("GET", "/api/v1/auth/me", None, &[("Authorization", &format!("Bearer {key}"))], None).await;
    assert_eq!(r.status, 401);
    // Sessions expire after 7 days.
    app.clock.advance_ms(7 * 24 * 3600 * 1000 + 1);
    let r = app.request("GET", "/api/v1/auth/me", None, &[("Authorization", &bearer)], None).await;
    assert_eq!(r.status, 401);

    // Keys: list (prefixes only), create, test keys refused, revoke.
    let r = app.post("/api/v1/keys", Some(&key), &json!({"name": "ci", "type": "test"})).await;
    assert_eq!(r.status, 400);
    assert!(r.errors()[0].starts_with("type: test keys are not available"), "{:?}", r.errors());
    let r = app.post("/api/v1/keys", Some(&key), &json!({"name": "ci"})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let second = r.json["api_key"]["key"].as_str().unwrap().to_string();
    // The body may be left out (a key named Default), but whitespace alone is a body that holds no JSON.
    let r = app.request("POST", "/api/v1/keys", Some(&key), &[], None).await;
    assert_eq!((r.status, r.json["api_key"]["name"].clone()), (201, json!("Default")), "{}", r.text);
    let r = app.request("POST", "/api/v1/keys", Some(&key), &[], Some("\r\n")).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_JSON_BODY"), "{}", r.text);
    let r = app.get("/api/v1/keys", Some(&second)).await;
    let names: Vec<_> = r.json["keys"].as_array().unwrap().iter().map(|k| k["name"].clone()).collect();
    assert_eq!(names.len(), 3, "the signup's key, ci and Default: {names:?}");
    assert!(!r.text.contains(&key) && !r.text.contains(&second));
    let r = app.request("DELETE", "/api/v1/keys", Some(&second), &[], Some(&json!({"prefix": &key[..16]}).to_string())).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = app.get("/api/v1/keys", Some(&key)).await;
    assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED"), "a revoked key is refused on its next call");
    let r = app.request("DELETE", "/api/v1/keys", Some(&second), &[], Some(&json!({"prefix": &key[..16]}).to_string())).await;
    assert_eq!((r.status, r.code()), (404, "RESOURCE_NOT_FOUND"), "already revoked");
    let r = app.request("DELETE", "/api/v1/keys", Some(&second), &[], Some(r#"{"prefix":"short"}"#)).await;
    assert_eq!(r.status, 400);
}

on_both!(signup_login_me_and_keys);
