//! `levy rules diff`: the reviewer's semantic diff. Both registries answer the same grid of
//! requests; only the answers that change are printed, with the rules responsible. The gains
//! tracker's figures are compared the same way: federal and state estimates of sample sales.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde_json::{json, Value};

use crate::engine::determine::pct;
use crate::engine::{self, Determination};
use crate::rules::schema::{Fact, FactKind, CATEGORIES, STATES, TRANSACTION_TYPES, WORK_TYPES};
use crate::rules::Registry;

pub fn diff(old: &Path, new: &Path, as_of: Option<&str>) -> u8 {
    let Some((old_reg, _)) = super::load_or_report(old) else { return 1 };
    let Some((new_reg, _)) = super::load_or_report(new) else { return 1 };
    let as_of = match super::as_of_or_today(as_of) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    print!("{}", diff_report(&old_reg, &new_reg, as_of));
    0
}

/// The grid: every jurisdiction × transaction type × role × is_b2b, every explicit work type,
/// the declared-fact values either registry's rules name, and every zip either knows.
fn grid(a: &Registry, b: &Registry, as_of: NaiveDate) -> Vec<Value> {
    let mut out = vec![];
    for (si, state) in STATES.iter().enumerate() {
        for tt in TRANSACTION_TYPES {
            for role in ["seller", "buyer"] {
                for b2b in [false, true] {
                    out.push(json!({"amount": 1000, "buyer_state": state, "transaction_type": tt, "role": role, "is_b2b": b2b, "counterparty_id": "diff"}));
                }
            }
        }
        for wt in WORK_TYPES {
            out.push(json!({"amount": 1000, "buyer_state": state, "work_type": wt, "counterparty_id": "diff"}));
        }
        let mut variants: BTreeSet<(&'static str, u16, u16)> = BTreeSet::new();
        for reg in [a, b] {
            if let Some(j) = reg.jurisdiction(si) {
                for r in &j.taxability {
                    let cats = r.when.as_ref().and_then(|w| w.category_test()).unwrap_or_default();
                    if let Some(w) = &r.when {
                        w.visit_facts(&mut |f, values| {
                            if matches!(
                                f,
                                Fact::category
                                    | Fact::transaction_type
                                    | Fact::work_type
                                    | Fact::buyer_state
                                    | Fact::seller_state
                                    | Fact::leg
                                    | Fact::role
                            ) {
                                return;
                            }
                            let vals: Vec<u16> =
                                if values.is_empty() && f.def().kind == FactKind::Bool { vec![1] } else { values.to_vec() };
                            for c in &cats {
                                for v in &vals {
                                    variants.insert((f.name(), *v, *c));
                                }
                            }
                        });
                    }
                }
            }
        }
        for (fact, v, cat) in variants {
            let Some(tt) = a.classification.transaction_types.iter().position(|t| t.category == cat).map(|i| TRANSACTION_TYPES[i]) else {
                continue;
            };
            let value = match Fact::by_name(fact).map(|f| f.def().kind) {
                Some(FactKind::Bool) => json!(v == 1),
                Some(FactKind::Enum(vals)) => json!(vals.get(v as usize).copied().unwrap_or("")),
                None => continue,
            };
            let mut req = json!({"amount": 1000, "buyer_state": state, "transaction_type": tt, "counterparty_id": "diff"});
            let obj = req.as_object_mut();
            let Some(obj) = obj else { continue };
            let attestation = crate::engine::request::ATTESTATION_FIELDS;
            let maintenance = [
                "mandatory",
                "includes_upgrades",
                "includes_support",
                "separately_itemized",
                "update_delivery",
                "support_kind",
                "business_use",
                "seller_sold_software",
            ];
            if attestation.contains(&fact) {
                obj.insert("work_type".into(), json!("custom_software"));
                obj.insert("custom_software_attestation".into(), json!({"written_for_buyer": true, "not_offered_to_others": true, "deliverable": "source_code", "is_modification_of_prewritten": false, fact: value}));
            } else if maintenance.contains(&fact) {
                obj.insert("maintenance_contract".into(), json!({ fact: value }));
            } else if fact == "work_type_source"
                || fact == "intrastate"
                || fact == "has_exemption_certificate"
                || fact == "custom_software_attestation_complete"
            {
                continue;
            } else {
                obj.insert(fact.into(), value);
            }
            if CATEGORIES.get(cat as usize) == Some(&"custom_software") && !attestation.contains(&fact) {
                continue;
            }
            out.push(req);
        }
    }
    // The zip codes whose local taxes differ between the two rule sets on the day compared.
    let mut zips: BTreeMap<String, usize> = BTreeMap::new();
    for reg in [a, b] {
        for e in &reg.local.entries {
            let z = e.zip();
            if local_taxes_at(a, &z, e.state(), as_of) != local_taxes_at(b, &z, e.state(), as_of) {
                zips.insert(z, e.state());
            }
        }
    }
    for (z, s) in zips {
        for tt in ["saas", "digital_good"] {
            out.push(json!({"amount": 1000, "buyer_state": STATES[s], "buyer_zip": z, "transaction_type": tt, "counterparty_id": "diff"}));
        }
    }
    out
}

/// The local taxes of every part of a zip code on a day, by id and rate: what the diff compares.
fn local_taxes_at(reg: &Registry, zip: &str, state: usize, day: NaiveDate) -> Option<Vec<Vec<(String, Decimal)>>> {
    let entry = reg.local.entry(zip, state)?;
    let answer = reg.local.answer(entry, None, day);
    let part = |p: &crate::rules::places::Part| p.layers.iter().map(|l| (l.tax.id.clone(), l.rate.value)).collect::<Vec<_>>();
    Some(std::iter::once(&answer.part).chain(&answer.others).map(part).collect())
}

fn evaluate(reg: &Registry, body: &Value, as_of: NaiveDate, nexus: &BTreeMap<usize, bool>) -> Option<Determination> {
    let req = engine::parse_request(body).ok()?;
    engine::determine(reg, &engine::Input { request: &req, nexus: Some(nexus), vendor_ytd: None, as_of }).ok()
}

fn describe_input(v: &Value) -> String {
    let Some(o) = v.as_object() else { return v.to_string() };
    o.iter()
        .filter(|(k, _)| *k != "counterparty_id" && *k != "amount")
        .map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"')))
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn diff_report(old: &Registry, new: &Registry, as_of: NaiveDate) -> String {
    let nexus: BTreeMap<usize, bool> = (0..STATES.len()).map(|i| (i, true)).collect();
    let mut s = String::new();
    let _ = writeln!(s, "semantic diff of rule set {} → {} as of {as_of} (amount 1000 USD, nexus everywhere)", old.version, new.version);
    let mut changed = 0;
    let inputs = grid(old, new, as_of);
    for body in &inputs {
        let (a, b) = (evaluate(old, body, as_of, &nexus), evaluate(new, body, as_of, &nexus));
        let line = match (&a, &b) {
            (Some(a), Some(b)) => {
                let rules_a: Vec<&str> = a.legs.iter().map(|l| l.rule_id.as_str()).collect();
                let rules_b: Vec<&str> = b.legs.iter().map(|l| l.rule_id.as_str()).collect();
                if a.total_tax == b.total_tax
                    && a.final_determination == b.final_determination
                    && a.combined_rate == b.combined_rate
                    && rules_a == rules_b
                {
                    continue;
                }
                let mut parts = vec![format!("tax {} → {}", a.total_tax, b.total_tax)];
                if a.combined_rate != b.combined_rate {
                    parts.push(format!("rate {} → {}", pct(a.combined_rate), pct(b.combined_rate)));
                }
                if a.final_determination != b.final_determination {
                    parts.push(format!("{} → {}", a.final_determination, b.final_determination));
                }
                parts.push(format!("rule {} → {}", rules_a.join("+"), rules_b.join("+")));
                parts.join("; ")
            }
            (None, Some(b)) => format!(
                "newly answered: tax {} (rule {})",
                b.total_tax,
                b.legs.iter().map(|l| l.rule_id.as_str()).collect::<Vec<_>>().join("+")
            ),
            (Some(a), None) => format!("no longer answered (was tax {})", a.total_tax),
            (None, None) => continue,
        };
        changed += 1;
        let _ = writeln!(s, "  {}: {line}", describe_input(body));
    }
    let _ = writeln!(s, "{changed} of {} inputs change", inputs.len());
    gains_report(old, new, as_of, &mut s);
    let known: BTreeSet<(NaiveDate, &str)> = old.changelog.iter().map(|c| (c.date, c.summary.as_str())).collect();
    let entries: Vec<_> = new.changelog.iter().filter(|c| !known.contains(&(c.date, c.summary.as_str()))).collect();
    if !entries.is_empty() {
        let _ = writeln!(s, "change log entries added:");
        for c in entries {
            let _ = writeln!(s, "  {} ({}): {}", c.date, c.version, c.summary);
        }
    }
    s
}

/// Sample sales (short-term, long-term) the gains estimates are compared on.
const GAINS_SAMPLES: [(i64, i64); 3] = [(10_000, 0), (0, 10_000), (0, 1_500_000)];

fn gains_report(old: &Registry, new: &Registry, as_of: NaiveDate, s: &mut String) {
    use crate::api::schema::number::Usd;
    use crate::gains::estimate::{federal, state, Gains, Profile};
    use crate::rules::schema::FILING_STATUSES;
    use rust_decimal::Decimal;

    let total = |t: Option<&Usd>| t.map(|t| t.0.to_string()).unwrap_or_else(|| "not estimated".into());
    let mut lines = vec![];
    let mut count = 0;
    for (st, lt) in GAINS_SAMPLES {
        let g = Gains { short_term: Decimal::from(st), long_term: Decimal::from(lt) };
        let what = if st > 0 { format!("short_term={st}") } else { format!("long_term={lt}") };
        for (fs, status) in FILING_STATUSES.iter().enumerate() {
            let p = Profile { entity: None, filing_status: Some(fs), income: Some(Decimal::from(100_000)), state: None };
            let (a, b) = (federal(&old.gains, g, &p, as_of), federal(&new.gains, g, &p, as_of));
            count += 1;
            let (a, b) = (a.total_tax.as_ref(), b.total_tax.as_ref());
            if total(a) != total(b) {
                lines.push(format!("  gains federal {status} income=100000 {what}: tax {} → {}", total(a), total(b)));
            }
        }
        for (i, code) in STATES.iter().enumerate() {
            let p = Profile { entity: None, filing_status: Some(0), income: Some(Decimal::from(100_000)), state: Some(i) };
            let (a, b) = (state(&old.gains, g, &p, as_of), state(&new.gains, g, &p, as_of));
            count += 1;
            let (a, b) = (a.total_tax.as_ref(), b.total_tax.as_ref());
            if total(a) != total(b) {
                lines.push(format!("  gains state {code} single income=100000 {what}: tax {} → {}", total(a), total(b)));
            }
        }
    }
    for l in &lines {
        let _ = writeln!(s, "{l}");
    }
    let _ = writeln!(s, "{} of {count} gains estimates change", lines.len());
}
