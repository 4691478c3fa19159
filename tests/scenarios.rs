//! Every scenario case in rules/tests passes, and the cases cover the law: at least 300 in all,
//! at least 3 per jurisdiction, and every taxability and special-tax rule fires in some case.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use levy::rules::{cases, diag::SourceMap, load_dir};
use levy::scenarios::run_case;

#[test]
fn every_scenario_case_passes_and_the_cases_cover_every_rule() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("rules");
    let (reg, diags, mut sources) = load_dir(&dir);
    let rendered: Vec<String> = diags.iter().map(|d| sources.render(d)).collect();
    let reg = reg.unwrap_or_else(|| panic!("rules/ does not check clean:\n{}", rendered.join("\n")));
    let (cases, diags) = cases::load_cases(&dir, &mut sources);
    assert!(diags.is_empty(), "{}", diags.iter().map(|d| SourceMap::default().render(d)).collect::<Vec<_>>().join("\n"));

    let mut failures = vec![];
    let mut fired: BTreeSet<String> = BTreeSet::new();
    let mut per_state: BTreeMap<String, usize> = BTreeMap::new();
    for case in &cases {
        let out = run_case(&reg, case);
        if let Some(det) = &out.determination {
            fired.extend(det.fired_rules().into_iter().map(str::to_string));
            *per_state.entry(det.buyer_state.to_string()).or_default() += 1;
        } else if let Some(s) = case.request.get("buyer_state").and_then(|v| v.as_str()) {
            *per_state.entry(s.to_string()).or_default() += 1;
        }
        if !out.failures.is_empty() {
            failures.push(format!("{} ({}):\n    {}", case.name, case.span, out.failures.join("\n    ")));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
    assert!(cases.len() >= 300, "only {} scenario cases", cases.len());
    for j in reg.all_jurisdictions() {
        let n = per_state.get(j.code).copied().unwrap_or(0);
        assert!(n >= 3, "{} has only {n} scenario cases", j.code);
    }
    let mut unfired = vec![];
    for j in reg.all_jurisdictions() {
        unfired.extend(j.taxability.iter().filter(|r| !fired.contains(&r.id)).map(|r| r.id.clone()));
    }
    unfired.extend(reg.special_taxes.iter().filter(|s| !fired.contains(&s.id)).map(|s| s.id.clone()));
    assert!(unfired.is_empty(), "{} rules never fire in any case: {}", unfired.len(), unfired.join(", "));
}
