//! The gains tracker through HTTP: matching methods on one trade history, partial lots and fees,
//! the one-year boundary, wash sales before and after the loss, partial replacement, crypto rebuys,
//! oversells, backdating, the 1099-DA export, idempotency, filters, tenancy and the rates table.
//! Every expected figure is worked by hand in the comment beside it.

use serde_json::{json, Value};

use super::harness::{num, TestApp};
use crate::on_both;

async fn trade(app: &TestApp, key: &str, body: Value) -> Value {
    let r = app.post("/api/v1/trades", Some(key), &body).await;
    assert_eq!(r.status, 201, "{body} → {}", r.text);
    r.json
}

async fn rejected(app: &TestApp, key: &str, body: Value) -> Vec<String> {
    let r = app.post("/api/v1/trades", Some(key), &body).await;
    assert_eq!(r.status, 400, "{body} → {}", r.text);
    assert_eq!(r.code(), "INVALID_INPUT");
    r.errors()
}

fn buy(sym: &str, q: Value, price: Value, fee: Value, date: &str) -> Value {
    json!({"asset_symbol": sym, "trade_type": "buy", "quantity": q, "price_per_unit": price, "fee_amount": fee, "trade_date": date, "asset_class": "crypto"})
}

async fn summary(app: &TestApp, key: &str, sym: &str) -> Value {
    let r = app.get(&format!("/api/v1/trades?asset_symbol={sym}"), Some(key)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    r.json["summary"]["assets"][0].clone()
}

/// The history every method sells from (crypto: no wash-sale rule):
/// B1 2025-01-10 10 @ 100 + 10 fee = 1010; B2 2025-06-01 5 @ 120 = 600; B3 2026-01-15 4 @ 150 + 2 = 602.
async fn history(app: &TestApp, key: &str) -> Vec<String> {
    let mut ids = vec![];
    for b in [
        buy("btc", json!(10), json!(100), json!(10), "2025-01-10T12:00:00Z"),
        buy("BTC", json!("5"), json!(120), json!(0), "2025-06-01T12:00:00Z"),
        buy("BTC", json!(4), json!(150), json!(2), "2026-01-15T12:00:00Z"),
    ] {
        let r = trade(app, key, b).await;
        ids.push(r["lot"]["lot_id"].as_str().unwrap().to_string());
    }
    ids
}

fn lot_figures(v: &Value) -> (f64, f64, f64, f64, String, i64) {
    (
        num(&v["quantity"]),
        num(&v["cost_basis"]),
        num(&v["proceeds"]),
        num(&v["gain_or_loss"]),
        v["term"].as_str().unwrap().to_string(),
        v["holding_days"].as_i64().unwrap(),
    )
}

async fn fifo_lifo_and_specific_id(app: TestApp) {
    // Sell 12 @ 130 less 6 fee on 2026-03-01: net proceeds 1554.
    let sell = json!({"asset_symbol": "BTC", "trade_type": "sell", "quantity": 12, "price_per_unit": 130, "fee_amount": 6, "trade_date": "2026-03-01T12:00:00Z"});

    // FIFO: B1 whole (basis 1010, proceeds 1554 × 10/12 = 1295, +285, held 415 days: long-term);
    // B2 2 of 5 (basis 600 × 2/5 = 240, proceeds 1554 − 1295 = 259, +19, 273 days: short-term).
    let a = app.signup("fifo@example.com").await;
    let lots = history(&app, &a.key).await;
    let mut with_profile = sell.clone();
    with_profile.as_object_mut().unwrap().extend([
        ("filing_status".into(), json!("single")),
        ("estimated_annual_income".into(), json!(80000)),
        ("resident_state".into(), json!("CA")),
    ]);
    let r = trade(&app, &a.key, with_profile).await;
    // Estimates (2026, single, 80,000 − 16,100 = 63,900 taxable): ST 19 at 22% = 4.18, LT 285 at 15% = 42.75 → 46.93;
    // California at its 12.3% top rate, each term rounded: 2.34 + 35.06 = 37.40.
    let (fed, st) = (&r["estimates"]["federal"], &r["estimates"]["state"]);
    assert_eq!(
        (fed["tax_year"].as_i64(), num(&fed["ordinary_tax"]), num(&fed["long_term_tax"]), num(&fed["total_tax"])),
        (Some(2026), 4.18, 42.75, 46.93)
    );
    assert_eq!((st["state"].as_str(), num(&st["total_tax"])), (Some("CA"), 37.4));
    let c = r["lots_consumed"].as_array().unwrap();
    assert_eq!(c.len(), 2);
    assert_eq!(c[0]["lot_id"], json!(lots[0]));
    assert_eq!(lot_figures(&c[0]), (10.0, 1010.0, 1295.0, 285.0, "long_term".into(), 415));
    assert_eq!(lot_figures(&c[1]), (2.0, 240.0, 259.0, 19.0, "short_term".into(), 273));
    assert_eq!((num(&r["totals"]["short_term"]), num(&r["totals"]["long_term"]), num(&r["realized_gain_loss"])), (19.0, 285.0, 304.0));
    assert_eq!((num(&r["gross_proceeds"]), num(&r["net_proceeds"]), r["holding_period"].as_str().unwrap()), (1560.0, 1554.0, "mixed"));
    assert_eq!(r["wash_sale"]["rule_applies"], json!(false));
    // Left: B2 3 units (basis 360) and B3 4 units (602): 7 units, basis 962, two open lots.
    let s = summary(&app, &a.key, "BTC").await;
    assert_eq!((num(&s["held_quantity"]), s["open_lots"].as_i64().unwrap(), num(&s["remaining_basis"])), (7.0, 2, 962.0));
    assert_eq!((num(&s["realized_short_term"]), num(&s["realized_long_term"])), (19.0, 285.0));

    // LIFO: B3 whole (basis 602, proceeds 1554 × 4/12 = 518, −84, 45 days), B2 whole (600, 1554 × 5/12 = 647.50,
    // +47.50, 273 days), B1 3 of 10 (1010 × 3/10 = 303, 1554 − 518 − 647.50 = 388.50, +85.50, long-term).
    let b = app.signup("lifo@example.com").await;
    history(&app, &b.key).await;
    let mut s = sell.clone();
    s["accounting_method"] = json!("lifo");
    let r = trade(&app, &b.key, s).await;
    let c = r["lots_consumed"].as_array().unwrap();
    assert_eq!(lot_figures(&c[0]), (4.0, 602.0, 518.0, -84.0, "short_term".into(), 45));
    assert_eq!(lot_figures(&c[1]), (5.0, 600.0, 647.5, 47.5, "short_term".into(), 273));
    assert_eq!(lot_figures(&c[2]), (3.0, 303.0, 388.5, 85.5, "long_term".into(), 415));
    assert_eq!((num(&r["totals"]["short_term"]), num(&r["totals"]["long_term"]), num(&r["realized_gain_loss"])), (-36.5, 85.5, 49.0));

    // Specific ID: 3 units of B2 @ 130 less 1.50 fee = 388.50; basis 600 × 3/5 = 360; +28.50 short-term.
    let c_acct = app.signup("specific@example.com").await;
    let lots = history(&app, &c_acct.key).await;
    let one = json!({"asset_symbol": "BTC", "trade_type": "sell", "quantity": 3, "price_per_unit": 130, "fee_amount": 1.5, "trade_date": "2026-03-01T12:00:00Z", "accounting_method": "specific_id", "specific_lot_id": lots[1]});
    let r = trade(&app, &c_acct.key, one.clone()).await;
    assert_eq!(lot_figures(&r["lots_consumed"][0]), (3.0, 360.0, 388.5, 28.5, "short_term".into(), 273));
    assert_eq!(num(&r["lots_consumed"][0]["wash_sale"]["unreplaced_quantity"]), 0.0);
    // B2 now holds 2: asking for 3 more names the lot; an unknown lot and another account's lot are refused.
    let e = rejected(&app, &c_acct.key, one.clone()).await;
    assert!(e[0].starts_with(&format!("specific_lot_id: `{}` holds 2.00000000 units", lots[1])), "{e:?}");
    let mut other = one.clone();
    other["specific_lot_id"] = json!("lot_nope");
    assert_eq!(rejected(&app, &c_acct.key, other).await, ["specific_lot_id: `lot_nope` is not a lot of this account"]);
    let foreign = app.signup("foreign@example.com").await;
    let theirs = trade(&app, &foreign.key, buy("BTC", json!(1), json!(1), json!(0), "2026-01-01T00:00:00Z")).await;
    let mut stolen = one.clone();
    stolen["specific_lot_id"] = theirs["lot"]["lot_id"].clone();
    assert!(rejected(&app, &c_acct.key, stolen).await[0].ends_with("is not a lot of this account"));
    // A lot of another asset, and a lot sold out.
    let eth = trade(&app, &c_acct.key, buy("ETH", json!(1), json!(10), json!(0), "2026-01-01T00:00:00Z")).await;
    let mut wrong = one.clone();
    wrong["specific_lot_id"] = eth["lot"]["lot_id"].clone();
    assert!(rejected(&app, &c_acct.key, wrong).await[0].contains("is a lot of ETH, not BTC"));
    let mut rest = one.clone();
    rest["quantity"] = json!(2);
    trade(&app, &c_acct.key, rest.clone()).await;
    assert!(rejected(&app, &c_acct.key, rest).await[0].contains("is exhausted"));
    // Nothing written by the refusals: 3 + 2 sold of B2; 17 − 5 = 14 BTC held.
    assert_eq!(num(&summary(&app, &c_acct.key, "BTC").await["held_quantity"]), 14.0);
}

async fn holding_period_boundary(app: TestApp) {
    // Acquired 2025-03-15: sold 2026-03-15 is short-term (365 days), sold 2026-03-16 long-term (366 days).
    let a = app.signup("boundary@example.com").await;
    trade(&app, &a.key, buy("SOL", json!(2), json!(100), json!(0), "2025-03-15T09:00:00Z")).await;
    let r = trade(
        &app,
        &a.key,
        json!({"asset_symbol": "SOL", "trade_type": "sell", "quantity": 1, "price_per_unit": 150, "trade_date": "2026-03-15T23:00:00Z"}),
    )
    .await;
    assert_eq!(
        (r["lots_consumed"][0]["term"].as_str().unwrap(), r["lots_consumed"][0]["holding_days"].as_i64().unwrap()),
        ("short_term", 365)
    );
    let r = trade(
        &app,
        &a.key,
        json!({"asset_symbol": "SOL", "trade_type": "sell", "quantity": 1, "price_per_unit": 150, "trade_date": "2026-03-16T01:00:00Z"}),
    )
    .await;
    assert_eq!(
        (r["lots_consumed"][0]["term"].as_str().unwrap(), r["lots_consumed"][0]["holding_days"].as_i64().unwrap()),
        ("long_term", 366)
    );
}

async fn wash_sales(app: TestApp) {
    let a = app.signup("wash@example.com").await;
    let stock = |t: &str, q: i64, p: i64, date: &str| json!({"asset_symbol": "AAA", "trade_type": t, "quantity": q, "price_per_unit": p, "trade_date": date, "asset_class": "stock"});

    // Replacement after the loss: 100 @ 50 (5000) on 2026-01-02, sold @ 40 on 2026-03-01: loss 1000, nothing
    // bought yet, so the whole loss is open.
    trade(&app, &a.key, stock("buy", 100, 50, "2026-01-02T15:00:00Z")).await;
    let r = trade(&app, &a.key, stock("sell", 100, 40, "2026-03-01T15:00:00Z")).await;
    assert_eq!((num(&r["realized_gain_loss"]), num(&r["wash_sale"]["disallowed_loss"])), (-1000.0, 0.0));
    assert_eq!(r["wash_sale"]["rule_applies"], json!(true));
    assert_eq!(num(&r["lots_consumed"][0]["wash_sale"]["unreplaced_quantity"]), 100.0);
    let disposition = r["lots_consumed"][0]["disposition_id"].clone();
    // 60 bought @ 42 on 2026-03-20 (19 days later): 60/100 of the loss, 600, is disallowed and moves into the new
    // lot (2520 + 600 = 3120); the sold shares' 58 days carry over: holding starts 2026-03-20 − 58 = 2026-01-21.
    let r = trade(&app, &a.key, stock("buy", 60, 42, "2026-03-20T15:00:00Z")).await;
    let adj = &r["wash_sale"]["replaced_losses"][0];
    assert_eq!((adj["disposition_id"].clone(), num(&adj["quantity"]), num(&adj["disallowed_loss"])), (disposition, 60.0, 600.0));
    assert_eq!(
        (num(&r["lot"]["cost_basis"]), r["lot"]["holding_period_start"].as_str().unwrap(), num(&r["lot"]["wash_sale_adjustment"])),
        (3120.0, "2026-01-21", 600.0)
    );
    let s = summary(&app, &a.key, "AAA").await;
    assert_eq!((num(&s["realized_short_term"]), num(&s["wash_sale_disallowed"]), num(&s["remaining_basis"])), (-400.0, 600.0, 3120.0));
    // Selling the replacement @ 45 on 2026-04-10: 2700 − 3120 = −420; the lot sold is not its own replacement.
    // Over both round trips: paid 7520, received 6700, realized −400 − 420 = −820.
    let r = trade(&app, &a.key, stock("sell", 60, 45, "2026-04-10T15:00:00Z")).await;
    assert_eq!((num(&r["realized_gain_loss"]), num(&r["wash_sale"]["disallowed_loss"])), (-420.0, 0.0));
    assert_eq!(num(&summary(&app, &a.key, "AAA").await["realized_total"]), -820.0);

    // Replacement before the loss, partial: BBB 10 @ 100 on 05-01, 4 @ 90 on 05-20, sell 10 (FIFO: the first lot)
    // @ 80 on 05-25: loss 200; the 4 bought 5 days before replace 4/10: 80 disallowed, that lot's basis 360 + 80
    // = 440, holding from 05-20 − 24 days = 2026-04-26.
    let bbb = |t: &str, q: i64, p: i64, date: &str| json!({"asset_symbol": "BBB", "trade_type": t, "quantity": q, "price_per_unit": p, "trade_date": date, "asset_class": "equity"});
    trade(&app, &a.key, bbb("buy", 10, 100, "2026-05-01T15:00:00Z")).await;
    let second = trade(&app, &a.key, bbb("buy", 4, 90, "2026-05-20T15:00:00Z")).await;
    let r = trade(&app, &a.key, bbb("sell", 10, 80, "2026-05-25T15:00:00Z")).await;
    let c = &r["lots_consumed"][0];
    assert_eq!((num(&c["gain_or_loss"]), num(&c["wash_sale_disallowed"]), num(&c["realized_gain_or_loss"])), (-200.0, 80.0, -120.0));
    assert_eq!(c["wash_sale"]["replacements"][0]["lot_id"], second["lot"]["lot_id"]);
    assert_eq!(c["wash_sale"]["replacements"][0]["holding_period_start"], json!("2026-04-26"));
    assert_eq!(num(&c["wash_sale"]["unreplaced_quantity"]), 6.0);
    // A later buy of 10 @ 85 on 06-10 replaces the other 6: the remaining 120 is disallowed; the lot splits into
    // 6 units (850 × 6/10 = 510 + 120 = 630, holding from 06-10 − 24 days = 05-17) and 4 units (340).
    let r = trade(&app, &a.key, bbb("buy", 10, 85, "2026-06-10T15:00:00Z")).await;
    let lots = r["lots"].as_array().unwrap();
    assert_eq!(lots.len(), 2);
    assert_eq!(
        (num(&lots[0]["quantity"]), num(&lots[0]["cost_basis"]), lots[0]["holding_period_start"].as_str().unwrap()),
        (6.0, 630.0, "2026-05-17")
    );
    assert_eq!(
        (num(&lots[1]["quantity"]), num(&lots[1]["cost_basis"]), lots[1]["split_from"].clone()),
        (4.0, 340.0, lots[0]["lot_id"].clone())
    );
    // Basis is conserved: paid 2210, received 800, realized 0, remaining basis 440 + 630 + 340 = 1410.
    let s = summary(&app, &a.key, "BBB").await;
    assert_eq!(
        (
            num(&s["realized_total"]),
            num(&s["wash_sale_disallowed"]),
            num(&s["remaining_basis"]),
            num(&s["held_quantity"]),
            s["open_lots"].as_i64().unwrap()
        ),
        (0.0, 200.0, 1410.0, 14.0, 3)
    );

    // Crypto: a loss with a rebuy five days later stays allowed, and the response says why.
    let r = trade(&app, &a.key, buy("ETH", json!(2), json!(3000), json!(0), "2026-02-01T00:00:00Z")).await;
    assert_eq!(r["wash_sale"]["rule_applies"], json!(false));
    let r = trade(
        &app,
        &a.key,
        json!({"asset_symbol": "ETH", "trade_type": "sell", "quantity": 2, "price_per_unit": 2500, "trade_date": "2026-02-10T00:00:00Z"}),
    )
    .await;
    assert_eq!((num(&r["realized_gain_loss"]), r["wash_sale"]["rule_applies"].clone()), (-1000.0, json!(false)));
    assert!(r["wash_sale"]["reason"].as_str().unwrap().contains("asset_class crypto"), "{}", r["wash_sale"]);
    let r = trade(&app, &a.key, buy("ETH", json!(2), json!(2600), json!(0), "2026-02-15T00:00:00Z")).await;
    assert_eq!(r["wash_sale"]["replaced_losses"], json!([]));
    assert_eq!(num(&r["lot"]["cost_basis"]), 5200.0);
    assert_eq!(num(&summary(&app, &a.key, "ETH").await["realized_total"]), -1000.0);

    // The 2026 export: AAA −1000 (1i 600) and −420, BBB −200 (1i 200), ETH −1000: all short-term.
    // 1f 4000 + 2700 + 800 + 5000 = 12500; 1g 5000 + 3120 + 1000 + 6000 = 15120; 1i 800; gain −2620 + 800 = −1820.
    let r = app.get("/api/v1/export/1099-da?year=2026", Some(&a.key)).await;
    assert_eq!(r.status, 200, "{}", r.text);
    written_as_documented::<levy::api::schema::gains::Export1099Da>(&r.text);
    let t = &r.json["totals"]["short_term"];
    assert_eq!(
        (
            t["count"].as_u64().unwrap(),
            num(&t["box_1f_proceeds"]),
            num(&t["box_1g_cost_or_other_basis"]),
            num(&t["box_1i_wash_sale_loss_disallowed"]),
            num(&t["gain_or_loss"])
        ),
        (4, 12500.0, 15120.0, 800.0, -1820.0)
    );
    assert_eq!(r.json["totals"]["long_term"]["count"], json!(0));
    assert_eq!(r.json["draft"], json!(true));
    let first = &r.json["entries"][1];
    assert_eq!(
        (
            first["box_1d_date_acquired"].as_str().unwrap(),
            first["box_1e_date_sold_or_disposed"].as_str().unwrap(),
            num(&first["box_1i_wash_sale_loss_disallowed"])
        ),
        ("2026-01-02", "2026-03-01", 600.0)
    );
}

async fn oversell_backdating_and_exactness(app: TestApp) {
    let a = app.signup("limits@example.com").await;
    trade(&app, &a.key, buy("SOL", json!(1), json!(100), json!(0), "2026-01-01T00:00:00Z")).await;
    // More than is held: 400 naming quantity, nothing written.
    let e = rejected(&app, &a.key, json!({"asset_symbol": "SOL", "trade_type": "sell", "quantity": 2, "price_per_unit": 1})).await;
    assert_eq!(e, ["quantity: sells 2.00000000 SOL but 1.00000000 are held; nothing was recorded"]);
    // Nine decimal places are refused, never rounded; eight are kept exactly.
    let e = rejected(&app, &a.key, buy("SOL", json!(0.123456789), json!(1), json!(0), "2026-01-02T00:00:00Z")).await;
    assert!(e[0].starts_with("quantity: `0.123456789` has more than 8 decimal places"), "{e:?}");
    let r = trade(&app, &a.key, buy("SOL", json!("0.12345678"), json!(1), json!(0), "2026-06-01T00:00:00Z")).await;
    assert_eq!(r["lot"]["quantity"].to_string(), "0.12345678");
    // Backdated sell: on 2026-03-01 only the 2026-01-01 lot was held, so 1.1 is too many.
    let e = rejected(
        &app,
        &a.key,
        json!({"asset_symbol": "SOL", "trade_type": "sell", "quantity": 1.1, "price_per_unit": 1, "trade_date": "2026-03-01T00:00:00Z"}),
    )
    .await;
    assert!(e[0].contains("only 1.00000000 were held on 2026-03-01"), "{e:?}");
    // A sell dated 2026-05-01 takes the January lot (FIFO by acquisition, lots after the date unseen) ...
    let r = trade(
        &app,
        &a.key,
        json!({"asset_symbol": "SOL", "trade_type": "sell", "quantity": 1, "price_per_unit": 130, "trade_date": "2026-05-01T00:00:00Z"}),
    )
    .await;
    assert_eq!((num(&r["realized_gain_loss"]), r["lots_consumed"][0]["acquired"].as_str().unwrap()), (30.0, "2026-01-01T00:00:00.000Z"));
    // ... and then nothing of SOL may be dated before it; after it is fine.
    let e = rejected(&app, &a.key, buy("SOL", json!(1), json!(1), json!(0), "2026-04-30T00:00:00Z")).await;
    assert!(e[0].starts_with("trade_date: 2026-04-30T00:00:00.000Z is before the latest recorded sell of SOL"), "{e:?}");
    trade(&app, &a.key, buy("SOL", json!(1), json!(1), json!(0), "2026-05-02T00:00:00Z")).await;
    // Other assets are not held back by SOL's sells.
    trade(&app, &a.key, buy("ADA", json!(1), json!(1), json!(0), "2025-01-01T00:00:00Z")).await;
    // Unknown fields and bad enums are named together (the document's check); then the future is refused (the
    // handler's, once the body has the documented shape).
    let e = rejected(&app, &a.key, json!({"asset_symbol": "SOL", "trade_type": "buy", "quantity": 1, "price_per_unit": 1, "trade_date": "2026-12-01T00:00:00Z", "side": "x", "asset_class": "bond"})).await;
    assert_eq!(e.len(), 2, "{e:?}");
    let e = rejected(
        &app,
        &a.key,
        json!({"asset_symbol": "SOL", "trade_type": "buy", "quantity": 1, "price_per_unit": 1, "trade_date": "2026-12-01T00:00:00Z"}),
    )
    .await;
    assert!(e[0].starts_with("trade_date: `2026-12-01T00:00:00Z` is in the future"), "{e:?}");
    let s = summary(&app, &a.key, "SOL").await;
    assert_eq!((s["held_quantity"].to_string().as_str(), s["buys"].as_i64().unwrap(), s["sells"].as_i64().unwrap()), ("1.12345678", 3, 1));
}

async fn lists_exports_idempotency_and_tenancy(app: TestApp) {
    let a = app.signup("lists@example.com").await;
    let b = app.signup("other@example.com").await;
    history(&app, &a.key).await;
    let sell = json!({"asset_symbol": "BTC", "trade_type": "sell", "quantity": 12, "price_per_unit": 130, "fee_amount": 6, "trade_date": "2026-03-01T12:00:00Z"});
    // Idempotency-Key: the replay is byte for byte, and one trade is written.
    let first = app.request("POST", "/api/v1/trades", Some(&a.key), &[("Idempotency-Key", "sell-1")], Some(&sell.to_string())).await;
    assert_eq!(first.status, 201);
    let again = app.request("POST", "/api/v1/trades", Some(&a.key), &[("Idempotency-Key", "sell-1")], Some(&sell.to_string())).await;
    assert_eq!(
        (again.status, again.text.as_str(), again.header("X-Idempotency-Status").as_deref()),
        (201, first.text.as_str(), Some("cached"))
    );
    let mut changed = sell.clone();
    changed["quantity"] = json!(1);
    let clash = app.request("POST", "/api/v1/trades", Some(&a.key), &[("Idempotency-Key", "sell-1")], Some(&changed.to_string())).await;
    assert_eq!((clash.status, clash.code()), (409, "IDEMPOTENCY_KEY_CONFLICT"));

    // Filters: 4 trades; sells 1; since 2026-01-01 → B3 and the sell; until 2025-12-31 → B1, B2; paging.
    let list = |q: &str| {
        let path = format!("/api/v1/trades{q}");
        let app = &app;
        let key = a.key.clone();
        async move { app.get(&path, Some(&key)).await }
    };
    let r = list("").await;
    assert_eq!(r.json["count"], json!(4));
    assert_eq!(r.json["trades"][0]["trade_type"], json!("sell"));
    assert_eq!(num(&r.json["trades"][0]["realized_gain_or_loss"]), 304.0);
    assert_eq!(list("?trade_type=sell").await.json["count"], json!(1));
    assert_eq!(list("?since=2026-01-01").await.json["count"], json!(2));
    assert_eq!(list("?until=2025-12-31").await.json["count"], json!(2));
    let page = list("?limit=1&offset=1").await;
    assert_eq!((page.json["count"].clone(), page.json["trades"][0]["trade_date"].clone()), (json!(1), json!("2026-01-15T12:00:00.000Z")));
    assert_eq!(list("?asset_symbol=eth").await.json["count"], json!(0));
    // Every parameter is checked against its documented schema, all at once.
    let bad = list("?asset_symbol=A%20B&trade_type=hold&since=yesterday&limit=0&offset=-1").await;
    assert_eq!(bad.status, 400, "{}", bad.text);
    assert_eq!(
        bad.errors(),
        [
            "asset_symbol: may hold only letters, digits, `.`, `_` and `-`",
            "trade_type: `hold` is not one of: buy, sell",
            "since: `yesterday` is not an ISO 8601 date (2026-01-31) or date-time (2026-01-31T12:00:00Z)",
            "limit: must be at least 1",
            "offset: must be at least 0"
        ]
    );
    for (q, error) in [
        ("?limit=1001", "limit: must be at most 1000"),
        ("?limit=ten", "limit: must be a whole number"),
        ("?limit=1.5", "limit: must be a whole number"),
        ("?offset=1e3", "offset: must be a whole number"),
        ("?asset_symbol=", "asset_symbol: must not be empty"),
        (&format!("?asset_symbol={}", "X".repeat(51)), "asset_symbol: must be at most 50 characters"),
    ] {
        let r = list(q).await;
        assert_eq!((r.status, r.errors()), (400, vec![error.to_string()]), "{q}");
    }
    assert_eq!(list(&format!("?asset_symbol={}&limit=1000&offset=0", "X".repeat(50))).await.status, 200);
    assert_eq!((num(&r.json["summary"]["realized_short_term"]), num(&r.json["summary"]["realized_long_term"])), (19.0, 285.0));

    // The export of 2026: B2's 2 units short-term (259 / 240 / +19), B1 long-term (1295 / 1010 / +285).
    let r = app.get("/api/v1/export/1099-da", Some(&a.key)).await;
    assert_eq!((r.status, r.json["tax_year"].clone()), (200, json!(2026)));
    written_as_documented::<levy::api::schema::gains::Export1099Da>(&r.text);
    let t = &r.json["totals"];
    assert_eq!(
        (
            num(&t["short_term"]["box_1f_proceeds"]),
            num(&t["short_term"]["box_1g_cost_or_other_basis"]),
            num(&t["short_term"]["gain_or_loss"])
        ),
        (259.0, 240.0, 19.0)
    );
    assert_eq!(
        (num(&t["long_term"]["box_1f_proceeds"]), num(&t["long_term"]["box_1g_cost_or_other_basis"]), num(&t["long_term"]["gain_or_loss"])),
        (1295.0, 1010.0, 285.0)
    );
    assert_eq!((t["all"]["count"].clone(), num(&t["all"]["gain_or_loss"])), (json!(2), 304.0));
    assert_eq!(r.json["recipient"]["email"], json!("lists@example.com"));
    assert_eq!(app.get("/api/v1/export/1099-da?year=2025", Some(&a.key)).await.json["entries"], json!([]));
    for y in ["2019", "2031", "twenty"] {
        let r = app.get(&format!("/api/v1/export/1099-da?year={y}"), Some(&a.key)).await;
        assert_eq!((r.status, r.errors()[0].starts_with("year:")), (400, true));
    }

    // Tenancy: the other account sees no trades, no summary and an empty export.
    let r = app.get("/api/v1/trades", Some(&b.key)).await;
    assert_eq!((r.json["count"].clone(), r.json["summary"]["assets"].clone()), (json!(0), json!([])));
    assert_eq!(app.get("/api/v1/export/1099-da?year=2026", Some(&b.key)).await.json["entries"], json!([]));
    let e = rejected(&app, &b.key, json!({"asset_symbol": "BTC", "trade_type": "sell", "quantity": 1, "price_per_unit": 1})).await;
    assert!(e[0].contains("but 0.00000000 are held"), "{e:?}");
    assert_eq!(app.get("/api/v1/trades", None).await.status, 401);
    assert_eq!(app.get("/api/v1/export/1099-da", None).await.status, 401);
}

async fn capital_gains_rates(app: TestApp) {
    // Compact: {st, lt, t}. CA 12.3% both; WA excise 7% on long-term only; HI long-term capped at 7.25%;
    // WI excludes 30% of long-term: 7.65% × 0.7 = 5.355%; TX none.
    let r = app.get("/api/v1/rates/capital-gains?format=compact", None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json.as_object().unwrap().len(), 51);
    assert_eq!(r.json["CA"], json!({"st": 0.123, "lt": 0.123, "t": "ordinary"}));
    assert_eq!(r.json["WA"], json!({"st": 0, "lt": 0.07, "t": "excise"}));
    assert_eq!((num(&r.json["HI"]["lt"]), r.json["HI"]["t"].as_str().unwrap()), (0.0725, "preferential"));
    assert_eq!(num(&r.json["WI"]["lt"]), 0.05355);
    assert_eq!(r.json["TX"], json!({"st": 0, "lt": 0, "t": "none"}));
    let r = app.get("/api/v1/rates/capital-gains?state=ma&explain=true", None).await;
    let ma = &r.json["states"]["MA"];
    assert_eq!((num(&ma["short_term_rate"]), num(&ma["long_term_rate"])), (0.085, 0.05));
    assert!(ma["explanation"].as_str().unwrap().contains("Short-term gains are taxed at 8.5%"), "{ma}");
    assert!(ma["citation"]["cite"].as_str().unwrap().contains("62"));
    let r = app.get("/api/v1/rates/capital-gains?state=ZZ&format=tiny&explain=maybe", None).await;
    assert_eq!((r.status, r.errors().len()), (400, 3));
}

async fn concurrent_sells_never_share_a_lot(app: TestApp) {
    // 5 units held in 5 lots; 8 sells of 1 unit at once: exactly 5 succeed, each consuming a different lot,
    // and 3 are refused as oversells. Trades of one asset are applied one at a time (the position row lock).
    let a = app.signup("race-trades@example.com").await;
    for d in 1..=5 {
        trade(&app, &a.key, buy("DOT", json!(1), json!(10 * d), json!(0), &format!("2026-01-0{d}T00:00:00Z"))).await;
    }
    let mut tasks = vec![];
    for _ in 0..8 {
        let client = app.client.clone();
        let key = a.key.clone();
        tasks.push(tokio::spawn(async move {
            let r = client
                .post("/api/v1/trades")
                .header("X-API-Key", key)
                .body_json(&json!({"asset_symbol": "DOT", "trade_type": "sell", "quantity": 1, "price_per_unit": 100}))
                .send()
                .await;
            let status = r.0.status().as_u16();
            let body: Value = serde_json::from_str(&r.0.into_body().into_string().await.unwrap()).unwrap();
            (status, body)
        }));
    }
    let mut lots = vec![];
    let mut refused = 0;
    for t in tasks {
        let (status, body) = t.await.unwrap();
        match status {
            201 => lots.push(body["lots_consumed"][0]["lot_id"].as_str().unwrap().to_string()),
            400 => refused += 1,
            other => panic!("unexpected {other}: {body}"),
        }
    }
    lots.sort();
    lots.dedup();
    assert_eq!((lots.len(), refused), (5, 3));
    // Proceeds 500 against bases 10 + 20 + 30 + 40 + 50 = 150: +350 realized, nothing left.
    let s = summary(&app, &a.key, "DOT").await;
    assert_eq!((num(&s["held_quantity"]), s["open_lots"].as_i64().unwrap(), num(&s["realized_total"])), (0.0, 0, 350.0));
}

on_both!(
    concurrent_sells_never_share_a_lot,
    fifo_lifo_and_specific_id,
    holding_period_boundary,
    wash_sales,
    oversell_backdating_and_exactness,
    lists_exports_idempotency_and_tenancy,
    capital_gains_rates
);

/// A body written in one pass by its own writer (the 1099-DA export: `gains::form1099da::render`), parsed into the
/// type that documents it and written again by that type, is the same text byte for byte.
fn written_as_documented<T: poem_openapi::types::ParseFromJSON + poem_openapi::types::ToJSON>(text: &str) {
    let typed =
        T::parse_from_json(serde_json::from_str(text).ok()).unwrap_or_else(|e| panic!("not a {}: {}\n{text}", T::name(), e.into_message()));
    assert_eq!(typed.to_json().unwrap_or_default().to_string(), text, "{} writes it otherwise", T::name());
}
