//! POST /api/v1/transactions/ingest: single, batch, replay, whole-batch rejection.

use serde_json::json;

use super::harness::{num, Backend, TestApp};
use crate::on_both;

async fn ingest_records_and_replays(app: TestApp) {
    let a = app.signup("ingest@example.com").await;
    app.set_nexus(&a.key, &["TX", "NY"]).await;

    // One record. 1000 of SaaS into Austin: 800 × 8.25% = 66.00.
    let rec = json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "cust-1", "external_tx_id": "inv-1", "metadata": {"order": 77}});
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &rec).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let first = &r.json["records"][0];
    assert_eq!(first["duplicate"], json!(false));
    assert_eq!(num(&first["total_tax"]), 66.0);
    assert_eq!(first["metadata"], json!({"order": 77}));
    let id = first["transaction_id"].as_str().unwrap().to_string();

    // Replay: the original, duplicate true, nothing written.
    app.clock.advance_ms(5000);
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &rec).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json["records"][0]["duplicate"], json!(true));
    assert_eq!(r.json["records"][0]["transaction_id"], json!(id));
    assert_eq!(app.ledger_rows(&a.entity_id).await, 1);

    // transaction_id stands in for external_tx_id when that is absent, and is never the record id.
    let rec2 = json!({"amount": 10, "buyer_state": "NY", "counterparty_id": "cust-2", "transaction_id": "ref-9"});
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &rec2).await;
    assert_eq!(r.json["records"][0]["external_tx_id"], json!("ref-9"));
    assert_ne!(r.json["records"][0]["transaction_id"], json!("ref-9"));
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &rec2).await;
    assert_eq!(r.json["records"][0]["duplicate"], json!(true));

    // A batch with one bad record is rejected whole, naming index and field.
    let mut batch: Vec<serde_json::Value> = (0..5)
        .map(|i| json!({"amount": 10 + i, "buyer_state": "TX", "counterparty_id": format!("b{i}"), "external_tx_id": format!("batch-{i}")}))
        .collect();
    batch[3]["amount"] = json!("ten");
    batch[4]["colour"] = json!("blue");
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &json!(batch)).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"));
    assert_eq!(r.errors(), vec!["records[3].amount: `ten` is not a finite decimal number", "records[4].colour: unknown field"]);
    assert_eq!(app.ledger_rows(&a.entity_id).await, 2);

    // Fixed, it goes in whole; one of them repeats an earlier id and comes back as a duplicate.
    batch[3]["amount"] = json!(13);
    batch[4].as_object_mut().unwrap().remove("colour");
    batch.push(rec.clone());
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &json!(batch)).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!((r.json["written"].clone(), r.json["duplicates"].clone()), (json!(5), json!(1)));
    assert_eq!(r.json["records"][5]["transaction_id"], json!(id));
    assert_eq!(app.ledger_rows(&a.entity_id).await, 7);

    // Batch bounds.
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &json!([])).await;
    assert_eq!(r.status, 400);
    let big: Vec<_> = (0..101).map(|i| json!({"amount": 1, "buyer_state": "TX", "counterparty_id": format!("x{i}")})).collect();
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &json!(big)).await;
    assert_eq!(r.status, 400);
    assert_eq!(app.ledger_rows(&a.entity_id).await, 7);
    // The document's body schema takes what ingest takes: a record, or an array of 1 to 100, nothing else.
    let contract = levy::api::conform::contract::<levy::api::schema::ledger::IngestBody>();
    let record = |i: usize| json!({"amount": 1, "buyer_state": "TX", "counterparty_id": format!("doc{i}")});
    let hundred: Vec<_> = (0..100).map(|i| record(i + 10)).collect();
    for (body, taken) in [
        (record(1), true),
        (json!([record(2), record(3)]), true),
        (json!(hundred), true),
        (json!([]), false),
        (json!(big), false),
        (json!("x"), false),
        (json!(5), false),
    ] {
        let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &body).await;
        assert_eq!((r.status == 201, contract.check(&mut body.clone()).is_empty()), (taken, taken), "{body}: {}", r.text);
    }
    assert_eq!(app.ledger_rows(&a.entity_id).await, 110);

    // Ingested rows are in the history with their metadata.
    let r = app.get("/api/v1/transactions?limit=1000", Some(&a.key)).await;
    let rows = r.json["transactions"].as_array().unwrap();
    assert_eq!(rows.len(), 110);
    assert!(rows.iter().any(|t| t["metadata"] == json!({"order": 77}) && t["source"] == json!("ingest")));
}

async fn ledger_rows_are_readable_by_sql(app: TestApp) {
    use sea_orm::{ConnectionTrait, Statement};
    let a = app.signup("readable@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    // 1000 of SaaS into Austin: 8.25% on 80% = 66.00 (the README's first call).
    let r = app
        .post(
            "/api/v1/calculate",
            Some(&a.key),
            &json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "c"}),
        )
        .await;
    assert_eq!((r.status, num(&r.json["total_tax"])), (200, 66.0), "{}", r.text);
    // The stored body is the answer's JSON, which each database's own JSON functions read.
    let sql = match app.backend {
        Backend::Sqlite => {
            r#"SELECT json_extract("result", '$.total_tax') AS "t", json_extract("result", '$.transaction_id') AS "id" FROM "transactions""#
        }
        Backend::Postgres => {
            r#"SELECT ("result"::jsonb ->> 'total_tax')::float8 AS "t", "result"::jsonb ->> 'transaction_id' AS "id" FROM "transactions""#
        }
    };
    let db = &app.state.store.db;
    let rows = db.query_all(Statement::from_string(db.get_database_backend(), sql)).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].try_get::<f64>("", "t").unwrap(), 66.0);
    assert_eq!(rows[0].try_get::<String>("", "id").unwrap(), r.json["transaction_id"].as_str().unwrap());
    // Read back as answered, through the list and through an ingest replay.
    let list = app.get("/api/v1/transactions", Some(&a.key)).await;
    assert_eq!(list.json["transactions"][0]["calculation"], r.json);
    let record = json!({"amount": 20, "buyer_state": "TX", "counterparty_id": "c", "external_tx_id": "p-1"});
    let first = app.post("/api/v1/transactions/ingest", Some(&a.key), &record).await;
    let again = app.post("/api/v1/transactions/ingest", Some(&a.key), &record).await;
    let (first, again) = (&first.json["records"][0], &again.json["records"][0]);
    assert_eq!(again["duplicate"], json!(true), "{again}");
    assert_eq!(again["calculation"], first["calculation"]);
    assert_eq!(num(&again["calculation"]["amount"]), 20.0);
}

on_both!(ingest_records_and_replays, ledger_rows_are_readable_by_sql);
