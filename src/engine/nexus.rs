//! Economic-nexus alerts: a seller's sales into each state, measured over that state's own threshold
//! period, compared with its dated threshold. Pure: revenue buckets and a date in, alerts out.

use std::collections::BTreeMap;

use chrono::{Datelike, NaiveDate};
use rust_decimal::Decimal;
use serde_json::{json, Value};

use super::render::{money, num};
use crate::rules::registry::{in_force, Registry};
use crate::rules::schema::STATES;

/// Alerts start at this share of a threshold.
pub const ALERT_PERCENT: u32 = 80;

/// Sales into one state in one calendar month.
#[derive(Clone, Debug)]
pub struct MonthRevenue {
    pub state: usize,
    /// yyyymm
    pub month: i32,
    pub sales: Decimal,
    pub transactions: i64,
}

#[derive(Clone, Debug)]
pub struct NexusAlert {
    pub state: &'static str,
    pub revenue: Decimal,
    pub transactions: i64,
    pub threshold_amount: Option<Decimal>,
    pub threshold_transactions: Option<u32>,
    pub percent: Decimal,
    pub period: String,
    pub start: NaiveDate,
    pub end: NaiveDate,
    pub has_nexus: bool,
}

fn ym(d: NaiveDate) -> i32 {
    d.year() * 100 + d.month() as i32
}

fn first_of(year: i32, month: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(year, month, 1).unwrap_or(NaiveDate::MIN)
}

/// The first day `n` months before the first of `d`'s month.
fn months_back(d: NaiveDate, n: i32) -> NaiveDate {
    let total = d.year() * 12 + d.month0() as i32 - n;
    first_of(total.div_euclid(12), (total.rem_euclid(12) + 1) as u32)
}

/// The month before the period's end as a closed range of days, for display.
fn last_day_before(d: NaiveDate) -> NaiveDate {
    d.pred_opt().unwrap_or(d)
}

/// The windows a period name stands for, as of `d`: each (start, end inclusive). The alert uses the
/// window with the highest share, since any of them can create nexus now or at the next year's start.
pub fn windows(period: &str, d: NaiveDate) -> Vec<(NaiveDate, NaiveDate)> {
    let y = d.year();
    let this_year = (first_of(y, 1), d);
    let last_year = (first_of(y - 1, 1), last_day_before(first_of(y, 1)));
    match period {
        "previous_calendar_year" | "previous_or_current_calendar_year" => vec![last_year, this_year],
        "previous_12_months" => vec![(months_back(d, 11), d)],
        "previous_four_quarters" => {
            let quarter_start = first_of(y, (d.month0() / 3) * 3 + 1);
            vec![(months_back(quarter_start, 12), last_day_before(quarter_start)), (months_back(quarter_start, 9), d)]
        }
        "twelve_months_ending_september_30" => {
            let oct = if d.month() >= 10 { first_of(y, 10) } else { first_of(y - 1, 10) };
            vec![(months_back(oct, 12), last_day_before(oct)), (oct, d)]
        }
        _ => vec![this_year],
    }
}

/// The earliest month any period could need, as yyyymm, for loading revenue.
pub fn earliest_month(d: NaiveDate) -> i32 {
    ym(first_of(d.year() - 2, 10))
}

fn percent(part: Decimal, whole: Decimal) -> Decimal {
    if whole.is_zero() {
        Decimal::ZERO
    } else {
        (part * Decimal::ONE_HUNDRED / whole).round_dp(1)
    }
}

/// States at or above 80% of their economic-nexus threshold as of `d`, highest share first.
pub fn alerts(reg: &Registry, revenue: &[MonthRevenue], has_nexus: &BTreeMap<usize, bool>, d: NaiveDate) -> Vec<NexusAlert> {
    let mut out = Vec::new();
    for (state, code) in STATES.iter().enumerate() {
        let Some(j) = reg.jurisdiction(state) else { continue };
        let Some(t) = in_force(&j.economic_nexus, d) else { continue };
        let t = &t.value;
        let mut best: Option<NexusAlert> = None;
        for (start, end) in windows(&t.period, d) {
            let (from, to) = (ym(start), ym(end));
            let (mut sales, mut count) = (Decimal::ZERO, 0i64);
            for r in revenue.iter().filter(|r| r.state == state && r.month >= from && r.month <= to) {
                sales += r.sales;
                count += r.transactions;
            }
            let by_sales = t.sales.map(|s| percent(sales, s));
            let by_count = t.transactions.map(|n| percent(Decimal::from(count), Decimal::from(n)));
            let share = match (by_sales, by_count) {
                (Some(a), Some(b)) if t.both_prongs_required => a.min(b),
                (Some(a), Some(b)) => a.max(b),
                (Some(a), None) | (None, Some(a)) => a,
                (None, None) => Decimal::ZERO,
            };
            if best.as_ref().is_none_or(|b| share > b.percent) {
                best = Some(NexusAlert {
                    state: code,
                    revenue: sales,
                    transactions: count,
                    threshold_amount: t.sales,
                    threshold_transactions: t.transactions,
                    percent: share,
                    period: t.period.clone(),
                    start,
                    end,
                    has_nexus: has_nexus.get(&state).copied().unwrap_or(false),
                });
            }
        }
        if let Some(b) = best.filter(|b| b.percent >= Decimal::from(ALERT_PERCENT)) {
            out.push(b);
        }
    }
    out.sort_by(|a, b| b.percent.cmp(&a.percent).then(a.state.cmp(b.state)));
    out
}

pub fn render(a: &NexusAlert) -> Value {
    let reached = a.percent >= Decimal::ONE_HUNDRED;
    let level = if reached { "reached" } else { "approaching" };
    let message = match (reached, a.has_nexus) {
        (true, false) => format!(
            "{}: sales of {} reach the economic-nexus threshold; register and collect, then record nexus with POST /api/v1/nexus",
            a.state,
            money(a.revenue)
        ),
        (true, true) => format!("{}: economic-nexus threshold reached; nexus is recorded for this state", a.state),
        (false, _) => format!("{}: sales are at {}% of the economic-nexus threshold", a.state, a.percent),
    };
    json!({
        "state": a.state,
        "level": level,
        "revenue": money(a.revenue),
        "transactions": a.transactions,
        "threshold_amount": a.threshold_amount.map(money),
        "threshold_transactions": a.threshold_transactions,
        "percent_of_threshold": num(a.percent),
        "period": a.period,
        "period_start": a.start.to_string(),
        "period_end": a.end.to_string(),
        "has_nexus": a.has_nexus,
        "message": message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(s: &str) -> NaiveDate {
        s.parse().unwrap()
    }

    #[test]
    fn windows_follow_the_period_names() {
        assert_eq!(windows("previous_12_months", day("2026-11-21")), vec![(day("2025-12-01"), day("2026-11-21"))]);
        assert_eq!(
            windows("previous_or_current_calendar_year", day("2026-03-05")),
            vec![(day("2025-01-01"), day("2025-12-31")), (day("2026-01-01"), day("2026-03-05"))]
        );
        assert_eq!(
            windows("previous_four_quarters", day("2026-11-21")),
            vec![(day("2025-10-01"), day("2026-09-30")), (day("2026-01-01"), day("2026-11-21"))]
        );
        assert_eq!(
            windows("twelve_months_ending_september_30", day("2026-11-21")),
            vec![(day("2025-10-01"), day("2026-09-30")), (day("2026-10-01"), day("2026-11-21"))]
        );
        assert_eq!(
            windows("twelve_months_ending_september_30", day("2026-02-01")),
            vec![(day("2024-10-01"), day("2025-09-30")), (day("2025-10-01"), day("2026-02-01"))]
        );
        assert_eq!(earliest_month(day("2026-11-21")), 202410);
    }
}
