//! Cross-entry checks: dated ranges that overlap, leave gaps or start too late; category
//! coverage of default rules; rules that can never fire.

use chrono::{Days, NaiveDate};

use super::ast::{Cond, TaxOutcome};
use super::diag::{Diagnostic, Span};
use super::registry::{Dated, Rule};
use super::schema::CATEGORIES;

/// One dated range to check, with where it was written.
pub struct Range<'a> {
    pub from: NaiveDate,
    pub to: Option<NaiveDate>,
    pub span: &'a Span,
}

/// Checks that `ranges` (for one thing, named `what`) do not overlap and leave no gap, that the
/// first starts on or before `coverage_from` (when given) and that only the last is open.
pub fn dated_ranges(what: &str, ranges: &mut Vec<Range>, coverage_from: Option<NaiveDate>, open_end: bool, d: &mut Vec<Diagnostic>) {
    for r in ranges.iter() {
        if let Some(to) = r.to {
            if to < r.from {
                d.push(Diagnostic::error("R404", Some(r.span), format!("{what}: `to` {to} is before `from` {}", r.from)));
            }
        }
    }
    ranges.sort_by_key(|r| r.from);
    if let (Some(first), Some(start)) = (ranges.first(), coverage_from) {
        if first.from > start {
            d.push(
                Diagnostic::error(
                    "R403",
                    Some(first.span),
                    format!("{what} starts on {} but the registry covers dates from {start}", first.from),
                )
                .with_help("give the value in force on the coverage date, with its own `from`"),
            );
        }
    }
    for pair in ranges.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        match a.to {
            None => d.push(
                Diagnostic::error(
                    "R401",
                    Some(b.span),
                    format!("{what}: this range from {} overlaps an open range from {}", b.from, a.from),
                )
                .with_help(format!("end the earlier range with `to: {}`", b.from.checked_sub_days(Days::new(1)).unwrap_or(b.from))),
            ),
            Some(to) if to >= b.from => d.push(Diagnostic::error(
                "R401",
                Some(b.span),
                format!("{what}: this range from {} overlaps the range {}..{to}", b.from, a.from),
            )),
            Some(to) => {
                let next = to.checked_add_days(Days::new(1)).unwrap_or(to);
                if next < b.from {
                    d.push(
                        Diagnostic::error(
                            "R402",
                            Some(b.span),
                            format!("{what}: nothing is in force from {next} to the day before {}", b.from),
                        )
                        .with_help(format!("start this range on {next}, or end the earlier one on the day before {}", b.from)),
                    );
                }
            }
        }
    }
    if open_end {
        if let Some(last) = ranges.last() {
            if let Some(to) = last.to {
                d.push(
                    Diagnostic::error("R402", Some(last.span), format!("{what} ends on {to} and nothing follows"))
                        .with_help("add the value in force after it, or leave `to` off the last entry"),
                );
            }
        }
    }
}

pub fn dated<T>(what: &str, list: &[Dated<T>], coverage_from: NaiveDate, d: &mut Vec<Diagnostic>) {
    let mut ranges: Vec<Range> = list.iter().map(|x| Range { from: x.from, to: x.to, span: &x.span }).collect();
    if ranges.is_empty() {
        return;
    }
    dated_ranges(what, &mut ranges, Some(coverage_from), true, d);
}

/// Every category (but those outside sales tax) needs default rules covering all dates, and
/// no conditional rule may sit behind a default that always wins.
pub fn taxability_coverage(
    code: &str,
    rules: &[Rule<TaxOutcome>],
    outside: &[bool],
    coverage_from: NaiveDate,
    file_span: &Span,
    d: &mut Vec<Diagnostic>,
) {
    for (ci, cat) in CATEGORIES.iter().enumerate() {
        let applies = |r: &Rule<TaxOutcome>| r.when.as_ref().and_then(Cond::category_test).is_some_and(|cs| cs.contains(&(ci as u16)));
        let defaults: Vec<&Rule<TaxOutcome>> =
            rules.iter().filter(|r| applies(r) && r.when.as_ref().is_some_and(Cond::is_pure_category_test)).collect();
        if outside.get(ci).copied().unwrap_or(false) {
            continue;
        }
        if defaults.is_empty() {
            d.push(
                Diagnostic::error("R505", Some(file_span), format!("{code} has no default rule for category `{cat}`"))
                    .with_help(format!("add a rule with `when: category == {cat}` (and nothing else) saying whether it is taxable")),
            );
            continue;
        }
        let mut ranges: Vec<Range> = defaults.iter().map(|r| Range { from: r.from, to: r.to, span: &r.span }).collect();
        dated_ranges(&format!("{code} default rules for `{cat}`"), &mut ranges, Some(coverage_from), true, d);
        // A conditional rule after a default that covers all its dates can never fire.
        for (pos, r) in rules.iter().enumerate() {
            if !applies(r) || r.when.as_ref().is_none_or(Cond::is_pure_category_test) {
                continue;
            }
            let shadow = rules[..pos].iter().find(|def| {
                applies(def)
                    && def.when.as_ref().is_some_and(Cond::is_pure_category_test)
                    && def.from <= r.from
                    && match (def.to, r.to) {
                        (None, _) => true,
                        (Some(_), None) => false,
                        (Some(a), Some(b)) => a >= b,
                    }
            });
            if let Some(def) = shadow {
                d.push(
                    Diagnostic::error(
                        "R506",
                        Some(&r.span),
                        format!("rule `{}` can never fire for `{cat}`: the default rule `{}` comes first", r.id, def.id),
                    )
                    .with_help("move conditional rules above the default rule of their category"),
                );
            }
        }
    }
}
