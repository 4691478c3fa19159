//! The reviewer's semantic diff shows exactly a planted change, with the rules responsible.

mod common;

use chrono::NaiveDate;
use levy::cli::diff_report;
use levy::rules::load_dir;

/// Replaces the first `from` in a rule file with `to` (which must be there).
fn plant(file: &std::path::Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    let planted = text.replacen(from, to, 1);
    assert_ne!(text, planted, "{from:?} is not in {}", file.display());
    std::fs::write(file, planted).unwrap();
}

#[test]
fn the_semantic_diff_shows_exactly_the_planted_change() {
    let src = common::rules_dir();
    let (_tmp, dir) = common::rules_copy();
    // Planted: Texas taxes data processing on 100% instead of 80%, and a change-log entry says so.
    plant(
        &dir.join("states/tx.yaml"),
        "    then: taxable on 80% of base\n    from: 2024-01-01\n    cite: Tex. Tax Code §151.0035, §151.0038, §151.351",
        "    then: taxable\n    from: 2024-01-01\n    cite: Tex. Tax Code §151.0035, §151.0038, §151.351",
    );
    let reg_file = dir.join("registry.yaml");
    let r = std::fs::read_to_string(&reg_file).unwrap().replace("version: 1.6.0\nengine", "version: 1.6.1\nengine")
        + "  - date: 2026-11-28\n    version: 1.6.1\n    summary: planted change for the diff test (Texas data processing at 100%)\n";
    std::fs::write(&reg_file, r).unwrap();

    let old = load_dir(&src).0.expect("old rules");
    let new = load_dir(&dir).0.expect("new rules");
    let report = diff_report(&old, &new, NaiveDate::from_ymd_opt(2026, 6, 1).unwrap());
    let changed: Vec<&str> = report.lines().filter(|l| l.starts_with("  ") && l.contains("→")).collect();
    assert!(!changed.is_empty());
    // Every changed line is a Texas input answered by the planted rule.
    for line in &changed {
        assert!(line.contains("buyer_state=TX"), "unexpected change: {line}");
        assert!(line.contains("tx.taxability.data-processing"), "rule not named: {line}");
    }
    // A seller's TX SaaS sale of 1000 at 6.25%: 50.00 on 80% → 62.50 on 100%.
    assert!(report.contains("buyer_state=TX transaction_type=saas role=seller is_b2b=false: tax 50.00 → 62.50"), "{report}");
    assert!(report.contains("2026-11-28 (1.6.1): planted change"));
    common::snapshot_settings().bind(|| insta::assert_snapshot!("semantic_diff_planted_change", report));
}

#[test]
fn the_semantic_diff_shows_a_planted_gains_change() {
    let src = common::rules_dir();
    let (_tmp, dir) = common::rules_copy();
    // Planted: Wisconsin excludes 40% of long-term gain instead of 30%.
    plant(&dir.join("gains/states/wi.yaml"), "long_term_exclusion: 30%", "long_term_exclusion: 40%");
    let old = load_dir(&src).0.expect("old rules");
    let new = load_dir(&dir).0.expect("new rules");
    let report = diff_report(&old, &new, NaiveDate::from_ymd_opt(2026, 6, 1).unwrap());
    // 10,000 long-term × 70% × 7.65% = 535.50 → × 60% = 459.00; 1,500,000: 80,325.00 → 68,850.00. Nothing else moves.
    assert!(report.contains("gains state WI single income=100000 long_term=10000: tax 535.50 → 459.00"), "{report}");
    assert!(report.contains("gains state WI single income=100000 long_term=1500000: tax 80325.00 → 68850.00"), "{report}");
    assert!(report.contains("2 of 165 gains estimates change"), "{report}");
    assert!(report.contains("0 of "), "{report}");
}
