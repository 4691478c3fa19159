//! The structural diff: which items of the rule files were added, removed or changed, by id and file:line, with
//! their fields old → new; and, for the impact, where each change can reach (a state, a few ZIP codes, the
//! gains tracker, the plans) and the periods it covers.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Debug;

use chrono::NaiveDate;

use super::model::{Change, ChangeKind, ChangeOp, FieldChange};
use super::RuleSet;
use crate::engine::determine::{describe, pct};
use crate::engine::request::state_code;
use crate::rules::ast::{Cond, TaxOutcome};
use crate::rules::registry::{Citation, Dated, Rule, RuleBody};
use crate::rules::schema::{FactKind, CATEGORIES, STATES, TRANSACTION_TYPES, WORK_TYPES};

/// A period in force: first day, last day (open when `None`).
pub type Period = (NaiveDate, Option<NaiveDate>);

/// Which determinations a change can alter.
#[derive(Clone, Debug, PartialEq)]
pub enum Reach {
    /// None the diff evaluates (a case, an advisory's wording, the change log).
    Nothing,
    /// The state-level requests of one state.
    State(usize),
    /// The state-level requests of every state (the classification).
    AllStates,
    /// Requests into these ZIP codes of one state.
    Zips(usize, Vec<u32>),
    /// Requests of every transaction type into these ZIP codes (a special tax's, owed whatever the state taxes).
    Special(usize, Vec<u32>),
    Gains,
    Plan,
}

/// A structural change with its reach and the periods it covers.
pub struct Found {
    pub change: Change,
    pub reach: Reach,
    pub periods: Vec<Period>,
    /// An added dated entry that cites the same source as the entry before it, whose value differs: the new
    /// figure's source is not cited.
    pub citation_reused: bool,
}

/// An item of either rule set, described field by field (an empty value is an absent field).
struct Item {
    id: String,
    location: String,
    fields: Vec<(String, String)>,
    periods: Vec<Period>,
    citation_reused: bool,
}

fn item(id: impl Into<String>, location: String, fields: Vec<(&str, String)>, periods: Vec<Period>) -> Item {
    Item { id: id.into(), location, fields: fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect(), periods, citation_reused: false }
}

pub struct Differ<'a> {
    old: &'a RuleSet,
    new: &'a RuleSet,
    pub found: Vec<Found>,
}

/// Every structural change between two rule sets.
pub fn changes(old: &RuleSet, new: &RuleSet) -> Vec<Found> {
    let mut d = Differ { old, new, found: vec![] };
    d.registry();
    d.jurisdictions();
    d.local();
    d.special_taxes();
    d.classification();
    d.advisories();
    d.information_returns();
    d.gains();
    d.plans();
    d.cases();
    d.found
}

impl Differ<'_> {
    /// Matches items by id and records each one added, removed or changed.
    fn compare(&mut self, kind: ChangeKind, jurisdiction: Option<usize>, reach: Reach, old: Vec<Item>, new: Vec<Item>) {
        let olds: HashMap<&str, &Item> = old.iter().map(|i| (i.id.as_str(), i)).collect();
        let news: BTreeSet<&str> = new.iter().map(|i| i.id.as_str()).collect();
        let juris = jurisdiction.and_then(|s| STATES.get(s)).map(|s| s.to_string());
        let mut push = |op, it: &Item, fields: Vec<FieldChange>, periods: Vec<Period>| {
            let change = Change { kind, op, id: it.id.clone(), jurisdiction: juris.clone(), location: it.location.clone(), fields };
            let citation_reused = op == ChangeOp::Added && it.citation_reused;
            self.found.push(Found { change, reach: reach.clone(), periods, citation_reused });
        };
        let whole = |it: &Item, added: bool| -> Vec<FieldChange> {
            it.fields
                .iter()
                .filter(|(_, v)| !v.is_empty())
                .map(|(k, v)| {
                    let v = Some(v.clone());
                    FieldChange { field: k.clone(), old: if added { None } else { v.clone() }, new: if added { v } else { None } }
                })
                .collect()
        };
        for n in &new {
            match olds.get(n.id.as_str()) {
                None => push(ChangeOp::Added, n, whole(n, true), n.periods.clone()),
                Some(o) => {
                    let fields = differing(&o.fields, &n.fields);
                    if !fields.is_empty() {
                        push(ChangeOp::Changed, n, fields, o.periods.iter().chain(&n.periods).copied().collect());
                    }
                }
            }
        }
        for o in old.iter().filter(|o| !news.contains(o.id.as_str())) {
            push(ChangeOp::Removed, o, whole(o, false), o.periods.clone());
        }
    }

    fn registry(&mut self) {
        let head = |s: &RuleSet| {
            let r = &s.reg;
            vec![item(
                "registry",
                line_of(s, "registry.yaml", "version:"),
                vec![
                    ("version", r.version.clone()),
                    ("engine_version", r.engine_version.clone()),
                    ("coverage_from", r.coverage_from.to_string()),
                ],
                vec![],
            )]
        };
        self.compare(ChangeKind::Registry, None, Reach::Nothing, head(self.old), head(self.new));
    }

    fn jurisdictions(&mut self) {
        for (s, code) in STATES.iter().enumerate() {
            let (o, n) = (self.old.reg.jurisdiction(s), self.new.reg.jurisdiction(s));
            if o.is_none() && n.is_none() {
                continue;
            }
            let file = format!("states/{}.yaml", code.to_lowercase());
            let head = |set: &RuleSet, j: Option<&crate::rules::registry::Jurisdiction>| -> Vec<Item> {
                j.map(|j| vec![item(*code, line_of(set, &file, "jurisdiction:"), vec![("name", j.name.clone())], vec![])])
                    .unwrap_or_default()
            };
            let (ho, hn) = (head(self.old, o), head(self.new, n));
            self.compare(ChangeKind::Jurisdiction, Some(s), Reach::State(s), ho, hn);
            let lists = |set: &RuleSet, j: Option<&crate::rules::registry::Jurisdiction>| -> [Vec<Item>; 5] {
                let Some(j) = j else { return Default::default() };
                [
                    dated(set, &format!("{code} state_rate"), &j.state_rate, |r| vec![("rate", pct(*r))]),
                    dated(set, &format!("{code} local_taxes"), &j.local_taxes, |v| vec![("value", v.to_string())]),
                    dated(set, &format!("{code} economic_nexus"), &j.economic_nexus, |t| {
                        vec![
                            ("sales", t.sales.map(|s| s.to_string()).unwrap_or_else(|| "null".into())),
                            ("transactions", t.transactions.map(|s| s.to_string()).unwrap_or_else(|| "null".into())),
                            ("sales_measure", t.sales_measure.clone()),
                            ("period", t.period.clone()),
                            ("prongs", if t.both_prongs_required { "all" } else { "any" }.into()),
                        ]
                    }),
                    dated(set, &format!("{code} marketplace_facilitator"), &j.marketplace, |m| {
                        vec![("law", m.law.to_string()), ("facilitated_sales_count", format!("{:?}", m.facilitated_sales_count))]
                    }),
                    j.sourcing
                        .iter()
                        .map(|r| rule(set, r, |o| o.as_str().to_string()))
                        .chain(j.taxability.iter().map(|r| rule(set, r, outcome_text)))
                        .collect(),
                ]
            };
            let [rate_o, flag_o, nexus_o, market_o, rules_o] = lists(self.old, o);
            let [rate_n, flag_n, nexus_n, market_n, rules_n] = lists(self.new, n);
            self.compare(ChangeKind::Rate, Some(s), Reach::State(s), rate_o, rate_n);
            self.compare(ChangeKind::Rate, Some(s), Reach::State(s), flag_o, flag_n);
            self.compare(ChangeKind::Threshold, Some(s), Reach::State(s), nexus_o, nexus_n);
            self.compare(ChangeKind::Threshold, Some(s), Reach::State(s), market_o, market_n);
            self.compare(ChangeKind::Rule, Some(s), Reach::State(s), rules_o, rules_n);
        }
    }

    fn local(&mut self) {
        let zips_o = zips_by_tax(self.old);
        let zips_n = zips_by_tax(self.new);
        for (s, code) in STATES.iter().enumerate() {
            let taxes = |set: &RuleSet, zips: &HashMap<&str, Vec<u32>>| -> (Vec<Item>, Vec<(String, Vec<Item>)>) {
                let mut heads = vec![];
                let mut rates = vec![];
                for t in set.reg.local.taxes.iter().filter(|t| t.state == s) {
                    let z = zips.get(t.id.as_str()).map(Vec::as_slice).unwrap_or_default();
                    let first = t.rates.first().map(|r| r.from);
                    let fields = vec![
                        ("name", t.name.clone()),
                        ("level", t.level.to_string()),
                        ("code", t.code.clone().unwrap_or_default()),
                        ("zip codes", zip_summary(z)),
                        ("note", t.note.clone().unwrap_or_default()),
                    ];
                    let periods = first.map(|f| vec![(f, None)]).unwrap_or_default();
                    heads.push(item(t.id.clone(), loc(set, &t.span), fields, periods));
                    rates.push((t.id.clone(), dated(set, &format!("{} rate", t.id), &t.rates, |r| vec![("rate", pct(*r))])));
                }
                (heads, rates)
            };
            let (heads_o, rates_o) = taxes(self.old, &zips_o);
            let (heads_n, rates_n) = taxes(self.new, &zips_n);
            if heads_o.is_empty() && heads_n.is_empty() && self.old.reg.local.entries.iter().all(|e| e.state() != s) {
                continue;
            }
            let zips_of = |id: &str| -> Vec<u32> {
                let mut v: Vec<u32> = zips_o.get(id).into_iter().chain(zips_n.get(id)).flatten().copied().collect();
                v.sort_unstable();
                v.dedup();
                v
            };
            let before = self.found.len();
            self.compare(ChangeKind::LocalTax, Some(s), Reach::Nothing, heads_o, heads_n);
            let mut by_id: BTreeMap<String, (Vec<Item>, Vec<Item>)> = BTreeMap::new();
            for (id, r) in rates_o {
                by_id.entry(id).or_default().0 = r;
            }
            for (id, r) in rates_n {
                by_id.entry(id).or_default().1 = r;
            }
            for (id, (o, n)) in by_id {
                let reach = Reach::Zips(s, zips_of(&id));
                self.compare(ChangeKind::Rate, Some(s), reach, o, n);
            }
            for f in &mut self.found[before..] {
                if f.reach == Reach::Nothing {
                    f.reach = Reach::Zips(s, zips_of(&f.change.id));
                }
            }
            self.boundaries(s);
            let complete = |set: &RuleSet| -> Vec<Item> {
                set.reg.local.complete.get(s).and_then(Option::as_ref).map_or(vec![], |c| {
                    let mut fields = vec![("from", c.from.to_string())];
                    fields.extend(citation_fields(&c.citation));
                    let file = format!("local/{}.yaml", code.to_lowercase());
                    vec![item(format!("{code} complete"), line_of(set, &file, "complete:"), fields, vec![])]
                })
            };
            let (co, cn) = (complete(self.old), complete(self.new));
            self.compare(ChangeKind::LocalTax, Some(s), Reach::Nothing, co, cn);
        }
    }

    /// The ZIP codes of a state whose areas name other taxes (of those in both rule sets), or other ZIP+4 ranges
    /// or dates: boundary rows or placement edited.
    fn boundaries(&mut self, s: usize) {
        let both: BTreeSet<&str> = {
            let o: BTreeSet<&str> = self.old.reg.local.taxes.iter().filter(|t| t.state == s).map(|t| t.id.as_str()).collect();
            self.new.reg.local.taxes.iter().filter(|t| t.state == s && o.contains(t.id.as_str())).map(|t| t.id.as_str()).collect()
        };
        let (o, n) = (signatures(self.old, s, &both), signatures(self.new, s, &both));
        let mut zips = vec![];
        let mut from: Option<NaiveDate> = None;
        let mut file = String::new();
        for code in o.keys().chain(n.keys()).collect::<BTreeSet<_>>() {
            let (a, b) = (o.get(code), n.get(code));
            if a.map(|x| &x.0) != b.map(|x| &x.0) {
                zips.push(*code);
                for x in a.into_iter().chain(b) {
                    from = match (from, x.1) {
                        (Some(f), Some(g)) => Some(f.min(g)),
                        (f, g) => f.or(g),
                    };
                    if file.is_empty() {
                        file.clone_from(&x.2);
                    }
                }
            }
        }
        if zips.is_empty() {
            return;
        }
        if file.is_empty() {
            file = format!("local/{}.yaml", state_code(s).to_lowercase());
        }
        let added = zips.iter().filter(|z| !o.contains_key(z)).count();
        let removed = zips.iter().filter(|z| !n.contains_key(z)).count();
        let mut fields = vec![FieldChange { field: "zip codes whose areas change".into(), old: None, new: Some(zip_summary(&zips)) }];
        if added + removed > 0 {
            fields.push(FieldChange { field: "zip codes added, removed".into(), old: None, new: Some(format!("{added}, {removed}")) });
        }
        let change = Change {
            kind: ChangeKind::Boundary,
            op: ChangeOp::Changed,
            id: format!("{} boundaries", state_code(s)),
            jurisdiction: Some(state_code(s).to_string()),
            location: file,
            fields,
        };
        let start = from.unwrap_or(self.new.reg.coverage_from);
        self.found.push(Found { change, reach: Reach::Zips(s, zips), periods: vec![(start, None)], citation_reused: false });
    }

    fn special_taxes(&mut self) {
        for s in 0..STATES.len() {
            let items = |set: &RuleSet| -> (Vec<Item>, Vec<Item>) {
                let mut heads = vec![];
                let mut rates = vec![];
                for t in set.reg.special_taxes.iter().filter(|t| t.state == s) {
                    let mut fields = vec![
                        ("name", t.name.clone()),
                        ("zips", t.zips.join(", ")),
                        ("when", t.when.as_ref().map(cond_text).unwrap_or_default()),
                        ("requires_seller_nexus", t.requires_seller_nexus.to_string()),
                        ("note", t.note.clone().unwrap_or_default()),
                    ];
                    fields.extend(citation_fields(&t.citation));
                    let span = t.rates.first().map(|r| loc(set, &r.span)).unwrap_or_else(|| "local/special.yaml".into());
                    let first = t.rates.first().map(|r| vec![(r.from, None)]).unwrap_or_default();
                    heads.push(item(t.id.clone(), span, fields, first));
                    rates.extend(dated(set, &format!("{} rate", t.id), &t.rates, |r| vec![("rate", pct(*r))]));
                }
                (heads, rates)
            };
            let ((ho, ro), (hn, rn)) = (items(self.old), items(self.new));
            // A special tax is owed in its ZIP codes only.
            let mut zips: Vec<u32> = [&self.old.reg, &self.new.reg]
                .iter()
                .flat_map(|r| r.special_taxes.iter().filter(|t| t.state == s))
                .flat_map(|t| t.zips.iter().filter_map(|z| z.parse::<u32>().ok()))
                .collect();
            zips.sort_unstable();
            zips.dedup();
            self.compare(ChangeKind::SpecialTax, Some(s), Reach::Special(s, zips.clone()), ho, hn);
            self.compare(ChangeKind::Rate, Some(s), Reach::Special(s, zips), ro, rn);
        }
    }

    fn classification(&mut self) {
        let items = |set: &RuleSet| -> Vec<Item> {
            let c = &set.reg.classification;
            let at = |needle: &str| line_of(set, "classification.yaml", needle);
            let from = vec![(set.reg.coverage_from, None)];
            let mut out = vec![];
            for (i, t) in c.transaction_types.iter().enumerate() {
                let name = TRANSACTION_TYPES.get(i).copied().unwrap_or("?");
                let fields = vec![
                    ("work_type", WORK_TYPES.get(t.work_type as usize).copied().unwrap_or("?").to_string()),
                    ("category", name_of(&CATEGORIES, t.category)),
                    ("label", t.label.clone()),
                ];
                out.push(item(format!("transaction_type {name}"), at(&format!("{name}:")), fields, from.clone()));
            }
            for (i, w) in c.work_types.iter().enumerate() {
                let name = WORK_TYPES.get(i).copied().unwrap_or("?");
                let fields = vec![("category", name_of(&CATEGORIES, w.category)), ("label", w.label.clone())];
                out.push(item(format!("work_type {name}"), at(&format!("{name}:")), fields, from.clone()));
            }
            for (i, k) in c.categories.iter().enumerate() {
                let name = CATEGORIES.get(i).copied().unwrap_or("?");
                let fields = vec![
                    ("label", k.label.clone()),
                    ("outside_sales_tax", k.outside_sales_tax.to_string()),
                    ("route", k.route.clone().unwrap_or_default()),
                    ("note", k.note.clone().unwrap_or_default()),
                ];
                out.push(item(format!("category {name}"), at(&format!("{name}:")), fields, from.clone()));
            }
            for (f, cond) in &c.derived {
                out.push(item(format!("derived {}", f.name()), at(f.name()), vec![("when", cond_text(cond))], from.clone()));
            }
            for r in &c.reclassify {
                let mut fields = vec![
                    ("when", cond_text(&r.when)),
                    ("category", name_of(&CATEGORIES, r.category)),
                    ("advisories", r.advisories.join(", ")),
                ];
                fields.extend(citation_fields(&r.citation));
                out.push(item(r.id.clone(), at(&r.id), fields, from.clone()));
            }
            out
        };
        let (o, n) = (items(self.old), items(self.new));
        self.compare(ChangeKind::Classification, None, Reach::AllStates, o, n);
    }

    fn advisories(&mut self) {
        let items = |set: &RuleSet| -> Vec<Item> {
            set.reg
                .advisories
                .iter()
                .map(|a| {
                    let fields = vec![
                        ("kind", a.kind.clone()),
                        ("message", a.message.clone()),
                        ("when", a.when.as_ref().map(cond_text).unwrap_or_default()),
                    ];
                    item(a.code.clone(), line_of(set, "advisories.yaml", &a.code), fields, vec![])
                })
                .collect()
        };
        let (o, n) = (items(self.old), items(self.new));
        self.compare(ChangeKind::Advisory, None, Reach::Nothing, o, n);
    }

    fn information_returns(&mut self) {
        let items = |set: &RuleSet| {
            dated(set, "1099 threshold", &set.reg.information_returns, |t| {
                vec![("threshold", t.threshold.to_string()), ("form", t.form.clone())]
            })
        };
        let (o, n) = (items(self.old), items(self.new));
        self.compare(ChangeKind::Threshold, None, Reach::Nothing, o, n);
    }

    fn gains(&mut self) {
        fn debug<T: Debug>(v: &T) -> Vec<(&'static str, String)> {
            vec![("value", format!("{v:?}"))]
        }
        let items = |set: &RuleSet| -> Vec<Item> {
            let g = &set.reg.gains;
            let mut out = dated(set, "gains ordinary_brackets", &g.ordinary, debug);
            out.extend(dated(set, "gains standard_deduction", &g.standard_deduction, debug));
            out.extend(dated(set, "gains long_term_breakpoints", &g.long_term, debug));
            out.extend(dated(set, "gains net_investment_income_tax", &g.niit, debug));
            out.extend(dated(set, "gains capital_loss_limit", &g.loss_limit, debug));
            out.extend(dated(set, "gains corporate_rate", &g.corporate_rate, |r| vec![("rate", pct(*r))]));
            out.extend(dated(set, "gains long_term_holding", &g.long_term_months, debug));
            out.extend(dated(set, "gains wash_sale", &g.wash_sale, debug));
            for (s, list) in g.states.iter().enumerate() {
                let code = STATES.get(s).copied().unwrap_or("?");
                out.extend(dated(set, &format!("{code} gains treatment"), list, debug));
            }
            out
        };
        let (o, n) = (items(self.old), items(self.new));
        self.compare(ChangeKind::Gains, None, Reach::Gains, o, n);
    }

    fn plans(&mut self) {
        let items = |set: &RuleSet| -> Vec<Item> {
            let Some(p) = &set.plans else { return vec![] };
            let at = |needle: &str| line_of(set, crate::plans::FILE, needle);
            let mut out: Vec<Item> = p
                .tiers
                .iter()
                .map(|t| {
                    let fields = vec![
                        ("name", t.name.clone()),
                        ("price_usd_monthly", t.price_usd_monthly.map(|p| p.to_string()).unwrap_or_else(|| "custom".into())),
                        ("monthly_calls_included", t.monthly_calls.map(|n| n.to_string()).unwrap_or_else(|| "unlimited".into())),
                        ("overage_policy", t.overage.policy().to_string()),
                        ("overage_usd_per_call", t.overage.price().map(|p| p.to_string()).unwrap_or_default()),
                        ("optimization_reports_per_month", t.optimization_reports_per_month.to_string()),
                        ("features", t.features.join("; ")),
                        ("contact", t.contact.clone().unwrap_or_default()),
                    ];
                    item(t.id.clone(), at(&format!("id: {}", t.id)), fields, vec![])
                })
                .collect();
            let ppc = &p.pay_per_call;
            let fields = vec![("price_usd_per_call", ppc.price_usd_per_call.to_string()), ("notes", ppc.notes.clone())];
            out.push(item(ppc.id.clone(), at("pay_per_call:"), fields, vec![]));
            let fields = vec![("price_usd_per_call", p.mpp.price_usd_per_call.to_string()), ("notes", p.mpp.notes.clone())];
            out.push(item("mpp", at("mpp:"), fields, vec![]));
            out
        };
        let (o, n) = (items(self.old), items(self.new));
        self.compare(ChangeKind::Plan, None, Reach::Plan, o, n);
    }

    fn cases(&mut self) {
        let items = |set: &RuleSet| -> Vec<Item> {
            set.cases
                .iter()
                .map(|c| {
                    let mut fields = vec![
                        ("as_of", c.as_of.to_string()),
                        (
                            "nexus",
                            c.nexus
                                .as_ref()
                                .map(|n| n.iter().filter_map(|s| STATES.get(*s)).copied().collect::<Vec<_>>().join(", "))
                                .unwrap_or_default(),
                        ),
                        ("request", c.request.to_string()),
                    ];
                    let expect: Vec<(String, String)> = c.expect.iter().map(|(k, v, _)| (format!("expect.{k}"), v.to_string())).collect();
                    let mut it = item(c.name.clone(), loc(set, &c.span), std::mem::take(&mut fields), vec![]);
                    it.fields.extend(expect);
                    it
                })
                .collect()
        };
        let (o, n) = (items(self.old), items(self.new));
        self.compare(ChangeKind::Case, None, Reach::Nothing, o, n);
    }
}

fn loc(set: &RuleSet, span: &crate::rules::diag::Span) -> String {
    format!("{}:{}", set.relative(&span.file), span.line)
}

/// `file:line` of the first line of a file holding `needle` (the plans and the registry head keep no spans).
fn line_of(set: &RuleSet, file: &str, needle: &str) -> String {
    let text = std::fs::read_to_string(set.dir.join(file)).unwrap_or_default();
    let line = text.lines().position(|l| l.contains(needle)).map_or(1, |i| i + 1);
    format!("{file}:{line}")
}

/// The entries of a dated list, each keyed by the day it starts.
fn dated<T>(set: &RuleSet, name: &str, list: &[Dated<T>], value: impl Fn(&T) -> Vec<(&'static str, String)>) -> Vec<Item> {
    let mut out: Vec<Item> = vec![];
    let mut before: Option<(Vec<(&'static str, String)>, &Citation)> = None;
    for d in list {
        let values = value(&d.value);
        let reused = before.as_ref().is_some_and(|(v, c)| *v != values && c.cite == d.citation.cite);
        let mut fields = values.clone();
        fields.push(("from", d.from.to_string()));
        fields.push(("to", d.to.map(|t| t.to_string()).unwrap_or_default()));
        fields.extend(citation_fields(&d.citation));
        let mut it = item(format!("{name} from {}", d.from), loc(set, &d.span), fields, vec![(d.from, d.to)]);
        it.citation_reused = reused;
        out.push(it);
        before = Some((values, &d.citation));
    }
    out
}

fn rule<O>(set: &RuleSet, r: &Rule<O>, then: impl Fn(&O) -> String) -> Item {
    let body = match &r.body {
        RuleBody::Single(o) => then(o),
        RuleBody::Alternatives(alts) => alts.iter().map(|(o, c)| format!("{} ({})", then(o), c.cite)).collect::<Vec<_>>().join(" | "),
    };
    let mut fields = vec![
        ("when", r.when.as_ref().map(cond_text).unwrap_or_default()),
        (if matches!(r.body, RuleBody::Single(_)) { "then" } else { "alternatives" }, body),
        ("from", r.from.to_string()),
        ("to", r.to.map(|t| t.to_string()).unwrap_or_default()),
    ];
    fields.extend(citation_fields(&r.citation));
    fields.push(("note", r.note.clone().unwrap_or_default()));
    fields.push(("advisories", r.advisories.join(", ")));
    item(r.id.clone(), loc(set, &r.span), fields, vec![(r.from, r.to)])
}

/// The fields whose values differ, in the new item's order, then those only the old one has.
fn differing(old: &[(String, String)], new: &[(String, String)]) -> Vec<FieldChange> {
    let get = |list: &[(String, String)], k: &str| list.iter().find(|(f, _)| f == k).map(|(_, v)| v.clone()).filter(|v| !v.is_empty());
    let mut keys: Vec<&str> = new.iter().map(|(k, _)| k.as_str()).collect();
    keys.extend(old.iter().map(|(k, _)| k.as_str()).filter(|k| !new.iter().any(|(n, _)| n == k)));
    keys.into_iter()
        .filter_map(|k| {
            let (o, n) = (get(old, k), get(new, k));
            (o != n).then(|| FieldChange { field: k.to_string(), old: o, new: n })
        })
        .collect()
}

fn citation_fields(c: &Citation) -> Vec<(&'static str, String)> {
    vec![("cite", c.cite.clone()), ("url", c.url.clone().unwrap_or_default())]
}

fn name_of(list: &[&str], i: u16) -> String {
    list.get(i as usize).copied().unwrap_or("?").to_string()
}

type Signature<'a> = Vec<(Option<(u16, u16)>, Option<NaiveDate>, Option<NaiveDate>, Vec<&'a str>)>;

/// Each ZIP code of a state: its areas (ZIP+4 range, dates, the taxes of `both` it names), the first day an area
/// starts, and the file that describes it.
fn signatures<'a>(set: &'a RuleSet, s: usize, both: &BTreeSet<&str>) -> BTreeMap<u32, (Signature<'a>, Option<NaiveDate>, String)> {
    let l = &set.reg.local;
    l.entries
        .iter()
        .filter(|e| e.state() == s)
        .map(|e| {
            let sig: Signature = l
                .areas(e)
                .iter()
                .map(|a| {
                    let mut ids: Vec<&str> = l
                        .taxes_of(a)
                        .iter()
                        .filter_map(|&i| l.taxes.get(i as usize))
                        .map(|t| t.id.as_str())
                        .filter(|id| both.contains(id))
                        .collect();
                    ids.sort_unstable();
                    (a.plus4, a.from, a.to, ids)
                })
                .collect();
            let from = l.areas(e).iter().filter_map(|a| a.from).min();
            (e.code, (sig, from, e.file().map(|f| set.relative(f)).unwrap_or_default()))
        })
        .collect()
}

/// Each local tax's ZIP codes (sorted, each once), by id.
fn zips_by_tax(set: &RuleSet) -> HashMap<&str, Vec<u32>> {
    let l = &set.reg.local;
    let mut out: HashMap<&str, Vec<u32>> = HashMap::new();
    for e in &l.entries {
        for a in l.areas(e) {
            for &t in l.taxes_of(a) {
                if let Some(t) = l.taxes.get(t as usize) {
                    let v = out.entry(t.id.as_str()).or_default();
                    if v.last() != Some(&e.code) {
                        v.push(e.code);
                    }
                }
            }
        }
    }
    for v in out.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    out
}

/// `12: 75001–75012` / `3: 02108, 02110, 02114`: a count, then runs of consecutive codes (at most 8 shown).
pub fn zip_summary(zips: &[u32]) -> String {
    if zips.is_empty() {
        return "0".into();
    }
    let runs = zip_runs(zips);
    let shown: Vec<&str> = runs.iter().take(8).map(String::as_str).collect();
    let more = if runs.len() > 8 { format!(", … {} more runs", runs.len() - 8) } else { String::new() };
    format!("{}: {}{more}", zips.len(), shown.join(", "))
}

/// Runs of consecutive ZIP codes, `75001–75012` or `02108`.
pub fn zip_runs(zips: &[u32]) -> Vec<String> {
    let mut runs: Vec<(u32, u32)> = vec![];
    for &z in zips {
        match runs.last_mut() {
            Some((_, hi)) if *hi + 1 == z => *hi = z,
            Some((_, hi)) if *hi == z => {}
            _ => runs.push((z, z)),
        }
    }
    runs.iter().map(|(a, b)| if a == b { format!("{a:05}") } else { format!("{a:05}–{b:05}") }).collect()
}

/// A condition written back in the rule language (`category in {saas, data_processing} and is_b2b`).
pub fn cond_text(c: &Cond) -> String {
    let value = |f: crate::rules::schema::Fact, v: u16| match f.def().kind {
        FactKind::Enum(vals) => vals.get(v as usize).copied().unwrap_or("?").to_string(),
        FactKind::Bool => (v == 1).to_string(),
    };
    let inner = |c: &Cond| match c {
        Cond::And(_) | Cond::Or(_) => format!("({})", cond_text(c)),
        _ => cond_text(c),
    };
    match c {
        Cond::And(v) => v.iter().map(inner).collect::<Vec<_>>().join(" and "),
        Cond::Or(v) => v.iter().map(|c| if matches!(c, Cond::Or(_)) { inner(c) } else { cond_text(c) }).collect::<Vec<_>>().join(" or "),
        Cond::Not(c) => format!("not {}", inner(c)),
        Cond::In { fact, values, negated, .. } => {
            let vals: Vec<String> = values.iter().map(|v| value(*fact, *v)).collect();
            format!("{} {}in {{{}}}", fact.name(), if *negated { "not " } else { "" }, vals.join(", "))
        }
        Cond::Eq { fact, value: v, negated, .. } => format!("{} {} {}", fact.name(), if *negated { "!=" } else { "==" }, value(*fact, *v)),
        Cond::Set { fact, negated, .. } => format!("{} is {}set", fact.name(), if *negated { "not " } else { "" }),
        Cond::Flag { fact, .. } => fact.name().to_string(),
    }
}

/// An outcome written back in the rule language (`taxable at 3% on 80% of base`).
pub fn outcome_text(o: &TaxOutcome) -> String {
    match o {
        TaxOutcome::Exempt { kind, reason } if kind == "not_taxable" => format!("exempt {reason:?}"),
        TaxOutcome::Exempt { kind, reason } => format!("exempt as {kind} {reason:?}"),
        taxable => describe(taxable),
    }
}
