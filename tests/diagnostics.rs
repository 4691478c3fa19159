//! Planted errors in a copy of rules/ give located diagnostics: file:line:col, the line, a caret,
//! a stable code, help and "did you mean" — all of them in one run.

mod common;

use std::path::Path;

use common::{rules_copy, snapshot_settings};

use levy::rules::diag::Diagnostic;
use levy::rules::load_dir;

fn plant(dir: &Path, file: &str, from: &str, to: &str) {
    let p = dir.join(file);
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains(from), "{file} no longer contains {from:?}");
    std::fs::write(&p, text.replacen(from, to, 1)).unwrap();
}

/// Renders with the temp directory's path replaced, so snapshots are stable.
fn rendered(dir: &Path, d: &[Diagnostic], sources: &levy::rules::diag::SourceMap, code: &str) -> String {
    let root = dir.parent().unwrap().to_string_lossy().to_string();
    d.iter().filter(|x| x.code == code).map(|x| sources.render(x).replace(&root, "<tmp>")).collect::<Vec<_>>().join("\n")
}

#[test]
fn planted_errors_are_all_reported_with_location_caret_and_help() {
    let (_tmp, dir) = rules_copy();
    plant(&dir, "states/tx.yaml", "when: category == software_maintenance\n", "when: category == software_maintenance and is_btob\n");
    plant(
        &dir,
        "states/tx.yaml",
        "when: category in {prewritten_software, digital_good}",
        "when: category in {prewritten_software, digital_goods}",
    );
    plant(&dir, "states/tx.yaml", "name: Texas\n", "name: Texas\nname: Texas again\n");
    plant(&dir, "states/tx.yaml", "    cite: Tex. Tax Code §151.009", "    citation: Tex. Tax Code §151.009");
    plant(&dir, "states/tx.yaml", "  - id: tx.taxability.it-support\n", "  - id: tx.taxability.help-desk\n");
    plant(
        &dir,
        "states/tx.yaml",
        "    then: taxable on 80% of base\n    from: 2024-01-01\n    cite: Tex. Tax Code §151.0035(a)",
        "    then: taxable on 80 of base\n    from: 2024-01-01\n    cite: Tex. Tax Code §151.0035(a)",
    );
    plant(&dir, "states/tx.yaml", "  - id: tx.taxability.contract-programming\n    when: category == custom_software and all_rights_transferred\n", "  - id: tx.taxability.contract-programming\n    when: category == custom_software and all_rights_transferred\n    from: 2024-01-01\n");
    plant(&dir, "federal/information_returns.yaml", "  - from: 2026-01-01\n", "  - from: 2026-02-01\n");
    plant(&dir, "registry.yaml", "coverage_from: 2024-01-01", "coverage_from: 2024-13-01");
    std::fs::remove_file(dir.join("states/wy.yaml")).unwrap();

    let (reg, diags, sources) = load_dir(&dir);
    assert!(reg.is_none(), "a registry with errors must not compile");
    let codes: Vec<&str> = diags.iter().map(|d| d.code).collect();
    for code in ["R204", "R205", "R002", "R103", "R501", "R201", "R002", "R402", "R105", "R301"] {
        assert!(codes.contains(&code), "expected {code} among {codes:?}");
    }
    // Every diagnostic from a file carries a location.
    for d in &diags {
        let span = d.span.as_ref().expect("every diagnostic is located");
        assert!(span.line >= 1 && span.col >= 1);
    }
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!("diagnostic_unknown_fact", rendered(&dir, &diags, &sources, "R204"));
    insta::assert_snapshot!("diagnostic_unknown_value", rendered(&dir, &diags, &sources, "R205"));
    insta::assert_snapshot!("diagnostic_duplicate_key", rendered(&dir, &diags, &sources, "R002"));
    insta::assert_snapshot!("diagnostic_unknown_key", rendered(&dir, &diags, &sources, "R103"));
    insta::assert_snapshot!("diagnostic_duplicate_rule_id", rendered(&dir, &diags, &sources, "R501"));
    insta::assert_snapshot!("diagnostic_syntax", rendered(&dir, &diags, &sources, "R201"));
    insta::assert_snapshot!("diagnostic_date_gap", rendered(&dir, &diags, &sources, "R402"));
    insta::assert_snapshot!("diagnostic_bad_date", rendered(&dir, &diags, &sources, "R105"));
    insta::assert_snapshot!("diagnostic_missing_jurisdiction", rendered(&dir, &diags, &sources, "R301"));
}

#[test]
fn overlapping_ranges_missing_citations_and_unreachable_rules_are_errors() {
    let (_tmp, dir) = rules_copy();
    // A second open state rate overlapping the first.
    plant(&dir, "states/tx.yaml", "state_rate:\n", "state_rate:\n  - from: 2025-01-01\n    rate: 6.5%\n    cite: planted\n");
    // A rule without a citation.
    plant(&dir, "states/tx.yaml", "    cite: 34 TAC §3.292 (repair and maintenance of tangible personal property); 34 TAC §3.308(c)\n", "");
    // A conditional rule placed after its category's default.
    plant(&dir, "states/tx.yaml", "taxability:\n", "taxability:\n  - id: tx.planted.default\n    when: category == web_hosting\n    then: taxable\n    from: 2024-01-01\n    cite: planted\n  - id: tx.planted.unreachable\n    when: category == web_hosting and is_b2b\n    then: exempt \"never\"\n    from: 2024-01-01\n    cite: planted\n");
    // A category with no default rule.
    plant(
        &dir,
        "states/tx.yaml",
        "    when: category == software_maintenance\n",
        "    when: category == software_maintenance and is_b2b\n",
    );
    let (_, diags, sources) = load_dir(&dir);
    let codes: Vec<&str> = diags.iter().map(|d| d.code).collect();
    for code in ["R401", "R502", "R506", "R505"] {
        assert!(codes.contains(&code), "expected {code} among {codes:?}");
    }
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!("diagnostic_overlap", rendered(&dir, &diags, &sources, "R401"));
    insta::assert_snapshot!("diagnostic_missing_citation", rendered(&dir, &diags, &sources, "R502"));
    insta::assert_snapshot!("diagnostic_unreachable_rule", rendered(&dir, &diags, &sources, "R506"));
    insta::assert_snapshot!("diagnostic_category_without_default", rendered(&dir, &diags, &sources, "R505"));
}

#[test]
fn a_file_that_is_not_yaml_is_one_located_error_not_a_panic() {
    let (_tmp, dir) = rules_copy();
    std::fs::write(dir.join("states/tx.yaml"), "jurisdiction: TX\nname: [unclosed\n").unwrap();
    let (reg, diags, _) = load_dir(&dir);
    assert!(reg.is_none());
    let d = diags.iter().find(|d| d.code == "R001").expect("a YAML syntax diagnostic");
    assert!(d.span.as_ref().unwrap().file.ends_with("states/tx.yaml"));
}

/// build.rs runs `build_check` over rules/: a broken rule or scenario file fails the build, and cargo shows each
/// diagnostic as the analysts read it, one `cargo:warning=` line per line of it.
#[test]
fn the_build_check_prints_every_diagnostic_for_cargo_and_fails_the_build() {
    let (_tmp, dir) = rules_copy();
    plant(&dir, "states/tx.yaml", "name: Texas\n", "name: Texas\nname: Texas again\n");
    plant(&dir, "tests/ak.yaml", "    nexus: [AK]\n", "    nexus: [AKK]\n");
    let tx = std::fs::read_to_string(dir.join("states/tx.yaml")).unwrap();
    assert_eq!(tx.lines().take(4).collect::<Vec<_>>()[2..], ["name: Texas", "name: Texas again"], "the planted key is on line 4");
    let ak = std::fs::read_to_string(dir.join("tests/ak.yaml")).unwrap();
    assert_eq!(ak.lines().nth(6), Some("    nexus: [AKK]"), "the planted case is on line 7");

    let (lines, verdict) = levy::rules::report::build_check(&dir);
    let shown = dir.display();
    let expected = [
        "error[R002]: duplicate key `name`".to_string(),
        format!(" --> {shown}/states/tx.yaml:4:1"),
        "  |".to_string(),
        "4 | name: Texas again".to_string(),
        "  | ^^^^".to_string(),
        "  = help: the first `name` is at line 3".to_string(),
        String::new(),
        "error[R303]: `AKK` is not a state code".to_string(),
        format!(" --> {shown}/tests/ak.yaml:7:13"),
        "  |".to_string(),
        "7 |     nexus: [AKK]".to_string(),
        format!("  | {}^^^", " ".repeat(12)),
        String::new(),
        "2 errors found".to_string(),
    ];
    let expected: Vec<String> = expected.iter().map(|l| format!("cargo:warning={l}")).collect();
    assert_eq!(lines, expected);
    assert_eq!(verdict, Err(format!("the rule files in {shown} have 2 errors (listed above); fix them and build again")));
}

/// The rules in the repository pass the build's check, with nothing to print.
#[test]
fn the_build_check_passes_the_repository_rules_silently() {
    let (lines, verdict) = levy::rules::report::build_check(&common::rules_dir());
    assert_eq!(verdict, Ok(()));
    assert_eq!(lines, Vec::<String>::new());
}

/// Local taxes and their boundary rows get the same located diagnostics: an unknown tax id with did-you-mean, a county
/// and a post office the state does not have, overlapping ZIP+4 ranges, a gap between a zip's rows, a malformed
/// range, a tax that applies nowhere, a zip of another state.
#[test]
fn planted_errors_in_local_taxes_and_boundary_rows_are_located() {
    let (_tmp, dir) = rules_copy();
    std::fs::write(
        dir.join("local/tx.planted.yaml"),
        "jurisdiction: TX\ntaxes:\n  - id: tx.planted-county\n    name: Planted County\n    level: county\n    counties: [\"999\"]\n    rates:\n      - { rate: 1%, from: 2024-01-01, cite: \"made up for the test\" }\n  - id: tx.planted-city\n    name: City of Planted\n    level: city\n    places: [\"Austn\"]\n    rates:\n      - { rate: 1%, from: 2024-01-01, cite: \"made up for the test\" }\n  - id: tx.nowhere\n    name: Nowhere District\n    level: special_district\n    rates:\n      - { rate: 1%, from: 2024-01-01, cite: \"made up for the test\" }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("local/tx.planted.csv"),
        "zip,plus4,taxes,from,to\n78610,,tx.austn,,\n78611,0001-0500,tx.planted-city,2024-01-01,\n78611,0400-0999,tx.planted-city,2024-01-01,\n78612,,tx.planted-city,2024-01-01,2024-12-31\n78612,,tx.planted-city,2025-03-01,\n78613,12-99,tx.planted-city,,\n10001,,tx.planted-city,,\n",
    )
    .unwrap();
    let (reg, diags, sources) = load_dir(&dir);
    assert!(reg.is_none());
    let at = |code: &str, line: u32, col: u32| {
        diags.iter().any(|d| {
            d.code == code
                && d.span.as_ref().is_some_and(|s| s.file.ends_with("tx.planted.csv") || s.file.ends_with("tx.planted.yaml"))
                && d.span.as_ref().is_some_and(|s| s.line == line && s.col == col)
        })
    };
    assert!(at("R605", 6, 16), "county 999: {diags:#?}");
    assert!(at("R606", 12, 15), "Austn: {diags:#?}");
    assert!(at("R607", 15, 7), "applies nowhere: {diags:#?}");
    assert!(at("R604", 2, 8), "unknown tax: {diags:#?}");
    assert!(at("R401", 4, 1), "overlapping ZIP+4 ranges: {diags:#?}");
    assert!(at("R402", 6, 1), "a gap between rows: {diags:#?}");
    assert!(at("R608", 7, 7), "a malformed range: {diags:#?}");
    assert!(at("R602", 8, 1), "a New York zip in a Texas table: {diags:#?}");
    let unknown = rendered(&dir, &diags, &sources, "R604");
    assert!(unknown.contains("did you mean"), "{unknown}");
    let _guard = snapshot_settings().bind_to_scope();
    insta::assert_snapshot!("diagnostic_local_unknown_tax", unknown);
    insta::assert_snapshot!("diagnostic_local_place", rendered(&dir, &diags, &sources, "R606"));
    insta::assert_snapshot!("diagnostic_local_overlap", rendered(&dir, &diags, &sources, "R401"));
}
