//! The impact: both rule sets answer the same requests on the days that matter, and the answers that differ are
//! grouped by jurisdiction, rule and effect, each group with the requests it spans and the dates it holds.
//!
//! Only what a structural change can reach is evaluated: the state-level requests of a state whose rules, rates
//! or thresholds changed; requests into the ZIP codes of a changed local tax or boundary; the gains estimates when
//! gains figures changed. The days are where a changed item starts and ends, and where anything else of that
//! state changes inside its period (a result holds until the next such day).

use std::collections::{BTreeMap, BTreeSet};

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde_json::{json, Value};

use super::model::{ChangeOp, Dimension, Impact, ImpactKind};
use super::structural::{zip_runs, Found, Period, Reach};
use super::RuleSet;
use crate::engine::determine::pct;
use crate::engine::request::state_code;
use crate::engine::{self, Determination};
use crate::rules::registry::{Dated, Registry};
use crate::rules::schema::{Fact, FactKind, CATEGORIES, STATES, TRANSACTION_TYPES, WORK_TYPES};

/// The amount every request of the grid sells.
pub const AMOUNT: i64 = 1000;

pub struct Impacts {
    pub groups: Vec<Impact>,
    pub evaluations: u64,
    pub inputs_changed: u64,
    pub dates: Vec<NaiveDate>,
}

/// What one state must be evaluated for.
#[derive(Default)]
struct StatePlan {
    /// Periods of changes to the state's own rules (its state-level requests).
    periods: Vec<Period>,
    /// Periods of classification changes: compared only on their first days, in every state.
    global: Vec<Period>,
    /// The ZIP codes a local change reaches, each with the periods of those changes.
    zips: BTreeMap<u32, Vec<Period>>,
    /// ZIP codes compared with every transaction type (a special tax's).
    every_kind: BTreeSet<u32>,
}

pub fn impacts(old: &RuleSet, new: &RuleSet, found: &[Found], as_of: Option<NaiveDate>) -> Impacts {
    let mut plans: BTreeMap<usize, StatePlan> = BTreeMap::new();
    let mut gains_periods = vec![];
    let mut groups = vec![];
    for f in found {
        match &f.reach {
            Reach::Nothing => {}
            Reach::State(s) => plans.entry(*s).or_default().periods.extend(&f.periods),
            Reach::AllStates => {
                for s in 0..STATES.len() {
                    plans.entry(s).or_default().global.extend(&f.periods);
                }
            }
            Reach::Zips(s, zips) | Reach::Special(s, zips) => {
                let p = plans.entry(*s).or_default();
                for z in zips {
                    p.zips.entry(*z).or_default().extend(&f.periods);
                }
                if matches!(f.reach, Reach::Special(..)) {
                    p.every_kind.extend(zips);
                }
            }
            Reach::Gains => gains_periods.extend(&f.periods),
            Reach::Plan => groups.push(plan_impact(f)),
        }
    }
    let coverage = old.reg.coverage_from.max(new.reg.coverage_from);
    let mut cmp = Comparison {
        old: &old.reg,
        new: &new.reg,
        nexus: (0..STATES.len()).map(|i| (i, true)).collect(),
        groups: BTreeMap::new(),
        evaluations: 0,
        inputs_changed: 0,
        dates: BTreeSet::new(),
    };
    for (s, plan) in &plans {
        let s = *s;
        let mut points = state_points(&old.reg, s);
        points.extend(state_points(&new.reg, s));
        let mut state_dates = days(&plan.periods, &points, coverage);
        state_dates.extend(plan.global.iter().map(|p| p.0.max(coverage)));
        let state_dates = cmp.fix(state_dates, as_of);
        if !state_dates.is_empty() {
            for body in state_inputs(&old.reg, &new.reg, s) {
                cmp.run(s, &body, &state_dates, false);
            }
        }
        if plan.zips.is_empty() {
            continue;
        }
        // Each ZIP code on its own days: where its changes start and end, and where its taxes or its state's
        // rules change inside them.
        let mut by_zip: Vec<(u32, Vec<NaiveDate>)> = vec![];
        for (zip, periods) in &plan.zips {
            let mut periods = periods.clone();
            periods.extend(&plan.periods);
            let mut p = points.clone();
            p.extend(local_points(&old.reg, s, *zip));
            p.extend(local_points(&new.reg, s, *zip));
            by_zip.push((*zip, cmp.fix(days(&periods, &p, coverage), as_of)));
        }
        let all: BTreeSet<NaiveDate> = by_zip.iter().flat_map(|(_, d)| d.iter().copied()).collect();
        let kinds = cmp.taxed_kinds(s, &all);
        for (zip, dates) in &by_zip {
            let kinds: &[&str] = if plan.every_kind.contains(zip) { &TRANSACTION_TYPES } else { &kinds };
            for tt in kinds {
                let body = json!({"amount": AMOUNT, "buyer_state": state_code(s), "buyer_zip": format!("{zip:05}"), "transaction_type": tt, "counterparty_id": "diff"});
                cmp.run(s, &body, dates, true);
            }
        }
    }
    let mut out = Impacts { groups: vec![], evaluations: cmp.evaluations, inputs_changed: cmp.inputs_changed, dates: vec![] };
    let mut all_dates = std::mem::take(&mut cmp.dates);
    for (k, g) in cmp.groups {
        let pairs: BTreeSet<(&Option<String>, &Option<String>)> = g.taxes.iter().map(|(a, b)| (a, b)).collect();
        let (old_tax, new_tax) = match pairs.iter().next() {
            Some((a, b)) if pairs.len() == 1 => ((*a).clone(), (*b).clone()),
            _ => (None, None),
        };
        out.groups.push(Impact {
            kind: ImpactKind::Determination,
            jurisdiction: k.state.to_string(),
            rule: k.rule,
            effect: k.effect,
            old: old_tax,
            new: new_tax,
            points: g.points,
            from: Some(k.from),
            to: k.to,
            inputs: g.inputs.len() as u64,
            dimensions: dimensions(&g.inputs),
        });
    }
    if !gains_periods.is_empty() {
        let points: BTreeSet<NaiveDate> = BTreeSet::new();
        let mut dates: Vec<NaiveDate> = days(&gains_periods, &points, coverage).into_iter().collect();
        if let Some(day) = as_of {
            dates = vec![day];
        }
        all_dates.extend(dates.iter().copied());
        out.groups.extend(gains_impacts(&old.reg, &new.reg, &dates, &mut out.evaluations));
    }
    out.groups.extend(groups);
    out.dates = all_dates.into_iter().collect();
    out
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct GroupKey {
    state: &'static str,
    rule: String,
    effect: String,
    from: NaiveDate,
    to: Option<NaiveDate>,
}

#[derive(Default)]
struct Group {
    points: Option<String>,
    /// The tax before and after of each request.
    taxes: Vec<(Option<String>, Option<String>)>,
    inputs: Vec<Value>,
}

/// Both rule sets answering requests, and the groups of answers that differ.
struct Comparison<'a> {
    old: &'a Registry,
    new: &'a Registry,
    nexus: BTreeMap<usize, bool>,
    groups: BTreeMap<GroupKey, Group>,
    evaluations: u64,
    inputs_changed: u64,
    dates: BTreeSet<NaiveDate>,
}

impl Comparison<'_> {
    /// The days to compare, as a list: `as_of` alone when it is given.
    fn fix(&mut self, days: BTreeSet<NaiveDate>, as_of: Option<NaiveDate>) -> Vec<NaiveDate> {
        let days: Vec<NaiveDate> = match as_of {
            Some(d) if !days.is_empty() => vec![d],
            _ => days.into_iter().collect(),
        };
        self.dates.extend(&days);
        days
    }

    fn determine(&mut self, reg: &Registry, req: &crate::engine::Request, day: NaiveDate) -> Option<Determination> {
        engine::determine(reg, &engine::Input { request: req, nexus: Some(&self.nexus), vendor_ytd: None, as_of: day }).ok()
    }

    /// One request on each of its days; each run of days with the same difference joins a group. A request into
    /// a ZIP code whose rule does not change is grouped by what its local taxes do, its rule a dimension.
    fn run(&mut self, s: usize, body: &Value, dates: &[NaiveDate], local: bool) {
        let Ok(req) = crate::api::schema::calculate::read_request(body) else { return };
        let mut effects: Vec<Option<Effect>> = vec![];
        for day in dates {
            self.evaluations += 1;
            let (a, b) = (self.determine(self.old, &req, *day), self.determine(self.new, &req, *day));
            effects.push(effect(a.as_ref(), b.as_ref()));
        }
        let mut changed = false;
        let mut i = 0;
        while i < effects.len() {
            let (Some(e), Some(from)) = (&effects[i], dates.get(i)) else {
                i += 1;
                continue;
            };
            let mut j = i;
            while j + 1 < effects.len() && effects[j + 1].as_ref() == Some(e) {
                j += 1;
            }
            let to = dates.get(j + 1).and_then(|d| d.pred_opt());
            let mut input = body.clone();
            let (rule, text) = if local && !e.rule.contains('→') {
                if let Some(o) = input.as_object_mut() {
                    o.insert("rule".into(), json!(e.rule));
                }
                ("local taxes".to_string(), e.text(true))
            } else {
                (e.rule.clone(), e.text(false))
            };
            let g = self.groups.entry(GroupKey { state: state_code(s), rule, effect: text, from: *from, to }).or_default();
            g.points.clone_from(&e.points);
            g.taxes.push((e.old_tax.clone(), e.new_tax.clone()));
            g.inputs.push(input);
            changed = true;
            i = j + 1;
        }
        self.inputs_changed += u64::from(changed);
    }

    /// The transaction types a ZIP code's requests use: the first taxed one of each taxability rule a seller's
    /// sale to a consumer meets in the state on any of the days (the others would repeat its answer), so that a
    /// local change is seen through every rule it passes through.
    fn taxed_kinds(&mut self, s: usize, days: &BTreeSet<NaiveDate>) -> Vec<&'static str> {
        let mut seen: BTreeSet<String> = BTreeSet::new();
        let mut out = vec![];
        for tt in TRANSACTION_TYPES {
            let body = json!({"amount": AMOUNT, "buyer_state": state_code(s), "transaction_type": tt, "counterparty_id": "diff"});
            let Ok(req) = crate::api::schema::calculate::read_request(&body) else { continue };
            for day in days {
                for reg in [self.old, self.new] {
                    let Some(d) = self.determine(reg, &req, *day) else { continue };
                    let rules: Vec<&str> = d.legs.iter().filter(|l| l.result.is_taxable()).map(|l| l.rule_id.as_str()).collect();
                    if !rules.is_empty() && seen.insert(rules.join("+")) && !out.contains(&tt) {
                        out.push(tt);
                    }
                }
            }
        }
        out
    }
}

/// How one answer differs between the rule sets.
#[derive(Clone, PartialEq)]
struct Effect {
    rule: String,
    /// What differs besides the tax: points, the state rate, local layers, the determination, special taxes.
    details: Vec<String>,
    old_tax: Option<String>,
    new_tax: Option<String>,
    points: Option<String>,
}

impl Effect {
    /// In words: `tax 50.00 → 52.00 on 1000; +0.25 points; …`, or with `delta` the tax's change (`tax +8.00`), for
    /// requests whose taxes before differ but move alike.
    fn text(&self, delta: bool) -> String {
        let tax = match (&self.old_tax, &self.new_tax) {
            (Some(a), Some(b)) if delta => {
                let d = b.parse::<Decimal>().unwrap_or_default() - a.parse::<Decimal>().unwrap_or_default();
                format!("tax {}{d} on {AMOUNT}", if d > Decimal::ZERO { "+" } else { "" })
            }
            (Some(a), Some(b)) => format!("tax {a} → {b} on {AMOUNT}"),
            (None, Some(b)) => format!("newly answered: tax {b} on {AMOUNT}"),
            (Some(a), None) => format!("no longer answered (was tax {a} on {AMOUNT})"),
            (None, None) => String::new(),
        };
        std::iter::once(tax).chain(self.details.iter().cloned()).collect::<Vec<_>>().join("; ")
    }
}

/// The difference of two answers to one request, if any: the tax, the rate applied, the state rate, the local
/// layers, the determination, the special taxes and the rules that decided.
fn effect(a: Option<&Determination>, b: Option<&Determination>) -> Option<Effect> {
    let rules = |d: &Determination| d.legs.iter().map(|l| l.rule_id.as_str()).collect::<Vec<_>>().join("+");
    let (a, b) = match (a, b) {
        (None, None) => return None,
        (None, Some(b)) => {
            return Some(Effect { rule: rules(b), details: vec![], old_tax: None, new_tax: Some(b.total_tax.to_string()), points: None });
        }
        (Some(a), None) => {
            return Some(Effect { rule: rules(a), details: vec![], old_tax: Some(a.total_tax.to_string()), new_tax: None, points: None });
        }
        (Some(a), Some(b)) => (a, b),
    };
    // The rate applied and the local layers, where something is taxed: an exempt sale's answer does not move with
    // the rates.
    let taxed = |d: &Determination| d.legs.iter().any(|l| l.result.is_taxable());
    let applied = |d: &Determination| taxed(d).then(|| d.applied_combined_rate());
    let layers = |d: &Determination| d.layers.iter().filter(|_| taxed(d)).map(|l| (l.id.clone(), l.rate)).collect::<Vec<_>>();
    let (ra, rb) = (rules(a), rules(b));
    let (la, lb) = (layers(a), layers(b));
    let (rate_a, rate_b) = (applied(a), applied(b));
    if a.total_tax == b.total_tax
        && a.final_determination == b.final_determination
        && rate_a == rate_b
        && ra == rb
        && la == lb
        && a.special_total == b.special_total
    {
        return None;
    }
    let mut parts = vec![];
    let points = match (rate_a, rate_b) {
        (Some(x), Some(y)) if x != y => {
            let p = ((y - x) * Decimal::from(100)).normalize();
            Some(if p > Decimal::ZERO { format!("+{p}") } else { p.to_string() })
        }
        _ => None,
    };
    if let Some(p) = &points {
        parts.push(format!("{p} points"));
    }
    let (sa, sb) = (a.applied_state_rate(), b.applied_state_rate());
    if sa != sb && rate_a.is_some() && rate_b.is_some() {
        parts.push(format!("state rate {} → {}", pct(sa), pct(sb)));
    }
    for (id, r) in &lb {
        match la.iter().find(|(i, _)| i == id) {
            None => parts.push(format!("+{id} {}", pct(*r))),
            Some((_, old)) if old != r => parts.push(format!("{id} {} → {}", pct(*old), pct(*r))),
            _ => {}
        }
    }
    for (id, r) in la.iter().filter(|(i, _)| !lb.iter().any(|(j, _)| j == i)) {
        parts.push(format!("−{id} {}", pct(*r)));
    }
    if a.final_determination != b.final_determination {
        parts.push(format!("{} → {}", a.final_determination, b.final_determination));
    }
    if a.special_total != b.special_total {
        parts.push(format!("special taxes {} → {}", a.special_total, b.special_total));
    }
    let rule = if ra == rb { rb } else { format!("{ra} → {rb}") };
    Some(Effect { rule, details: parts, old_tax: Some(a.total_tax.to_string()), new_tax: Some(b.total_tax.to_string()), points })
}

/// The days to compare for some periods: each period's first day (not before coverage), the day after it ends,
/// and every day in it where anything of the state changes (`points`).
fn days(periods: &[Period], points: &BTreeSet<NaiveDate>, coverage: NaiveDate) -> BTreeSet<NaiveDate> {
    let mut out = BTreeSet::new();
    for (from, to) in periods {
        if to.is_some_and(|t| t < coverage) {
            continue;
        }
        let start = (*from).max(coverage);
        out.insert(start);
        if let Some(next) = to.and_then(|t| t.succ_opt()) {
            out.insert(next);
        }
        out.extend(points.iter().filter(|p| **p > start && to.is_none_or(|t| **p <= t)));
    }
    out
}

fn push_dated<T>(list: &[Dated<T>], out: &mut BTreeSet<NaiveDate>) {
    for d in list {
        out.insert(d.from);
        out.extend(d.to.and_then(|t| t.succ_opt()));
    }
}

/// The days anything of a state's own rules starts or stops: rates, thresholds, rules, special taxes.
fn state_points(reg: &Registry, s: usize) -> BTreeSet<NaiveDate> {
    let mut out = BTreeSet::new();
    if let Some(j) = reg.jurisdiction(s) {
        push_dated(&j.state_rate, &mut out);
        push_dated(&j.local_taxes, &mut out);
        push_dated(&j.economic_nexus, &mut out);
        push_dated(&j.marketplace, &mut out);
        for (from, to) in j.taxability.iter().map(|r| (r.from, r.to)).chain(j.sourcing.iter().map(|r| (r.from, r.to))) {
            out.insert(from);
            out.extend(to.and_then(|t| t.succ_opt()));
        }
    }
    for t in reg.special_taxes.iter().filter(|t| t.state == s) {
        push_dated(&t.rates, &mut out);
    }
    out
}

/// The days the local taxes of a ZIP code, or its areas, start or stop.
fn local_points(reg: &Registry, s: usize, zip: u32) -> BTreeSet<NaiveDate> {
    let l = &reg.local;
    let mut out = BTreeSet::new();
    let mut taxes: BTreeSet<u32> = BTreeSet::new();
    if let Some(e) = l.entry(&format!("{zip:05}"), s) {
        for a in l.areas(e) {
            out.extend(a.from);
            out.extend(a.to.and_then(|t| t.succ_opt()));
            taxes.extend(l.taxes_of(a));
        }
    }
    for t in taxes.iter().filter_map(|&i| l.taxes.get(i as usize)) {
        push_dated(&t.rates, &mut out);
    }
    out
}

/// A state's requests without a ZIP code: every transaction type × role × is_b2b, every explicit work type, and
/// each value of each declared fact either rule set's rules name, for the categories those rules test.
fn state_inputs(a: &Registry, b: &Registry, s: usize) -> Vec<Value> {
    let state = state_code(s);
    let mut out = vec![];
    for tt in TRANSACTION_TYPES {
        for role in ["seller", "buyer"] {
            for b2b in [false, true] {
                out.push(json!({"amount": AMOUNT, "buyer_state": state, "transaction_type": tt, "role": role, "is_b2b": b2b, "counterparty_id": "diff"}));
            }
        }
    }
    for wt in WORK_TYPES {
        out.push(json!({"amount": AMOUNT, "buyer_state": state, "work_type": wt, "counterparty_id": "diff"}));
    }
    let mut variants: BTreeSet<(&'static str, u16, u16)> = BTreeSet::new();
    for reg in [a, b] {
        let Some(j) = reg.jurisdiction(s) else { continue };
        for r in &j.taxability {
            let Some(w) = &r.when else { continue };
            let cats = w.category_test().unwrap_or_default();
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
                let vals: Vec<u16> = if values.is_empty() && f.def().kind == FactKind::Bool { vec![1] } else { values.to_vec() };
                for c in &cats {
                    for v in &vals {
                        variants.insert((f.name(), *v, *c));
                    }
                }
            });
        }
    }
    let attestation = crate::engine::request::ATTESTATION_FIELDS;
    let maintenance = crate::engine::request::MAINTENANCE_FIELDS;
    let skipped = ["work_type_source", "intrastate", "has_exemption_certificate", "custom_software_attestation_complete"];
    for (fact, v, cat) in variants {
        let Some(tt) = a.classification.transaction_types.iter().position(|t| t.category == cat).and_then(|i| TRANSACTION_TYPES.get(i))
        else {
            continue;
        };
        let value = match Fact::by_name(fact).map(|f| f.def().kind) {
            Some(FactKind::Bool) => json!(v == 1),
            Some(FactKind::Enum(vals)) => json!(vals.get(v as usize).copied().unwrap_or("")),
            None => continue,
        };
        if skipped.contains(&fact) || (CATEGORIES.get(cat as usize) == Some(&"custom_software") && !attestation.contains(&fact)) {
            continue;
        }
        let mut req = serde_json::Map::new();
        req.insert("amount".into(), json!(AMOUNT));
        req.insert("buyer_state".into(), json!(state));
        req.insert("transaction_type".into(), json!(tt));
        req.insert("counterparty_id".into(), json!("diff"));
        if attestation.contains(&fact) {
            req.insert("work_type".into(), json!("custom_software"));
            req.insert("custom_software_attestation".into(), json!({"written_for_buyer": true, "not_offered_to_others": true, "deliverable": "source_code", "is_modification_of_prewritten": false, fact: value}));
        } else if maintenance.contains(&fact) {
            req.insert("maintenance_contract".into(), json!({ fact: value }));
        } else {
            req.insert(fact.into(), value);
        }
        out.push(Value::Object(req));
    }
    out
}

/// The values a group's requests take, field by field (the amount, state and counterparty are the grid's own).
fn dimensions(inputs: &[Value]) -> Vec<Dimension> {
    let mut fields: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for v in inputs {
        let Some(o) = v.as_object() else { continue };
        for (k, v) in o.iter().filter(|(k, _)| !matches!(k.as_str(), "amount" | "buyer_state" | "counterparty_id")) {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Object(m) => m.iter().map(|(k, v)| format!("{k}={}", v.to_string().trim_matches('"'))).collect::<Vec<_>>().join(" "),
                other => other.to_string(),
            };
            fields.entry(k.clone()).or_default().insert(text);
        }
    }
    let order = ["transaction_type", "work_type", "role", "is_b2b", "buyer_zip"];
    let rank = |k: &str| order.iter().position(|o| *o == k).unwrap_or(order.len());
    let mut dims: Vec<Dimension> = fields
        .into_iter()
        .map(|(field, values)| {
            let count = values.len() as u64;
            let values = if field == "buyer_zip" {
                let zips: Vec<u32> = values.iter().filter_map(|z| z.parse().ok()).collect();
                zip_runs(&zips).into_iter().take(8).collect()
            } else {
                values.into_iter().take(8).collect()
            };
            Dimension { field, count, values }
        })
        .collect();
    dims.sort_by_key(|d| rank(&d.field));
    dims
}

/// Sample sales (short-term, long-term) the gains estimates are compared on.
const GAINS_SAMPLES: [(i64, i64); 3] = [(10_000, 0), (0, 10_000), (0, 1_500_000)];

/// The federal estimates of each filing status and each state's estimate (single), at an income of 100,000, for
/// the sample sales, grouped by jurisdiction, sample and effect.
fn gains_impacts(old: &Registry, new: &Registry, dates: &[NaiveDate], evaluations: &mut u64) -> Vec<Impact> {
    use crate::gains::estimate::{federal, state, Gains, Profile};
    use crate::rules::schema::FILING_STATUSES;

    let total = |t: Option<&Decimal>| t.map(|t| t.to_string());
    // (jurisdiction, sample, old, new, from) → filing statuses
    type Key = (String, String, Option<String>, Option<String>, NaiveDate);
    let mut groups: BTreeMap<Key, Vec<Value>> = BTreeMap::new();
    for day in dates {
        for (st, lt) in GAINS_SAMPLES {
            let g = Gains { short_term: Decimal::from(st), long_term: Decimal::from(lt) };
            let sample = if st > 0 { format!("short_term={st}") } else { format!("long_term={lt}") };
            for (fs, status) in FILING_STATUSES.iter().enumerate() {
                let p = Profile { entity: None, filing_status: Some(fs), income: Some(Decimal::from(100_000)), state: None };
                *evaluations += 1;
                let (a, b) = (federal(&old.gains, g, &p, *day), federal(&new.gains, g, &p, *day));
                let (a, b) = (total(a.total_tax.as_ref()), total(b.total_tax.as_ref()));
                if a != b {
                    groups.entry(("US".into(), sample.clone(), a, b, *day)).or_default().push(json!({"filing_status": status}));
                }
            }
            for (i, code) in STATES.iter().enumerate() {
                let p = Profile { entity: None, filing_status: Some(0), income: Some(Decimal::from(100_000)), state: Some(i) };
                *evaluations += 1;
                let (a, b) = (state(&old.gains, g, &p, *day), state(&new.gains, g, &p, *day));
                let (a, b) = (total(a.total_tax.as_ref()), total(b.total_tax.as_ref()));
                if a != b {
                    groups.entry((code.to_string(), sample.clone(), a, b, *day)).or_default().push(json!({"filing_status": "single"}));
                }
            }
        }
    }
    let shown = |t: &Option<String>| t.clone().unwrap_or_else(|| "not estimated".into());
    groups
        .into_iter()
        .map(|((jurisdiction, sample, a, b, from), inputs)| Impact {
            kind: ImpactKind::Gains,
            jurisdiction,
            rule: format!("gains estimate, income 100000, {sample}"),
            effect: format!("tax {} → {}", shown(&a), shown(&b)),
            old: a,
            new: b,
            points: None,
            from: Some(from),
            to: None,
            inputs: inputs.len() as u64,
            dimensions: dimensions(&inputs),
        })
        .collect()
}

/// A plan's changed terms: what GET /api/v1/pricing publishes and what accounts on the plan are billed.
fn plan_impact(f: &Found) -> Impact {
    let c = &f.change;
    let price = |p: Option<&String>| p.cloned();
    let priced = c.fields.iter().find(|x| x.field.starts_with("price"));
    let terms: Vec<String> = c
        .fields
        .iter()
        .filter(|x| x.field != "features" && x.field != "notes" && x.field != "name")
        .map(|x| format!("{} {} → {}", x.field, x.old.as_deref().unwrap_or("—"), x.new.as_deref().unwrap_or("—")))
        .collect();
    let what = match c.op {
        ChangeOp::Added => "a new plan, published by GET /api/v1/pricing".to_string(),
        ChangeOp::Removed => "no longer offered; accounts recorded on it fall back to the free plan".to_string(),
        ChangeOp::Changed => "published by GET /api/v1/pricing and billed to every account on the plan".to_string(),
    };
    let effect = if terms.is_empty() { what } else { format!("{}: {what}", terms.join("; ")) };
    Impact {
        kind: ImpactKind::Plan,
        jurisdiction: "plans".into(),
        rule: c.id.clone(),
        effect,
        old: priced.and_then(|x| price(x.old.as_ref())),
        new: priced.and_then(|x| price(x.new.as_ref())),
        points: None,
        from: None,
        to: None,
        inputs: 0,
        dimensions: vec![],
    }
}
