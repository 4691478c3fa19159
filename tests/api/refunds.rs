//! Refunds, voids and the liability report. Figures worked by hand from the rule files:
//! - TX SaaS is data processing, taxable on 80% of the amount (Tex. Tax Code §151.351): 1,000 into Austin 78701 is
//!   800 taxable at 6.25% state (§151.051) 50.00, 1% City of Austin 8.00, 1% Capital Metro 8.00: 66.00.
//! - CA SaaS before SB 122 is not taxable (ca.taxability.saas-before-sb122, Rev. & Tax. Code §6006, §6016).
//! - WA has marketplace-facilitator law: a marketplace seller's sale is the facilitator's to collect.
//! - NY without nexus: a seller owes nothing there (no_nexus).

use serde_json::{json, Value};

use super::harness::{num, Reply, TestApp};
use crate::on_both;

fn at(app: &TestApp, when: &str) {
    app.clock.set(when.parse().unwrap());
}

async fn sale(app: &TestApp, key: &str, body: Value) -> String {
    let r = app.post("/api/v1/calculate", Some(key), &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.json["transaction_id"].as_str().unwrap().to_string()
}

async fn refund(app: &TestApp, key: &str, id: &str, body: Value) -> Reply {
    app.post(&format!("/api/v1/transactions/{id}/refund"), Some(key), &body).await
}

async fn standing(app: &TestApp, key: &str, id: &str) -> Reply {
    app.get(&format!("/api/v1/transactions/{id}"), Some(key)).await
}

async fn void(app: &TestApp, key: &str, id: &str) -> Reply {
    app.request("POST", &format!("/api/v1/transactions/{id}/void"), Some(key), &[], None).await
}

/// (id, [sales, taxable, tax]) of each line of a refund's answer.
fn lines(r: &Reply) -> Vec<(String, [f64; 3])> {
    r.json["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["jurisdiction_id"].as_str().unwrap().to_string(), [num(&l["sales"]), num(&l["taxable_sales"]), num(&l["tax"])]))
        .collect()
}

const AUSTIN: &str = "tx.austin";
const CAPMETRO: &str = "tx.capital-metropolitan-transportation-authority";

async fn refunds_in_full_and_in_parts(app: TestApp) {
    let a = app.signup("refunds@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    at(&app, "2026-10-05T12:00:00Z");
    let tx = sale(&app, &a.key, json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "acme"})).await;

    // 400 of 1,000: 40% of each line. Taxable 800 × 0.4 = 320, exempt 80; tax 66.00 × 0.4 = 26.40, shared
    // 50 : 8 : 8 as 20.00, 3.20, 3.20.
    let r = refund(&app, &a.key, &tx, json!({"amount": 400, "refund_date": "2026-10-05", "reason": "returned seats"})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!((num(&r.json["amount"]), num(&r.json["tax_refunded"])), (400.0, 26.40));
    assert_eq!(
        lines(&r),
        vec![
            ("TX".to_string(), [-400.0, -320.0, -20.00]),
            (AUSTIN.to_string(), [-400.0, -320.0, -3.20]),
            (CAPMETRO.to_string(), [-400.0, -320.0, -3.20]),
        ]
    );
    assert_eq!((num(&r.json["remaining"]["amount"]), num(&r.json["remaining"]["tax"])), (600.0, 39.60));
    assert_eq!(r.json["reason"], json!("returned seats"));
    let first = r.json["refund_id"].as_str().unwrap().to_string();

    // 700 is more than the 600 left: 400, with what remains, and nothing written.
    let r = refund(&app, &a.key, &tx, json!({"amount": 700})).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.json["code"], json!("INVALID_INPUT"));
    assert!(
        r.json["errors"][0]
            .as_str()
            .unwrap()
            .starts_with("amount: 700 is more than remains unrefunded of this transaction: 600 (tax 39.60)"),
        "{}",
        r.text
    );

    // The other 600, which reaches the total: exactly what is left of each line, 30.00 + 4.80 + 4.80 = 39.60, so
    // that the two refunds give back 66.00 to the cent.
    let r = refund(&app, &a.key, &tx, json!({"amount": 600})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!((num(&r.json["amount"]), num(&r.json["tax_refunded"])), (600.0, 39.60));
    assert_eq!(
        lines(&r),
        vec![
            ("TX".to_string(), [-600.0, -480.0, -30.00]),
            (AUSTIN.to_string(), [-600.0, -480.0, -4.80]),
            (CAPMETRO.to_string(), [-600.0, -480.0, -4.80]),
        ]
    );
    assert_eq!((num(&r.json["remaining"]["amount"]), num(&r.json["remaining"]["tax"])), (0.0, 0.0));
    assert_eq!(r.json["refund_date"], json!("2026-10-05"));

    // A third is refused: nothing remains.
    for body in [json!({"amount": 1}), json!({})] {
        let r = refund(&app, &a.key, &tx, body).await;
        assert_eq!(r.status, 400, "{}", r.text);
        assert!(r.text.contains("amount: nothing remains to refund of this transaction"), "{}", r.text);
    }

    // The ledger: the sale and its two refunds, negative, linked.
    let r = app.get("/api/v1/transactions", Some(&a.key)).await;
    let rows = r.json["transactions"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "{}", r.text);
    let refunds: Vec<&Value> = rows.iter().filter(|t| t["source"] == "refund").collect();
    assert_eq!(refunds.len(), 2);
    assert!(refunds.iter().all(|t| t["refund_of"] == json!(tx) && t["calculation"].is_null() && t["status"] == "recorded"));
    let total: f64 = rows.iter().map(|t| num(&t["total_tax"])).sum();
    assert!(total.abs() < 1e-9, "sale and refunds net to 0: {total}");
    let original = rows.iter().find(|t| t["transaction_id"] == json!(tx)).unwrap();
    assert_eq!((original["refunds"].as_u64(), original["dated"].as_str()), (Some(2), Some("2026-10-05")));
    assert_eq!(num(&refunds.iter().find(|t| t["transaction_id"] == json!(first)).unwrap()["refund"]["amount"]), 400.0);

    // A refund of a refund, of another account's transaction, of none: refused.
    let r = refund(&app, &a.key, &first, json!({})).await;
    assert_eq!((r.status, r.json["code"].as_str()), (409, Some("RESOURCE_CONFLICT")), "{}", r.text);
    let b = app.signup("other@example.com").await;
    let r = refund(&app, &b.key, &tx, json!({})).await;
    assert_eq!((r.status, r.json["code"].as_str()), (404, Some("RESOURCE_NOT_FOUND")), "{}", r.text);

    // A full refund in one call (no amount): the whole 1,000 and its 66.00.
    let whole = sale(&app, &a.key, json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "acme"})).await;
    let r = refund(&app, &a.key, &whole, json!({})).await;
    assert_eq!((r.status, num(&r.json["amount"]), num(&r.json["tax_refunded"])), (201, 1000.0, 66.0), "{}", r.text);
    assert_eq!((num(&r.json["remaining"]["amount"]), num(&r.json["remaining"]["tax"])), (0.0, 0.0));

    // A refund of one jurisdiction's tax: the city's 8.00 on a new sale, nothing of the state's or the MTA's.
    let tx2 = sale(&app, &a.key, json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "acme"})).await;
    let r = refund(&app, &a.key, &tx2, json!({"tax_lines": [AUSTIN]})).await;
    assert_eq!(r.status, 201, "{}", r.text);
    assert_eq!(lines(&r), vec![(AUSTIN.to_string(), [-1000.0, -800.0, -8.00])]);
    assert_eq!((num(&r.json["remaining"]["amount"]), num(&r.json["remaining"]["tax"])), (1000.0, 58.00));
    let r = refund(&app, &a.key, &tx2, json!({"tax_lines": ["tx.dallas"]})).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert!(
        r.text.contains(&format!("tax_lines: `tx.dallas` is not a jurisdiction of this transaction: TX, {AUSTIN}, {CAPMETRO}")),
        "{}",
        r.text
    );
    // Dates: not before the sale, not after today.
    for (date, says) in [("2026-10-04", "is before the transaction's date"), ("2026-10-06", "is after today")] {
        let r = refund(&app, &a.key, &tx2, json!({"refund_date": date})).await;
        assert_eq!(r.status, 400, "{}", r.text);
        assert!(r.text.contains(says), "{}", r.text);
    }
    // The optimization report examines calculations: the three sales, not their four refunds.
    let r = app.get("/api/v1/optimization-report", Some(&a.key)).await;
    assert_eq!(r.json["window"]["transactions_examined"], json!(3), "{}", r.text);
    // Unknown fields and bad amounts are refused by the schema.
    let r = refund(&app, &a.key, &tx2, json!({"amount": 0, "note": "x"})).await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.json["errors"].as_array().unwrap().len(), 2, "{}", r.text);
}

/// Sixteen refunds of 100 sent at once against a sale of 1,000 that has 1,000 left: ten succeed, six are refused,
/// and the refunds sum to the sale exactly.
async fn parallel_refunds_never_exceed_the_sale(app: TestApp) {
    let a = app.signup("parallel@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    let tx = sale(&app, &a.key, json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "acme"})).await;
    let calls = (0..16).map(|_| refund(&app, &a.key, &tx, json!({"amount": 100})));
    let replies = futures::future::join_all(calls).await;
    let ok: Vec<&Reply> = replies.iter().filter(|r| r.status == 201).collect();
    let refused = replies.iter().filter(|r| r.status == 400).count();
    assert_eq!((ok.len(), refused), (10, 6), "{:?}", replies.iter().map(|r| &r.text).collect::<Vec<_>>());
    let tax: f64 = ok.iter().map(|r| num(&r.json["tax_refunded"])).sum();
    assert!((tax - 66.0).abs() < 1e-9, "tax refunded {tax}");
    let r = app.get("/api/v1/transactions", Some(&a.key)).await;
    let sum: f64 = r.json["transactions"].as_array().unwrap().iter().map(|t| num(&t["amount"])).sum();
    assert!(sum.abs() < 1e-9, "amounts net {sum}");
}

/// GET /api/v1/transactions/{id}: a sale with its refunds and what is left to refund, as refunds and voids change it;
/// a refund's own row; another account's row and an unknown id are not found.
async fn one_transaction_with_its_refunds(app: TestApp) {
    let a = app.signup("standing@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    at(&app, "2026-10-05T12:00:00Z");
    let tx = sale(&app, &a.key, json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "acme"})).await;
    let left = |r: &Reply| (num(&r.json["remaining"]["amount"]), num(&r.json["remaining"]["tax"]));

    // Nothing refunded yet: all of it, 1,000 and the 66.00 of the three lines.
    let r = standing(&app, &a.key, &tx).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["transaction"]["transaction_id"], json!(tx));
    assert_eq!((r.json["transaction"]["status"].as_str(), r.json["transaction"]["source"].as_str()), (Some("recorded"), Some("calculate")));
    assert_eq!(num(&r.json["transaction"]["calculation"]["total_tax"]), 66.0);
    assert_eq!(r.json["refunds"], json!([]));
    assert_eq!(left(&r), (1000.0, 66.0));

    // 400 refunded (26.40 of tax, as refunds_in_full_and_in_parts works out): 600 and 39.60 left.
    let first = refund(&app, &a.key, &tx, json!({"amount": 400})).await;
    assert_eq!(first.status, 201, "{}", first.text);
    let first = first.json["refund_id"].as_str().unwrap().to_string();
    let r = standing(&app, &a.key, &tx).await;
    assert_eq!(r.json["transaction"]["refunds"], json!(1));
    let refunds = r.json["refunds"].as_array().unwrap();
    assert_eq!(refunds.len(), 1, "{}", r.text);
    assert_eq!((refunds[0]["transaction_id"].as_str(), refunds[0]["refund_of"].as_str()), (Some(first.as_str()), Some(tx.as_str())));
    assert_eq!((num(&refunds[0]["amount"]), num(&refunds[0]["total_tax"])), (-400.0, -26.40));
    assert_eq!(left(&r), (600.0, 39.60));

    // The refund's own row: what it refunds, and nothing of it to refund.
    let r = standing(&app, &a.key, &first).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (r.json["transaction"]["source"].as_str(), r.json["transaction"]["refund_of"].as_str()),
        (Some("refund"), Some(tx.as_str()))
    );
    assert_eq!(num(&r.json["transaction"]["refund"]["tax_refunded"]), 26.40);
    assert_eq!((&r.json["refunds"], &r.json["remaining"]), (&json!([]), &Value::Null));

    // The refund voided: listed with its status, and the 400 can be refunded again.
    assert_eq!(void(&app, &a.key, &first).await.status, 200);
    let r = standing(&app, &a.key, &tx).await;
    assert_eq!(r.json["refunds"][0]["status"], json!("voided"));
    assert_eq!(left(&r), (1000.0, 66.0));
    // The sale voided: nothing to refund.
    assert_eq!(void(&app, &a.key, &tx).await.status, 200);
    let r = standing(&app, &a.key, &tx).await;
    assert_eq!((r.json["transaction"]["status"].as_str(), &r.json["remaining"]), (Some("voided"), &Value::Null));

    // Another account's row, an unknown id, a query parameter the operation does not take.
    let b = app.signup("standing-other@example.com").await;
    let r = app.get(&format!("/api/v1/transactions/{tx}"), Some(&b.key)).await;
    assert_eq!((r.status, r.code()), (404, "RESOURCE_NOT_FOUND"), "{}", r.text);
    let r = standing(&app, &a.key, "tx_unknown").await;
    assert_eq!((r.status, r.code()), (404, "RESOURCE_NOT_FOUND"), "{}", r.text);
    let r = app.get(&format!("/api/v1/transactions/{tx}?limit=1"), Some(&a.key)).await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    assert_eq!(app.get(&format!("/api/v1/transactions/{tx}"), None).await.status, 401);
}

/// One return of a report: (state, tax, period) → the return.
fn find<'a>(report: &'a Value, state: &str, period: &str) -> &'a Value {
    report["returns"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["state"] == state && r["period"] == period)
        .unwrap_or_else(|| panic!("no {state} {period} in {report}"))
}

fn figures(f: &Value) -> [f64; 5] {
    [num(&f["gross_sales"]), num(&f["exempt_sales"]["total"]), num(&f["taxable_sales"]), num(&f["tax_collected"]), num(&f["net_tax_due"])]
}

fn by_reason(f: &Value) -> Vec<(String, f64)> {
    f["exempt_sales"]["by_reason"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["reason"].as_str().unwrap().to_string(), num(&e["amount"])))
        .collect()
}

async fn liability_report_of_a_month(app: TestApp) {
    let a = app.signup("filer@example.com").await;
    app.set_nexus(&a.key, &["TX", "CA", "WA"]).await;
    at(&app, "2026-10-05T12:00:00Z");
    let c = &a.key;
    let austin = sale(&app, c, json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "acme"})).await;
    // Exempt by certificate: 300 into TX.
    sale(&app, c, json!({"amount": 300, "buyer_state": "TX", "counterparty_id": "reseller", "exemption_certificate": "TX-01-339"})).await;
    // Exempt by category: CA SaaS, 500.
    sale(&app, c, json!({"amount": 500, "buyer_state": "CA", "counterparty_id": "ca-buyer"})).await;
    // A marketplace's: 200 into WA, collected by the facilitator.
    sale(&app, c, json!({"amount": 200, "buyer_state": "WA", "counterparty_id": "wa-buyer", "marketplace_role": "seller"})).await;
    // No nexus: 400 into NY.
    sale(&app, c, json!({"amount": 400, "buyer_state": "NY", "counterparty_id": "ny-buyer"})).await;
    // A duplicate entry, voided while October is open: 100 into Austin (6.60).
    at(&app, "2026-10-20T09:00:00Z");
    let dup = sale(&app, c, json!({"amount": 100, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "acme"})).await;
    let r = void(&app, c, &dup).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!((r.json["status"].as_str(), r.json["voided_now"].as_bool()), (Some("voided"), Some(true)));
    let again = void(&app, c, &dup).await;
    assert_eq!((again.status, again.json["voided_now"].as_bool(), &again.json["voided_at"]), (200, Some(false), &r.json["voided_at"]));
    // A refund of 250 of the Austin sale, dated in November: 25% of 66.00 = 16.50 (12.50 + 2.00 + 2.00).
    at(&app, "2026-11-10T09:00:00Z");
    let r = refund(&app, c, &austin, json!({"amount": 250})).await;
    assert_eq!((r.status, num(&r.json["tax_refunded"]), r.json["refund_date"].as_str()), (201, 16.50, Some("2026-11-10")), "{}", r.text);
    // A voided sale stays in the list with its status; a voided one is not refunded.
    let r = app.get("/api/v1/transactions?state=TX", Some(c)).await;
    let listed = r.json["transactions"].as_array().unwrap().iter().find(|t| t["transaction_id"] == json!(dup)).unwrap().clone();
    assert_eq!((listed["status"].as_str(), listed["voided_at"].is_string()), (Some("voided"), true));
    let r = refund(&app, c, &dup, json!({})).await;
    assert_eq!((r.status, r.json["code"].as_str()), (409, Some("RESOURCE_CONFLICT")), "{}", r.text);

    let r = app.get("/api/v1/reports/liability?from=2026-10-01&to=2026-10-31", Some(c)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let oct = &r.json;
    assert_eq!(oct["returns"].as_array().unwrap().len(), 4, "{}", r.text);
    // TX: 1,000 + 300 gross; exempt 200 (the untaxed 20% of data processing) and 300 by certificate; taxable 800;
    // 66.00. The duplicate is apart: 1 voided, 100, 6.60.
    let tx = find(oct, "TX", "2026-10");
    assert_eq!((tx["tax"].as_str(), tx["transactions"].as_u64(), tx["filed"].as_bool()), (Some("sales_tax"), Some(2), Some(false)));
    assert_eq!(figures(tx), [1300.0, 500.0, 800.0, 66.0, 66.0]);
    assert_eq!(by_reason(tx), vec![("not_taxable".to_string(), 200.0), ("exemption_certificate".to_string(), 300.0)]);
    assert_eq!((tx["voids"]["count"].as_u64(), num(&tx["voids"]["sales"]), num(&tx["voids"]["tax"])), (Some(1), 100.0, 6.60));
    assert_eq!(tx["refunds"]["count"].as_u64(), Some(0));
    let js: Vec<(String, String, [f64; 5])> = tx["jurisdictions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["jurisdiction_id"].as_str().unwrap().into(), j["level"].as_str().unwrap().into(), figures(j)))
        .collect();
    assert_eq!(
        js,
        vec![
            ("TX".into(), "state".into(), [1300.0, 500.0, 800.0, 50.0, 50.0]),
            (AUSTIN.into(), "city".into(), [1000.0, 200.0, 800.0, 8.0, 8.0]),
            (CAPMETRO.into(), "special_district".into(), [1000.0, 200.0, 800.0, 8.0, 8.0]),
        ]
    );
    let sum: f64 = js.iter().map(|j| j.2[4]).sum();
    assert!((sum - num(&tx["net_tax_due"])).abs() < 1e-9);
    let ca = find(oct, "CA", "2026-10");
    assert_eq!((figures(ca), by_reason(ca)), ([500.0, 500.0, 0.0, 0.0, 0.0], vec![("not_taxable".to_string(), 500.0)]));
    let wa = find(oct, "WA", "2026-10");
    assert_eq!((figures(wa), by_reason(wa)), ([200.0, 200.0, 0.0, 0.0, 0.0], vec![("marketplace_facilitator".to_string(), 200.0)]));
    let ny = find(oct, "NY", "2026-10");
    assert_eq!((figures(ny), by_reason(ny)), ([400.0, 400.0, 0.0, 0.0, 0.0], vec![("no_nexus".to_string(), 400.0)]));
    assert_eq!(figures(&oct["totals"]), [2400.0, 1600.0, 800.0, 66.0, 66.0]);

    // November: the refund, in TX's return for the month.
    let r = app.get("/api/v1/reports/liability?from=2026-11-01&to=2026-11-30&state=tx", Some(c)).await;
    let nov = find(&r.json, "TX", "2026-11");
    assert_eq!(nov["transactions"].as_u64(), Some(0));
    let refunds = &nov["refunds"];
    assert_eq!(
        (refunds["count"].as_u64(), num(&refunds["sales"]), num(&refunds["taxable_sales"]), num(&refunds["tax"])),
        (Some(1), -250.0, -200.0, -16.50)
    );
    assert_eq!((num(&nov["net_taxable_sales"]), num(&nov["net_tax_due"])), (-200.0, -16.50));
    let parts: Vec<f64> = nov["jurisdictions"].as_array().unwrap().iter().map(|j| num(&j["net_tax_due"])).collect();
    assert_eq!(parts, vec![-12.50, -2.00, -2.00]);

    // Over both months the report's net tax is the ledger's: every row not voided, refunds negative.
    let r = app.get("/api/v1/reports/liability?from=2026-10-01&to=2026-11-30&period=quarter", Some(c)).await;
    let report_total = num(&r.json["totals"]["net_tax_due"]);
    let list = app.get("/api/v1/transactions", Some(c)).await;
    let ledger_total: f64 =
        list.json["transactions"].as_array().unwrap().iter().filter(|t| t["status"] == "recorded").map(|t| num(&t["total_tax"])).sum();
    assert!((report_total - 49.50).abs() < 1e-9 && (ledger_total - 49.50).abs() < 1e-9, "{report_total} {ledger_total}");
    assert_eq!(find(&r.json, "TX", "2026-Q4")["refunds"]["count"].as_u64(), Some(1));

    // The worksheet as CSV: a row per return, per jurisdiction, and the totals.
    let csv = app.request("GET", "/api/v1/reports/liability?from=2026-10-01&to=2026-10-31", Some(c), &[("Accept", "text/csv")], None).await;
    assert_eq!(csv.status, 200);
    assert!(csv.headers.get("content-type").unwrap().to_str().unwrap().starts_with("text/csv"));
    let rows: Vec<&str> = csv.text.lines().collect();
    assert_eq!(rows.len(), 1 + 4 + 3 + 1 + 1 + 1 + 1, "{}", csv.text);
    assert!(rows[0].starts_with("state,period,tax,level,jurisdiction_id,jurisdiction,transactions,gross_sales,exempt_not_taxable,"));
    let header: Vec<&str> = rows[0].split(',').collect();
    let col = |row: &str, name: &str| row.split(',').nth(header.iter().position(|h| *h == name).unwrap()).unwrap().to_string();
    let total = rows.last().unwrap();
    assert_eq!(
        (col(total, "state"), col(total, "gross_sales"), col(total, "net_tax_due")),
        ("TOTAL".into(), "2400.00".into(), "66.00".into())
    );
    let austin_row = rows.iter().find(|r| r.contains(",city,tx.austin,")).unwrap();
    assert_eq!((col(austin_row, "tax_collected"), col(austin_row, "voided_tax")), ("8.00".into(), "0.80".into()));
    let same = app.get("/api/v1/reports/liability?from=2026-10-01&to=2026-10-31&format=csv", Some(c)).await;
    assert_eq!(same.text, csv.text);

    // October filed: its sales can no longer be voided; November's can.
    let r = app.post("/api/v1/reports/liability/filed", Some(c), &json!({"state": "tx", "period": "2026-10"})).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(
        (r.json["state"].as_str(), r.json["first_day"].as_str(), r.json["last_day"].as_str(), r.json["already_filed"].as_bool()),
        (Some("TX"), Some("2026-10-01"), Some("2026-10-31"), Some(false))
    );
    let r = app.post("/api/v1/reports/liability/filed", Some(c), &json!({"state": "TX", "period": "2026-10"})).await;
    assert_eq!(r.json["already_filed"], json!(true));
    let r = void(&app, c, &austin).await;
    assert_eq!((r.status, r.json["code"].as_str()), (409, Some("RESOURCE_CONFLICT")), "{}", r.text);
    assert!(r.text.contains("the TX return for 2026-10 is marked filed"), "{}", r.text);
    // Nor may a refund be dated in it.
    let r = refund(&app, c, &austin, json!({"amount": 10, "refund_date": "2026-10-30"})).await;
    assert_eq!(r.status, 409, "{}", r.text);
    let r = app.get("/api/v1/reports/liability?from=2026-10-01&to=2026-10-31&state=TX", Some(c)).await;
    assert_eq!(find(&r.json, "TX", "2026-10")["filed"], json!(true));
    // November has not ended: it cannot be marked filed.
    let r = app.post("/api/v1/reports/liability/filed", Some(c), &json!({"state": "TX", "period": "2026-11"})).await;
    assert_eq!(r.status, 400, "{}", r.text);
    let nov_sale = sale(&app, c, json!({"amount": 100, "buyer_state": "TX", "counterparty_id": "acme"})).await;
    let r = void(&app, c, &nov_sale).await;
    assert_eq!(r.status, 200, "{}", r.text);

    // Bad queries: every problem at once.
    let r = app.get("/api/v1/reports/liability?from=2026-10-31&to=2026-10-01&period=week&state=XX", Some(c)).await;
    assert_eq!(r.status, 400, "{}", r.text);
    let errors = r.json["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 3, "{}", r.text);
    let r = app.get("/api/v1/reports/liability?to=2026-10-01", Some(c)).await;
    assert_eq!((r.status, r.json["errors"][0].as_str()), (400, Some("from: required")), "{}", r.text);
}

/// A void takes a sale out of the nexus revenue and the 1099 totals; a refund takes the refunded amount out of the
/// 1099 total (same tax year) and leaves nexus revenue, which counts gross sales.
async fn running_totals_follow_refunds_and_voids(app: TestApp) {
    let a = app.signup("totals@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    let c = &a.key;
    let body = json!({"amount": 1500, "buyer_state": "CO", "counterparty_id": "vendor-1", "role": "buyer"});
    let first = sale(&app, c, body.clone()).await;
    // The 1099 total before this payment is 1,500 (the first), so it reaches 3,000.
    let r = app.post("/api/v1/calculate", Some(c), &body).await;
    assert_eq!(num(&r.json["tracking_1099"]["vendor_ytd_total"]), 3000.0, "{}", r.text);
    let second = r.json["transaction_id"].as_str().unwrap().to_string();
    // Refund 1,000 of the second (same year): 2,000 now; void the first: 500.
    assert_eq!(refund(&app, c, &second, json!({"amount": 1000})).await.status, 201);
    assert_eq!(void(&app, c, &first).await.status, 200);
    let r = app
        .post("/api/v1/calculate", Some(c), &json!({"amount": 1, "buyer_state": "CO", "counterparty_id": "vendor-1", "role": "buyer"}))
        .await;
    assert_eq!(num(&r.json["tracking_1099"]["vendor_ytd_total"]), 501.0, "{}", r.text);

    // Nexus revenue: two CO sales of 60,000 put CO at 120,000 of its 100,000 threshold (an alert); a refund leaves
    // it (thresholds count gross sales), a void takes the sale out: 60,000, under the 80% that alerts.
    let nexus_sales = |r: &Reply| {
        r.json["alerts"].as_array().unwrap().iter().find(|x| x["state"] == "CO").map(|x| (num(&x["revenue"]), x["transactions"].as_i64()))
    };
    let co = json!({"amount": 60000, "buyer_state": "CO", "counterparty_id": "co-buyer"});
    let s1 = sale(&app, c, co.clone()).await;
    let s2 = sale(&app, c, co).await;
    let before = app.get("/api/v1/nexus-alerts", Some(c)).await;
    assert_eq!(nexus_sales(&before), Some((120000.0, Some(2))), "{}", before.text);
    assert_eq!(refund(&app, c, &s1, json!({})).await.status, 201);
    assert_eq!(nexus_sales(&app.get("/api/v1/nexus-alerts", Some(c)).await), Some((120000.0, Some(2))));
    assert_eq!(void(&app, c, &s2).await.status, 200);
    let after = app.get("/api/v1/nexus-alerts", Some(c)).await;
    assert_eq!(nexus_sales(&after), None, "{}", after.text);
}

/// `levy reports liability`, as an operator runs it on the SQLite file of a running instance: the API's figures.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn liability_report_from_the_command_line() {
    let app = TestApp::start(super::harness::Backend::Sqlite).await.unwrap();
    let a = app.signup("cli-filer@example.com").await;
    app.set_nexus(&a.key, &["TX"]).await;
    at(&app, "2026-10-05T12:00:00Z");
    let tx = sale(&app, &a.key, json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "counterparty_id": "acme"})).await;
    at(&app, "2026-11-02T12:00:00Z");
    assert_eq!(refund(&app, &a.key, &tx, json!({"amount": 500})).await.status, 201);
    let levy = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_levy"))
            .args(["reports", "--database-url", &app.db.url, "liability", "--email", "cli-filer@example.com"])
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
    };
    // The table: October's 66.00, November's refund of half, 33.00; 33.00 net.
    let (code, stdout, stderr) = levy(&["--from", "2026-10-01", "--to", "2026-11-30"]);
    assert_eq!(code, Some(0), "{stderr}");
    let rows: Vec<Vec<&str>> = stdout.lines().skip(2).map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0], ["TX", "2026-10", "sales_tax", "1000.00", "200.00", "800.00", "66.00", "0.00", "66.00"], "{stdout}");
    assert_eq!(rows[1], ["TX", "2026-11", "sales_tax", "0.00", "0.00", "0.00", "0.00", "-33.00", "-33.00"], "{stdout}");
    assert_eq!(rows[2], ["total", "1000.00", "200.00", "800.00", "66.00", "-33.00", "33.00"], "{stdout}");
    // JSON: the API's answer; CSV: the API's worksheet.
    let (_, json_out, _) = levy(&["--from", "2026-10-01", "--to", "2026-11-30", "--period", "quarter", "--format", "json"]);
    let report: Value = serde_json::from_str(&json_out).unwrap();
    assert_eq!((report["period"].as_str(), num(&report["totals"]["net_tax_due"])), (Some("quarter"), 33.0));
    let (_, csv_out, _) = levy(&["--from", "2026-10-01", "--to", "2026-11-30", "--format", "csv", "--state", "tx"]);
    let api = app.get("/api/v1/reports/liability?from=2026-10-01&to=2026-11-30&state=TX&format=csv", Some(&a.key)).await;
    assert_eq!(csv_out.trim_end(), api.text.trim_end());
    let (code, _, stderr) = levy(&["--from", "2026-10-31", "--to", "2026-10-01", "--period", "week"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("to: 2026-10-01 is before from (2026-10-31)") && stderr.contains("--period: `week`"), "{stderr}");
}

on_both!(
    refunds_in_full_and_in_parts,
    one_transaction_with_its_refunds,
    parallel_refunds_never_exceed_the_sale,
    liability_report_of_a_month,
    running_totals_follow_refunds_and_voids
);
