//! The engine end to end on the real rules: the full and demo bodies snapshotted for a
//! representative set, request validation, money at the limits, and as_of dating.

mod common;

use std::collections::BTreeMap;
use std::sync::OnceLock;

use chrono::NaiveDate;
use levy::engine::{self, render, EngineError};
use levy::rules::{load_dir, Registry};
use rust_decimal::Decimal;
use serde_json::{json, Value};

fn registry() -> &'static Registry {
    static REG: OnceLock<Registry> = OnceLock::new();
    REG.get_or_init(|| load_dir(&common::rules_dir()).0.expect("rules/ checks clean"))
}

fn day(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

fn run(body: Value, nexus: &[&str], as_of: &str) -> Result<engine::Determination, EngineError> {
    let req = levy::api::schema::calculate::read_request(&body).map_err(EngineError::Input)?;
    let map: BTreeMap<usize, bool> = nexus.iter().filter_map(|s| levy::rules::schema::state_index(s)).map(|i| (i, true)).collect();
    let nexus = if nexus.is_empty() { None } else { Some(&map) };
    engine::determine(registry(), &engine::Input { request: &req, nexus, vendor_ytd: None, as_of: day(as_of) })
}

#[test]
fn representative_full_determinations() {
    let _g = common::snapshot_settings().bind_to_scope();
    let cases = [
        (
            "full_tx_saas_austin",
            json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "transaction_type": "saas", "counterparty_id": "acme"}),
            vec!["TX"],
            "2026-03-01",
        ),
        (
            "full_md_b2b_enterprise",
            json!({"amount": 1000, "buyer_state": "MD", "transaction_type": "saas", "is_b2b": true, "use_context": "enterprise_system", "counterparty_id": "acme"}),
            vec!["MD"],
            "2026-03-01",
        ),
        (
            "full_chicago_no_nexus",
            json!({"amount": 1000, "buyer_state": "IL", "buyer_zip": "60601", "transaction_type": "saas", "counterparty_id": "acme"}),
            vec![],
            "2026-03-01",
        ),
        (
            "full_az_declared_consulting",
            json!({"amount": 500, "buyer_state": "AZ", "work_type": "consulting", "counterparty_id": "acme"}),
            vec!["AZ"],
            "2026-05-01",
        ),
        (
            "full_buyer_use_tax_ny",
            json!({"amount": 250, "role": "buyer", "buyer_state": "NY", "transaction_type": "saas", "counterparty_id": "vendor-9"}),
            vec![],
            "2026-03-01",
        ),
        (
            "full_custom_software_incomplete_tx",
            json!({"amount": 1000, "buyer_state": "TX", "work_type": "custom_software", "counterparty_id": "acme"}),
            vec!["TX"],
            "2026-03-01",
        ),
        (
            "full_trading",
            json!({"amount": 1000, "buyer_state": "CA", "work_type": "trading", "counterparty_id": "acme"}),
            vec!["CA"],
            "2026-03-01",
        ),
    ];
    for (name, body, nexus, as_of) in cases {
        let det = run(body, &nexus, as_of).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        insta::assert_json_snapshot!(name, render::full(&det));
    }
    let det = run(
        json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "transaction_type": "saas", "counterparty_id": "acme"}),
        &[],
        "2026-03-01",
    )
    .unwrap();
    let demo: serde_json::Value = serde_json::from_str(&render::demo(&det, &[], None)).unwrap();
    insta::assert_json_snapshot!("demo_tx_saas_austin_no_nexus", demo);
}

#[test]
fn texas_data_processing_is_taxed_on_80_percent_at_the_combined_rate() {
    let det = run(
        json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "transaction_type": "saas", "counterparty_id": "c"}),
        &["TX"],
        "2026-03-01",
    )
    .unwrap();
    assert_eq!(det.combined_rate, Decimal::new(825, 4)); // 6.25% + 1% Austin + 1% Capital Metro
    assert_eq!(det.total_tax, Decimal::new(6600, 2)); // 1000 × 80% × 8.25%
    assert_eq!(det.jurisdiction, "Austin, TX");
}

#[test]
fn a_seller_without_nexus_owes_nothing_but_learns_what_it_would_owe() {
    let det = run(
        json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "transaction_type": "saas", "counterparty_id": "c"}),
        &[],
        "2026-03-01",
    )
    .unwrap();
    assert_eq!(det.total_tax, Decimal::ZERO);
    assert_eq!(det.final_determination, "no_nexus");
    assert_eq!(det.tax_if_nexus, Some(Decimal::new(6600, 2)));
    assert!(det.advisory_codes().contains(&"NEXUS_WARNING"));
    assert!(!det.nexus_configured);
}

#[test]
fn the_chicago_lease_tax_applies_without_nexus_at_its_dated_rate() {
    for (as_of, expected) in [("2024-06-01", 9000), ("2025-06-01", 11000), ("2026-06-01", 15000)] {
        let det = run(
            json!({"amount": 1000, "buyer_state": "IL", "buyer_zip": "60601", "transaction_type": "saas", "counterparty_id": "c"}),
            &[],
            as_of,
        )
        .unwrap();
        assert_eq!(det.special_total, Decimal::new(expected, 2), "as of {as_of}");
        assert_eq!(det.total_tax, Decimal::new(expected, 2), "as of {as_of}");
    }
}

#[test]
fn the_1099_threshold_follows_the_tax_year() {
    let body = json!({"amount": 700, "role": "buyer", "buyer_state": "OR", "transaction_type": "consulting", "counterparty_id": "v"});
    let d2025 = run(body.clone(), &[], "2025-06-01").unwrap();
    let t = d2025.tracking_1099.unwrap();
    assert_eq!((t.threshold, t.threshold_exceeded, t.form_required.as_deref()), (Decimal::from(600), true, Some("1099-NEC")));
    let d2026 = run(body, &[], "2026-06-01").unwrap();
    let t = d2026.tracking_1099.unwrap();
    assert_eq!((t.threshold, t.threshold_exceeded), (Decimal::from(2000), false));
    let over =
        run(json!({"amount": 700, "buyer_state": "OR", "counterparty_id": "v", "vendor_ytd_override": "1300"}), &[], "2026-06-01").unwrap();
    assert_eq!(over.tracking_1099.unwrap().vendor_ytd_total, Decimal::from(2000));
}

#[test]
fn the_largest_amount_computes_and_rounding_is_half_away_from_zero() {
    let det = run(
        json!({"amount": "100000000", "buyer_state": "TX", "buyer_zip": "78701", "transaction_type": "license", "counterparty_id": "c"}),
        &["TX"],
        "2026-03-01",
    )
    .unwrap();
    assert_eq!(det.total_tax, Decimal::from(8_250_000));
    // 0.06 × 6.25% = 0.00375 → 0.00; 0.08 × 6.25% = 0.005 → 0.01 (half away from zero).
    let det =
        run(json!({"amount": 0.08, "buyer_state": "TX", "transaction_type": "license", "counterparty_id": "c"}), &["TX"], "2026-03-01")
            .unwrap();
    assert_eq!(det.total_tax, Decimal::new(1, 2));
}

#[test]
fn malformed_requests_name_every_bad_field() {
    let body = json!({"amount": -5, "buyer_state": "XX", "buyer_zip": "7870", "transaction_type": "saass", "counterparty_id": "bad id!", "colour": "red", "is_b2b": "yes"});
    let Err(EngineError::Input(errs)) = run(body, &[], "2026-03-01") else { panic!("must be rejected") };
    let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
    for f in ["amount", "buyer_state", "buyer_zip", "transaction_type", "counterparty_id", "colour", "is_b2b"] {
        assert!(fields.contains(&f), "{f} missing from {fields:?}");
    }
    for zip in ["78701-12", "78701-", "78701 1234", "7870-11234", "78701-123a"] {
        let Err(EngineError::Input(errs)) =
            run(json!({"amount": 1, "buyer_state": "TX", "buyer_zip": zip, "counterparty_id": "c"}), &[], "2026-03-01")
        else {
            panic!("{zip} must be refused")
        };
        assert_eq!(errs[0].field, "buyer_zip", "{zip}");
    }
    let plus4 = run(json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701-1234", "counterparty_id": "c"}), &["TX"], "2026-03-01")
        .unwrap();
    assert_eq!(plus4.combined_rate, "0.0825".parse::<Decimal>().unwrap(), "a ZIP+4 without boundary rows answers as its five digits");
    let tt = errs.iter().find(|e| e.field == "transaction_type").unwrap();
    assert!(tt.message.contains("did you mean `saas`"), "{}", tt.message);
    let Err(EngineError::Input(errs)) =
        run(json!({"amount": 100000000.01, "buyer_state": "TX", "counterparty_id": "c"}), &[], "2026-03-01")
    else {
        panic!()
    };
    assert_eq!(errs[0].field, "amount");
}

#[test]
fn an_origin_sourced_intrastate_sale_needs_the_seller_zip() {
    let Err(EngineError::Input(errs)) = run(
        json!({"amount": 100, "buyer_state": "TX", "seller_state": "TX", "buyer_zip": "78701", "counterparty_id": "c"}),
        &["TX"],
        "2026-03-01",
    ) else {
        panic!()
    };
    assert_eq!(errs[0].field, "seller_zip");
}

#[test]
fn the_same_registry_answers_for_2025_2026_and_2027() {
    let body = json!({"amount": 1000, "buyer_state": "CA", "transaction_type": "saas", "counterparty_id": "c"});
    let d2026 = run(body.clone(), &["CA"], "2026-12-31").unwrap();
    let d2027 = run(body, &["CA"], "2027-01-01").unwrap();
    assert_eq!(d2026.total_tax, Decimal::ZERO);
    assert_eq!(d2027.total_tax, Decimal::new(7250, 2)); // 1000 × 7.25% statewide rate, SB 122
}

/// `levy rules explain` reports the engine's input errors as a rejected request naming the field (exit 1), and
/// a date before the rules as the `--as-of` it came from.
#[test]
fn explain_reports_engine_input_errors_as_a_rejected_request() {
    let rules = common::rules_dir();
    let explain = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_levy"))
            .args(["rules", "explain", "--rules"])
            .arg(&rules)
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let (code, stdout, stderr) =
        explain(&["--as-of", "2026-03-01", "--request", r#"{"amount":100,"buyer_state":"UT","seller_state":"UT","counterparty_id":"c"}"#]);
    assert_eq!((code, stdout.as_str()), (Some(1), ""));
    assert!(
        stderr.starts_with(
            "the request was rejected:\n  seller_zip: is required: intrastate sales in UT are sourced to the seller's location ("
        ),
        "{stderr}"
    );
    let (code, _, stderr) = explain(&["--as-of", "2023-12-31", "--request", r#"{"amount":100,"buyer_state":"WA","counterparty_id":"c"}"#]);
    assert_eq!(
        (code, stderr.as_str()),
        (Some(1), "the request was rejected:\n  --as-of: 2023-12-31 is before the first date the rules cover (2024-01-01)\n")
    );
}

/// The rules compiled into the binary are the repository's rule files, byte for byte (its scenario tests
/// aside), and load as the same registry.
#[test]
fn the_compiled_in_rules_are_the_rule_files() {
    fn rule_files(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            if path.is_dir() && rel != "tests" {
                rule_files(root, &path, out);
            } else if rel.ends_with(".yaml") || rel.ends_with(".csv") {
                out.push(rel);
            }
        }
    }
    let root = common::rules_dir();
    let mut on_disk = Vec::new();
    rule_files(&root, &root, &mut on_disk);
    on_disk.sort();
    let compiled: Vec<String> = levy::rules::embedded::FILES.iter().map(|(p, _)| p.to_string()).collect();
    assert_eq!(compiled, on_disk);
    assert!(["states/tx.yaml", "gains/federal.yaml", "local/tx.csv", "geo/zip_county.csv"]
        .iter()
        .all(|f| compiled.contains(&f.to_string())));
    for (rel, bytes) in levy::rules::embedded::FILES {
        assert_eq!(*bytes, std::fs::read(root.join(rel)).unwrap().as_slice(), "{rel}");
    }
    let reg = levy::server::configured_rules(None).expect("the compiled-in rules load");
    assert_eq!((reg.version.as_str(), reg.coverage_from), (registry().version.as_str(), registry().coverage_from));
}

/// Started outside the repository with no rules named, the binary uses its compiled-in rules; a directory named
/// with LEVY_RULES is still loaded and checked, and one that is not there stops it.
#[test]
fn the_binary_runs_from_anywhere() {
    let elsewhere = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_levy"))
        .arg("openapi")
        .current_dir(elsewhere.path())
        .env_remove("LEVY_RULES")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["info"]["version"], json!("1.5.0"));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_levy"))
        .arg("openapi")
        .current_dir(elsewhere.path())
        .env("LEVY_RULES", common::rules_dir())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let missing = elsewhere.path().join("rules");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_levy"))
        .arg("openapi")
        .current_dir(elsewhere.path())
        .env("LEVY_RULES", &missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with(&format!("error: no rules directory at {}", missing.display())),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `levy rules explain --request` reads a YAML request file as it reads the same request in JSON, and names the
/// file and line of a request that is neither.
#[test]
fn explain_reads_a_yaml_request_file() {
    let rules = common::rules_dir();
    let tmp = tempfile::tempdir().unwrap();
    let explain = |request: &str| {
        let args = ["--as-of", "2026-03-01", "--nexus", "WA", "--json", "--request", request];
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_levy"))
            .args(["rules", "explain", "--rules"])
            .arg(&rules)
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string())
    };
    let yaml = tmp.path().join("request.yaml");
    std::fs::write(&yaml, "# a sale into Seattle\namount: 1000.50\nbuyer_state: WA\nbuyer_zip: \"98101\"\ntransaction_type: saas\ncounterparty_id: c-1\nis_b2b: true\nnexus_override:\n  WA: {hasNexus: true}\n").unwrap();
    let from_json = explain(
        r#"{"amount":1000.50,"buyer_state":"WA","buyer_zip":"98101","transaction_type":"saas","counterparty_id":"c-1","is_b2b":true,"nexus_override":{"WA":{"hasNexus":true}}}"#,
    );
    let from_yaml = explain(yaml.to_str().unwrap());
    assert_eq!(from_json.0, Some(0), "{}", from_json.2);
    assert_eq!(from_yaml, from_json);
    let body: Value = serde_json::from_str(&from_yaml.1).unwrap();
    assert_eq!((body["buyer_zip"].as_str(), body["is_b2b"].as_bool()), (Some("98101"), Some(true)));

    let bad = tmp.path().join("bad.yaml");
    std::fs::write(&bad, "amount: 100\nbuyer_state: [WA\n").unwrap();
    let (code, stdout, stderr) = explain(bad.to_str().unwrap());
    assert_eq!((code, stdout.as_str()), (Some(2), ""));
    assert!(stderr.starts_with("error: the request is neither JSON nor YAML:\nerror[R001]: invalid YAML"), "{stderr}");
    assert!(stderr.contains("bad.yaml:"), "{stderr}");
}

/// A zip entry that says it spans jurisdictions: its locality's layers apply, and the answer says the zip is split.
#[test]
fn a_split_zip_uses_its_main_city_and_says_so() {
    let (_keep, rules) = common::rules_copy();
    let file = rules.join("local/tx.notes.yaml");
    std::fs::write(&file, "jurisdiction: TX\nzips:\n  \"78701\":\n    split: \"unincorporated Travis County (made up for the test)\"\n")
        .unwrap();
    let reg = load_dir(&rules).0.expect("a split zip loads");
    let tx = levy::rules::schema::state_index("TX").unwrap();
    assert_eq!(reg.local.entry("78701", tx).unwrap().split(), Some("unincorporated Travis County (made up for the test)"));
    let body = json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": "78701", "transaction_type": "saas", "counterparty_id": "c"});
    let req = levy::api::schema::calculate::read_request(&body).unwrap();
    let nexus: BTreeMap<usize, bool> = [(levy::rules::schema::state_index("TX").unwrap(), true)].into();
    let input = engine::Input { request: &req, nexus: Some(&nexus), vendor_ytd: None, as_of: day("2026-03-01") };
    let split = engine::determine(&reg, &input).unwrap();
    let whole = engine::determine(registry(), &input).unwrap();
    // The same tax (Austin's layers: 800 × 8.25% = 66.00), the advisory, and 10 points less confidence.
    assert_eq!((split.total_tax, whole.total_tax), (Decimal::new(6600, 2), Decimal::new(6600, 2)));
    assert!(split.advisory_codes().contains(&"ZIP_SPANS_JURISDICTIONS"), "{:?}", split.advisory_codes());
    assert!(!whole.advisory_codes().contains(&"ZIP_SPANS_JURISDICTIONS"));
    assert_eq!(whole.confidence_score - split.confidence_score, 10);
    assert!(split.confidence_factors.iter().any(|f| f.starts_with("zip 78701 spans jurisdictions (unincorporated Travis County")));

    // An empty split is a located error.
    let text = std::fs::read_to_string(&file).unwrap().replacen(
        "split: \"unincorporated Travis County (made up for the test)\"",
        "split: \"\"",
        1,
    );
    std::fs::write(&file, text).unwrap();
    let (reg, diags, _) = load_dir(&rules);
    assert!(reg.is_none());
    assert!(diags.iter().any(|d| d.code == "R102" && d.message.contains("78701")), "{diags:#?}");
}

/// Every zip code of the Census and GeoNames tables is answered: with local layers, or with an explicit coverage that
/// says what the answer holds. A zip of a state marked `complete` is whole; a zip with boundary rows in force is
/// whole; the others in a state with local taxes say they are partial, never silently the state rate.
#[test]
fn every_zip_code_of_the_tables_is_answered_truthfully() {
    use levy::engine::determine::LocalCoverage;
    use levy::engine::table;
    use levy::rules::places::{Coverage, Placed};
    let reg = registry();
    let on = day("2026-03-15");
    let (mut zips, mut probed) = (0, 0);
    let mut by_coverage: BTreeMap<&str, usize> = BTreeMap::new();
    for e in &reg.local.entries {
        let zip = &e.zip();
        {
            zips += 1;
            let a = reg.local.answer(e, None, on);
            let complete = reg.local.complete_on(e.state(), on);
            match (e.placed, a.coverage) {
                (Placed::Rows, c) => assert!(matches!(c, Coverage::Whole | Coverage::From(_)), "{zip}: {c:?}"),
                (Placed::Derived, Coverage::Whole) => assert!(complete, "{zip}: whole in a state not complete"),
                (Placed::Derived, Coverage::Partial) => assert!(!complete, "{zip}: partial in a complete state"),
                (Placed::Derived, c) => panic!("{zip}: derived with {c:?}"),
            }
            // One zip in 40 through the whole determination (what calculate and /rates/local answer).
            if zips % 40 == 0 {
                probed += 1;
                let det = table::probe(reg, e.state(), table::SAAS, Some(zip), on).unwrap();
                let local_taxes = reg.jurisdiction(e.state()).unwrap().local_taxes.iter().any(|d| d.covers(on) && d.value);
                let expected = match (local_taxes, a.coverage) {
                    (false, _) => LocalCoverage::NoLocalTax,
                    (true, Coverage::Whole) => LocalCoverage::Whole,
                    (true, Coverage::Partial) => LocalCoverage::Partial,
                    (true, Coverage::From(_)) => LocalCoverage::NotOnDate,
                };
                assert_eq!(det.local_coverage, expected, "{zip}");
                let applied = match a.coverage {
                    _ if !local_taxes => Decimal::ZERO,
                    Coverage::From(_) => Decimal::ZERO,
                    _ => a.part.rate,
                };
                assert_eq!(det.local_rate, applied, "{zip}: the determination applies the answer's layers");
                *by_coverage.entry(if det.local_coverage.is_whole() { "whole" } else { "partial" }).or_default() += 1;
            }
        }
    }
    assert!(zips > 40_000, "{zips} zip codes");
    assert!(probed > 1_000 && by_coverage.len() == 2, "{by_coverage:?}");
}

/// Calculate reads a ZIP+4 in `buyer_zip`: the add-on selects the boundary rows whose range holds it, so the answer is
/// exact and names no split; the five digits alone get the higher part, the other named, and the advisory. (In a copy
/// of the rules, 78701's row is cut in two made-up halves: 0000-4999 Austin and Capital Metro, 5000-9999 Austin alone.)
#[test]
fn calculate_answers_a_zip_plus_4_exactly() {
    let (_keep, rules) = common::rules_copy();
    let path = rules.join("local/tx.csv");
    let whole = "78701,,tx.austin tx.capital-metropolitan-transportation-authority,1985-07-01,\n";
    let halves =
        "78701,0000-4999,tx.austin tx.capital-metropolitan-transportation-authority,1985-07-01,\n78701,5000-9999,tx.austin,1985-07-01,\n";
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(whole));
    std::fs::write(&path, text.replace(whole, halves)).unwrap();
    let reg = load_dir(&rules).0.expect("the halves load");
    let calculate = |zip: &str| {
        let body =
            json!({"amount": 1000, "buyer_state": "TX", "buyer_zip": zip, "transaction_type": "digital_good", "counterparty_id": "c"});
        let req = levy::api::schema::calculate::read_request(&body).unwrap();
        let nexus: BTreeMap<usize, bool> = [(levy::rules::schema::state_index("TX").unwrap(), true)].into();
        engine::determine(&reg, &engine::Input { request: &req, nexus: Some(&nexus), vendor_ytd: None, as_of: day("2026-03-01") }).unwrap()
    };
    let spans = |d: &engine::Determination| d.advisories.iter().any(|a| a.code == "ZIP_SPANS_JURISDICTIONS");
    let pct = |s: &str| s.parse::<Decimal>().unwrap() / Decimal::from(100);
    // 78701-1234: 6.25% + Austin 1% + Capital Metro 1% = 8.25%, 82.50 on 1,000.
    let low = calculate("78701-1234");
    assert_eq!((low.local_rate, low.combined_rate, low.total_tax), (pct("2"), pct("8.25"), Decimal::new(8250, 2)));
    assert!(low.split.is_none() && !spans(&low), "{:?}", low.split);
    // 78701-6000: 6.25% + Austin 1% = 7.25%, 72.50.
    let high = calculate("78701-6000");
    assert_eq!((high.local_rate, high.total_tax), (pct("1"), Decimal::new(7250, 2)));
    assert!(high.split.is_none() && !spans(&high));
    // 78701 alone: the higher part, 8.25%, and the other half named with its rate.
    let five = calculate("78701");
    assert_eq!(five.combined_rate, pct("8.25"));
    assert!(five.split.as_deref().is_some_and(|s| s.contains("1%")) && spans(&five), "{:?}", five.split);
}
