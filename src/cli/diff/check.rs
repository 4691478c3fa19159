//! `levy rules diff --check`: what a change of the rules must carry before it is merged. The registry version
//! rises when the law's content changes, the change log has an entry for the new version, every changed rate
//! cites the source of its new figure, and a scenario case's expectation changes only with the rules it tests.

use std::collections::BTreeMap;

use super::model::{ChangeKind, ChangeOp};
use super::structural::Found;
use super::RuleSet;
use crate::engine::Determination;
use crate::rules::cases::Case;
use crate::rules::Registry;

/// Every problem, each a sentence naming what is wrong and where.
pub fn problems(old: &RuleSet, new: &RuleSet, found: &[Found]) -> Vec<String> {
    let mut out = vec![];
    let content: Vec<&Found> =
        found.iter().filter(|f| !matches!(f.change.kind, ChangeKind::Registry | ChangeKind::Case | ChangeKind::Plan)).collect();
    let (v_old, v_new) = (&old.reg.version, &new.reg.version);
    if let Some(first) = content.first() {
        if version(v_new) <= version(v_old) {
            out.push(format!(
                "the rules changed ({} change{}, the first {} at {}) but the registry version did not increase ({v_old} → {v_new}): raise `version` in registry.yaml",
                content.len(),
                if content.len() == 1 { "" } else { "s" },
                first.change.id,
                first.change.location
            ));
        }
    }
    if (!content.is_empty() || v_old != v_new) && !new.reg.changelog.iter().any(|c| &c.version == v_new) {
        out.push(format!("the change log in registry.yaml has no entry for version {v_new}: add one saying what changed"));
    }
    for f in found.iter().filter(|f| f.change.kind == ChangeKind::Rate && f.change.op != ChangeOp::Removed) {
        let c = &f.change;
        let field = |name: &str| c.fields.iter().find(|x| x.field == name);
        let value_changed = field("rate").or_else(|| field("value")).is_some();
        if c.op == ChangeOp::Added && field("cite").and_then(|x| x.new.as_deref()).is_none_or(str::is_empty) {
            out.push(format!("{} ({}) has no citation: add `cite:`", c.id, c.location));
        } else if c.op == ChangeOp::Changed && value_changed && field("cite").is_none() {
            out.push(format!("{} ({}): the rate changed but its citation did not: cite the source of the new figure", c.id, c.location));
        } else if f.citation_reused {
            out.push(format!(
                "{} ({}) cites the same source as the period before it, which gave another rate: cite the source of the new figure",
                c.id, c.location
            ));
        }
    }
    let olds: BTreeMap<&str, &Case> = old.cases.iter().map(|c| (c.name.as_str(), c)).collect();
    for case in &new.cases {
        let Some(before) = olds.get(case.name.as_str()) else { continue };
        let expect = |c: &Case| c.expect.iter().map(|(k, v, _)| (k.clone(), v.to_string())).collect::<BTreeMap<_, _>>();
        let (a, b) = (expect(before), expect(case));
        if a == b || before.request != case.request || before.as_of != case.as_of || before.nexus != case.nexus {
            continue;
        }
        let (d_old, d_new) = (run(&old.reg, case), run(&new.reg, case));
        if same(d_old.as_ref(), d_new.as_ref()) {
            let changed: Vec<String> = b
                .iter()
                .filter(|(k, v)| a.get(*k) != Some(*v))
                .map(|(k, v)| format!("{k} {} → {v}", a.get(k).map_or("—", String::as_str)))
                .collect();
            out.push(format!(
                "case `{}` ({}:{}): its expectation changed ({}) but no rule change alters its determination",
                case.name,
                new.relative(&case.span.file),
                case.span.line,
                changed.join(", ")
            ));
        }
    }
    out
}

/// `1.6.0` → [1, 6, 0]; anything unreadable compares lowest.
fn version(v: &str) -> Vec<u64> {
    v.split('.').map(|p| p.parse().unwrap_or(0)).collect()
}

/// The case's request determined as `levy rules test` does.
fn run(reg: &Registry, case: &Case) -> Option<Determination> {
    crate::scenarios::determine_case(reg, case).ok()
}

/// Whether two determinations agree on everything a case can expect.
fn same(a: Option<&Determination>, b: Option<&Determination>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            let key = |d: &Determination| {
                (
                    d.total_tax,
                    d.combined_rate,
                    d.state_rate,
                    d.local_rate,
                    d.final_determination.to_string(),
                    d.fired_rules().join(" "),
                    d.special_total,
                    d.advisory_codes().join(" "),
                    d.tax_if_nexus,
                    d.confidence_level,
                )
            };
            key(a) == key(b)
        }
        _ => false,
    }
}
