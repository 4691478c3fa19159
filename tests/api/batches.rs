//! Keyed calls that arrive together are written in shared batches (group commit). Whatever the batching,
//! every figure must be what recording the calls one after another would give.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use super::harness::{num, TestApp};
use crate::on_both;

/// Sends every (path, body) at once with the key; returns (status, body) in the order given.
async fn all_at_once(app: &TestApp, key: &str, calls: Vec<(&'static str, Value)>) -> Vec<(u16, Value)> {
    all_at_once_with_keys(app, &[key], calls).await
}

/// The calls all at once, each task its own; the keys taken in turn.
async fn all_at_once_with_keys(app: &TestApp, keys: &[&str], calls: Vec<(&'static str, Value)>) -> Vec<(u16, Value)> {
    let mut tasks = Vec::new();
    for (i, (path, body)) in calls.into_iter().enumerate() {
        let (client, key) = (app.client.clone(), keys[i % keys.len()].to_string());
        tasks.push(tokio::spawn(async move {
            let resp = client.post(path).header("X-API-Key", key).body_json(&body).send().await;
            let status = resp.0.status().as_u16();
            let text = resp.0.into_body().into_string().await.unwrap();
            (status, serde_json::from_str::<Value>(&text).unwrap())
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap());
    }
    out
}

fn calc(amount: u32, counterparty: &str) -> (&'static str, Value) {
    ("/api/v1/calculate", json!({"amount": amount, "buyer_state": "TX", "counterparty_id": counterparty}))
}

async fn concurrent_calls_add_up_as_if_one_by_one(app: TestApp) {
    let a = app.signup("batches@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    // 25 calls of 100 to cp-1 and 10 of 50 to cp-2, interleaved, with one ingest of three records for cp-3 whose
    // third repeats the first's external id.
    let mut calls = Vec::new();
    for i in 0..25 {
        calls.push(calc(100, "cp-1"));
        if i % 5 == 2 {
            calls.push(calc(50, "cp-2"));
            calls.push(calc(50, "cp-2"));
        }
    }
    let ingest = json!([
        {"amount": 10, "buyer_state": "TX", "counterparty_id": "cp-3", "external_tx_id": "e-1"},
        {"amount": 20, "buyer_state": "TX", "counterparty_id": "cp-3", "external_tx_id": "e-2"},
        {"amount": 30, "buyer_state": "TX", "counterparty_id": "cp-3", "external_tx_id": "e-1"},
    ]);
    calls.insert(17, ("/api/v1/transactions/ingest", ingest.clone()));
    let replies = all_at_once(&app, &a.key, calls).await;

    let mut totals: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    let mut exceeded = 0;
    let mut ingested = None;
    for (status, body) in &replies {
        if body.get("records").is_some() {
            assert_eq!(*status, 201, "{body}");
            ingested = Some(body.clone());
            continue;
        }
        assert_eq!(*status, 200, "{body}");
        let t = &body["tracking_1099"];
        totals.entry(t["counterparty_id"].as_str().unwrap().to_string()).or_default().push(num(&t["vendor_ytd_total"]));
        // 2026's information-return threshold is 2,000: reached from the 20th payment of 100 to cp-1.
        assert_eq!(num(&t["threshold"]), 2000.0);
        if t["threshold_exceeded"] == json!(true) {
            exceeded += 1;
        }
        // The threshold advisory is settled with the total too (calls are determined before their batch).
        let advised = body["advisories"].as_array().unwrap().iter().any(|a| a["code"] == "INFORMATION_RETURN_THRESHOLD_REACHED");
        assert_eq!(advised, t["threshold_exceeded"] == json!(true), "{body}");
    }
    // Each call saw the total up to and including itself: 100, 200, … 2,500 and 50, 100, … 500, each once.
    let seen = |cp: &str| totals[cp].iter().map(|x| *x as i64).collect::<BTreeSet<i64>>();
    assert_eq!(seen("cp-1"), (1..=25).map(|k| k * 100).collect::<BTreeSet<_>>());
    assert_eq!(seen("cp-2"), (1..=10).map(|k| k * 50).collect::<BTreeSet<_>>());
    assert_eq!((totals["cp-1"].len(), totals["cp-2"].len()), (25, 10));
    assert_eq!(exceeded, 6, "2,000 to 2,500");

    // The ingest: two written, the third the first's duplicate (same transaction id, amount 10 as recorded).
    let ingested = ingested.unwrap();
    assert_eq!((ingested["written"].clone(), ingested["duplicates"].clone()), (json!(2), json!(1)));
    let records = ingested["records"].as_array().unwrap();
    assert_eq!(records[2]["duplicate"], json!(true));
    assert_eq!(records[2]["transaction_id"], records[0]["transaction_id"]);
    assert_eq!(num(&records[2]["calculation"]["amount"]), 10.0);
    assert_eq!(num(&records[1]["calculation"]["tracking_1099"]["vendor_ytd_total"]), 30.0);

    // The ledger holds 37 rows; usage counted 36 calls (the ingest is one), plus nothing else.
    assert_eq!(app.ledger_rows(&a.entity_id).await, 37);
    let login = app.post("/api/v1/auth/login", None, &json!({"email": "batches@example.com", "password": "correct horse battery"})).await;
    assert_eq!(login.status, 200, "{}", login.text);
    let bearer = format!("Bearer {}", login.json["session_token"].as_str().unwrap());
    let r = app.request("GET", "/api/v1/auth/me", None, &[("Authorization", &bearer)], None).await;
    assert_eq!(r.json["usage"]["calls"], json!(36), "{}", r.text);
    // The ledger's amounts: 25 × 100 + 10 × 50 + 10 + 20 = 3,030 over 37 rows.
    let r = app.get("/api/v1/transactions?limit=1000", Some(&a.key)).await;
    let sum: f64 = r.json["transactions"].as_array().unwrap().iter().map(|t| num(&t["amount"])).sum();
    assert_eq!((r.json["count"].clone(), sum), (json!(37), 3030.0));

    // Replaying the ingest writes nothing.
    let again = app.post("/api/v1/transactions/ingest", Some(&a.key), &ingest).await;
    assert_eq!((again.status, again.json["duplicates"].clone()), (200, json!(3)));
    assert_eq!(app.ledger_rows(&a.entity_id).await, 37);
}

async fn free_plan_cutoff_inside_a_batch(app: TestApp) {
    let a = app.signup("cutoff@example.com").await;
    let month = "2026-11-01T00:00:00Z".parse::<chrono::DateTime<chrono::Utc>>().unwrap().timestamp_millis();
    {
        use levy::store::entity::counter;
        use sea_orm::{EntityTrait, Set};
        let row = counter::ActiveModel {
            name: Set(format!("usage:{}", a.entity_id)),
            window_start: Set(month),
            count: Set(1495),
            expires_at: Set(i64::MAX),
        };
        counter::Entity::insert(row).exec_without_returning(&app.state.store.db).await.unwrap();
    }
    // 12 calls at once with 5 left of the free plan's 1,500: exactly 5 are served and recorded.
    let replies = all_at_once(&app, &a.key, (0..12).map(|_| calc(10, "c")).collect()).await;
    let served = replies.iter().filter(|(s, _)| *s == 200).count();
    let refused: Vec<&Value> = replies.iter().filter(|(s, _)| *s == 429).map(|(_, b)| b).collect();
    assert_eq!((served, refused.len()), (5, 7));
    assert!(refused.iter().all(|b| b["error"].as_str().unwrap().starts_with("Monthly limit reached")));
    assert_eq!(app.ledger_rows(&a.entity_id).await, 5);
    // The five served calls saw 10, 20, … 50 for the counterparty: the refused ones added nothing.
    let mut seen: Vec<i64> =
        replies.iter().filter(|(s, _)| *s == 200).map(|(_, b)| num(&b["tracking_1099"]["vendor_ytd_total"]) as i64).collect();
    seen.sort();
    assert_eq!(seen, vec![10, 20, 30, 40, 50]);
}

async fn burst_limit_inside_a_batch(app: TestApp) {
    use levy::store::entity::api_key;
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
    let a = app.signup("burst-batch@example.com").await;
    let month = "2026-11-01T00:00:00Z".parse::<chrono::DateTime<chrono::Utc>>().unwrap().timestamp_millis();
    let minute = super::harness::start_time().timestamp_millis();
    {
        use levy::store::entity::counter;
        use sea_orm::Set;
        let row = counter::ActiveModel {
            name: Set(format!("usage:{}", a.entity_id)),
            window_start: Set(month),
            count: Set(1395),
            expires_at: Set(i64::MAX),
        };
        counter::Entity::insert(row).exec_without_returning(&app.state.store.db).await.unwrap();
    }
    // 126 calls at once on a free account with 105 calls left this month. The key's window takes 120: the 6
    // calls past it are refused and not counted in the month; of the 120, 105 are served and 15 refused as past
    // the allowance (counted in the month, as they would be one by one).
    let replies = all_at_once(&app, &a.key, (0..126).map(|_| calc(10, "c")).collect()).await;
    let error = |b: &Value| b["error"].as_str().unwrap_or("").to_string();
    let served: Vec<&Value> = replies.iter().filter(|(s, _)| *s == 200).map(|(_, b)| b).collect();
    let monthly = replies.iter().filter(|(s, b)| *s == 429 && error(b).starts_with("Monthly limit reached")).count();
    let burst = replies.iter().filter(|(s, b)| *s == 429 && error(b).starts_with("rate limit of 120 requests per 60 seconds")).count();
    assert_eq!((served.len(), monthly, burst), (105, 15, 6));
    let mut seen: Vec<i64> = served.iter().map(|b| num(&b["tracking_1099"]["vendor_ytd_total"]) as i64).collect();
    seen.sort();
    assert_eq!(seen, (1..=105).map(|k| k * 10).collect::<Vec<_>>());
    assert_eq!(app.ledger_rows(&a.entity_id).await, 105);
    let key =
        api_key::Entity::find().filter(api_key::Column::EntityId.eq(a.entity_id.clone())).one(&app.state.store.db).await.unwrap().unwrap();
    let store = &app.state.store;
    assert_eq!(store.read_counter(&format!("usage:{}", a.entity_id), month).await.unwrap(), 1395 + 120);
    assert_eq!(store.read_counter(&format!("burst:{}", key.id), minute).await.unwrap(), 126);
}

async fn long_batches_split_into_statements(app: TestApp) {
    use levy::store::ledger::Payment;
    use levy::store::Store;
    use sea_orm::TransactionTrait;
    let a = app.signup("long@example.com").await;
    // 1,201 payments: 1,200 counterparties of 1 to 1,200 micro-dollars, then the first again. More rows than one
    // statement takes (500), so three upserts; the last payment sees the first's 1.
    let names: Vec<String> = (0..1200).map(|i| format!("cp-{i:04}")).collect();
    let mut payments: Vec<Payment> = names
        .iter()
        .enumerate()
        .map(|(i, n)| Payment { entity_id: &a.entity_id, counterparty_id: n, tax_year: 2026, micros: i as i64 + 1 })
        .collect();
    payments.push(Payment { entity_id: &a.entity_id, counterparty_id: &names[0], tax_year: 2026, micros: 7 });
    let txn = app.state.store.writer.begin().await.unwrap();
    let priors = Store::add_vendor_payments(&txn, &payments).await.unwrap();
    txn.commit().await.unwrap();
    assert_eq!(priors.len(), 1201);
    assert!(priors[..1200].iter().all(|p| *p == 0));
    assert_eq!(priors[1200], 1);
    // Once more: each sees what the first round left.
    let txn = app.state.store.writer.begin().await.unwrap();
    let again = Store::add_vendor_payments(&txn, &payments[..3]).await.unwrap();
    txn.commit().await.unwrap();
    assert_eq!(again, vec![8, 2, 3]);
}

async fn values_come_back_character_for_character(app: TestApp) {
    // The batch writes its values into its statements' text (one round trip for many statements): quotes,
    // backslashes, text that looks like SQL, escapes inside JSON and non-ASCII must come back exactly as sent.
    let a = app.signup("quotes@example.com").await;
    let ext = r#"inv-'1'); DELETE FROM transactions; -- "x" \ \' é 税"#;
    let metadata = json!({"note": "it's \"quoted\" \\ back\\slash\nnew line\ttab \u{0} é 税 😀", "O'Reilly": ["a''b", "\\x00", "E'\\n'"]});
    let rec =
        json!({"amount": "12.34", "buyer_state": "TX", "counterparty_id": "cp:a@b.c-d_e", "external_tx_id": ext, "metadata": metadata});
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &rec).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(r.json["records"][0]["external_tx_id"], json!(ext));
    assert_eq!(r.json["records"][0]["metadata"], metadata);
    let id = r.json["records"][0]["transaction_id"].clone();

    let r = app.get("/api/v1/transactions", Some(&a.key)).await;
    let row = &r.json["transactions"][0];
    assert_eq!((&row["transaction_id"], &row["external_tx_id"], &row["metadata"]), (&id, &json!(ext), &metadata));
    assert_eq!(row["calculation"]["counterparty_id"], json!("cp:a@b.c-d_e"));
    assert_eq!(row["amount"], json!(12.34));

    // The external id is found again (a query with it in its text): a duplicate, nothing written.
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &rec).await;
    assert_eq!((r.status, &r.json["records"][0]["duplicate"], &r.json["records"][0]["transaction_id"]), (200, &json!(true), &id));

    // An Idempotency-Key with quotes and a backslash stores the response and replays it byte for byte.
    let key = r#"k'";\--"#;
    let body = json!({"amount": 5, "buyer_state": "TX", "counterparty_id": "cp-2"}).to_string();
    let first = app.request("POST", "/api/v1/calculate", Some(&a.key), &[("Idempotency-Key", key)], Some(&body)).await;
    assert_eq!(first.status, 200, "{}", first.text);
    let again = app.request("POST", "/api/v1/calculate", Some(&a.key), &[("Idempotency-Key", key)], Some(&body)).await;
    assert_eq!((again.header("x-idempotency-status").as_deref(), again.text.as_str()), (Some("cached"), first.text.as_str()));

    // Control characters are refused in identifiers (the database would store some and not others).
    let bad =
        json!({"amount": 1, "buyer_state": "TX", "counterparty_id": "cp-3", "external_tx_id": "inv\u{7}1", "transaction_id": "ref\u{0}"});
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &bad).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"));
    assert_eq!(
        r.errors(),
        vec!["external_tx_id: must not contain control characters", "transaction_id: must not contain control characters"]
    );
    assert_eq!(app.ledger_rows(&a.entity_id).await, 2);
}

async fn key_revoked_on_another_instance_is_refused(app: TestApp) {
    // `other` remembers the key from its first call; the key is then revoked through `app`. The ledger batch
    // checks keys in its transaction, and refusals outside it check again: every next call on `other` is a 401.
    let other = TestApp::on(app.db.clone(), app.backend, app.clock.clone()).await;
    let a = app.signup("revoked@example.com").await;
    let r = app.post("/api/v1/keys", Some(&a.key), &json!({"name": "spare"})).await;
    let spare = r.json["api_key"]["key"].as_str().unwrap().to_string();
    let (_, good) = calc(10, "cp-1");
    assert_eq!(other.post("/api/v1/calculate", Some(&a.key), &good).await.status, 200);
    let rec = json!({"amount": 1, "buyer_state": "TX", "counterparty_id": "cp-1", "external_tx_id": "e-1"});
    assert_eq!(other.post("/api/v1/transactions/ingest", Some(&a.key), &rec).await.status, 201);
    let r = app.request("DELETE", "/api/v1/keys", Some(&spare), &[], Some(&json!({"prefix": &a.key[..16]}).to_string())).await;
    assert_eq!(r.status, 200, "{}", r.text);

    let r = other.post("/api/v1/calculate", Some(&a.key), &good).await;
    assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED"), "{}", r.text);
    let r = other.post("/api/v1/calculate", Some(&a.key), &json!({"amount": "ten", "buyer_state": "TX", "counterparty_id": "cp-1"})).await;
    assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED"), "an invalid body from a revoked key: 401, not 400");
    let r = other
        .post(
            "/api/v1/transactions/ingest",
            Some(&a.key),
            &json!({"amount": 2, "buyer_state": "TX", "counterparty_id": "cp-1", "external_tx_id": "e-2"}),
        )
        .await;
    assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED"));
    let r = other.post("/api/v1/transactions/ingest", Some(&a.key), &rec).await;
    assert_eq!((r.status, r.code()), (401, "UNAUTHORIZED"), "not even a duplicate is shown");
    // Nothing more was written or counted; the spare key still works on both instances.
    assert_eq!(app.ledger_rows(&a.entity_id).await, 2);
    assert_eq!(other.post("/api/v1/calculate", Some(&spare), &good).await.status, 200);
    assert_eq!(app.ledger_rows(&a.entity_id).await, 3);
}

async fn scripts_answer_by_statement_and_roll_back(app: TestApp) {
    use levy::store::entity::counter;
    use levy::store::limits::CounterHit;
    use levy::store::script::{Script, ScriptConn, Sql};
    use levy::store::Store;
    let store = &app.state.store;
    let hit = |name: &str, n: i64| CounterHit { name: name.to_string(), window_start: 0, expires_at: i64::MAX, n };
    let hits = [hit("t:b", 3), hit("t:a", 2), hit("t:b", 4)];
    let read = |backend| {
        let mut sql = Sql::new(backend);
        sql.push(r#"SELECT * FROM "counters" WHERE "name" LIKE "#).arg("t:%").push(r#" ORDER BY "name""#);
        sql
    };
    let counts = |rows: Vec<counter::Model>| rows.into_iter().map(|r| (r.name, r.count)).collect::<Vec<_>>();

    // One script, one round trip: each statement's rows come back apart.
    let mut conn = ScriptConn::acquire(&store.writer).await.unwrap();
    let backend = conn.backend();
    let mut s = Script::begin(backend);
    let added = s.add_all(Store::hit_counters_sql(backend, &hits));
    let after = s.add(read(backend));
    s.commit();
    let out = conn.run(s).await.unwrap();
    assert_eq!(Store::counts_after(&hits, out.models(added, "").unwrap()), vec![3, 2, 7]);
    assert_eq!(counts(out.models(after..after + 1, "").unwrap()), vec![("t:a".to_string(), 2), ("t:b".to_string(), 7)]);

    // A statement fails: the ones after it do not run, and the rollback undoes the ones before.
    let mut s = Script::begin(backend);
    s.add_all(Store::hit_counters_sql(backend, &hits));
    s.push_sql("SELECT * FROM no_such_table");
    s.add_all(Store::hit_counters_sql(backend, &hits));
    assert!(conn.run(s).await.is_err());
    conn.rollback().await.unwrap();
    assert_eq!(store.read_counter("t:a", 0).await.unwrap(), 2);

    // Dropped mid-transaction (a panic, a lost task): the connection is closed, so nothing is written, and the
    // pool's next connection starts clean.
    let mut s = Script::begin(backend);
    s.add_all(Store::hit_counters_sql(backend, &hits));
    conn.run(s).await.unwrap();
    drop(conn);
    let mut conn = ScriptConn::acquire(&store.writer).await.unwrap();
    let mut s = Script::begin(backend);
    let added = s.add_all(Store::hit_counters_sql(backend, &[hit("t:a", 1)]));
    s.commit();
    let out = conn.run(s).await.unwrap();
    assert_eq!(Store::counts_after(&[hit("t:a", 1)], out.models(added, "").unwrap()), vec![3]);
    assert_eq!((store.read_counter("t:a", 0).await.unwrap(), store.read_counter("t:b", 0).await.unwrap()), (3, 7));
}

async fn nexus_changed_on_another_instance_is_used_on_the_next_call(app: TestApp) {
    // `other` determines calls before their batch with the nexus its last batch read; a change made through
    // `app` must show on `other`'s very next answer (its batch reads the nexus again and redoes the call).
    let other = TestApp::on(app.db.clone(), app.backend, app.clock.clone()).await;
    let a = app.signup("nexus-moves@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    let sale = json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "role": "seller", "transaction_type": "saas", "counterparty_id": "cp-n"});
    let call = || other.post("/api/v1/calculate", Some(&a.key), &sale);
    // Austin: 8.25% on 80% of 1,000 (data processing) = 66.00, with nexus.
    for _ in 0..2 {
        let r = call().await;
        assert_eq!((r.status, num(&r.json["total_tax"]), r.json["nexus_configured"].clone()), (200, 66.0, json!(true)), "{}", r.text);
    }
    let r = app.post("/api/v1/nexus", Some(&a.key), &json!({"nexus": {"TX": {"hasNexus": false}}})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let r = call().await;
    assert_eq!((num(&r.json["total_tax"]), num(&r.json["tax_if_nexus"]["total_tax"])), (0.0, 66.0), "{}", r.text);
    assert_eq!(r.json["sales_tax"]["reason"], json!("no nexus configured in TX"));
    // 1099 totals settled in the batch: 1,000 + 1,000 + 1,000 crosses 2,000 on the second call and stays over.
    assert_eq!(
        (num(&r.json["tracking_1099"]["vendor_ytd_total"]), r.json["tracking_1099"]["threshold_exceeded"].clone()),
        (3000.0, json!(true))
    );
    let again = call().await;
    assert_eq!(num(&again.json["total_tax"]), 0.0, "the nexus now seen is used");
    assert_eq!(app.ledger_rows(&a.entity_id).await, 4);
}

async fn two_keys_of_one_account_in_one_batch_share_its_nexus(app: TestApp) {
    // The batch reads keys' owners per key: an account whose two keys both have calls in a batch must still
    // be determined with its nexus (TX: 8.25% on 80% of 1,000 = 66.00) on every call, whichever key.
    let a = app.signup("two-keys@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    let r = app.post("/api/v1/keys", Some(&a.key), &json!({"name": "second"})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    let second = r.json["api_key"]["key"].as_str().unwrap().to_string();
    let sale = json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "role": "seller", "transaction_type": "saas", "counterparty_id": "cp-k"});
    let replies = all_at_once_with_keys(&app, &[&a.key, &second], vec![("/api/v1/calculate", sale); 40]).await;
    for (status, body) in &replies {
        assert_eq!((*status, body["nexus_configured"].clone(), num(&body["total_tax"])), (200, json!(true), 66.0), "{body}");
    }
    assert_eq!(app.ledger_rows(&a.entity_id).await, 40);
}

/// A job paid per call (x402, MPP, a partner's user) for the account, through the ledger path as the API would
/// submit it.
fn per_call_job(app: &TestApp, entity_id: &str, amount: u32, counterparty: &str) -> levy::ledger::Job {
    use levy::ledger::{Entry, Job, Payer, Source};
    let raw = json!({"amount": amount, "buyer_state": "TX", "counterparty_id": counterparty});
    let request = levy::api::schema::calculate::read_request(&raw).unwrap();
    let entry = Entry::new(request, raw, String::new(), None, None);
    Job {
        payer: Payer::PerCall { entity_id: entity_id.into(), mode: "x402" },
        entries: vec![entry],
        source: Source::Calculate { idempotency_key: None },
        now_ms: app.clock.now_ms(),
    }
}

async fn calls_paid_per_call_share_batches_with_keyed_calls(app: TestApp) {
    // A free account whose allowance is used up (1,500 of 1,500): its keyed calls are refused, while calls paid
    // per call are recorded to it, outside the allowance and the key's burst window, and still count towards
    // its 1099 totals and nexus revenue as if one by one.
    let a = app.signup("per-call@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    let month = "2026-11-01T00:00:00Z".parse::<chrono::DateTime<chrono::Utc>>().unwrap().timestamp_millis();
    {
        use levy::store::entity::counter;
        use sea_orm::{EntityTrait, Set};
        let row = counter::ActiveModel {
            name: Set(format!("usage:{}", a.entity_id)),
            window_start: Set(month),
            count: Set(1500),
            expires_at: Set(i64::MAX),
        };
        counter::Entity::insert(row).exec_without_returning(&app.state.store.db).await.unwrap();
    }
    // 20 jobs paid per call of 100 to cp-1, one for an account that does not exist, and 6 keyed calls, at once.
    let mut tasks = Vec::new();
    for i in 0..20 {
        let job = per_call_job(&app, &a.entity_id, 100, "cp-1");
        let ledger = app.state.ledger.clone();
        tasks.push(tokio::spawn(async move { (i, ledger.record(job).await) }));
    }
    let ghost = per_call_job(&app, "ent_nobody", 100, "cp-1");
    let ledger = app.state.ledger.clone();
    let ghost = tokio::spawn(async move { ledger.record(ghost).await });
    let keyed = all_at_once(&app, &a.key, (0..6).map(|_| calc(10, "cp-1")).collect()).await;

    let mut totals = BTreeSet::new();
    for t in tasks {
        let (i, answer) = t.await.unwrap();
        assert_eq!(answer.burst, None, "job {i}: no burst window");
        let recorded = answer.result.unwrap_or_else(|e| panic!("job {i}: {e:?}"));
        let body: Value = serde_json::from_str(&recorded.response).unwrap();
        assert_eq!(body["mode"], json!("x402"));
        totals.insert(num(&body["tracking_1099"]["vendor_ytd_total"]) as i64);
        // 100 into Texas, SaaS by default, taxed on 80% at 6.25%: 5.00.
        assert_eq!(num(&body["total_tax"]), 5.0, "{body}");
    }
    assert_eq!(totals, (1..=20).map(|k| k * 100).collect::<BTreeSet<_>>(), "each saw the total up to itself");
    assert_eq!(ghost.await.unwrap().result.err(), Some(levy::ledger::Refusal::UnknownAccount));
    assert!(
        keyed.iter().all(|(status, body)| *status == 429 && body["error"].as_str().unwrap().starts_with("Monthly limit reached")),
        "{keyed:?}"
    );
    assert_eq!(app.ledger_rows(&a.entity_id).await, 20);
    // Usage holds the 1,500 and the 6 refused keyed calls (counted, as the free cutoff counts them); nothing of
    // the calls paid per call.
    assert_eq!(app.state.store.read_counter(&format!("usage:{}", a.entity_id), month).await.unwrap(), 1506);
}

/// Four accounts' calls at once, interleaved, in shared batches: each account's figures are its own calls' alone,
/// one by one: 1099 totals of 100, 200, … 1,200 to a counterparty id the four share, 12 rows, 12 calls counted.
async fn accounts_in_concurrent_batches_add_up_each_on_its_own(app: TestApp) {
    let mut accounts = Vec::new();
    for n in 0..4 {
        let a = app.signup(&format!("partition-{n}@example.com")).await;
        app.set_nexus(&a.key, &["TX"]).await;
        accounts.push(a);
    }
    let keys: Vec<&str> = accounts.iter().map(|a| a.key.as_str()).collect();
    let calls = (0..48).map(|_| calc(100, "shared-cp")).collect();
    let replies = all_at_once_with_keys(&app, &keys, calls).await;
    for (n, a) in accounts.iter().enumerate() {
        // Calls were sent with the keys in turn: call i is account i % 4's.
        let mut seen: Vec<i64> = replies
            .iter()
            .skip(n)
            .step_by(4)
            .map(|(status, body)| {
                assert_eq!(*status, 200, "{body}");
                assert_eq!(body["entity_id"], json!(a.entity_id), "{body}");
                num(&body["tracking_1099"]["vendor_ytd_total"]) as i64
            })
            .collect();
        seen.sort_unstable();
        assert_eq!(seen, (1..=12).map(|k| k * 100).collect::<Vec<_>>(), "account {n}");
        assert_eq!(app.ledger_rows(&a.entity_id).await, 12);
        let month = levy::billing::month_start_ms(app.state.clock.now_ms());
        assert_eq!(app.state.store.read_counter(&format!("usage:{}", a.entity_id), month).await.unwrap(), 12);
    }
}

on_both!(
    accounts_in_concurrent_batches_add_up_each_on_its_own,
    calls_paid_per_call_share_batches_with_keyed_calls,
    two_keys_of_one_account_in_one_batch_share_its_nexus,
    nexus_changed_on_another_instance_is_used_on_the_next_call,
    scripts_answer_by_statement_and_roll_back,
    concurrent_calls_add_up_as_if_one_by_one,
    free_plan_cutoff_inside_a_batch,
    burst_limit_inside_a_batch,
    long_batches_split_into_statements,
    values_come_back_character_for_character,
    key_revoked_on_another_instance_is_refused
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_log_is_copied_in_the_background_and_starts_again() {
    // The writer's own automatic checkpoint waits for 25,000 log pages (store::wal). Between requests made a
    // moment apart the background copies catch up, and the next transaction starts the log again (under
    // continuous load, the writer's restart does at 10,000 pages). The pause is the copier's chance to run when
    // the machine is busy with the other tests: back to back, a starved copier never finishes a copy before the
    // next write, and the log keeps growing until the writer's restart. 25 ingest requests of 100 records write about
    // 2,900 pages (a record's row is some 4.7 KB: its body is packed, but its 2 KB of metadata is stored as sent,
    // in the row's metadata and in its request): without the restarts the log file would hold all of them,
    // about 12 MB.
    let app = TestApp::start(super::harness::Backend::Sqlite).await.unwrap();
    let a = app.signup("wal@example.com").await;
    let file = app.db.url.trim_start_matches("sqlite://").split('?').next().unwrap().to_string();
    let wal = format!("{file}-wal");
    for n in 0..25 {
        let records: Vec<Value> = (0..100).map(|i| json!({"amount": 100 + i, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": format!("cp-{i}"), "external_tx_id": format!("w-{n}-{i}"), "metadata": {"note": format!("{:>2000}", n * 100 + i)}})).collect();
        let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &json!(records)).await;
        assert_eq!(r.status, 201, "{}", r.text);
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(app.ledger_rows(&a.entity_id).await, 2500);
    // The copies run every 20 ms: give a slow machine up to 10 s to catch up with the last requests.
    let size = |f: &str| std::fs::metadata(f).unwrap().len();
    for _ in 0..200 {
        if size(&file) > 10 << 20 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (db, log) = (size(&file), size(&wal));
    assert!(db > 10 << 20, "the rows are in the database file: {db} bytes");
    assert!(log < 7 << 20, "the log started again: {log} bytes");
}

/// The names of the levy statements prepared on each connection the pool holds (all taken at once).
async fn prepared_on_each_connection(app: &TestApp) -> Vec<Vec<String>> {
    let mut conns = app.pool_connections().await;
    let mut out = Vec::new();
    for c in &mut conns {
        let names: Vec<String> =
            sea_orm::sqlx::query_scalar("SELECT name FROM pg_prepared_statements WHERE name LIKE 'levy\\_%' ORDER BY name")
                .fetch_all(&mut **c)
                .await
                .unwrap();
        out.push(names);
    }
    app.give_back(conns).await;
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_batches_run_statements_prepared_on_first_need() {
    use sea_orm::{sqlx, ConnectionTrait};
    let Some(app) = TestApp::start(super::harness::Backend::Postgres).await else {
        eprintln!("TEST_DATABASE_URL not set: PostgreSQL run skipped");
        return;
    };
    let a = app.signup("prepared@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    // (Connections go back to the pool with a ping of their own, off the request's path.)
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    // No keyed call yet: no connection has prepared anything.
    assert!(prepared_on_each_connection(&app).await.iter().all(Vec::is_empty));

    let call = |amount: u32| json!({"amount": amount, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "cp-prepared"});
    let r = app.post("/api/v1/calculate", Some(&a.key), &call(100)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    // The batch's connection prepared all six (three upserts, three queries), and the call's figures came through them.
    let expected = [
        "levy_add_counters",
        "levy_add_state_revenue",
        "levy_add_vendor_ytd",
        "levy_key_owners",
        "levy_nexus_states",
        "levy_state_revenue_from",
    ];
    let held = prepared_on_each_connection(&app).await;
    assert_eq!(held.iter().filter(|names| *names == &expected).count(), 1, "{held:?}");
    assert_eq!(num(&r.json["tracking_1099"]["vendor_ytd_total"]), 100.0, "{}", r.text);

    // Every connection of the pool holds the statements; then a migration adds a column to a table a prepared
    // query reads with `*`, and PostgreSQL refuses the plans (SQLSTATE 0A000): they are prepared again.
    let db = &app.state.store.db;
    let app = &app;
    let each_connection = |sql: Option<&'static str>| async move {
        let mut conns = app.pool_connections().await;
        for c in &mut conns {
            match sql {
                Some(sql) => drop(sqlx::raw_sql(sql).execute(&mut **c).await.unwrap()),
                None => levy::store::prepared::prepare(c).await.unwrap(),
            }
        }
        app.give_back(conns).await;
    };
    each_connection(None).await;
    let held = prepared_on_each_connection(app).await;
    assert!(held.iter().all(|names| names == &expected), "{held:?}");
    db.execute(sea_orm::Statement::from_string(sea_orm::DbBackend::Postgres, r#"ALTER TABLE "nexus_states" ADD COLUMN "note" text"#))
        .await
        .unwrap();
    let r = app.post("/api/v1/calculate", Some(&a.key), &call(50)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(num(&r.json["tracking_1099"]["vendor_ytd_total"]), 150.0, "{}", r.text);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    // Every connection loses them (SQLSTATE 26000 on the next use): prepared again.
    each_connection(Some(r#"DEALLOCATE "levy_add_counters"; DEALLOCATE "levy_add_state_revenue"; DEALLOCATE "levy_add_vendor_ytd"; DEALLOCATE "levy_key_owners"; DEALLOCATE "levy_nexus_states"; DEALLOCATE "levy_state_revenue_from""#)).await;
    assert!(prepared_on_each_connection(app).await.iter().all(Vec::is_empty));
    let r = app.post("/api/v1/calculate", Some(&a.key), &call(25)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(num(&r.json["tracking_1099"]["vendor_ytd_total"]), 175.0, "{}", r.text);
    // Each call counted once in the month's usage and wrote one ledger row, whatever was rolled back and run again.
    assert_eq!(app.ledger_rows(&a.entity_id).await, 3);
    let month = "2026-11-01T00:00:00Z".parse::<chrono::DateTime<chrono::Utc>>().unwrap().timestamp_millis();
    assert_eq!(app.state.store.read_counter(&format!("usage:{}", a.entity_id), month).await.unwrap(), 3);
}
