//! Reads rules/gains/ into [`GainsRules`], with the same marked YAML, dated lists, citations and diagnostics as
//! the sales-tax rules.

use std::collections::HashMap;
use std::path::Path;

use chrono::{Datelike, NaiveDate};
use rust_decimal::Decimal;

use super::check;
use super::dated::Dated;
use super::diag::{display_path, Diagnostic, Severity, SourceMap, Span};
use super::gains::*;
use super::read::{self, dated_list, enum_value, read_yaml, seq, yaml_files, Diags, Fields};
use super::schema::{state_index, ASSET_CLASSES, FILING_STATUSES, STATES};
use super::yaml::Node;

const FEDERAL_KEYS: &[&str] = &[
    "ordinary_brackets",
    "standard_deduction",
    "long_term_breakpoints",
    "net_investment_income_tax",
    "capital_loss_limit",
    "corporate_rate",
    "long_term_holding",
    "wash_sale",
];

/// Reads rules/gains/ (federal.yaml and states/*.yaml).
pub fn load(dir: &Path, coverage_from: NaiveDate, partial: bool, sources: &mut SourceMap, d: &mut Diags) -> GainsRules {
    let mut rules = GainsRules { states: vec![vec![]; STATES.len()], ..Default::default() };
    if let Some(node) = read_yaml(&dir.join("federal.yaml"), sources, d) {
        federal(&node, coverage_from, &mut rules, d);
    }
    let mut seen: HashMap<usize, Span> = HashMap::new();
    for path in yaml_files(&dir.join("states")) {
        let Some(node) = read_yaml(&path, sources, d) else { continue };
        let stem = path.file_stem().map(|s| s.to_string_lossy().to_uppercase()).unwrap_or_default();
        if let Some((idx, list)) = state_file(&node, &stem, coverage_from, d) {
            if let Some(prev) = seen.get(&idx) {
                d.push(
                    Diagnostic::error("R302", Some(&node.span), format!("the gains treatment of `{}` is defined twice", STATES[idx]))
                        .with_help(format!("the first is in {}", prev.file)),
                );
            } else {
                seen.insert(idx, node.span.clone());
                rules.states[idx] = list;
            }
        }
    }
    let span = Span::new(&display_path(&dir.join("states")), 1, 1, 1);
    for (i, code) in STATES.iter().enumerate() {
        if !seen.contains_key(&i) {
            let mut diag = Diagnostic::error("R301", Some(&span), format!("the gains treatment of `{code}` is missing"))
                .with_help(format!("every one of the 51 jurisdictions needs rules/gains/states/{}.yaml", code.to_lowercase()));
            if partial {
                diag.severity = Severity::Warning;
            }
            d.push(diag);
        }
    }
    rules
}

fn per_status(e: &Fields, what: &str, d: &mut Diags, mut value: impl FnMut(&Node, &mut Diags) -> Option<Decimal>) -> Option<[Decimal; 4]> {
    let mut out = [Decimal::ZERO; 4];
    let mut ok = true;
    for (i, s) in FILING_STATUSES.iter().enumerate() {
        match e.req(s, what, d).and_then(|n| value(n, d)) {
            Some(v) => out[i] = v,
            None => ok = false,
        }
    }
    ok.then_some(out)
}

fn list_of(node: &Node, key: &str, d: &mut Diags, mut item: impl FnMut(&Node, &mut Diags) -> Option<Decimal>) -> Option<Vec<Decimal>> {
    let items = seq(node, key, d);
    let out: Vec<Decimal> = items.iter().filter_map(|n| item(n, d)).collect();
    (out.len() == items.len() && !items.is_empty()).then_some(out)
}

/// A schedule entry: `rates` and one ascending list of bounds per filing status.
fn schedule(e: &Fields, what: &str, d: &mut Diags) -> Option<Schedule> {
    let rates = e.req("rates", what, d).and_then(|n| list_of(n, "rates", d, read::percent));
    let mut bounds: [Vec<Decimal>; 4] = Default::default();
    let mut ok = true;
    for (i, s) in FILING_STATUSES.iter().enumerate() {
        let Some(node) = e.req(s, what, d) else {
            ok = false;
            continue;
        };
        let Some(list) = list_of(node, s, d, read::money) else {
            ok = false;
            continue;
        };
        if list.windows(2).any(|w| w[0] >= w[1]) {
            d.push(Diagnostic::error("R120", Some(&node.span), format!("the `{s}` bounds must rise from one bracket to the next")));
            ok = false;
        }
        if let Some(r) = &rates {
            if list.len() + 1 != r.len() {
                d.push(
                    Diagnostic::error(
                        "R121",
                        Some(&node.span),
                        format!("`{s}` has {} bounds but `rates` has {} rates", list.len(), r.len()),
                    )
                    .with_help("give one bound fewer than there are rates: the last rate applies above the last bound"),
                );
                ok = false;
            }
        }
        bounds[i] = list;
    }
    Some(Schedule { rates: rates?, bounds }).filter(|_| ok)
}

fn federal(node: &Node, coverage_from: NaiveDate, rules: &mut GainsRules, d: &mut Diags) {
    let what = "federal.yaml";
    let Some(f) = Fields::of(node, what, FEDERAL_KEYS, d) else { return };
    let with_statuses =
        |extra: &[&'static str]| -> Vec<&'static str> { FILING_STATUSES.iter().copied().chain(extra.iter().copied()).collect() };

    let keys = with_statuses(&["rates"]);
    rules.ordinary =
        dated_list(&f, "ordinary_brackets", what, &keys, &mut |e, d| schedule(e, "an ordinary bracket schedule", d), d).unwrap_or_default();
    rules.long_term =
        dated_list(&f, "long_term_breakpoints", what, &keys, &mut |e, d| schedule(e, "a long-term breakpoint schedule", d), d)
            .unwrap_or_default();
    let keys = with_statuses(&[]);
    rules.standard_deduction =
        dated_list(&f, "standard_deduction", what, &keys, &mut |e, d| per_status(e, "a standard deduction", d, read::money), d)
            .unwrap_or_default();
    rules.loss_limit =
        dated_list(&f, "capital_loss_limit", what, &keys, &mut |e, d| per_status(e, "a capital-loss limit", d, read::money), d)
            .unwrap_or_default();
    let keys = with_statuses(&["rate"]);
    rules.niit = dated_list(
        &f,
        "net_investment_income_tax",
        what,
        &keys,
        &mut |e, d| {
            let rate = e.req("rate", "the net investment income tax", d).and_then(|n| read::percent(n, d));
            let thresholds = per_status(e, "the net investment income tax", d, read::money);
            Some(Niit { rate: rate?, thresholds: thresholds? })
        },
        d,
    )
    .unwrap_or_default();
    rules.corporate_rate = dated_list(
        &f,
        "corporate_rate",
        what,
        &["rate"],
        &mut |e, d| e.req("rate", "the corporate rate", d).and_then(|n| read::percent(n, d)),
        d,
    )
    .unwrap_or_default();
    rules.long_term_months = dated_list(
        &f,
        "long_term_holding",
        what,
        &["more_than_months"],
        &mut |e, d| {
            let n = e.req("more_than_months", "the long-term holding period", d)?;
            match n.as_scalar().and_then(|t| t.parse::<u32>().ok()).filter(|m| (1..=120).contains(m)) {
                Some(m) => Some(m),
                None => {
                    d.push(Diagnostic::error("R107", Some(&n.span), "`more_than_months` must be a whole number of months from 1 to 120"));
                    None
                }
            }
        },
        d,
    )
    .unwrap_or_default();
    rules.wash_sale = dated_list(
        &f,
        "wash_sale",
        what,
        &["window_days", "asset_classes"],
        &mut |e, d| {
            let n = e.req("window_days", "the wash-sale rule", d)?;
            let window = n.as_scalar().and_then(|t| t.parse::<i64>().ok()).filter(|w| (0..=366).contains(w));
            if window.is_none() {
                d.push(Diagnostic::error("R107", Some(&n.span), "`window_days` must be a whole number of days from 0 to 366"));
            }
            let mut classes = vec![];
            let mut ok = true;
            if let Some(list) = e.req("asset_classes", "the wash-sale rule", d) {
                for item in seq(list, "asset_classes", d) {
                    match enum_value(item, &ASSET_CLASSES, "asset class", d) {
                        Some(i) => classes.push(ASSET_CLASSES[i as usize].to_string()),
                        None => ok = false,
                    }
                }
            }
            let note = e.opt_str("note", d);
            Some(WashSaleRule { window_days: window?, asset_classes: classes, note }).filter(|_| ok)
        },
        d,
    )
    .unwrap_or_default();

    // Per-year figures end with the last year published; statutory ones stay open.
    closed_years("ordinary_brackets", &rules.ordinary, coverage_from, d);
    closed_years("standard_deduction", &rules.standard_deduction, coverage_from, d);
    closed_years("long_term_breakpoints", &rules.long_term, coverage_from, d);
    check::dated("net_investment_income_tax", &rules.niit, coverage_from, d);
    check::dated("capital_loss_limit", &rules.loss_limit, coverage_from, d);
    check::dated("corporate_rate", &rules.corporate_rate, coverage_from, d);
    check::dated("long_term_holding", &rules.long_term_months, coverage_from, d);
    check::dated("wash_sale", &rules.wash_sale, coverage_from, d);
}

/// Year-by-year figures: contiguous from the coverage date, each a whole calendar year.
fn closed_years<T>(what: &str, list: &[Dated<T>], coverage_from: NaiveDate, d: &mut Diags) {
    let mut ranges: Vec<check::Range> = list.iter().map(|x| check::Range { from: x.from, to: x.to, span: &x.span }).collect();
    if ranges.is_empty() {
        return;
    }
    check::dated_ranges(what, &mut ranges, Some(coverage_from), false, d);
    for x in list {
        let whole_year =
            (x.from.month(), x.from.day()) == (1, 1) && x.to.is_some_and(|t| (t.year(), t.month(), t.day()) == (x.from.year(), 12, 31));
        if !whole_year {
            d.push(Diagnostic::error(
                "R405",
                Some(&x.span),
                format!("{what}: each entry covers one tax year, from January 1 to December 31 of that year"),
            ));
        }
    }
}

/// The keys of a treatment entry that describe a tax (all meaningless where the kind is none).
const RATE_KEYS: &[&str] = &[
    "structure",
    "rate",
    "short_term_rate",
    "long_term_rate",
    "long_term_exclusion",
    "long_term_cap",
    "gain_deduction",
    "short_term_taxed",
    "surtaxes",
];

fn state_file(node: &Node, stem: &str, coverage_from: NaiveDate, d: &mut Diags) -> Option<(usize, Vec<Dated<StateGains>>)> {
    let what = "a state gains file";
    let f = Fields::of(node, what, &["state", "treatment"], d)?;
    let code_node = f.req("state", what, d)?;
    let code_text = code_node.as_scalar().unwrap_or("");
    let Some(idx) = state_index(code_text) else {
        d.push(
            Diagnostic::error("R303", Some(&code_node.span), format!("`{code_text}` is not one of the 51 jurisdictions"))
                .suggest(code_text, STATES.iter().copied()),
        );
        return None;
    };
    if stem != STATES[idx] {
        d.push(Diagnostic::error(
            "R304",
            Some(&code_node.span),
            format!("the file for `{}` must be named {}.yaml", STATES[idx], STATES[idx].to_lowercase()),
        ));
    }
    let mut keys = vec!["kind"];
    keys.extend_from_slice(RATE_KEYS);
    let list = dated_list(&f, "treatment", what, &keys, &mut |e, d| state_entry(e, d), d)?;
    check::dated(&format!("{} gains treatment", STATES[idx]), &list, coverage_from, d);
    Some((idx, list))
}

fn state_entry(e: &Fields, d: &mut Diags) -> Option<StateGains> {
    let what = "a gains treatment";
    let kind = match enum_value(e.req("kind", what, d)?, &STATE_KINDS, "gains treatment kind", d)? {
        0 => StateKind::IncomeTax,
        1 => StateKind::GainsExcise,
        _ => StateKind::None,
    };
    let note = e.opt_str("note", d);
    if kind == StateKind::None {
        for k in RATE_KEYS {
            if let Some(n) = e.get(k) {
                d.push(
                    Diagnostic::error("R122", Some(&n.span), format!("`{k}` means nothing where the kind is none"))
                        .with_help("a state without a tax on gains has no rates; remove the key"),
                );
                return None;
            }
        }
        return Some(StateGains {
            kind,
            graduated: None,
            rate: Decimal::ZERO,
            short_term_rate: None,
            long_term_rate: None,
            long_term_exclusion: Decimal::ZERO,
            long_term_cap: None,
            gain_deduction: Decimal::ZERO,
            short_term_taxed: false,
            surtaxes: vec![],
            note,
        });
    }
    let mut ok = true;
    let graduated = e.req("structure", what, d).and_then(|n| enum_value(n, &RATE_STRUCTURES, "rate structure", d)).map(|i| i == 1);
    let rate = e.req("rate", what, d).and_then(|n| read::percent(n, d));
    let mut opt_pct = |k: &str, d: &mut Diags| -> Option<Decimal> {
        let n = e.get(k)?;
        let v = read::percent(n, d);
        if v.is_none() {
            ok = false;
        }
        v
    };
    let short_term_rate = opt_pct("short_term_rate", d);
    let long_term_rate = opt_pct("long_term_rate", d);
    let long_term_exclusion = opt_pct("long_term_exclusion", d).unwrap_or_default();
    let long_term_cap = opt_pct("long_term_cap", d);
    if long_term_exclusion > Decimal::ONE {
        if let Some(n) = e.get("long_term_exclusion") {
            d.push(Diagnostic::error("R106", Some(&n.span), "an exclusion cannot be more than 100%"));
        }
        ok = false;
    }
    let gain_deduction = match e.get("gain_deduction") {
        Some(n) => read::money(n, d).or_else(|| {
            ok = false;
            None
        }),
        None => Some(Decimal::ZERO),
    };
    let short_term_taxed = match e.get("short_term_taxed") {
        Some(n) => read::boolean(n, d).or_else(|| {
            ok = false;
            None
        }),
        None => Some(true),
    };
    let mut surtaxes = vec![];
    if let Some(list) = e.get("surtaxes") {
        for item in seq(list, "surtaxes", d) {
            let Some(s) = Fields::of(item, "a surtax", &["rate", "over", "on"], d) else {
                ok = false;
                continue;
            };
            let rate = s.req("rate", "a surtax", d).and_then(|n| read::percent(n, d));
            let over = s.req("over", "a surtax", d).and_then(|n| read::money(n, d));
            let on = s.req("on", "a surtax", d).and_then(|n| enum_value(n, &SURTAX_BASES, "surtax base", d)).map(|i| match i {
                0 => SurtaxBase::IncomeAbove,
                1 => SurtaxBase::GainAbove,
                _ => SurtaxBase::WholeGainWhenIncomeAbove,
            });
            match (rate, over, on) {
                (Some(rate), Some(over), Some(on)) => surtaxes.push(Surtax { rate, over, on }),
                _ => ok = false,
            }
        }
    }
    let g = StateGains {
        kind,
        graduated: Some(graduated?),
        rate: rate?,
        short_term_rate,
        long_term_rate,
        long_term_exclusion,
        long_term_cap,
        gain_deduction: gain_deduction?,
        short_term_taxed: short_term_taxed?,
        surtaxes,
        note,
    };
    ok.then_some(g)
}
