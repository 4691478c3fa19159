//! The public rate surface: GET /rates (full, compact, verified, explain, as_of), GET /rates/local, POST /verify
//! and its per-address limit, and the conditional GETs (ETag, Cache-Control, 304) of the public reads. Figures
//! are the rule files' (rules/states/tx.yaml 6.25% from 1990-07-01, Tex. Tax Code §151.051(b); SaaS taxed on 80%
//! of the price, §151.351; rules/local/tx.yaml 78701: City of Austin 1% + Capital Metro 1%).

use levy::config::Limits;
use levy::rules::schema::STATES;
use serde_json::{json, Value};

use super::harness::{num, Backend, TestApp};
use crate::on_both;

async fn table_and_compact_agree_with_calculate(app: TestApp) {
    let a = app.signup("rates@example.com").await;
    let full = app.get("/api/v1/rates", None).await;
    assert_eq!(full.status, 200, "{}", full.text);
    assert_eq!(full.json["count"], json!(51));
    assert_eq!(full.json["as_of"], json!("2026-11-21"));
    let compact = app.get("/api/v1/rates?format=compact", None).await;
    assert_eq!(compact.status, 200);
    let map = compact.json.as_object().unwrap();
    assert_eq!(map.len(), 51);
    // TX: 6.25% state rate; SaaS is data processing, taxable on 80% of the price.
    assert_eq!(compact.json["TX"], json!({"r": 0.0625, "d": true}));
    let tx = &full.json["states"]["TX"];
    assert_eq!(tx["state_rate"], json!(0.0625));
    assert_eq!(tx["saas_taxed_share"], json!(0.8));
    assert_eq!(tx["local_taxes"], json!(true));
    assert_eq!(tx["effective_from"], json!("1990-07-01"));
    assert_eq!(tx["citation"]["cite"], json!("Tex. Tax Code §151.051(b)"));
    // Every state: the table's figures are those of a keyed seller's calculation (nexus everywhere) of a SaaS
    // sale and a digital-good sale of 1,000 into the state.
    app.set_nexus(&a.key, &STATES).await;
    for code in STATES {
        let row = &full.json["states"][code];
        assert_eq!(compact.json[code]["r"], row["state_rate"], "{code}");
        assert_eq!(compact.json[code]["d"], row["digital_taxable"], "{code}");
        let mut taxable = vec![];
        for (tt, flag, share) in
            [("saas", "saas_taxable", "saas_taxed_share"), ("digital_good", "digital_goods_taxable", "digital_goods_taxed_share")]
        {
            let r = app
                .post(
                    "/api/v1/calculate",
                    Some(&a.key),
                    &json!({"amount": 1000, "buyer_state": code, "transaction_type": tt, "counterparty_id": "rates-check"}),
                )
                .await;
            assert_eq!(r.status, 200, "{code} {tt}: {}", r.text);
            let trail = &r.json["audit_trail"];
            assert_eq!(num(&trail["jurisdiction_chain"][0]["rate"]), num(&row["state_rate"]), "{code} {tt}: state rate");
            let is_taxable = trail["taxability"]["taxable"].as_bool().unwrap();
            assert_eq!(row[flag], json!(is_taxable), "{code} {tt}: taxable");
            // The tax is the price × the taxed share × the leg's rate (to the cent).
            let tax = &r.json["sales_tax"];
            let expected = 1000.0 * num(&row[share]) * num(&tax["rate"]);
            assert!((num(&tax["amount"]) - expected).abs() < 0.006, "{code} {tt}: {} vs {expected}", tax["amount"]);
            if !is_taxable {
                assert_eq!(num(&row[share]), 0.0, "{code} {tt}");
            }
            taxable.push(is_taxable);
        }
        assert_eq!(row["digital_taxable"], json!(taxable[0] || taxable[1]), "{code}");
    }
    // A state the table calls not digital-taxable: California until SB 122 takes effect on 2027-01-01.
    assert_eq!(compact.json["CA"], json!({"r": 0.0725, "d": false}));
}

async fn one_state_explain_verified_and_as_of(app: TestApp) {
    let r = app.get("/api/v1/rates?state=tx&explain=true", None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["count"], json!(1));
    let e = &r.json["states"]["TX"]["explanation"];
    let taxability = e["taxability"].as_str().unwrap();
    assert!(taxability.contains("saas (as saas) at 6.25% on 80% of the price [tx.taxability.data-processing]"), "{taxability}");
    assert!(e["sourcing"].as_str().unwrap().contains("origin where its condition holds (tx.sourcing.intrastate-origin"), "{e}");
    // 34 TAC §3.286(b)(2): 500,000 of Texas revenue in the preceding twelve months, no transaction prong.
    assert!(e["nexus_threshold"].as_str().unwrap().contains("500000 USD of gross sales in the previous 12 months"), "{e}");
    assert!(e["marketplace"].as_str().unwrap().starts_with("A marketplace facilitator collects"), "{e}");
    // Without a state, explain adds nothing.
    let all = app.get("/api/v1/rates?explain=true", None).await;
    assert_eq!(all.json["states"]["TX"]["explanation"], Value::Null);
    // Illinois: the Chicago lease tax on cloud software, 15% from 2026-01-01 (rules/local/special.yaml).
    let il = app.get("/api/v1/rates?state=IL&explain=true", None).await;
    let special = il.json["states"]["IL"]["explanation"]["special_local_taxes"].as_array().unwrap().clone();
    assert!(special.iter().any(|s| s.as_str().unwrap().contains("15%")), "{special:?}");

    let v = app.get("/api/v1/rates?format=verified&state=TX", None).await;
    assert_eq!(v.status, 200, "{}", v.text);
    let tx = &v.json["states"]["TX"];
    assert_eq!(tx["state_rate"], json!(0.0625));
    assert_eq!(tx["citation"]["url"], json!("https://statutes.capitol.texas.gov/Docs/TX/htm/TX.151.htm#151.051"));
    let ids: Vec<&str> = tx["rule_ids"].as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect();
    assert_eq!(ids, ["tx.sourcing.destination", "tx.taxability.data-processing", "tx.taxability.prewritten-software"]);
    assert_eq!(tx["rules"][1]["cite"].as_str().unwrap().split(',').next().unwrap(), "Tex. Tax Code §151.0035");
    // rules/states/tx.yaml records the day its rate was compared with §151.051(b) ("6-1/4 percent").
    assert_eq!(tx["last_checked"], json!("2026-11-26"));
    assert_eq!(v.json["states"].as_object().unwrap().len(), 1);

    // as_of: California taxes SaaS from 2027-01-01 (SB 122), so d turns true on that day and not the day before.
    let before = app.get("/api/v1/rates?format=compact&state=CA&as_of=2026-12-31", None).await;
    let after = app.get("/api/v1/rates?format=compact&state=CA&as_of=2027-01-01", None).await;
    assert_eq!(before.json["CA"]["d"], json!(false));
    assert_eq!(after.json["CA"]["d"], json!(true));
    // Before the rules' coverage (2024-01-01): no table.
    let early = app.get("/api/v1/rates?as_of=2023-12-31", None).await;
    assert_eq!((early.status, early.code()), (404, "RESOURCE_NOT_FOUND"));
    for bad in ["state=ZZ", "format=tiny", "explain=yes", "as_of=2026-13-01", "as_of=tomorrow"] {
        let r = app.get(&format!("/api/v1/rates?{bad}"), None).await;
        assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{bad}: {}", r.text);
        let field = bad.split('=').next().unwrap();
        assert!(r.errors()[0].starts_with(&format!("{field}:")), "{bad}: {:?}", r.errors());
    }
}

async fn local_rates_by_zip(app: TestApp) {
    let r = app.get("/api/v1/rates/local?zip=78701", None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    // 6.25% + 1% (City of Austin) + 1% (Capital Metro) = 8.25%.
    assert_eq!(r.json["combined_rate"], json!(0.0825));
    assert_eq!(r.json["state_rate"], json!(0.0625));
    assert_eq!(r.json["local_rate"], json!(0.02));
    assert_eq!(r.json["locality"], json!("Austin"));
    assert_eq!(r.json["local_rates_covered"], json!(true));
    let layers: Vec<(String, String, f64)> = r.json["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["level"].as_str().unwrap().into(), l["name"].as_str().unwrap().into(), num(&l["rate"])))
        .collect();
    assert_eq!(
        layers,
        [
            ("city".to_string(), "City of Austin".to_string(), 0.01),
            ("special_district".to_string(), "Capital Metropolitan Transportation Authority (Austin MTA)".to_string(), 0.01)
        ]
    );
    assert!(r.json["layers"][1]["citation"]["cite"].as_str().unwrap().starts_with("Tex. Transp. Code ch. 451"));
    // The same zip in calculate: the same combined rate.
    let a = app.signup("local@example.com").await;
    let c = app
        .post(
            "/api/v1/calculate",
            Some(&a.key),
            &json!({"role": "buyer", "amount": 100, "buyer_state": "TX", "buyer_zip": "78701", "transaction_type": "digital_good", "counterparty_id": "x"}),
        )
        .await;
    assert_eq!(c.json["audit_trail"]["combined_rate"], r.json["combined_rate"]);

    // A Texas zip no table knows (75059, an Irving ZIP newer than the Census and GeoNames tables): Texas from the
    // prefix, the state rate, and the note.
    let u = app.get("/api/v1/rates/local?zip=75059", None).await;
    assert_eq!(u.status, 200, "{}", u.text);
    assert_eq!(u.json["state"], json!("TX"));
    assert_eq!(u.json["combined_rate"], json!(0.0625));
    assert_eq!(u.json["local_rates_covered"], json!(false));
    assert!(u.json["note"].as_str().unwrap().starts_with("local rates are not covered for zip code 75059"), "{}", u.text);
    assert_eq!(u.json["layers"], json!([]));
    // El Paso (79936) has no boundary row; its taxes come from its county and post office (El Paso County 0.5%, the
    // city's 1%, Sun Metro's 0.5%). Texas's tables do not yet hold every local tax, so the answer says so.
    let ep = app.get("/api/v1/rates/local?zip=79936", None).await;
    assert_eq!((num(&ep.json["combined_rate"]), num(&ep.json["local_rate"])), (0.0825, 0.02), "{}", ep.text);
    assert_eq!(ep.json["local_rates_covered"], json!(false));
    assert!(ep.json["note"].as_str().unwrap().starts_with("not every local tax of Texas is in the tables yet"), "{}", ep.text);
    let names: Vec<&str> = ep.json["layers"].as_array().unwrap().iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["El Paso County", "City of El Paso", "El Paso City Transit Department (Sun Metro)"]);
    // Laredo (78040) is held from 2026-01-01 (covered_from): before that, the state rate, not covered, and why.
    let early = app.get("/api/v1/rates/local?zip=78040&as_of=2025-06-01", None).await;
    assert_eq!(early.status, 200, "{}", early.text);
    assert_eq!((num(&early.json["combined_rate"]), early.json["local_rates_covered"].clone()), (0.0625, json!(false)));
    assert!(
        early.json["note"].as_str().unwrap().starts_with("local rates are not covered for zip code 78040 on 2025-06-01"),
        "{}",
        early.text
    );
    let later = app.get("/api/v1/rates/local?zip=78040&as_of=2026-03-01", None).await;
    assert_eq!((num(&later.json["combined_rate"]), later.json["local_rates_covered"].clone()), (0.0825, json!(true)));
    // Oregon (97201, Portland): no sales tax at all, covered as a whole.
    let or = app.get("/api/v1/rates/local?zip=97201", None).await;
    assert_eq!((or.json["state"].clone(), num(&or.json["combined_rate"])), (json!("OR"), 0.0));
    assert_eq!(or.json["local_rates_covered"], json!(true));
    // Chicago: the lease tax is listed apart, not in the combined rate.
    let chi = app.get("/api/v1/rates/local?zip=60601", None).await;
    assert_eq!(chi.json["special_taxes"][0]["rate"], json!(0.15), "{}", chi.text);

    // A ZIP+4 is read as its five digits where no boundary row has a range for it, and echoed as sent.
    let plus4 = app.get("/api/v1/rates/local?zip=78701-1234", None).await;
    assert_eq!(plus4.status, 200, "{}", plus4.text);
    assert_eq!((plus4.json["zip"].clone(), plus4.json["combined_rate"].clone()), (json!("78701-1234"), json!(0.0825)));
    let chi4 = app.get("/api/v1/rates/local?zip=60601-0001", None).await;
    assert_eq!(chi4.json["special_taxes"][0]["rate"], json!(0.15), "{}", chi4.text);
    for bad in ["zip=7870", "zip=abcde", "zip=787011", "", "zip=78701-12", "zip=78701-", "zip=78701-12345"] {
        let r = app.get(&format!("/api/v1/rates/local?{bad}"), None).await;
        assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{bad}: {}", r.text);
        assert!(r.errors()[0].starts_with("zip:"), "{bad}: {:?}", r.errors());
    }
    // Prefix 000 belongs to no state; 009 is Puerto Rico.
    for z in ["00001", "00901"] {
        let r = app.get(&format!("/api/v1/rates/local?zip={z}"), None).await;
        assert_eq!((r.status, r.code()), (404, "RESOURCE_NOT_FOUND"), "{z}: {}", r.text);
    }
}

async fn verify_reports_matches_discrepancies_and_unknown(app: TestApp) {
    let body = json!({
        "agent_id": "checker-1",
        "source": "our 2026 table",
        "source_date": "Q4 2026",
        "rates": {
            "TX": {"rate": 0.0625, "digitalTaxable": true},
            "CA": {"rate": 0.075},
            "ZZ": {"rate": 0.05, "digitalTaxable": false}
        }
    });
    let r = app.post("/api/v1/verify", None, &body).await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.json["matches"], json!(["TX"]));
    assert_eq!(r.json["unknown"], json!(["ZZ"]));
    assert_eq!(r.json["compared"], json!(2));
    assert_eq!(r.json["source"], json!("our 2026 table"));
    assert_eq!(r.json["source_date"], json!("Q4 2026"));
    let d = r.json["discrepancies"].as_array().unwrap();
    assert_eq!(d.len(), 1, "{}", r.text);
    // California's state rate is 7.25% (rules/states/ca.yaml).
    assert_eq!(d[0]["state"], json!("CA"));
    assert_eq!(d[0]["field"], json!("rate"));
    assert_eq!(d[0]["theirs"], json!(0.075));
    assert_eq!(d[0]["ours"], json!(0.0725));
    assert!(d[0]["citation"]["cite"].as_str().unwrap().contains("6051"), "{}", d[0]);

    // A digitalTaxable mismatch names its field: Texas taxes SaaS.
    let r = app.post("/api/v1/verify", None, &json!({"agent_id": "a", "rates": {"tx": {"rate": 0.0625, "digitalTaxable": false}}})).await;
    assert_eq!(r.json["matches"], json!([]));
    assert_eq!(r.json["discrepancies"][0]["field"], json!("digitalTaxable"));
    assert_eq!(r.json["discrepancies"][0]["ours"], json!(true));
    assert_eq!(r.json["discrepancies"][0]["citation"]["cite"].as_str().unwrap().split(',').next().unwrap(), "Tex. Tax Code §151.0035");

    let r = app
        .post("/api/v1/verify", None, &json!({"agent_id": "", "source": "x".repeat(501), "rates": {"TX": {"rate": 1.5, "extra": 1}}}))
        .await;
    assert_eq!((r.status, r.code()), (400, "INVALID_INPUT"), "{}", r.text);
    let mut fields: Vec<String> = r.errors().iter().map(|e| e.split(':').next().unwrap().to_string()).collect();
    fields.sort();
    assert_eq!(fields, ["agent_id", "rates.TX.extra", "rates.TX.rate", "source"], "{:?}", r.errors());
    let r = app.post("/api/v1/verify", None, &json!({"agent_id": "a"})).await;
    assert_eq!(r.errors(), ["rates: is required"]);
}

async fn verify_is_limited_per_address(backend: Backend) {
    let limits = Limits { verify_per_minute: 2, verify_per_day: 4, ..Limits::default() };
    let Some(app) = TestApp::start_with(backend, limits).await else { return };
    let body = json!({"agent_id": "a", "rates": {}}).to_string();
    let call = |ip: &'static str| {
        let app = &app;
        let body = body.clone();
        async move { app.request("POST", "/api/v1/verify", None, &[("X-Forwarded-For", ip)], Some(&body)).await }
    };
    let first = call("203.0.113.7").await;
    assert_eq!(first.status, 200, "{}", first.text);
    // Even a refused body counts.
    let bad = app.request("POST", "/api/v1/verify", None, &[("X-Forwarded-For", "203.0.113.7")], Some("{}")).await;
    assert_eq!(bad.status, 400);
    let third = call("203.0.113.7").await;
    assert_eq!((third.status, third.code()), (429, "RATE_LIMITED"));
    // The minute window ends 60 s after 10:00:00.
    assert_eq!(third.header("Retry-After").as_deref(), Some("60"));
    // Another address has its own windows.
    assert_eq!(call("203.0.113.8").await.status, 200);
    // The next minute: the day's fourth call passes (the refused third counted too), the fifth is past the day's 4.
    app.clock.advance_ms(60_000);
    assert_eq!(call("203.0.113.7").await.status, 200);
    let day = call("203.0.113.7").await;
    assert_eq!((day.status, day.code()), (429, "RATE_LIMITED"));
    // 2026-11-21 10:01:00 to midnight UTC: 13 h 59 min = 50,340 s.
    assert_eq!(day.header("Retry-After").as_deref(), Some("50340"));
}

async fn public_reads_are_cacheable(app: TestApp) {
    for path in ["/api/v1/rates?format=compact", "/api/v1/rates/local?zip=78701", "/api/v1/rates/capital-gains?format=compact"] {
        let first = app.get(path, None).await;
        assert_eq!(first.status, 200, "{path}");
        let tag = first.header("ETAG").expect("an ETag");
        assert!(tag.starts_with(&format!("\"{}-", app.state.registry.version)), "{tag}");
        assert_eq!(first.header("Cache-Control").as_deref(), Some("public, max-age=3600"));
        let again = app.request("GET", path, None, &[("If-None-Match", &tag)], None).await;
        assert_eq!(again.status, 304, "{path}");
        assert_eq!(again.text, "");
        assert_eq!(again.header("ETAG").as_deref(), Some(tag.as_str()));
        let stale = app.request("GET", path, None, &[("If-None-Match", "\"0.0.0-000000\"")], None).await;
        assert_eq!(stale.status, 200, "{path}");
        assert_eq!(stale.text, first.text);
    }
    // Another query, another representation, another tag.
    let a = app.get("/api/v1/rates?format=compact&state=TX", None).await.header("ETAG");
    let b = app.get("/api/v1/rates?format=compact&state=CA", None).await.header("ETAG");
    assert_ne!(a, b);
}

async fn the_document_states_the_verify_bounds(app: TestApp) {
    use levy::api::schema::rates::{AGENT_ID_MAX, RATES_MAX, SOURCE_DATE_MAX, SOURCE_MAX};
    let doc = app.get("/api/v1/openapi.json", None).await.json;
    let req = &doc["components"]["schemas"]["VerifyRatesRequest"]["properties"];
    assert_eq!(req["agent_id"]["maxLength"], json!(AGENT_ID_MAX));
    assert_eq!(req["agent_id"]["minLength"], json!(1));
    assert_eq!(req["source"]["maxLength"], json!(SOURCE_MAX));
    assert_eq!(req["source_date"]["maxLength"], json!(SOURCE_DATE_MAX));
    assert_eq!(req["rates"]["maxProperties"], json!(RATES_MAX));
    let entry = &doc["components"]["schemas"]["VerifyRateEntry"];
    assert_eq!((entry["properties"]["rate"]["minimum"].clone(), entry["properties"]["rate"]["maximum"].clone()), (json!(0.0), json!(1.0)));
    assert_eq!(entry["additionalProperties"], json!(false));
    let zip =
        doc["paths"]["/api/v1/rates/local"]["get"]["parameters"].as_array().unwrap().iter().find(|p| p["name"] == "zip").unwrap().clone();
    assert_eq!(zip["schema"]["pattern"], json!(levy::api::schema::pattern::ZIP_PATTERN));
    assert_eq!(levy::api::schema::pattern::ZIP_PATTERN, "^[0-9]{5}(-[0-9]{4})?$");
    let h = &doc["paths"]["/api/v1/rates"]["get"]["responses"]["200"]["headers"];
    assert!(h.get("ETAG").is_some() && h.get("CACHE-CONTROL").is_some(), "{h}");
    assert!(doc["paths"]["/api/v1/rates/capital-gains"]["get"]["responses"].get("304").is_some());
}

on_both!(table_and_compact_agree_with_calculate);
on_both!(one_state_explain_verified_and_as_of);
on_both!(local_rates_by_zip);
on_both!(verify_reports_matches_discrepancies_and_unknown);
on_both!(public_reads_are_cacheable);
on_both!(the_document_states_the_verify_bounds);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_is_limited_per_address_sqlite() {
    verify_is_limited_per_address(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_is_limited_per_address_postgres() {
    verify_is_limited_per_address(Backend::Postgres).await;
}
