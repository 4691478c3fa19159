//! POST, GET and DELETE /api/v1/wallets: linking, case-insensitive ownership, unlinking.

use serde_json::json;

use crate::harness::TestApp;
use crate::on_both;

const WALLET: &str = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";

async fn a_wallet_belongs_to_one_account(app: TestApp) {
    let a = app.signup("wallet-a@example.com").await;
    let b = app.signup("wallet-b@example.com").await;
    let r = app.post("/api/v1/wallets", Some(&a.key), &json!({"wallet_address": WALLET, "label": "treasury"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["wallet"]["wallet_address"], json!(WALLET.to_ascii_lowercase()));
    assert_eq!(r.json["wallet"]["chain"], json!("base"), "chain defaults to base");
    assert_eq!(r.json["wallet"]["label"], json!("treasury"));
    // Another account, the same wallet in upper case: 409.
    let upper = format!("0x{}", WALLET[2..].to_ascii_uppercase());
    let r = app.post("/api/v1/wallets", Some(&b.key), &json!({"wallet_address": upper})).await;
    assert_eq!((r.status, r.code()), (409, "RESOURCE_CONFLICT"), "{}", r.text);
    // The holder linking it again updates it.
    let r = app.post("/api/v1/wallets", Some(&a.key), &json!({"wallet_address": upper, "label": null, "chain": "base-sepolia"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["wallet"]["label"], json!(null));
    assert_eq!(r.json["wallet"]["chain"], json!("base-sepolia"));
    let list = app.get("/api/v1/wallets", Some(&a.key)).await;
    assert_eq!(list.json["wallets"].as_array().unwrap().len(), 1, "{}", list.text);
    assert_eq!(app.get("/api/v1/wallets", Some(&b.key)).await.json["wallets"], json!([]));
    // B cannot unlink it; A can, in any case; then B may link it.
    let r = app.request("DELETE", &format!("/api/v1/wallets?wallet_address={upper}"), Some(&b.key), &[], None).await;
    assert_eq!((r.status, r.code()), (404, "RESOURCE_NOT_FOUND"), "{}", r.text);
    let r = app.request("DELETE", &format!("/api/v1/wallets?wallet_address={upper}"), Some(&a.key), &[], None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["unlinked"], json!(true));
    let r = app.post("/api/v1/wallets", Some(&b.key), &json!({"wallet_address": WALLET})).await;
    assert_eq!(r.status, 200, "{}", r.text);
}

async fn wallet_input_is_checked(app: TestApp) {
    let a = app.signup("wallet-c@example.com").await;
    let r = app
        .post("/api/v1/wallets", Some(&a.key), &json!({"wallet_address": "0x123", "label": "x".repeat(129), "chain": "solana", "extra": 1}))
        .await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    let errors = r.errors();
    for field in ["wallet_address:", "label:", "chain:", "extra:"] {
        assert!(errors.iter().any(|e| e.starts_with(field)), "{field} in {errors:?}");
    }
    let r = app.post("/api/v1/wallets", Some(&a.key), &json!({"label": "x".repeat(128)})).await;
    assert_eq!(r.errors(), vec!["wallet_address: is required".to_string()]);
    let r = app.request("DELETE", "/api/v1/wallets", Some(&a.key), &[], None).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    let r = app.request("DELETE", "/api/v1/wallets?wallet_address=0xZZ", Some(&a.key), &[], None).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    let r = app.get("/api/v1/wallets", None).await;
    assert_eq!(r.status, 401);
}

/// The typed body (`Body<T>`, `api::conform`): credentials are checked before the body is spoken of, every
/// problem is named at once with a suggestion for a misspelt field, and a refused body writes nothing.
async fn a_refused_body_writes_nothing(app: TestApp) {
    let a = app.signup("wallet-d@example.com").await;
    let r = app.post("/api/v1/wallets", Some(&a.key), &json!({"wallet_adress": WALLET, "label": 5, "chain": "bse"})).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    let errors = r.errors();
    assert_eq!(errors.len(), 4, "{errors:?}");
    assert_eq!(errors[0], "wallet_adress: unknown field (did you mean `wallet_address`?)");
    assert_eq!(errors[1], "wallet_address: is required");
    assert_eq!(errors[2], "label: must be a string");
    assert!(errors[3].starts_with("chain: `bse` is not one of: base"), "{errors:?}");
    assert_eq!(app.get("/api/v1/wallets", Some(&a.key)).await.json["wallets"], json!([]), "nothing linked");
    // No key and a bad body: 401, not a word about the body.
    assert_eq!(app.post("/api/v1/wallets", None, &json!({"x": 1})).await.status, 401);
    let r = app.request("POST", "/api/v1/wallets", Some(&a.key), &[], Some("{")).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_JSON_BODY"));
    let r = app.request("POST", "/api/v1/wallets", Some(&a.key), &[], Some("[]")).await;
    assert_eq!(r.errors(), ["body: must be a JSON object"]);
    // Nested paths: a nexus entry's fields are named under their state.
    let r = app
        .post("/api/v1/nexus", Some(&a.key), &json!({"nexus": {"tx": {"hasNexus": "yes", "reasn": "x"}, "zz": {"hasNexus": true}}}))
        .await;
    assert_eq!(
        r.errors(),
        [
            "nexus.zz: `zz` is not a two-letter US state code or DC",
            "nexus.tx.reasn: unknown field (did you mean `reason`?)",
            "nexus.tx.hasNexus: must be true or false",
        ]
    );
    assert_eq!(app.get("/api/v1/nexus", Some(&a.key)).await.json["nexus_configured"], json!(false), "nothing stored");
}

on_both!(a_wallet_belongs_to_one_account, wallet_input_is_checked, a_refused_body_writes_nothing);
