//! Federal and state estimates against the published tables (Rev. Procs. 2023-34, 2024-40, 2025-32; §1411;
//! §11(b); the state statutes cited in rules/gains/states), worked by hand; and the rule checker on a
//! malformed gains file.

mod common;

use std::sync::OnceLock;

use chrono::NaiveDate;
use levy::gains::estimate::{estimate, Gains, Profile};
use levy::gains::EntityType;
use levy::rules::{load_dir, Registry};
use poem_openapi::types::ToJSON;
use rust_decimal::Decimal;
use serde_json::Value;

fn registry() -> &'static Registry {
    static REG: OnceLock<Registry> = OnceLock::new();
    REG.get_or_init(|| load_dir(&common::rules_dir()).0.expect("rules/ checks clean"))
}

fn dec(x: f64) -> Decimal {
    Decimal::try_from(x).unwrap()
}

fn day(y: i32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, 6, 30).unwrap()
}

fn status(s: &str) -> Option<usize> {
    ["single", "mfj", "mfs", "hoh"].iter().position(|x| *x == s)
}

fn run(year: i32, st: f64, lt: f64, entity: Option<EntityType>, filing: Option<&str>, income: Option<f64>, state: Option<&str>) -> Value {
    let p = Profile {
        entity,
        filing_status: filing.and_then(status),
        income: income.map(dec),
        state: state.and_then(levy::rules::schema::state_index),
    };
    // The estimates as the API writes them.
    let estimates = estimate(&registry().gains, Gains { short_term: dec(st), long_term: dec(lt) }, &p, day(year));
    levy::api::schema::gains::Estimates::from(estimates).to_json().unwrap_or_default()
}

fn f(v: &Value, k: &str) -> f64 {
    v[k].as_f64().unwrap_or_else(|| panic!("{k} missing in {v}"))
}

#[test]
fn individual_by_filing_status_and_year() {
    // single 2026: income 80,000 − 16,100 = 63,900 taxable. ST 19 in the 22% bracket (50,400–105,700) = 4.18;
    // LT 285 stacked from 63,919, above the 0% bound 49,450 and under 545,500: 15% = 42.75. MAGI under 200k: no NIIT.
    let e = run(2026, 19.0, 285.0, None, Some("single"), Some(80_000.0), None);
    let fed = &e["federal"];
    assert_eq!(
        (f(fed, "ordinary_tax"), f(fed, "long_term_tax"), f(fed, "net_investment_income_tax"), f(fed, "total_tax")),
        (4.18, 42.75, 0.0, 46.93)
    );
    assert_eq!((fed["method"].as_str(), fed["tax_year"].as_i64()), (Some("bracket_aware"), Some(2026)));

    // mfj 2025: income 300,000 − 31,500 (OBBBA) = 268,500; LT 100,000 fills 268,500–368,500, all at 15% (bound
    // 600,050) = 15,000. NIIT: MAGI 400,000 − 250,000 = 150,000 ≥ 100,000 of gain → 3.8% × 100,000 = 3,800.
    let fed = &run(2025, 0.0, 100_000.0, Some(EntityType::Individual), Some("mfj"), Some(300_000.0), None)["federal"];
    assert_eq!((f(fed, "long_term_tax"), f(fed, "net_investment_income_tax"), f(fed, "total_tax")), (15_000.0, 3_800.0, 18_800.0));

    // mfs 2024: income 150,000 − 14,600 = 135,400; ST 20,000 to 155,400, inside the 24% bracket (100,525–191,950)
    // = 4,800. NIIT: MAGI 170,000 − 125,000 = 45,000, more than the 20,000 gain → 760. Total 5,560.
    let fed = &run(2024, 20_000.0, 0.0, None, Some("mfs"), Some(150_000.0), None)["federal"];
    assert_eq!((f(fed, "ordinary_tax"), f(fed, "net_investment_income_tax"), f(fed, "total_tax")), (4_800.0, 760.0, 5_560.0));

    // hoh 2026: income 40,000 − 24,150 = 15,850; LT 30,000 up to 45,850, under the 0% bound 66,200: no tax.
    let fed = &run(2026, 0.0, 30_000.0, None, Some("hoh"), Some(40_000.0), None)["federal"];
    assert_eq!((f(fed, "long_term_tax"), f(fed, "total_tax")), (0.0, 0.0));

    // single 2026 across the 0% bound: income 50,000 → 33,900; LT 20,000 to 53,900: 15,550 at 0%, 4,450 at 15% = 667.50.
    let fed = &run(2026, 0.0, 20_000.0, None, Some("single"), Some(50_000.0), None)["federal"];
    assert_eq!(f(fed, "total_tax"), 667.5);

    // A short-term loss first offsets long-term gain (§1222): ST −1,000, LT 5,000 → 4,000 of net capital gain.
    let fed = &run(2026, -1_000.0, 5_000.0, None, Some("single"), Some(80_000.0), None)["federal"];
    assert_eq!((f(fed, "net_capital_gain"), f(fed, "long_term_tax")), (4_000.0, 600.0));

    // A net loss: at most 3,000 offsets ordinary income (§1211(b)). Single 2026 income 100,000 → 83,900 taxable;
    // less 3,000 = 80,900, both in the 22% bracket: −660.
    let fed = &run(2026, -5_000.0, 0.0, None, Some("single"), Some(100_000.0), None)["federal"];
    assert_eq!(f(fed, "total_tax"), -660.0);

    // Without income: the ceiling, ST at 37% and LT at 20%: 1,000 → 370 and 1,000 → 200.
    let fed = &run(2026, 1_000.0, 1_000.0, None, None, None, None)["federal"];
    assert_eq!((fed["method"].as_str(), f(fed, "total_tax")), (Some("top_marginal_rates"), 570.0));
    assert!(fed["assumptions"].to_string().contains("filing_status not given: single"));

    // No figures for 2027 yet: said so, not guessed.
    let fed = &run(2027, 1_000.0, 0.0, None, Some("single"), Some(1.0), None)["federal"];
    assert_eq!(fed["available"], Value::Bool(false));
}

#[test]
fn entities() {
    // C corporation: 21% of 10,000 = 2,100, whatever the term; a net loss has no current effect.
    let fed = &run(2026, 4_000.0, 6_000.0, Some(EntityType::CCorp), None, None, Some("CA"));
    assert_eq!((f(&fed["federal"], "total_tax"), fed["federal"]["method"].as_str()), (2_100.0, Some("corporate_flat_rate")));
    assert_eq!(fed["state"]["available"], Value::Bool(false));
    assert_eq!(f(&run(2026, -500.0, 0.0, Some(EntityType::CCorp), None, None, None)["federal"], "total_tax"), 0.0);
    // Pass-through: no entity tax without the owner's figures; with them, the individual estimate (46.93 above).
    let fed = &run(2026, 19.0, 285.0, Some(EntityType::PassThrough), None, None, None)["federal"];
    assert_eq!((fed["method"].as_str(), f(fed, "total_tax")), (Some("pass_through_no_entity_tax"), 0.0));
    let fed = &run(2026, 19.0, 285.0, Some(EntityType::PassThrough), Some("single"), Some(80_000.0), None)["federal"];
    assert_eq!((fed["entity_type"].as_str(), f(fed, "total_tax")), (Some("pass_through"), 46.93));
    assert!(fed["assumptions"].to_string().contains("taxed to its owners"));
}

#[test]
fn states() {
    let st =
        |year, s: f64, l: f64, income: Option<f64>, code: &str| run(year, s, l, None, Some("single"), income, Some(code))["state"].clone();
    // WA 2026: excise on long-term only; 300,000 − 278,000 deduction = 22,000 × 7% = 1,540. Short-term untaxed.
    let wa = st(2026, 50_000.0, 300_000.0, None, "WA");
    assert_eq!((f(&wa, "taxable_short_term"), f(&wa, "taxable_long_term"), f(&wa, "total_tax")), (0.0, 22_000.0, 1_540.0));
    // WA 2026 over 1M: 1,500,000 − 278,000 = 1,222,000 × 7% = 85,540, plus 2.9% of 222,000 = 6,438 → 91,978.
    let wa = st(2026, 0.0, 1_500_000.0, None, "WA");
    assert_eq!((f(&wa, "tax"), f(&wa, "surtax"), f(&wa, "total_tax")), (85_540.0, 6_438.0, 91_978.0));
    // WA 2024: 7% only, deduction 270,000: 300,000 → 2,100.
    assert_eq!(f(&st(2024, 0.0, 300_000.0, None, "WA"), "total_tax"), 2_100.0);
    // MA: short-term 8.5%, long-term 5%: 1,000 each → 85 + 50 = 135.
    assert_eq!(f(&st(2026, 1_000.0, 1_000.0, Some(50_000.0), "MA"), "total_tax"), 135.0);
    // MA surtax 4% on income over 1,107,750 (2026): income 2,000,000 + 100,000 LT → 5,000 + 4,000 = 9,000.
    let ma = st(2026, 0.0, 100_000.0, Some(2_000_000.0), "MA");
    assert_eq!((f(&ma, "tax"), f(&ma, "surtax")), (5_000.0, 4_000.0));
    // HI caps long-term at 7.25% (11% top rate): 10,000 → 725.  WI excludes 30%: 10,000 × 0.7 × 7.65% = 535.50.
    assert_eq!(f(&st(2026, 0.0, 10_000.0, None, "HI"), "total_tax"), 725.0);
    assert_eq!(f(&st(2026, 0.0, 10_000.0, None, "WI"), "total_tax"), 535.5);
    // TX: no tax on gains.
    let tx = st(2026, 5_000.0, 5_000.0, None, "TX");
    assert_eq!((tx["treatment"].as_str(), f(&tx, "total_tax")), (Some("none"), 0.0));
    // GA's flat rate by year: 5.39% (2024), 5.19% (2025), 4.99% (2026) on 10,000.
    assert_eq!([2024, 2025, 2026].map(|y| f(&st(y, 10_000.0, 0.0, None, "GA"), "total_tax")), [539.0, 519.0, 499.0]);
}

#[test]
fn a_malformed_gains_file_gets_located_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    common::copy_dir(&common::rules_dir(), dir.path());
    let path = dir.path().join("gains/states/wi.yaml");
    let text = std::fs::read_to_string(&path).unwrap().replacen("long_term_exclusion: 30%", "long_term_exclusoin: 30%", 1);
    std::fs::write(&path, text).unwrap();
    let (reg, diags, _) = load_dir(dir.path());
    assert!(reg.is_none());
    let d = diags.iter().find(|d| d.message.contains("long_term_exclusoin")).expect("a diagnostic for the misspelt key");
    let span = d.span.as_ref().unwrap();
    assert!(span.file.ends_with("gains/states/wi.yaml"), "{}", span.file);
    assert!(span.line > 1 && span.col > 1);
    assert!(d.help.as_deref().unwrap_or("").contains("long_term_exclusion"), "{:?}", d.help);
}
