//! Migrations that move data: ledger rows packed by m20261121_000005 (zstd frames against a dictionary) come back
//! as JSON text with m20261126_000001, and the packing columns and dictionaries go.

use levy_migrations::{Migrator, MigratorTrait};
use sea_orm::{ConnectionTrait, Statement, Value};

use super::harness::{Backend, Db};

async fn packed_rows_are_unpacked(backend: Backend) {
    let Some(db) = Db::fresh(backend).await else { return eprintln!("TEST_DATABASE_URL not set: PostgreSQL run skipped") };
    let store = db.store().await;
    // (On the writer, as `Store::migrate` runs them: one connection on SQLite.)
    let conn = &store.writer;
    let b = conn.get_database_backend();
    // The schema as the packing migration left it.
    Migrator::up(conn, Some(5)).await.unwrap();
    let dictionary =
        br#"{"success":true,"engine_version":"1.5","mode":"live","role":"seller","buyer_state":"TX","final_determination":"taxable"}"#
            .repeat(8);
    let body =
        r#"{"success":true,"engine_version":"1.5","mode":"live","role":"seller","buyer_state":"TX","total_tax":66.0,"note":"é \" \\ 税"}"#;
    // Two frames, as the batch wrote them: each piece compressed on its own against the dictionary.
    let (head, tail) = body.split_at(60);
    let mut c = zstd::bulk::Compressor::with_dictionary(-1, &dictionary).unwrap();
    let packed = [c.compress(head.as_bytes()).unwrap(), c.compress(tail.as_bytes()).unwrap()].concat();
    let p = |i: usize| if b == sea_orm::DbBackend::Postgres { format!("${i}") } else { "?".into() };
    let insert_dictionary = format!(r#"INSERT INTO "ledger_dictionaries" ("id", "created_at", "content") VALUES ({}, 1, {})"#, p(1), p(2));
    conn.execute(Statement::from_sql_and_values(b, insert_dictionary, [Value::from("d1"), Value::from(dictionary.clone())])).await.unwrap();
    let insert_row = |id: &str, result: &str, packed: Option<Vec<u8>>| {
        let sql = format!(
            r#"INSERT INTO "transactions" ("id", "entity_id", "created_at", "role", "buyer_state", "counterparty_id", "amount", "amount_micros", "total_tax", "source", "request", "result", "result_dictionary", "result_zstd") VALUES ({}, 'ent_1', 1, 'seller', 'TX', 'c', '1000', 1000000000, '66.00', 'calculate', '{{}}', {}, {}, {})"#,
            p(1),
            p(2),
            p(3),
            p(4)
        );
        let dictionary = packed.as_ref().map(|_| "d1".to_string());
        Statement::from_sql_and_values(b, sql, [Value::from(id), Value::from(result), Value::from(dictionary), Value::from(packed)])
    };
    conn.execute(insert_row("tx_packed", "", Some(packed))).await.unwrap();
    conn.execute(insert_row("tx_text", r#"{"total_tax":1.0}"#, None)).await.unwrap();

    Migrator::up(conn, None).await.unwrap();
    let rows = conn.query_all(Statement::from_string(b, r#"SELECT "id", "result" FROM "transactions" ORDER BY "id""#)).await.unwrap();
    let got: Vec<(String, String)> = rows.iter().map(|r| (r.try_get("", "id").unwrap(), r.try_get("", "result").unwrap())).collect();
    assert_eq!(got, vec![("tx_packed".to_string(), body.to_string()), ("tx_text".to_string(), r#"{"total_tax":1.0}"#.to_string())]);
    // m20261128_000001 dated each row by its UTC day (created_at 1 ms is 1970-01-01), none voided or refunded.
    let dated = conn
        .query_all(Statement::from_string(b, r#"SELECT "dated", "refunds", "voided_at", "liability" FROM "transactions" ORDER BY "id""#))
        .await
        .unwrap();
    for r in &dated {
        assert_eq!(r.try_get::<i32>("", "dated").unwrap(), 19700101);
        assert_eq!(r.try_get::<i32>("", "refunds").unwrap(), 0);
        assert_eq!(r.try_get::<Option<i64>>("", "voided_at").unwrap(), None);
        assert_eq!(r.try_get::<Option<String>>("", "liability").unwrap(), None);
    }
    // The packing columns and the dictionaries are gone. (Unquoted: SQLite reads a double-quoted name that is no
    // column as a string.)
    for gone in ["SELECT result_zstd FROM transactions", "SELECT result_dictionary FROM transactions", "SELECT * FROM ledger_dictionaries"]
    {
        assert!(conn.query_all(Statement::from_string(b, gone)).await.is_err(), "{gone}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packed_rows_are_unpacked_sqlite() {
    packed_rows_are_unpacked(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packed_rows_are_unpacked_postgres() {
    packed_rows_are_unpacked(Backend::Postgres).await;
}
