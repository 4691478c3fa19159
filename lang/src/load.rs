//! Reads every rule file of a directory into the registry's parts, collecting every diagnostic.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use chrono::NaiveDate;

use super::ast::{Cond, Sourcing, TaxOutcome};
use super::check;
use super::compile::{compile, JurisdictionParts, Parts};
use super::diag::{display_path, Diagnostic, Severity, SourceMap, Span};
use super::parse;
use super::read::{self, dated_list, enum_value, expr, read_yaml, register_id, seq, yaml_files, Diags, Fields, HelpIfNone};
use super::registry::*;
use super::schema::*;
use super::yaml::Node;

/// Loads, checks and compiles a rules directory: the registry only when no diagnostic is an error.
pub fn load_dir(dir: &Path) -> (Option<Registry>, Vec<Diagnostic>, SourceMap) {
    load_dir_with(dir, false)
}

/// As [`load_dir`]; with `partial`, missing jurisdictions are warnings (for a directory being written).
pub fn load_dir_with(dir: &Path, partial: bool) -> (Option<Registry>, Vec<Diagnostic>, SourceMap) {
    let mut sources = SourceMap::default();
    let mut d: Diags = vec![];
    let mut ids: HashMap<String, Span> = HashMap::new();

    let head = read_yaml(&dir.join("registry.yaml"), &mut sources, &mut d).and_then(|n| registry_head(&n, &mut d));
    let coverage_from = head.as_ref().map(|h| h.2).unwrap_or_else(|| NaiveDate::from_ymd_opt(2024, 1, 1).unwrap_or_default());
    let advisories = read_yaml(&dir.join("advisories.yaml"), &mut sources, &mut d).map(|n| advisories(&n, &mut d)).unwrap_or_default();
    let codes: HashSet<&str> = advisories.iter().map(|a| a.code.as_str()).collect();
    let mut check_codes = |list: &[(String, Span)], d: &mut Diags| -> Vec<String> {
        for (code, span) in list {
            if !codes.contains(code.as_str()) {
                d.push(
                    Diagnostic::error("R503", Some(span), format!("unknown advisory code `{code}`"))
                        .suggest(code, codes.iter().copied())
                        .with_help_if_none("define it in rules/advisories.yaml"),
                );
            }
        }
        list.iter().map(|(c, _)| c.clone()).collect()
    };
    let classification = read_yaml(&dir.join("classification.yaml"), &mut sources, &mut d)
        .and_then(|n| classification(&n, &mut ids, &mut check_codes, &mut d));
    let outside: Vec<bool> =
        classification.as_ref().map(|c| c.categories.iter().map(|x| x.outside_sales_tax).collect()).unwrap_or_default();

    let mut jurisdictions: Vec<Option<JurisdictionParts>> = (0..STATES.len()).map(|_| None).collect();
    let mut first_file: HashMap<usize, Span> = HashMap::new();
    for path in yaml_files(&dir.join("states")) {
        let Some(node) = read_yaml(&path, &mut sources, &mut d) else { continue };
        let stem = path.file_stem().map(|s| s.to_string_lossy().to_uppercase()).unwrap_or_default();
        if let Some(j) = jurisdiction(&node, &stem, coverage_from, &outside, &mut ids, &mut check_codes, &mut d) {
            let idx = state_index(j.code).unwrap_or(0);
            if let Some(prev) = first_file.get(&idx) {
                d.push(
                    Diagnostic::error("R302", Some(&node.span), format!("jurisdiction `{}` is defined twice", j.code))
                        .with_help(format!("the first is in {}", prev.file)),
                );
            } else {
                first_file.insert(idx, node.span.clone());
                jurisdictions[idx] = Some(j);
            }
        }
    }
    let states_dir_span = Span::new(&display_path(&dir.join("states")), 1, 1, 1);
    for (i, j) in jurisdictions.iter().enumerate() {
        if j.is_none() && !first_file.contains_key(&i) {
            let mut diag = Diagnostic::error("R301", Some(&states_dir_span), format!("jurisdiction `{}` is missing", STATES[i]))
                .with_help(format!("every one of the 51 jurisdictions needs rules/states/{}.yaml", STATES[i].to_lowercase()));
            if partial {
                diag.severity = super::diag::Severity::Warning;
            }
            d.push(diag);
        }
    }

    let mut special_taxes = vec![];
    if let Some(node) = read_yaml(&dir.join("local").join("special.yaml"), &mut sources, &mut d) {
        special_taxes = special(&node, coverage_from, &mut ids, &mut d);
    }
    let local = super::load_local::load(dir, &mut ids, &mut sources, &mut d);

    let information_returns = read_yaml(&dir.join("federal").join("information_returns.yaml"), &mut sources, &mut d)
        .map(|n| information_returns(&n, coverage_from, &mut d))
        .unwrap_or_default();

    let gains = super::load_gains::load(&dir.join("gains"), coverage_from, partial, &mut sources, &mut d);

    for code in ENGINE_ADVISORIES {
        if !codes.contains(code) {
            let span = Span::new(&display_path(&dir.join("advisories.yaml")), 1, 1, 1);
            d.push(Diagnostic::error("R503", Some(&span), format!("advisory `{code}` is raised by the engine but not defined")));
        }
    }

    let errors = d.iter().any(|x| x.severity == super::diag::Severity::Error);
    let registry = match (errors, head, classification) {
        (false, Some((version, engine_version, coverage_from, changelog)), Some(classification)) => Some(compile(Parts {
            version,
            engine_version,
            coverage_from,
            changelog,
            classification,
            advisories,
            jurisdictions,
            local,
            special_taxes,
            information_returns,
            gains,
        })),
        _ => None,
    };
    (registry, d, sources)
}

/// LEVY_PARTIAL_RULES=1 lets a directory still being written load without all 51 jurisdictions.
pub fn partial_from_env() -> bool {
    std::env::var("LEVY_PARTIAL_RULES").is_ok_and(|v| v == "1")
}

/// Loads a registry, printing diagnostics; `None` when there were errors.
pub fn load_or_report(dir: &Path) -> Option<(Registry, SourceMap)> {
    let (reg, diags, sources) = load_dir_with(dir, partial_from_env());
    print_diagnostics(&diags, &sources);
    reg.map(|r| (r, sources))
}

pub fn print_diagnostics(diags: &[Diagnostic], sources: &SourceMap) {
    for d in diags {
        eprintln!("{}", sources.render(d));
    }
    let errors = diags.iter().filter(|d| d.severity == Severity::Error).count();
    if errors > 0 {
        eprintln!("{errors} error{} found", if errors == 1 { "" } else { "s" });
    }
}

type Head = (String, String, NaiveDate, Vec<ChangeEntry>);

fn registry_head(node: &Node, d: &mut Diags) -> Option<Head> {
    let f = Fields::of(node, "registry.yaml", &["version", "engine_version", "coverage_from", "changelog"], d)?;
    let version = f.req_str("version", "registry.yaml", d);
    if let (Some(v), Some(n)) = (&version, f.get("version")) {
        if v.split('.').count() != 3 || v.split('.').any(|p| p.parse::<u32>().is_err()) {
            d.push(Diagnostic::error("R110", Some(&n.span), format!("`{v}` is not a version like 1.5.0")));
        }
    }
    let engine_version = f.req_str("engine_version", "registry.yaml", d);
    let coverage_from = f.req_date("coverage_from", "registry.yaml", d);
    let mut changelog = vec![];
    if let Some(list) = f.req("changelog", "registry.yaml", d) {
        for item in seq(list, "changelog", d) {
            let Some(e) = Fields::of(item, "a changelog entry", &["date", "version", "summary", "rules"], d) else { continue };
            let (date, version, summary) = (
                e.req_date("date", "a changelog entry", d),
                e.req_str("version", "a changelog entry", d),
                e.req_str("summary", "a changelog entry", d),
            );
            let rules = e.str_list("rules", d).into_iter().map(|(s, _)| s).collect();
            if let (Some(date), Some(version), Some(summary)) = (date, version, summary) {
                changelog.push(ChangeEntry { date, version, summary, rules });
            }
        }
    }
    changelog.sort_by_key(|c| c.date);
    Some((version?, engine_version?, coverage_from?, changelog))
}

fn advisories(node: &Node, d: &mut Diags) -> Vec<AdvisoryDef> {
    let Some(f) = Fields::of(node, "advisories.yaml", &["advisories"], d) else { return vec![] };
    let Some(map) = f.req("advisories", "advisories.yaml", d) else { return vec![] };
    let Some(m) = Fields::of(map, "advisories", &[], &mut vec![]) else {
        d.push(Diagnostic::error("R101", Some(&map.span), "`advisories` must be a mapping of code to definition"));
        return vec![];
    };
    let mut out = vec![];
    for (k, v) in m.entries() {
        let code = k.as_scalar().unwrap_or("").to_string();
        if code.is_empty() || !code.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_') {
            d.push(Diagnostic::error("R111", Some(&k.span), format!("advisory code `{code}` must be UPPER_SNAKE_CASE")));
        }
        let Some(a) = Fields::of(v, "an advisory", &["type", "message", "when", "raised_by"], d) else { continue };
        let kind = a.req_str("type", "an advisory", d);
        let message = a.req_str("message", "an advisory", d);
        let when = a.condition(d);
        if let (Some(kind), Some(message), Some(when)) = (kind, message, when) {
            out.push(AdvisoryDef { code, kind, message, when });
        }
    }
    out
}

type CodeCheck<'a> = dyn FnMut(&[(String, Span)], &mut Diags) -> Vec<String> + 'a;

fn classification(node: &Node, ids: &mut HashMap<String, Span>, codes: &mut CodeCheck, d: &mut Diags) -> Option<Classification> {
    let f = Fields::of(node, "classification.yaml", &["transaction_types", "work_types", "categories", "derived_facts", "reclassify"], d)?;
    let mut complete = true;
    let table = |key: &str, names: &'static [&'static str], d: &mut Diags| -> Vec<Option<&Node>> {
        let mut slots: Vec<Option<&Node>> = vec![None; names.len()];
        if let Some(map) = f.req(key, "classification.yaml", d) {
            if let Some(m) = Fields::of(map, key, names, d) {
                for (k, v) in m.entries() {
                    if let Some(i) = names.iter().position(|n| Some(*n) == k.as_scalar()) {
                        slots[i] = Some(v);
                    }
                }
                for (i, s) in slots.iter().enumerate() {
                    if s.is_none() {
                        d.push(Diagnostic::error("R113", Some(&map.span), format!("`{key}` has no entry for `{}`", names[i])));
                    }
                }
            }
        }
        slots
    };
    let tt_nodes = table("transaction_types", &TRANSACTION_TYPES, d);
    let wt_nodes = table("work_types", &WORK_TYPES, d);
    let cat_nodes = table("categories", &CATEGORIES, d);
    let mut transaction_types = vec![];
    for n in tt_nodes {
        let entry = n.and_then(|n| {
            let e = Fields::of(n, "a transaction type", &["work_type", "category", "label"], d)?;
            let w = e.req("work_type", "a transaction type", d).and_then(|x| enum_value(x, &WORK_TYPES, "work type", d));
            let c = e.req("category", "a transaction type", d).and_then(|x| enum_value(x, &CATEGORIES, "category", d));
            let l = e.req_str("label", "a transaction type", d);
            Some(TransactionTypeEntry { work_type: w?, category: c?, label: l? })
        });
        complete &= entry.is_some();
        transaction_types.extend(entry);
    }
    let mut work_types = vec![];
    for n in wt_nodes {
        let entry = n.and_then(|n| {
            let e = Fields::of(n, "a work type", &["category", "label"], d)?;
            let c = e.req("category", "a work type", d).and_then(|x| enum_value(x, &CATEGORIES, "category", d));
            let l = e.req_str("label", "a work type", d);
            Some(WorkTypeEntry { category: c?, label: l? })
        });
        complete &= entry.is_some();
        work_types.extend(entry);
    }
    let mut categories = vec![];
    for n in cat_nodes {
        let entry = n.and_then(|n| {
            let e = Fields::of(n, "a category", &["label", "outside_sales_tax", "route", "note"], d)?;
            let label = e.req_str("label", "a category", d)?;
            let outside = match e.get("outside_sales_tax") {
                Some(x) => read::boolean(x, d)?,
                None => false,
            };
            Some(CategoryEntry { label, outside_sales_tax: outside, route: e.opt_str("route", d), note: e.opt_str("note", d) })
        });
        complete &= entry.is_some();
        categories.extend(entry);
    }
    let mut derived = vec![];
    if let Some(map) = f.get("derived_facts") {
        let names: Vec<&str> = FACTS.iter().filter(|x| x.derived).map(|x| x.name).collect();
        if let Some(m) = Fields::of(map, "derived_facts", &names, d) {
            for (k, v) in m.entries() {
                let Some(fact) = k.as_scalar().and_then(Fact::by_name) else { continue };
                if let Some(c) = expr(v, d, parse::condition) {
                    derived.push((fact, c));
                }
            }
        }
    }
    for def in FACTS.iter().filter(|x| x.derived) {
        if !derived.iter().any(|(f, _)| f.name() == def.name) {
            d.push(Diagnostic::error(
                "R114",
                Some(&node.span),
                format!("derived fact `{}` has no definition in `derived_facts`", def.name),
            ));
        }
    }
    let mut reclassify = vec![];
    if let Some(list) = f.get("reclassify") {
        for item in seq(list, "reclassify", d) {
            let Some(r) = Fields::of(item, "a reclassification", &["id", "when", "category", "advisories", "cite", "url", "note"], d)
            else {
                continue;
            };
            let id = r.req_str("id", "a reclassification", d);
            if let Some(id) = &id {
                register_id(id, &item.span, ids, d);
            }
            let when = r.req("when", "a reclassification", d).and_then(|n| expr(n, d, parse::condition));
            let category = r.req("category", "a reclassification", d).and_then(|x| enum_value(x, &CATEGORIES, "category", d));
            let advisories = codes(&r.str_list("advisories", d), d);
            let citation = r.citation("a reclassification", d);
            if let (Some(id), Some(when), Some(category), Some(citation)) = (id, when, category, citation) {
                reclassify.push(Reclassification { id, when, category, advisories, citation });
            }
        }
    }
    complete.then_some(Classification { transaction_types, work_types, categories, derived, reclassify })
}

const RULE_KEYS: &[&str] = &["id", "when", "then", "alternatives", "from", "to", "cite", "url", "note", "advisories"];

fn rule<O>(
    node: &Node,
    what: &str,
    outcome: fn(&parse::ExprSource) -> Result<O, Diags>,
    ids: &mut HashMap<String, Span>,
    codes: &mut CodeCheck,
    d: &mut Diags,
) -> Option<Rule<O>> {
    let f = Fields::of(node, what, RULE_KEYS, d)?;
    let id = f.req_str("id", what, d);
    if let Some(id) = &id {
        register_id(id, &node.span, ids, d);
    }
    let when = f.condition(d);
    let body = match (f.get("then"), f.get("alternatives")) {
        (Some(t), None) => expr(t, d, outcome).map(RuleBody::Single),
        (None, Some(alts)) => {
            let mut out = vec![];
            let mut ok = true;
            for a in seq(alts, "alternatives", d) {
                let Some(af) = Fields::of(a, "an alternative reading", &["then", "cite", "url", "note"], d) else {
                    ok = false;
                    continue;
                };
                let o = af.req("then", "an alternative reading", d).and_then(|t| expr(t, d, outcome));
                let c = af.citation("an alternative reading", d);
                match (o, c) {
                    (Some(o), Some(c)) => out.push((o, c)),
                    _ => ok = false,
                }
            }
            if out.len() < 2 && ok {
                d.push(Diagnostic::error("R507", Some(&alts.span), "an ambiguous rule needs at least two alternative readings"));
                ok = false;
            }
            if f.get("note").is_none() {
                d.push(Diagnostic::error("R508", Some(&node.span), "an ambiguous rule needs a `note` saying why the law is unclear"));
            }
            ok.then_some(RuleBody::Alternatives(out))
        }
        (Some(_), Some(a)) => {
            d.push(Diagnostic::error("R509", Some(&a.span), "a rule has either `then` or `alternatives`, not both"));
            None
        }
        (None, None) => {
            d.push(Diagnostic::error("R102", Some(&node.span), format!("{what} is missing `then`")));
            None
        }
    };
    let from = f.req_date("from", what, d);
    let to = f.opt_date("to", d);
    let citation = f.citation(&format!("rule `{}`", id.as_deref().unwrap_or("?")), d);
    let advisories = codes(&f.str_list("advisories", d), d);
    let note = f.opt_str("note", d);
    Some(Rule { id: id?, when: when?, body: body?, from: from?, to: to?, citation: citation?, note, advisories, span: node.span.clone() })
}

fn jurisdiction(
    node: &Node,
    stem: &str,
    coverage_from: NaiveDate,
    outside: &[bool],
    ids: &mut HashMap<String, Span>,
    codes: &mut CodeCheck,
    d: &mut Diags,
) -> Option<JurisdictionParts> {
    let what = "a state file";
    let f = Fields::of(
        node,
        what,
        &[
            "jurisdiction",
            "name",
            "state_rate",
            "local_taxes",
            "sourcing",
            "economic_nexus",
            "marketplace_facilitator",
            "taxability",
            "divergences",
        ],
        d,
    )?;
    let code_node = f.req("jurisdiction", what, d)?;
    let code_text = code_node.as_scalar().unwrap_or("");
    let Some(idx) = state_index(code_text) else {
        d.push(
            Diagnostic::error("R303", Some(&code_node.span), format!("`{code_text}` is not one of the 51 jurisdictions"))
                .suggest(code_text, STATES.iter().copied()),
        );
        return None;
    };
    let code = STATES[idx];
    if stem != code {
        d.push(Diagnostic::error(
            "R304",
            Some(&code_node.span),
            format!("the file for `{code}` must be named {}.yaml", code.to_lowercase()),
        ));
    }
    let name = f.req_str("name", what, d);
    let state_rate =
        dated_list(&f, "state_rate", what, &["rate"], &mut |e, d| e.req("rate", "a state rate", d).and_then(|n| read::percent(n, d)), d);
    let local_taxes = dated_list(
        &f,
        "local_taxes",
        what,
        &["value"],
        &mut |e, d| e.req("value", "a local-tax entry", d).and_then(|n| read::boolean(n, d)),
        d,
    );
    let economic_nexus = dated_list(
        &f,
        "economic_nexus",
        what,
        &["sales", "transactions", "sales_measure", "period", "prongs"],
        &mut |e, d| {
            let sales = match e.get("sales") {
                Some(n) => Some(read::money(n, d)?),
                None => None,
            };
            let transactions = match e.get("transactions") {
                Some(n) => match n.as_scalar().and_then(|t| t.parse::<u32>().ok()) {
                    Some(t) => Some(t),
                    None => {
                        d.push(Diagnostic::error("R107", Some(&n.span), "`transactions` must be a whole number or null"));
                        return None;
                    }
                },
                None => None,
            };
            let (measure, period) = if sales.is_some() || transactions.is_some() {
                let m =
                    e.req("sales_measure", "an economic-nexus entry", d).and_then(|n| enum_value(n, SALES_MEASURES, "sales measure", d));
                let p = e.req("period", "an economic-nexus entry", d).and_then(|n| enum_value(n, NEXUS_PERIODS, "measurement period", d));
                (SALES_MEASURES[m? as usize].to_string(), NEXUS_PERIODS[p? as usize].to_string())
            } else {
                (String::new(), String::new())
            };
            let both = match e.get("prongs").and_then(|n| n.as_scalar().map(|t| (t, n))) {
                None => false,
                Some(("any", _)) => false,
                Some(("all", _)) => true,
                Some((t, n)) => {
                    d.push(
                        Diagnostic::error("R205", Some(&n.span), format!("`{t}` is not `any` or `all`"))
                            .with_help("`prongs: all` when a seller must meet both the sales and the transaction test"),
                    );
                    return None;
                }
            };
            Some(NexusThreshold { sales, transactions, sales_measure: measure, period, both_prongs_required: both })
        },
        d,
    );
    let marketplace = dated_list(
        &f,
        "marketplace_facilitator",
        what,
        &["law", "facilitated_sales_count"],
        &mut |e, d| {
            let law = e.req("law", "a marketplace entry", d).and_then(|n| read::boolean(n, d))?;
            let count = match e.get("facilitated_sales_count") {
                None if !law => FacilitatedCount::Counts,
                None => {
                    d.push(Diagnostic::error(
                        "R102",
                        Some(&e.node.span),
                        "a marketplace entry with `law: true` is missing `facilitated_sales_count`",
                    ));
                    return None;
                }
                Some(n) => match n.as_scalar() {
                    Some("true") => FacilitatedCount::Counts,
                    Some("false") => FacilitatedCount::Excluded,
                    Some("conditional") => FacilitatedCount::Conditional,
                    other => {
                        d.push(Diagnostic::error(
                            "R205",
                            Some(&n.span),
                            format!("`{}` is not true, false or conditional", other.unwrap_or("?")),
                        ));
                        return None;
                    }
                },
            };
            Some(Marketplace { law, facilitated_sales_count: count })
        },
        d,
    );

    let mut sourcing: Vec<Rule<Sourcing>> = vec![];
    if let Some(list) = f.req("sourcing", what, d) {
        for item in seq(list, "sourcing", d) {
            sourcing.extend(rule(item, "a sourcing rule", parse::sourcing, ids, codes, d));
        }
        let mut ranges: Vec<check::Range> =
            sourcing.iter().filter(|r| r.when.is_none()).map(|r| check::Range { from: r.from, to: r.to, span: &r.span }).collect();
        if ranges.is_empty() {
            d.push(Diagnostic::error("R510", Some(&list.span), format!("{code} needs a sourcing rule without `when` as the default")));
        } else {
            check::dated_ranges(&format!("{code} default sourcing"), &mut ranges, Some(coverage_from), true, d);
        }
    }
    let mut taxability: Vec<Rule<TaxOutcome>> = vec![];
    if let Some(list) = f.req("taxability", what, d) {
        for item in seq(list, "taxability", d) {
            let Some(r) = rule(item, "a taxability rule", parse::tax_outcome, ids, codes, d) else { continue };
            match r.when.as_ref().and_then(Cond::category_test) {
                Some(_) => taxability.push(r),
                None => d.push(
                    Diagnostic::error(
                        "R504",
                        Some(&item.span),
                        format!("taxability rule `{}` does not say which categories it rates", r.id),
                    )
                    .with_help("begin its condition with `category == x and …` or `category in {x, y} and …`"),
                ),
            }
        }
        check::taxability_coverage(code, &taxability, outside, coverage_from, &list.span, d);
    }
    if let Some(l) = &state_rate {
        check::dated(&format!("{code} state_rate"), l, coverage_from, d)
    }
    if let Some(l) = &local_taxes {
        check::dated(&format!("{code} local_taxes"), l, coverage_from, d)
    }
    if let Some(l) = &economic_nexus {
        check::dated(&format!("{code} economic_nexus"), l, coverage_from, d)
    }
    if let Some(l) = &marketplace {
        check::dated(&format!("{code} marketplace_facilitator"), l, coverage_from, d)
    }

    Some(JurisdictionParts {
        code,
        name: name?,
        state_rate: state_rate?,
        local_taxes: local_taxes?,
        sourcing,
        economic_nexus: economic_nexus?,
        marketplace: marketplace?,
        taxability,
        divergences: f.get("divergences").map(|list| state_divergences(list, d)).unwrap_or_default(),
    })
}

/// A state file's `divergences:`: each names the state-level table, the field, the table's value, the reason and
/// the primary source; a table, field and value recorded twice is an error (R603).
fn state_divergences(list: &Node, d: &mut Diags) -> Vec<StateDivergence> {
    let what = "a divergence";
    let mut out: Vec<StateDivergence> = vec![];
    for item in seq(list, "divergences", d) {
        let Some(f) = Fields::of(item, what, &["table", "field", "value", "reason", "cite", "url", "checked"], d) else { continue };
        let table = f.req("table", what, d).and_then(|n| enum_value(n, RATE_TABLES, "rate table", d));
        let fields: Vec<&str> = STATE_FIELDS.iter().map(|(name, _)| *name).collect();
        let field_node = f.req("field", what, d);
        let field = field_node.and_then(|n| {
            let text = n.as_scalar().unwrap_or("");
            match fields.iter().position(|x| *x == text) {
                Some(i) => Some(i),
                None => {
                    d.push(
                        Diagnostic::error("R205", Some(&n.span), format!("`{text}` is not a state-level field"))
                            .suggest(text, fields.iter().copied())
                            .with_help_if_none(&format!("fields: {}", fields.join(", "))),
                    );
                    None
                }
            }
        });
        let (Some(table), Some(field), Some(field_node)) = (table, field, field_node) else { continue };
        let (field_name, field_table) = STATE_FIELDS[field];
        let table = RATE_TABLES[table as usize];
        if table != field_table {
            d.push(Diagnostic::error(
                "R205",
                Some(&field_node.span),
                format!("`{field_name}` is a figure of the `{field_table}` table, not of `{table}`"),
            ));
            continue;
        }
        let value = f.req("value", what, d).and_then(|n| match field_name {
            "state_rate" => read::percent(n, d).map(|v| v.normalize().to_string()),
            "local_taxes" => match n.as_scalar() {
                Some(b @ ("true" | "false")) => Some(b.to_string()),
                other => {
                    d.push(Diagnostic::error("R108", Some(&n.span), format!("`{}` is not true or false", other.unwrap_or(""))));
                    None
                }
            },
            _ => enum_value(n, TAXABILITY_VALUES, "taxability value", d).map(|i| TAXABILITY_VALUES[i as usize].to_string()),
        });
        let reason = f.req_str("reason", what, d);
        if reason.as_deref().is_some_and(|r| r.trim().is_empty()) {
            d.push(Diagnostic::error("R102", Some(&item.span), "a divergence has an empty `reason`"));
            continue;
        }
        let citation = f.citation(what, d);
        let (Some(value), Some(reason), Some(citation)) = (value, reason, citation) else { continue };
        if out.iter().any(|o| o.table == table && o.field == field_name && o.value == value) {
            d.push(Diagnostic::error(
                "R603",
                Some(&item.span),
                format!("a divergence from `{table}` on `{field_name}` at `{value}` is recorded twice"),
            ));
            continue;
        }
        out.push(StateDivergence { table: table.to_string(), field: field_name.to_string(), value, reason, citation });
    }
    out
}

fn special(node: &Node, coverage_from: NaiveDate, ids: &mut HashMap<String, Span>, d: &mut Diags) -> Vec<SpecialTax> {
    let Some(f) = Fields::of(node, "special.yaml", &["special_taxes"], d) else { return vec![] };
    let Some(list) = f.req("special_taxes", "special.yaml", d) else { return vec![] };
    let mut out = vec![];
    for item in seq(list, "special_taxes", d) {
        let what = "a special tax";
        let Some(s) =
            Fields::of(item, what, &["id", "name", "state", "zips", "when", "requires_seller_nexus", "rates", "cite", "url", "note"], d)
        else {
            continue;
        };
        let id = s.req_str("id", what, d);
        if let Some(id) = &id {
            register_id(id, &item.span, ids, d);
        }
        let name = s.req_str("name", what, d);
        let state = s.req("state", what, d).and_then(|n| enum_value(n, &STATES, "state", d));
        let zips: Vec<String> = s
            .str_list("zips", d)
            .into_iter()
            .filter_map(|(z, span)| {
                if z.len() == 5 && z.chars().all(|c| c.is_ascii_digit()) {
                    Some(z)
                } else {
                    d.push(Diagnostic::error("R601", Some(&span), format!("`{z}` is not a 5-digit zip code")));
                    None
                }
            })
            .collect();
        let when = s.condition(d);
        let requires = s.req("requires_seller_nexus", what, d).and_then(|n| read::boolean(n, d));
        let rates = dated_list(
            &s,
            "rates",
            what,
            &["rate"],
            &mut |e, d| e.req("rate", "a special-tax rate", d).and_then(|n| read::percent(n, d)),
            d,
        );
        if let Some(r) = &rates {
            let mut ranges: Vec<check::Range> = r.iter().map(|x| check::Range { from: x.from, to: x.to, span: &x.span }).collect();
            check::dated_ranges(
                &format!("special tax `{}` rates", id.as_deref().unwrap_or("?")),
                &mut ranges,
                Some(coverage_from),
                false,
                d,
            );
        }
        let citation = s.citation(what, d);
        let note = s.opt_str("note", d);
        if let (Some(id), Some(name), Some(state), Some(when), Some(requires_seller_nexus), Some(rates), Some(citation)) =
            (id, name, state, when, requires, rates, citation)
        {
            out.push(SpecialTax { id, name, state: state as usize, zips, when, requires_seller_nexus, rates, citation, note });
        }
    }
    out
}

fn information_returns(node: &Node, coverage_from: NaiveDate, d: &mut Diags) -> Vec<Dated<InformationReturnThreshold>> {
    let Some(f) = Fields::of(node, "information_returns.yaml", &["form_1099_threshold"], d) else { return vec![] };
    let list = dated_list(
        &f,
        "form_1099_threshold",
        "information_returns.yaml",
        &["threshold", "form"],
        &mut |e, d| {
            let threshold = e.req("threshold", "a 1099 threshold", d).and_then(|n| read::money(n, d));
            let form = e.req_str("form", "a 1099 threshold", d);
            Some(InformationReturnThreshold { threshold: threshold?, form: form? })
        },
        d,
    )
    .unwrap_or_default();
    check::dated("the 1099 threshold", &list, coverage_from, d);
    list
}
