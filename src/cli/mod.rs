//! The analysts' commands. Each returns the process exit code and prints for a person.

pub mod accounts;
pub mod audit;
pub mod diff;
mod explain;
mod import;
pub mod partners;
pub mod reports;

use std::path::Path;

use chrono::NaiveDate;

use crate::rules::cases;
use crate::rules::load::{load_or_report, partial_from_env, print_diagnostics};
use crate::rules::report;
use crate::scenarios::run_case;

pub use audit::audit_rates;
pub use diff::{compare, diff, DiffArgs, DiffReport, RuleSet};
pub use explain::{explain, explain_text};
pub use import::import_sst;

pub fn check(dir: &Path) -> u8 {
    let checked = report::check_dir(dir, partial_from_env());
    eprint!("{}", checked.render());
    let plans = crate::plans::check(dir);
    let (Some(reg), true, Some(plans)) = (&checked.registry, checked.passed(), plans) else { return 1 };
    let cases = &checked.cases;
    let rules: usize = reg.rule_count();
    println!(
        "ok: rule set {} (engine {}): {} jurisdictions, {} rules, {} local taxes, {} zip codes ({} of {} states whole), {} special taxes, {} cases, {} plans",
        reg.version,
        reg.engine_version,
        reg.all_jurisdictions().count(),
        rules,
        reg.local.taxes.len(),
        reg.local.entries.chunk_by(|a, b| a.code == b.code).count(),
        reg.local.complete.iter().flatten().count(),
        reg.all_jurisdictions().filter(|j| j.local_taxes.last().is_some_and(|d| d.value)).count(),
        reg.special_taxes.len(),
        cases.len(),
        plans.tiers.len()
    );
    0
}

pub fn test(dir: &Path, filter: Option<&str>) -> u8 {
    let Some((reg, mut sources)) = load_or_report(dir) else { return 1 };
    let (cases, diags) = cases::load_cases(dir, &mut sources);
    if !diags.is_empty() {
        print_diagnostics(&diags, &sources);
        return 1;
    }
    let (mut passed, mut failed) = (0, 0);
    for case in cases.iter().filter(|c| filter.is_none_or(|f| c.name.contains(f))) {
        let out = run_case(&reg, case);
        if out.failures.is_empty() {
            passed += 1;
            continue;
        }
        failed += 1;
        println!("FAIL {} ({})", case.name, case.span);
        for f in &out.failures {
            println!("    {f}");
        }
        if let Some(det) = &out.determination {
            println!("    trace:");
            for step in &det.trace {
                println!("      {:<14} {:<48} {}", step.stage, step.rule.as_deref().unwrap_or("-"), step.result);
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    u8::from(failed > 0)
}

/// Parses `--as-of`, defaulting to today (UTC).
pub fn as_of_or_today(text: Option<&str>) -> Result<NaiveDate, String> {
    match text {
        None => Ok(chrono::Utc::now().date_naive()),
        Some(t) => NaiveDate::parse_from_str(t, "%Y-%m-%d").map_err(|_| format!("`{t}` is not a date (YYYY-MM-DD)")),
    }
}
