//! Migrations that move data: ledger rows packed by m20261121_000005 (zstd frames against a dictionary) come back
//! as JSON text with m20261126_000001, and the packing columns and dictionaries go; the claims of x402 and MPP
//! payments become rows of `paid_calls` with m20261128_000002; on PostgreSQL the ledger's bodies are compressed with
//! lz4 from m20261128_000003.

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

async fn payment_claims_move_to_one_table(backend: Backend) {
    let Some(db) = Db::fresh(backend).await else { return eprintln!("TEST_DATABASE_URL not set: PostgreSQL run skipped") };
    let store = db.store().await;
    let conn = &store.writer;
    let b = conn.get_database_backend();
    // The schema before m20261128_000002.
    let before = Migrator::migrations().iter().position(|m| m.name() == "m20261128_000002_one_table_of_paid_calls").unwrap() as u32;
    Migrator::up(conn, Some(before)).await.unwrap();
    let x402_hash = "ab".repeat(32);
    let token_hash = "cd".repeat(32);
    for sql in [
        format!(
            "INSERT INTO x402_payments (id, entity_id, payer, state, idempotency_key, receipt, created_at) \
             VALUES ('{x402_hash}', 'ent_w1', '0x00000000000000000000000000000000000000aa', 'settled', 'k-1', 'eyJzdWNjZXNzIjp0cnVlfQ==', 5)"
        ),
        format!(
            "INSERT INTO mpp_payments (id, spt_hash, entity_id, state, idempotency_key, receipt, created_at) \
             VALUES ('challenge-1', '{token_hash}', 'ent_m1', 'unrecorded', NULL, 'receipt-1', 7)"
        ),
    ] {
        conn.execute(Statement::from_string(b, sql)).await.unwrap();
    }

    Migrator::up(conn, None).await.unwrap();
    let rows = conn
        .query_all(Statement::from_string(
            b,
            "SELECT id, protocol, payer, token_hash, entity_id, state, idempotency_key, receipt, created_at FROM paid_calls ORDER BY id",
        ))
        .await
        .unwrap();
    let text = |r: &sea_orm::QueryResult, c: &str| r.try_get::<Option<String>>("", c).unwrap();
    let got: Vec<Vec<Option<String>>> = rows
        .iter()
        .map(|r| {
            let mut v: Vec<Option<String>> = ["id", "protocol", "payer", "token_hash", "entity_id", "state", "idempotency_key", "receipt"]
                .iter()
                .map(|c| text(r, c))
                .collect();
            v.push(Some(r.try_get::<i64>("", "created_at").unwrap().to_string()));
            v
        })
        .collect();
    let s = |x: &str| Some(x.to_string());
    assert_eq!(
        got,
        vec![
            vec![
                s("mpp:challenge-1"),
                s("mpp"),
                None,
                Some(token_hash.clone()),
                s("ent_m1"),
                s("unrecorded"),
                None,
                s("receipt-1"),
                s("7")
            ],
            vec![
                Some(format!("x402:{x402_hash}")),
                s("x402"),
                s("0x00000000000000000000000000000000000000aa"),
                None,
                s("ent_w1"),
                s("settled"),
                s("k-1"),
                s("eyJzdWNjZXNzIjp0cnVlfQ=="),
                s("5"),
            ],
        ]
    );
    // A token pays once: its hash stays unique.
    let again = format!(
        "INSERT INTO paid_calls (id, protocol, payer, token_hash, entity_id, state, created_at) \
         VALUES ('mpp:challenge-2', 'mpp', NULL, '{token_hash}', 'ent_m2', 'pending', 9)"
    );
    assert!(conn.execute(Statement::from_string(b, again)).await.is_err());
    for gone in ["SELECT * FROM x402_payments", "SELECT * FROM mpp_payments"] {
        assert!(conn.query_all(Statement::from_string(b, gone)).await.is_err(), "{gone}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payment_claims_move_to_one_table_sqlite() {
    payment_claims_move_to_one_table(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn payment_claims_move_to_one_table_postgres() {
    payment_claims_move_to_one_table(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packed_rows_are_unpacked_sqlite() {
    packed_rows_are_unpacked(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packed_rows_are_unpacked_postgres() {
    packed_rows_are_unpacked(Backend::Postgres).await;
}

/// On PostgreSQL the ledger's bodies are compressed with lz4 once the migrations have run (this machine's server has
/// it), pglz again after the migration is undone, and a body written either way reads back as written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_bodies_are_compressed_with_lz4_postgres() {
    let Some(db) = Db::fresh(Backend::Postgres).await else { return eprintln!("TEST_DATABASE_URL not set: PostgreSQL run skipped") };
    let store = db.store().await;
    let conn = &store.writer;
    let b = conn.get_database_backend();
    // (Up to this migration, so that undoing one undoes it.)
    let upto = Migrator::migrations().iter().position(|m| m.name() == "m20261128_000003_ledger_bodies_lz4").unwrap() as u32 + 1;
    Migrator::up(conn, Some(upto)).await.unwrap();
    let methods = || async {
        let sql = "SELECT attname, attcompression::text AS method FROM pg_attribute WHERE attrelid = 'transactions'::regclass \
                   AND attname IN ('request', 'result', 'liability') ORDER BY attname";
        let rows = conn.query_all(Statement::from_string(b, sql)).await.unwrap();
        rows.iter().map(|r| (r.try_get::<String>("", "attname").unwrap(), r.try_get::<String>("", "method").unwrap())).collect::<Vec<_>>()
    };
    let all = |m: &str| ["liability", "request", "result"].map(|c| (c.to_string(), m.to_string())).to_vec();
    assert_eq!(methods().await, all("l"));
    // A body long enough to be compressed (over 2 KB), written with lz4, then read.
    let body = format!(r#"{{"success":true,"note":"{}"}}"#, "levy ".repeat(1000));
    let insert = |id: &str| {
        format!(
            r#"INSERT INTO "transactions" ("id", "entity_id", "created_at", "role", "buyer_state", "counterparty_id", "amount", "amount_micros", "total_tax", "source", "request", "result", "dated") VALUES ('{id}', 'ent_1', 1, 'seller', 'TX', 'c', '1000', 1000000000, '66.00', 'calculate', '{{}}', '{body}', 20260101)"#
        )
    };
    conn.execute(Statement::from_string(b, insert("tx_lz4"))).await.unwrap();
    let compressed = |id: &str| {
        let sql = format!(r#"SELECT pg_column_compression("result") AS method, "result" FROM "transactions" WHERE "id" = '{id}'"#);
        async move {
            let row = conn.query_one(Statement::from_string(b, sql)).await.unwrap().unwrap();
            (row.try_get::<String>("", "method").unwrap(), row.try_get::<String>("", "result").unwrap())
        }
    };
    assert_eq!(compressed("tx_lz4").await, ("lz4".to_string(), body.clone()));
    // Undone: pglz for the rows written after, and the lz4 row reads the same.
    Migrator::down(conn, Some(1)).await.unwrap();
    assert_eq!(methods().await, all("p"));
    conn.execute(Statement::from_string(b, insert("tx_pglz"))).await.unwrap();
    assert_eq!(compressed("tx_pglz").await, ("pglz".to_string(), body.clone()));
    assert_eq!(compressed("tx_lz4").await, ("lz4".to_string(), body));
}
