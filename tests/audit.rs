//! `levy rules audit-rates`: each table format read, rows sorted into agreements, disagreements, recorded
//! divergences and uncovered zips, exit codes, malformed tables and divergence records.

mod common;

use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use levy::cli::audit::{audit_rates, audit_table, read_table, Format, Outcome};
use levy::engine::table;
use levy::rules::diag::Severity;
use levy::rules::load_dir;
use levy::rules::schema::state_index;
use rust_decimal::Decimal;

fn day() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 3, 15).unwrap()
}

/// Our combined rate at a zip on the test's date, as a percentage (the figures below are built from it, so the
/// tests hold whatever the rule files say).
fn ours_pct(dir: &Path, state: &str, zip: &str) -> Decimal {
    let reg = load_dir(dir).0.expect("rules load");
    let det = table::probe(&reg, state_index(state).unwrap(), table::SAAS, Some(zip), day()).unwrap();
    det.combined_rate * Decimal::from(100)
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Adds a divergence record to Austin's zip code in a copy of the rules (a notes file of its own).
fn record_divergence(dir: &Path, table: &str, rate: &str) {
    let notes = format!(
        "jurisdiction: TX\nzips:\n  \"78701\":\n    divergences:\n      - table: {table}\n        rate: {rate}\n        reason: \"the table's figure for the zip is another jurisdiction's (made up for the test)\"\n        cite: \"Tex. Tax Code §321.101(a)\"\n"
    );
    std::fs::write(dir.join("local/tx.notes.yaml"), notes).unwrap();
}

#[test]
fn every_format_is_read_and_each_row_sorted() {
    let rules = common::rules_dir();
    let tmp = tempfile::tempdir().unwrap();
    let austin = ours_pct(&rules, "TX", "78701");
    let plus_one = austin + Decimal::ONE;
    let reg = load_dir(&rules).0.unwrap();

    // Avalara's columns: rates as fractions. 78701 agrees; 75059 is a zip no table holds (newer than the Census and
    // GeoNames tables); PR is not one of the 51. 78701 one point over is a disagreement where the table names the same
    // place (Austin), and counted apart where it names another (Round Rock).
    let avalara = write(
        tmp.path(),
        "TAXRATES_ZIP5_TX202603.csv",
        &format!(
            "State,ZipCode,TaxRegionName,EstimatedCombinedRate,StateRate,EstimatedCountyRate,EstimatedCityRate,EstimatedSpecialRate,RiskLevel\n\
             TX,78701,AUSTIN,{},0.0625,0,0.01,0.01,0\nTX,75059,NOWHERE,0.0825,0.0625,0,0.01,0.01,0\nPR,00601,ADJUNTAS,0.115,0.105,0,0.01,0,0\n\
             TX,78701,AUSTIN,{one_over},0.0625,0,0.01,0.01,0\nTX,78701,ROUND ROCK,{one_over},0.0625,0,0.01,0.01,0\n",
            austin / Decimal::from(100),
            one_over = plus_one / Decimal::from(100),
        ),
    );
    let t = read_table(&avalara).unwrap();
    assert_eq!(t.format, Format::Avalara);
    assert_eq!(t.rows[0].own_date, NaiveDate::from_ymd_opt(2026, 3, 1), "the file's month is the rows' date");
    let a = audit_table(&reg, &t, None, day());
    assert_eq!((a.agree(), a.disagree(), a.recorded(), a.uncovered(), a.elsewhere()), (1, 1, 0, 2, 1));
    let Outcome::Elsewhere { theirs, ours } = &a.checked[4].outcome else { panic!("Round Rock is elsewhere: {:?}", a.checked[4].outcome) };
    assert_eq!((theirs.as_str(), ours.locality.as_deref()), ("ROUND ROCK", Some("Austin")));

    // The grid's columns: percentages with a tolerance; a quoted note with a comma; a heading naming its quarter.
    let grid = write(
        tmp.path(),
        "grid.csv",
        &format!(
            "state,city,zip5,zip4,expected_combined_rate_pct,tolerance_pct,source_note,section_comment\n\
             TX,Austin,78701,1234,{},0.05,\"made up, within tolerance\",Texas -- 2026-Q1\n\
             TX,Austin,78701,1234,{plus_one},0.05,made up: one point over,Texas -- 2026-Q1\n",
            austin + Decimal::new(4, 2)
        ),
    );
    let t = read_table(&grid).unwrap();
    assert_eq!(t.format, Format::DorGrid);
    assert_eq!(t.rows[0].own_date, NaiveDate::from_ymd_opt(2026, 1, 1));
    assert_eq!(t.rows[0].note, "Austin: made up, within tolerance");
    let a = audit_table(&reg, &t, None, day());
    assert_eq!((a.agree(), a.disagree(), a.recorded(), a.uncovered()), (1, 1, 0, 0));
    let Outcome::Disagrees { ours } = &a.checked[1].outcome else { panic!("the second row disagrees") };
    assert_eq!(ours.rate * Decimal::from(100), austin);
    assert!(ours.rules.iter().any(|r| r == "local/tx.csv zip 78701"), "{:?}", ours.rules);
    assert!(ours.layers.iter().any(|l| l.contains("City of Austin")), "{:?}", ours.layers);

    // A plain state,zip,rate table: a fraction or a percentage; a state without local taxes is covered by its state rate.
    let ct = ours_pct(&rules, "CT", "06103");
    let plain = write(tmp.path(), "plain.csv", &format!("state,zip,rate\nTX,78701,{plus_one}%\nCT,06103,{}\n", ct / Decimal::from(100)));
    let t = read_table(&plain).unwrap();
    assert_eq!(t.format, Format::Plain);
    let a = audit_table(&reg, &t, Some(day()), day());
    assert_eq!((a.agree(), a.disagree(), a.recorded(), a.uncovered()), (1, 1, 0, 0));

    // The JSON report carries the same counts.
    let v = levy::cli::audit::render_json(&[a]);
    assert_eq!((v["tables"][0]["agree"].as_u64(), v["tables"][0]["disagree"].as_u64()), (Some(1), Some(1)));
    assert_eq!(v["ok"], false);
}

#[test]
fn a_recorded_divergence_is_listed_apart_and_does_not_fail() {
    let (_keep, rules) = common::rules_copy();
    let tmp = tempfile::tempdir().unwrap();
    let plus_one = ours_pct(&rules, "TX", "78701") + Decimal::ONE;
    let grid = write(
        tmp.path(),
        "grid.csv",
        &format!(
            "state,city,zip5,zip4,expected_combined_rate_pct,tolerance_pct,source_note,section_comment\nTX,Austin,78701,1234,{plus_one},0.05,made up,\n"
        ),
    );
    let as_of = Some("2026-03-15");
    assert_eq!(audit_rates(&rules, std::slice::from_ref(&grid), as_of, None, false), 1, "an undocumented disagreement fails");

    // Recorded for another table, or at another figure, it still fails.
    record_divergence(&rules, "avalara_zip5", &format!("{plus_one}%"));
    assert_eq!(audit_rates(&rules, std::slice::from_ref(&grid), as_of, None, true), 1);

    let (_keep2, rules2) = common::rules_copy();
    record_divergence(&rules2, "dor_grid", &format!("{plus_one}%"));
    let reg = load_dir(&rules2).0.expect("the recorded divergence loads");
    let t = read_table(&grid).unwrap();
    let a = audit_table(&reg, &t, Some(day()), day());
    assert_eq!((a.agree(), a.disagree(), a.recorded(), a.uncovered()), (0, 0, 1, 0));
    let Outcome::Recorded { record, .. } = &a.checked[0].outcome else { panic!("recorded") };
    assert_eq!(record.citation.cite, "Tex. Tax Code §321.101(a)");
    assert!(levy::cli::audit::render_text(&[a]).contains("recorded divergences"));
    assert_eq!(audit_rates(&rules2, &[grid], as_of, None, false), 0);
}

#[test]
fn exit_codes_and_malformed_tables() {
    let rules = common::rules_dir();
    let tmp = tempfile::tempdir().unwrap();
    let austin = ours_pct(&rules, "TX", "78701");
    let good = write(tmp.path(), "good.csv", &format!("state,zip,rate\nTX,78701,{austin}%\n"));
    assert_eq!(audit_rates(&rules, std::slice::from_ref(&good), Some("2026-03-15"), None, false), 0);
    assert_eq!(audit_rates(&rules, std::slice::from_ref(&good), Some("15/03/2026"), None, false), 2, "a bad date");
    assert_eq!(audit_rates(&rules, &[tmp.path().join("missing.csv")], None, None, false), 2, "a missing file");

    let cases = [
        ("shape.csv", "name,population\nAustin,1\n", "is not a rate table levy reads"),
        ("empty.csv", "", "the file is empty"),
        ("fields.csv", "state,zip,rate\nTX,78701\n", "fields.csv:2: 2 fields where the header has 3"),
        ("zip.csv", "state,zip,rate\nTX,787,0.0825\n", "zip.csv:2: zip `787` is not a 5-digit zip code"),
        ("rate.csv", "state,zip,rate\nTX,78701,lots\n", "rate.csv:2: the rate `lots` is not a number"),
        ("quote.csv", "state,zip,rate,note\nTX,78701,0.0825,\"open\n", "quote.csv:2: a quoted field is not closed"),
        ("big.csv", "state,zip,rate\nTX,78701,825%\n", "big.csv:2: the rate 825% is over 100%"),
        ("state.csv", "state,zip,rate\nTexas,78701,0.0825\n", "state.csv:2: state `TEXAS` is not a two-letter code"),
    ];
    for (name, text, want) in cases {
        let p = write(tmp.path(), name, text);
        let err = read_table(&p).expect_err(name);
        assert!(err.contains(want), "{name}: {err}");
        assert_eq!(audit_rates(&rules, &[p], None, None, false), 2, "{name}");
    }
}

#[test]
fn a_malformed_divergence_is_a_located_diagnostic() {
    let (_keep, rules) = common::rules_copy();
    std::fs::write(
        rules.join("local/tx.notes.yaml"),
        "jurisdiction: TX\nzips:\n  \"78701\":\n    divergences:\n      - { table: avalara, rate: 9.25%, reason: x, cite: y }\n      - { table: dor_grid, rate: 9.25, reason: x }\n      - { table: dor_grid, rate: 9%, reason: x, cite: y }\n      - { table: dor_grid, rate: 9%, reason: z, cite: y }\n",
    )
    .unwrap();
    let (reg, diags, _) = load_dir(&rules);
    assert!(reg.is_none());
    let errors: Vec<_> = diags.iter().filter(|d| d.severity == Severity::Error).collect();
    let has = |code: &str, line: u32| errors.iter().any(|d| d.code == code && d.span.as_ref().is_some_and(|s| s.line == line));
    assert!(has("R205", 5), "unknown table: {errors:#?}");
    assert!(has("R106", 6), "a rate without %: {errors:#?}");
    assert!(has("R502", 6), "no citation: {errors:#?}");
    assert!(has("R603", 8), "recorded twice: {errors:#?}");
}

/// The shared tables beside the project (CI has `../shared`), when present: every row is counted once, agrees with
/// our rates or is a disagreement a rule file records (its reason and primary source), and every grid zip of the 51
/// jurisdictions is covered.
#[test]
fn the_shared_tables_agree_with_our_rates_or_record_why() {
    let shared = common::rules_dir().join("../../shared/data/rates");
    let names =
        ["fixtures_opensalestax_dor_grid.csv", "rates_zip5_202512.csv", "rates_zip5_202603.csv", "state_rates.csv", "saas_taxability.csv"];
    let reg = load_dir(&common::rules_dir()).0.unwrap();
    for name in names {
        let path = shared.join(name);
        if !path.exists() {
            eprintln!("skipped: {} is not here", path.display());
            continue;
        }
        let t = read_table(&path).unwrap();
        let a = audit_table(&reg, &t, None, day());
        assert!(!t.rows.is_empty());
        let counted = a.agree() + a.disagree() + a.recorded() + a.split() + a.post_office() + a.elsewhere() + a.uncovered();
        assert_eq!(counted, t.rows.len(), "{name}");
        assert!(a.agree() > 0, "{name}");
        if t.format == Format::DorGrid {
            let gaps: Vec<String> = a.coverage_gaps().iter().map(|c| format!("{} {}", c.row.state, c.row.zip)).collect();
            assert!(gaps.is_empty(), "{name}: {} grid zip codes are not covered: {gaps:?}", gaps.len());
        }
        let disagree = a.disagree();
        assert_eq!(disagree, 0, "{name}: undocumented disagreements:\n{}", levy::cli::audit::render_text(&[a]));
    }
}

/// The state-rate table and the SaaS summary: each state's two figures compared, a state-level record honoured.
#[test]
fn state_level_tables_and_their_recorded_divergences() {
    let (_keep, rules) = common::rules_copy();
    let tmp = tempfile::tempdir().unwrap();
    let reg = load_dir(&rules).0.unwrap();
    let tx = table::state_rates(&reg, state_index("TX").unwrap(), day()).unwrap();
    let tx_rate = tx.rate() * Decimal::from(100);
    let saas = if tx.saas_taxable() { "taxable" } else { "exempt" };
    let other = if tx.saas_taxable() { "exempt" } else { "taxable" };
    // Made-up rows: Texas at our rate with local taxes, and at one point more without them; OR states nothing.
    let states = write(
        tmp.path(),
        "states.csv",
        &format!("code,name,state_rate_pct,local_varies,source\nTX,Texas,{tx_rate},true,made up\nXX,Nowhere,{},false,made up\n", tx_rate),
    );
    let t = read_table(&states).unwrap();
    assert_eq!(t.format, Format::StateRates);
    assert_eq!(t.rows.len(), 4, "two figures per state");
    let a = audit_table(&reg, &t, Some(day()), day());
    assert_eq!((a.agree(), a.disagree(), a.recorded(), a.uncovered()), (2, 0, 0, 2));

    let summary = write(
        tmp.path(),
        "saas.csv",
        &format!("state,state_name,saas_paddle_2025_10,digital_goods_paddle_2025_10\nTX,Texas,{other},\nOR,Oregon,,\n"),
    );
    let t = read_table(&summary).unwrap();
    assert_eq!(t.format, Format::SaasTaxability);
    let a = audit_table(&reg, &t, Some(day()), day());
    assert_eq!((a.agree(), a.disagree(), a.recorded(), a.uncovered()), (0, 1, 0, 3));
    let Outcome::Disagrees { ours } = &a.checked[0].outcome else { panic!("TX SaaS disagrees") };
    assert_eq!(ours.value.as_deref(), Some(saas));

    // Recorded in the state file, the row is listed apart.
    let file = rules.join("states/tx.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let planted = text.replacen(
        "name: Texas\n",
        &format!("name: Texas\ndivergences:\n  - table: saas_taxability\n    field: saas\n    value: {other}\n    reason: \"made up for the test\"\n    cite: \"Tex. Tax Code §151.0035\"\n"),
        1,
    );
    assert_ne!(text, planted);
    std::fs::write(&file, planted).unwrap();
    let reg = load_dir(&rules).0.expect("the state-level record loads");
    let a = audit_table(&reg, &t, Some(day()), day());
    assert_eq!((a.agree(), a.disagree(), a.recorded(), a.uncovered()), (0, 0, 1, 3));
    assert_eq!(audit_rates(&rules, &[summary], Some("2026-03-15"), None, false), 0);
}

#[test]
fn a_malformed_state_divergence_is_a_located_diagnostic() {
    let (_keep, rules) = common::rules_copy();
    let file = rules.join("states/tx.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let line = text.lines().position(|l| l == "name: Texas").unwrap() as u32 + 1;
    let planted = text.replacen(
        "name: Texas\n",
        "name: Texas\ndivergences:\n  - { table: saas_taxability, field: state_rate, value: 6%, reason: x, cite: y }\n  - { table: state_rates, field: local_taxes, value: maybe, reason: x, cite: y }\n  - { table: saas_taxability, field: saas, value: sometimes, reason: x, cite: y }\n  - { table: avalara_zip5, field: rate, value: 6%, reason: x, cite: y }\n",
        1,
    );
    std::fs::write(&file, planted).unwrap();
    let (reg, diags, _) = load_dir(&rules);
    assert!(reg.is_none());
    let has = |code: &str, l: u32| diags.iter().any(|d| d.code == code && d.span.as_ref().is_some_and(|s| s.line == l));
    assert!(has("R205", line + 2), "field of another table: {diags:#?}");
    assert!(has("R108", line + 3), "not a boolean: {diags:#?}");
    assert!(has("R205", line + 4), "not a taxability value: {diags:#?}");
    assert!(has("R205", line + 5), "not a state-level field: {diags:#?}");
}
