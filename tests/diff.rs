//! The reviewer's diff: each planted change shows as a structural change with its file:line and as a grouped
//! impact with hand-worked figures; the JSON validates against the published schema; `--check` holds versions,
//! citations and cases; `--git` reads two revisions of a repository.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::OnceLock;

use levy::cli::diff::{json_schema, render, Format};
use levy::cli::{compare, DiffReport, RuleSet};

/// Replaces the first `from` in a rule file with `to` (which must be there).
fn plant(file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    let planted = text.replacen(from, to, 1);
    assert_ne!(text, planted, "{from:?} is not in {}", file.display());
    std::fs::write(file, planted).unwrap();
}

/// The project's rules, loaded once.
fn old() -> &'static RuleSet {
    static OLD: OnceLock<RuleSet> = OnceLock::new();
    OLD.get_or_init(|| RuleSet::load(&common::rules_dir(), "old".into()).expect("the project's rules load"))
}

/// The diff of the project's rules against a copy edited by `edit`, with `--check`.
fn diff_after(edit: impl FnOnce(&Path)) -> DiffReport {
    let (_tmp, dir) = common::rules_copy();
    edit(&dir);
    let new = RuleSet::load(&dir, "new".into()).expect("the edited rules load");
    compare(old(), &new, None, true)
}

const TX_OLD_RATE: &str = "    checked: 2026-11-26\n\nlocal_taxes:";
const TX_NEW_RATE: &str =
    "    checked: 2026-11-26\n    to: 2026-12-31\n  - from: 2027-01-01\n    rate: 6.5%\n    cite: Tex. Tax Code §151.051(b), as amended by H.B. 9 (2027)\n\nlocal_taxes:";

fn texas_rate(dir: &Path) {
    plant(&dir.join("states/tx.yaml"), TX_OLD_RATE, TX_NEW_RATE);
}

fn bump(dir: &Path) {
    let file = dir.join("registry.yaml");
    plant(&file, "version: 1.6.0\nengine", "version: 1.6.1\nengine");
    let text = std::fs::read_to_string(&file).unwrap()
        + "  - date: 2026-11-28\n    version: 1.6.1\n    summary: Texas raises its state rate to 6.5% from 2027-01-01 (H.B. 9)\n";
    std::fs::write(file, text).unwrap();
}

fn group<'a>(r: &'a DiffReport, rule: &str) -> &'a levy::cli::diff::model::Impact {
    r.impacts.iter().find(|i| i.rule == rule).unwrap_or_else(|| panic!("no group for {rule}: {:#?}", r.impacts))
}

#[test]
fn a_new_texas_rate_is_a_short_pull_request_comment() {
    let r = diff_after(texas_rate);
    let md = render(&r, Format::Markdown, false);
    assert!(md.lines().count() < 40, "{} lines:\n{md}", md.lines().count());
    assert!(md.contains("**added** rate `TX state_rate from 2027-01-01` (`states/tx.yaml:12`): rate 6.5%; from 2027-01-01; cite Tex. Tax Code §151.051(b), as amended by H.B. 9 (2027)"), "{md}");
    assert!(md.contains("**changed** rate `TX state_rate from 1990-07-01` (`states/tx.yaml:6`): to 2026-12-31"), "{md}");
    // A seller's TX SaaS sale of 1000 is data processing, taxed on 80%: 800 × 6.25% = 50.00, 800 × 6.5% = 52.00.
    let dp = group(&r, "tx.taxability.data-processing");
    assert_eq!(dp.effect, "tax 50.00 → 52.00 on 1000; +0.25 points; state rate 6.25% → 6.5%");
    assert_eq!((dp.from.unwrap().to_string(), dp.to), ("2027-01-01".into(), None));
    // Prewritten software is taxed on the whole: 62.50 → 65.00.
    assert_eq!(group(&r, "tx.taxability.prewritten-software").effect, "tax 62.50 → 65.00 on 1000; +0.25 points; state rate 6.25% → 6.5%");
    // Only Texas moves, only from 2027-01-01, and only taxed sales (an exempt sale's tax stays 0).
    assert!(r.impacts.iter().all(|i| i.jurisdiction == "TX" && i.from.unwrap().to_string() == "2027-01-01" && i.old != i.new));
    let total: u64 = r.impacts.iter().map(|i| i.inputs).sum();
    assert_eq!(total, r.summary.inputs_changed);
    assert!(md.contains(&format!("| 1 | 0 | 1 | {total} |")), "{md}");
    // --check: the version was not raised.
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert!(r.problems[0].contains("the registry version did not increase (1.6.0 → 1.6.0)"), "{:?}", r.problems);
    common::snapshot_settings().bind(|| insta::assert_snapshot!("diff_texas_rate_markdown", md));

    // With the version raised and a change-log entry, the check passes and the entry is shown.
    let r = diff_after(|d| {
        texas_rate(d);
        bump(d);
    });
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(r.changelog_added.len(), 1);
    // Raised without an entry for 1.6.1: the change log is named.
    let r = diff_after(|d| {
        texas_rate(d);
        plant(&d.join("registry.yaml"), "version: 1.6.0\nengine", "version: 1.6.1\nengine");
    });
    assert_eq!(r.problems, ["the change log in registry.yaml has no entry for version 1.6.1: add one saying what changed"]);
}

#[test]
fn the_json_validates_against_the_published_schema() {
    let schema_text = json_schema();
    let published = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/diff.schema.json")).unwrap();
    assert_eq!(
        published.trim_end(),
        schema_text.trim_end(),
        "docs/diff.schema.json is stale: levy rules diff --schema > docs/diff.schema.json"
    );
    let schema: serde_json::Value = serde_json::from_str(&schema_text).unwrap();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.set_default_draft(boon::Draft::V2020_12);
    compiler.add_resource("urn:levy:diff", schema).unwrap();
    let index = compiler.compile("urn:levy:diff", &mut schemas).expect("a valid JSON Schema");
    // Each leaf of boon's error tree is one keyword the instance fails.
    fn leaves(e: &boon::ValidationError, out: &mut Vec<String>) {
        if e.causes.is_empty() {
            out.push(format!("{} at {}", e.kind, e.instance_location));
        }
        e.causes.iter().for_each(|c| leaves(c, out));
    }
    let errors_of = |v: &serde_json::Value| {
        let mut out = Vec::new();
        if let Err(e) = schemas.validate(v, index) {
            leaves(&e, &mut out);
        }
        out
    };
    let r = diff_after(|d| {
        texas_rate(d);
        plant(&d.join("plans.yaml"), "price_usd_monthly: 25", "price_usd_monthly: 30");
    });
    let out: serde_json::Value = serde_json::from_str(&render(&r, Format::Json, false)).unwrap();
    let errors = errors_of(&out);
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(out["changes"][0]["kind"], "rate");
    assert_eq!(out["changes"][1]["fields"][0]["new"], "6.5%");
    // The schema is not a formality: a misspelt kind and a missing count are refused.
    let mut bad = out.clone();
    bad["changes"][0]["kind"] = "rates".into();
    bad["impacts"][0].as_object_mut().unwrap().remove("inputs");
    let errors = errors_of(&bad);
    assert_eq!(errors.len(), 2, "{errors:#?}");
}

#[test]
fn a_changed_condition_shows_the_condition_and_the_sales_it_moves() {
    let r = diff_after(|d| {
        plant(
            &d.join("states/tx.yaml"),
            "when: category == digital_service and transaction_type == marketplace_fee",
            "when: category == digital_service and transaction_type in {marketplace_fee, service}",
        )
    });
    let c = r.changes.iter().find(|c| c.id == "tx.taxability.marketplace-provider-services").unwrap();
    assert_eq!(c.location, "states/tx.yaml:79");
    assert_eq!(c.fields.len(), 1);
    assert_eq!(c.fields[0].old.as_deref(), Some("category == digital_service and transaction_type == marketplace_fee"));
    assert_eq!(c.fields[0].new.as_deref(), Some("category == digital_service and transaction_type in {marketplace_fee, service}"));
    // A service sale was an exempt service; it is now taxed on 80%: 800 × 6.25% = 50.00, from the rule's first day.
    let g = group(&r, "tx.taxability.services → tx.taxability.marketplace-provider-services");
    assert!(g.effect.starts_with("tax 0 → 50.00 on 1000"), "{}", g.effect);
    assert_eq!(g.from.unwrap().to_string(), "2025-10-01");
    assert_eq!(g.dimensions[0].values, ["service"]);
    assert_eq!(r.impacts.len(), 1, "{:#?}", r.impacts);
    common::snapshot_settings().bind(|| insta::assert_snapshot!("diff_changed_condition", render(&r, Format::Text, false)));
}

#[test]
fn a_removed_rule_shows_what_answers_instead() {
    let (_tmp, dir) = common::rules_copy();
    let file = dir.join("states/tx.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    let start = text.find("  - id: tx.taxability.help-desk\n").unwrap();
    let end = start + 1 + text[start + 1..].find("  - id: ").unwrap();
    std::fs::write(&file, format!("{}{}", &text[..start], &text[end..])).unwrap();
    let new = RuleSet::load(&dir, "new".into()).unwrap();
    let r = compare(old(), &new, None, false);
    let c = r.changes.iter().find(|c| c.id == "tx.taxability.help-desk").unwrap();
    assert_eq!((c.location.as_str(), format!("{:?}", c.op)), ("states/tx.yaml:97", "Removed".to_string()));
    assert!(c
        .fields
        .iter()
        .any(|f| f.field == "when" && f.old.as_deref() == Some("category == it_support and it_support_scope == help_desk_advice")));
    // Help-desk advice falls to the IT-support rule: taxed on the whole, 1000 × 6.25% = 62.50.
    let g = group(&r, "tx.taxability.help-desk → tx.taxability.it-support");
    assert!(g.effect.starts_with("tax 0 → 62.50 on 1000"), "{}", g.effect);
    assert_eq!(g.from.unwrap().to_string(), "2024-01-01");
    common::snapshot_settings().bind(|| insta::assert_snapshot!("diff_removed_rule", render(&r, Format::Text, false)));
}

#[test]
fn a_new_city_tax_shows_its_zip_codes() {
    let r = diff_after(|d| {
        plant(
            &d.join("local/tx.yaml"),
            "\nzips:\n",
            "\n  - id: tx.cypress\n    name: City of Cypress\n    level: city\n    places: [\"Cypress\"]\n    rates:\n      - { rate: 1%, from: 2027-01-01, cite: \"Cypress incorporation election, 2026-11-03 (planted)\" }\nzips:\n",
        )
    });
    let c = r.changes.iter().find(|c| c.id == "tx.cypress").unwrap();
    assert!(c.fields.iter().any(|f| f.field == "zip codes" && f.new.as_deref() == Some("3: 77410, 77429, 77433")), "{c:?}");
    assert!(r.changes.iter().any(|c| c.id == "tx.cypress rate from 2027-01-01"));
    // Taxed on 80% (data processing and its like), 800 × 1% = 8.00 more; on the whole, 1000 × 1% = 10.00 more; from
    // 2027-01-01, in the three ZIP codes. One request per ZIP code for each taxability rule a sale can meet.
    assert_eq!(r.impacts.len(), 2, "{:#?}", r.impacts);
    for (g, delta) in r.impacts.iter().zip(["10.00", "8.00"]) {
        assert_eq!(g.rule, "local taxes");
        assert_eq!(g.effect, format!("tax +{delta} on 1000; +1 points; +tx.cypress 1%"));
        assert_eq!((g.from.unwrap().to_string(), g.to), ("2027-01-01".to_string(), None));
        let zips = g.dimensions.iter().find(|d| d.field == "buyer_zip").unwrap();
        assert_eq!((zips.count, zips.values.clone()), (3, vec!["77410".to_string(), "77429".into(), "77433".into()]));
    }
    let rules = |i: usize| r.impacts[i].dimensions.iter().find(|d| d.field == "rule").unwrap().values.clone();
    assert!(rules(0).contains(&"tx.taxability.prewritten-software".to_string()), "{:?}", rules(0));
    assert!(rules(1).contains(&"tx.taxability.data-processing".to_string()), "{:?}", rules(1));
    common::snapshot_settings().bind(|| insta::assert_snapshot!("diff_new_city_tax", render(&r, Format::Text, false)));
}

#[test]
fn a_plan_price_is_a_change_and_an_impact() {
    let r = diff_after(|d| plant(&d.join("plans.yaml"), "price_usd_monthly: 25", "price_usd_monthly: 30"));
    assert_eq!(r.changes.len(), 1, "{:#?}", r.changes);
    let c = &r.changes[0];
    assert_eq!((c.id.as_str(), c.location.as_str()), ("starter", "plans.yaml:36"));
    assert_eq!((c.fields[0].old.as_deref(), c.fields[0].new.as_deref()), (Some("25"), Some("30")));
    assert_eq!(r.impacts.len(), 1);
    assert_eq!((r.impacts[0].old.as_deref(), r.impacts[0].new.as_deref()), (Some("25"), Some("30")));
    // Plans are not the law: no version is required of them.
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    common::snapshot_settings().bind(|| insta::assert_snapshot!("diff_plan_price", render(&r, Format::Text, false)));
}

#[test]
fn the_check_names_an_uncited_rate_and_a_case_changed_alone() {
    // The rate edited in place, its citation left as it was.
    let r = diff_after(|d| {
        plant(&d.join("states/tx.yaml"), "    rate: 6.25%\n", "    rate: 6.3%\n");
        bump(d);
    });
    assert_eq!(
        r.problems,
        ["TX state_rate from 1990-07-01 (states/tx.yaml:6): the rate changed but its citation did not: cite the source of the new figure"]
    );
    // A new period citing the same source as the one before it.
    let r = diff_after(|d| {
        plant(&d.join("states/tx.yaml"), TX_OLD_RATE, &TX_NEW_RATE.replace(", as amended by H.B. 9 (2027)", ""));
        bump(d);
    });
    assert_eq!(
        r.problems,
        ["TX state_rate from 2027-01-01 (states/tx.yaml:12) cites the same source as the period before it, which gave another rate: cite the source of the new figure"]
    );
    // A case's expectation changed with nothing under it (the rules still answer 66.00); cases alone need no new
    // version.
    let r = diff_after(|d| plant(&d.join("tests/tx.yaml"), "      total_tax: 66.00 ", "      total_tax: 67.00 "));
    assert_eq!(
        r.problems,
        ["case `TX SaaS into Austin is data processing taxed on 80%` (tests/tx.yaml:4): its expectation changed (total_tax 66.00 → 67.00) but no rule change alters its determination"]
    );
    // With the rate under it changed (Austin's, cited anew), the same edit is the case following the law:
    // 800 × (6.25% + 1.125% + 1%) = 67.00.
    let r = diff_after(|d| {
        plant(
            &d.join("local/tx.yaml"),
            "{ rate: 1%, from: 2024-01-01, cite: \"Tex.",
            "{ rate: 1.125%, from: 2024-01-01, cite: \"(planted) Tex.",
        );
        plant(&d.join("tests/tx.yaml"), "      total_tax: 66.00 ", "      total_tax: 67.00 ");
        bump(d);
    });
    assert!(r.problems.is_empty(), "{:?}", r.problems);
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn git_revisions_are_compared_without_a_checkout() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    common::copy_dir(&common::rules_dir(), &repo.join("rules"));
    git(repo, &["init", "-q"]);
    git(repo, &["add", "rules"]);
    git(repo, &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "rules"]);
    texas_rate(&repo.join("rules"));
    git(repo, &["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qam", "texas"]);
    let levy = env!("CARGO_BIN_EXE_levy");
    let run = |args: &[&str]| Command::new(levy).args(args).current_dir(repo).output().unwrap();

    let out = run(&["rules", "diff", "--git", "HEAD~1..HEAD", "--format", "json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["old"]["source"], "git:HEAD~1");
    assert_eq!(json["new"]["source"], "git:HEAD");
    let ids: Vec<&str> = json["changes"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["TX state_rate from 1990-07-01", "TX state_rate from 2027-01-01"]);

    // BASE alone compares with the working tree; --check fails on the unraised version, and says so.
    bump(&repo.join("rules"));
    let out = run(&["rules", "diff", "--git", "HEAD~1", "--check"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("check: ok"));
    let out = run(&["rules", "diff", "--git", "HEAD~1..HEAD", "--check"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("the registry version did not increase (1.6.0 → 1.6.0)"));
    // The same revision on both sides: nothing changed, nothing to raise.
    let out = run(&["rules", "diff", "--git", "HEAD..HEAD", "--check"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 added, 0 removed, 0 changed; 0 requests change"));
    let out = run(&["rules", "diff", "--git", "nosuchrev"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`nosuchrev` is not a revision"));
}

#[test]
fn a_gains_figure_shows_the_estimates_it_moves() {
    // Planted: Wisconsin excludes 40% of long-term gain instead of 30%.
    let r = diff_after(|d| plant(&d.join("gains/states/wi.yaml"), "long_term_exclusion: 30%", "long_term_exclusion: 40%"));
    let c = r.changes.iter().find(|c| c.kind == levy::cli::diff::model::ChangeKind::Gains).unwrap();
    assert!(c.id.starts_with("WI gains treatment from "), "{}", c.id);
    // 10,000 long-term × 70% × 7.65% = 535.50 → × 60% = 459.00; 1,500,000: 80,325.00 → 68,850.00. Nothing else moves.
    let effects: Vec<(&str, &str, &str)> =
        r.impacts.iter().map(|i| (i.jurisdiction.as_str(), i.rule.as_str(), i.effect.as_str())).collect();
    assert_eq!(
        effects,
        [
            ("WI", "gains estimate, income 100000, long_term=10000", "tax 535.50 → 459.00"),
            ("WI", "gains estimate, income 100000, long_term=1500000", "tax 80325.00 → 68850.00"),
        ]
    );
}

#[test]
fn a_special_tax_is_compared_in_its_zip_codes_for_every_kind_of_sale() {
    // Planted: Chicago's lease tax at 12% instead of 11% for 2025.
    let r = diff_after(|d| plant(&d.join("local/special.yaml"), "rate: 11%", "rate: 12%"));
    assert_eq!(r.changes.len(), 1);
    assert_eq!(r.changes[0].id, "chicago.ppltt rate from 2025-01-01");
    // 1000 × 11% = 110.00 → 1000 × 12% = 120.00, for 2025 only, in the 45 Chicago ZIP codes the tax names.
    assert_eq!(r.impacts.len(), 1, "{:#?}", r.impacts);
    let g = &r.impacts[0];
    assert_eq!(g.effect, "tax +10.00 on 1000; special taxes 110.00 → 120.00");
    assert_eq!((g.from.unwrap().to_string(), g.to.unwrap().to_string()), ("2025-01-01".into(), "2025-12-31".into()));
    let zips = g.dimensions.iter().find(|d| d.field == "buyer_zip").unwrap();
    assert_eq!(zips.count, 45);
    // SaaS is taxed by the lease tax though Illinois does not tax it.
    assert!(g.dimensions[0].values.contains(&"saas".to_string()), "{:?}", g.dimensions);
}
