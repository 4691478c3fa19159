//! GET /api/v1/transactions with every filter the reference SDK (agenttax 0.2.0, `get_transactions`) sends:
//! `limit`, `offset`, `buyer_state`, `transaction_type`, as its query strings spell them, beside the spec's
//! `role`, `state`, `since`.

use serde_json::{json, Value};

use super::harness::{num, TestApp};
use crate::on_both;

/// The amounts of the rows listed, in order.
fn amounts(r: &super::harness::Reply) -> Vec<f64> {
    assert_eq!(r.status, 200, "{}", r.text);
    let rows = r.json["transactions"].as_array().unwrap();
    assert_eq!(r.json["count"], json!(rows.len()));
    rows.iter().map(|t| num(&t["amount"])).collect()
}

async fn list_filters_the_sdk_sends(app: TestApp) {
    let a = app.signup("listing@example.com").await;
    app.set_nexus(&a.key, &["TX", "WA"]).await;
    // Four records a second apart, told apart by amount (newest last):
    // 101 TX saas by default (no transaction_type sent), 102 WA compute, 103 WA saas, 104 TX compute as buyer (ingested).
    let calls: [Value; 3] = [
        json!({"amount": 101, "buyer_state": "TX", "buyer_zip": "78701", "seller_zip": "78701", "counterparty_id": "c"}),
        json!({"amount": 102, "buyer_state": "WA", "transaction_type": "compute", "counterparty_id": "c"}),
        json!({"amount": 103, "buyer_state": "WA", "transaction_type": "saas", "counterparty_id": "c"}),
    ];
    for body in &calls {
        let r = app.post("/api/v1/calculate", Some(&a.key), body).await;
        assert_eq!(r.status, 200, "{}", r.text);
        app.clock.advance_ms(1000);
    }
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &json!({"amount": 104, "buyer_state": "TX", "role": "buyer", "transaction_type": "compute", "counterparty_id": "c", "external_tx_id": "e-104"})).await;
    assert_eq!(r.status, 201, "{}", r.text);

    let list = |query: &str| {
        let path = format!("/api/v1/transactions{query}");
        let key = a.key.clone();
        let app = &app;
        async move { app.get(&path, Some(&key)).await }
    };
    // The SDK's defaults, then each of its filters, as requests encodes them.
    assert_eq!(amounts(&list("?limit=50&offset=0").await), vec![104.0, 103.0, 102.0, 101.0]);
    let r = list("?limit=50&offset=0&buyer_state=WA").await;
    assert_eq!(amounts(&r), vec![103.0, 102.0]);
    assert!(r.json["transactions"].as_array().unwrap().iter().all(|t| t["buyer_state"] == json!("WA")));
    assert_eq!(amounts(&list("?limit=50&offset=0&transaction_type=compute").await), vec![104.0, 102.0]);
    assert_eq!(amounts(&list("?limit=50&offset=0&buyer_state=TX&transaction_type=compute").await), vec![104.0]);
    // A record that sent no transaction_type is saas, the contract's default.
    assert_eq!(amounts(&list("?limit=50&offset=0&transaction_type=saas").await), vec![103.0, 101.0]);

    // Paging, newest first: the second newest alone, the last, past the end.
    assert_eq!(amounts(&list("?limit=1&offset=1").await), vec![103.0]);
    assert_eq!(amounts(&list("?limit=2&offset=3").await), vec![101.0]);
    assert_eq!(amounts(&list("?offset=4").await), Vec::<f64>::new());
    assert_eq!(amounts(&list("?limit=1&offset=1&buyer_state=WA").await), vec![102.0]);

    // buyer_state is state's other name: the same state twice is one filter; two states, like any two
    // filters, must both hold, and no record has two buyer states.
    assert_eq!(amounts(&list("?state=wa&buyer_state=WA").await), vec![103.0, 102.0]);
    assert_eq!(amounts(&list("?state=tx&role=seller").await), vec![101.0]);
    let r = list("?state=TX&buyer_state=WA").await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(amounts(&r), Vec::<f64>::new());

    // Invalid values, each named.
    let r = list("?transaction_type=sass&buyer_state=XX").await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"));
    let errors = r.errors();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(errors[0].starts_with("buyer_state: `XX` is not a two-letter US state code or DC"), "{errors:?}");
    assert!(
        errors[1].starts_with("transaction_type: `sass` is not one of: compute, api_access,")
            && errors[1].ends_with("; did you mean `saas`?"),
        "{errors:?}"
    );
    for (query, field) in [("?offset=-1", "offset"), ("?limit=0", "limit"), ("?limit=1001", "limit"), ("?offset=ten", "offset")] {
        let r = list(query).await;
        assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{query}: {}", r.text);
        assert!(r.errors().len() == 1 && r.errors()[0].starts_with(&format!("{field}: ")), "{query}: {:?}", r.errors());
    }
}

on_both!(list_filters_the_sdk_sends);

/// The document describes the new parameters with their constraints.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_parameters_are_documented() {
    let app = TestApp::start(super::harness::Backend::Sqlite).await.unwrap();
    let doc: Value = serde_json::from_str(&levy::api::openapi_json(app.state.clone())).unwrap();
    let params = doc["paths"]["/api/v1/transactions"]["get"]["parameters"].as_array().unwrap();
    let param = |name: &str| params.iter().find(|p| p["name"] == json!(name)).unwrap_or_else(|| panic!("{name} is not documented"));
    for name in ["role", "state", "buyer_state", "transaction_type", "since", "limit", "offset"] {
        assert_eq!((&param(name)["in"], &param(name)["required"]), (&json!("query"), &json!(false)), "{name}");
    }
    assert_eq!((&param("limit")["schema"]["minimum"], &param("limit")["schema"]["maximum"]), (&json!(1.0), &json!(1000.0)));
    assert_eq!(param("offset")["schema"]["minimum"], json!(0.0));
}
