//! The liability report: what an account files, per state, tax (sales tax on its sales, use tax on its
//! purchases) and filing period, then per jurisdiction: gross sales, exempt sales by reason, taxable sales, tax
//! collected, the refunds and voids of the period, and the net tax due. Built from the liabilities kept with the
//! ledger's rows, so its figures add up to the ledger's to the cent; a voided row is shown apart and counts in no
//! other figure.

use std::collections::{BTreeMap, HashMap};

use chrono::{Datelike, NaiveDate};
use rust_decimal::Decimal;

use super::liability::{Liability, Line, Reason};
use crate::engine::money::usd;
use crate::rules::schema::LOCAL_LEVELS;
use crate::store::entity::filed_period;
use crate::store::ledger::LedgerFigures;
use crate::store::{Store, StoreError};

/// A day as yyyymmdd.
pub fn day_number(d: NaiveDate) -> i32 {
    d.year() * 10_000 + d.month() as i32 * 100 + d.day() as i32
}

/// A yyyymmdd day as a date.
pub fn day_of(n: i32) -> NaiveDate {
    NaiveDate::from_ymd_opt(n / 10_000, (n / 100 % 100) as u32, (n % 100) as u32).unwrap_or_default()
}

/// How long a filing period is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Granularity {
    Month,
    Quarter,
    Year,
}

impl Granularity {
    /// The ids, the default first.
    pub const VALUES: [&'static str; 3] = ["month", "quarter", "year"];

    pub fn parse(id: &str) -> Option<Granularity> {
        match id {
            "month" => Some(Granularity::Month),
            "quarter" => Some(Granularity::Quarter),
            "year" => Some(Granularity::Year),
            _ => None,
        }
    }

    pub fn id(self) -> &'static str {
        Granularity::VALUES[self as usize]
    }

    /// The period holding a day (yyyymmdd).
    pub fn period_of(self, day: i32) -> Period {
        let d = day_of(day);
        let (y, m) = (d.year(), d.month());
        match self {
            Granularity::Month => Period::months(format!("{y}-{m:02}"), y, m, m),
            Granularity::Quarter => {
                let q = (m - 1) / 3 + 1;
                Period::months(format!("{y}-Q{q}"), y, 3 * q - 2, 3 * q)
            }
            Granularity::Year => Period::months(format!("{y}"), y, 1, 12),
        }
    }
}

/// A filing period: its label (`2026-03`, `2026-Q1`, `2026`) and its first and last days (yyyymmdd).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Period {
    pub first: i32,
    pub last: i32,
    pub label: String,
}

impl Period {
    fn months(label: String, year: i32, first: u32, last: u32) -> Period {
        let start = NaiveDate::from_ymd_opt(year, first, 1).unwrap_or_default();
        let end = if last == 12 { NaiveDate::from_ymd_opt(year + 1, 1, 1) } else { NaiveDate::from_ymd_opt(year, last + 1, 1) };
        let end = end.and_then(|e| e.pred_opt()).unwrap_or_default();
        Period { first: day_number(start), last: day_number(end), label }
    }

    /// A period from its label: `YYYY-MM`, `YYYY-Qn` or `YYYY` (years 2000 to 2099).
    pub fn parse(label: &str) -> Option<Period> {
        let year: i32 = label.get(..4)?.parse().ok().filter(|y| (2000..2100).contains(y))?;
        let rest = &label[4..];
        if rest.is_empty() {
            return Some(Granularity::Year.period_of(year * 10_000 + 101));
        }
        if let Some(q) = rest.strip_prefix("-Q").and_then(|q| q.parse::<i32>().ok()).filter(|q| (1..=4).contains(q)) {
            return (rest.len() == 3).then(|| Granularity::Quarter.period_of(year * 10_000 + (3 * q - 2) * 100 + 1));
        }
        let m = rest.strip_prefix('-').filter(|m| m.len() == 2)?.parse::<i32>().ok().filter(|m| (1..=12).contains(m))?;
        Some(Granularity::Month.period_of(year * 10_000 + m * 100 + 1))
    }
}

/// Sales figures: how many rows, their gross, taxable and exempt (by reason) sales, and their tax.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    pub count: u64,
    pub gross: Decimal,
    pub exempt: BTreeMap<Reason, Decimal>,
    pub taxable: Decimal,
    pub tax: Decimal,
}

impl Figures {
    fn add_line(&mut self, line: Option<&Line>, tax: Decimal) {
        self.count += 1;
        self.tax += tax;
        if let Some(l) = line {
            self.gross += l.gross;
            self.taxable += l.taxable;
            for (r, x) in &l.exempt {
                *self.exempt.entry(*r).or_insert(Decimal::ZERO) += *x;
            }
        }
    }

    fn add(&mut self, other: &Figures) {
        self.count += other.count;
        self.gross += other.gross;
        self.taxable += other.taxable;
        self.tax += other.tax;
        for (r, x) in &other.exempt {
            *self.exempt.entry(*r).or_insert(Decimal::ZERO) += *x;
        }
    }

    pub fn exempt_total(&self) -> Decimal {
        self.exempt.values().copied().sum()
    }
}

/// A period's figures: its sales (or purchases), the refunds dated in it (negative), and the voided rows dated in
/// it (apart: in no other figure).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Totals {
    pub sales: Figures,
    pub refunds: Figures,
    pub voids: Figures,
}

impl Totals {
    pub fn net_taxable(&self) -> Decimal {
        self.sales.taxable + self.refunds.taxable
    }

    pub fn net_tax(&self) -> Decimal {
        self.sales.tax + self.refunds.tax
    }

    fn add(&mut self, other: &Totals) {
        self.sales.add(&other.sales);
        self.refunds.add(&other.refunds);
        self.voids.add(&other.voids);
    }

    /// Where a row's figures go: its sales, refunds or voids.
    fn of(&mut self, voided: bool, refund: bool) -> &mut Figures {
        match (voided, refund) {
            (true, _) => &mut self.voids,
            (false, true) => &mut self.refunds,
            (false, false) => &mut self.sales,
        }
    }
}

/// One jurisdiction of a return.
#[derive(Clone, Debug, PartialEq)]
pub struct JurisdictionTotals {
    pub id: String,
    pub level: String,
    pub name: String,
    pub totals: Totals,
}

/// One return: a state, a tax and a period.
#[derive(Clone, Debug, PartialEq)]
pub struct Return {
    pub state: String,
    /// `sales_tax` (the account's sales, as seller) or `use_tax` (its purchases, as buyer).
    pub tax: &'static str,
    pub period: Period,
    /// When a filed period of the state holding this one was marked filed.
    pub filed_at: Option<i64>,
    pub totals: Totals,
    /// The state first, then its local and special taxes.
    pub jurisdictions: Vec<JurisdictionTotals>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub from: NaiveDate,
    pub to: NaiveDate,
    pub granularity: Granularity,
    /// By state, tax, then period.
    pub returns: Vec<Return>,
    pub totals: Totals,
}

/// Where a level sorts among a return's jurisdictions: the state, the local levels in the rule files' order, then
/// the special taxes.
fn level_rank(level: &str) -> usize {
    match level {
        "state" => 0,
        _ => LOCAL_LEVELS.iter().position(|l| *l == level).map_or(LOCAL_LEVELS.len() + 1, |i| i + 1),
    }
}

/// The report of these rows (the account's, dated from..=to) by periods of `granularity`.
pub fn build(rows: &[LedgerFigures], granularity: Granularity, filed: &[filed_period::Model], from: NaiveDate, to: NaiveDate) -> Report {
    type Key = (String, &'static str, Period);
    let mut returns: BTreeMap<Key, (Totals, HashMap<String, JurisdictionTotals>)> = BTreeMap::new();
    for row in rows {
        let liability = Liability::kept(row.liability.as_deref(), &row.buyer_state, &row.amount, &row.total_tax);
        let tax = if row.role == "buyer" { "use_tax" } else { "sales_tax" };
        let key = (row.buyer_state.clone(), tax, granularity.period_of(row.dated));
        let (totals, jurisdictions) = returns.entry(key).or_default();
        let (voided, refund) = (row.voided_at.is_some(), row.refund_of.is_some());
        totals.of(voided, refund).add_line(liability.state(), liability.tax());
        for line in &liability.lines {
            let j = jurisdictions.entry(line.id.clone()).or_insert_with(|| JurisdictionTotals {
                id: line.id.clone(),
                level: line.level.clone(),
                name: line.name.clone(),
                totals: Totals::default(),
            });
            j.totals.of(voided, refund).add_line(Some(line), line.tax);
        }
    }
    let mut all = Totals::default();
    let returns = returns
        .into_iter()
        .map(|((state, tax, period), (totals, jurisdictions))| {
            all.add(&totals);
            let mut jurisdictions: Vec<JurisdictionTotals> = jurisdictions.into_values().collect();
            jurisdictions.sort_by(|a, b| level_rank(&a.level).cmp(&level_rank(&b.level)).then_with(|| a.id.cmp(&b.id)));
            let filed_at = filed
                .iter()
                .filter(|f| f.state == state && f.first_day <= period.first && f.last_day >= period.last)
                .map(|f| f.filed_at)
                .min();
            Return { state, tax, period, filed_at, totals, jurisdictions }
        })
        .collect();
    Report { from, to, granularity, returns, totals: all }
}

/// The account's report over the days `from..=to` (one state's, or every state's).
pub async fn of_account(
    store: &Store,
    entity_id: &str,
    (from, to): (NaiveDate, NaiveDate),
    state: Option<&str>,
    granularity: Granularity,
) -> Result<Report, StoreError> {
    let (first, last) = (day_number(from), day_number(to));
    let rows = store.ledger_figures(entity_id, first, last, state).await?;
    let filed = store.filed_periods_between(entity_id, first, last).await?;
    Ok(build(&rows, granularity, &filed, from, to))
}

/// The CSV columns, in order.
pub fn csv_header() -> Vec<String> {
    let mut h: Vec<String> =
        ["state", "period", "tax", "level", "jurisdiction_id", "jurisdiction", "transactions", "gross_sales"].map(String::from).to_vec();
    h.extend(Reason::ALL.iter().map(|r| format!("exempt_{}", r.id())));
    h.extend(
        [
            "exempt_sales",
            "taxable_sales",
            "tax_collected",
            "refunds",
            "refunded_sales",
            "refunded_taxable_sales",
            "refunded_tax",
            "voids",
            "voided_sales",
            "voided_tax",
            "net_taxable_sales",
            "net_tax_due",
        ]
        .map(String::from),
    );
    h
}

fn csv_row(head: [&str; 6], t: &Totals) -> String {
    let mut f: Vec<String> = head.iter().map(|s| crate::csv::field(s)).collect();
    f.push(t.sales.count.to_string());
    f.push(usd(t.sales.gross));
    f.extend(Reason::ALL.iter().map(|r| usd(t.sales.exempt.get(r).copied().unwrap_or_default())));
    f.extend([usd(t.sales.exempt_total()), usd(t.sales.taxable), usd(t.sales.tax)]);
    f.extend([t.refunds.count.to_string(), usd(t.refunds.gross), usd(t.refunds.taxable), usd(t.refunds.tax)]);
    f.extend([t.voids.count.to_string(), usd(t.voids.gross), usd(t.voids.tax)]);
    f.extend([usd(t.net_taxable()), usd(t.net_tax())]);
    f.join(",")
}

/// The worksheet as CSV: per return a row of its totals (level `return`), then a row per jurisdiction, and a last
/// row of the totals of every return.
pub fn csv(report: &Report) -> String {
    let mut out = csv_header().join(",");
    out.push('\n');
    for r in &report.returns {
        out.push_str(&csv_row([&r.state, &r.period.label, r.tax, "return", &r.state, ""], &r.totals));
        out.push('\n');
        for j in &r.jurisdictions {
            out.push_str(&csv_row([&r.state, &r.period.label, r.tax, &j.level, &j.id, &j.name], &j.totals));
            out.push('\n');
        }
    }
    let span = format!("{}..{}", report.from, report.to);
    out.push_str(&csv_row(["TOTAL", &span, "", "total", "", ""], &report.totals));
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_from_days_and_labels() {
        let march = Granularity::Month.period_of(20260315);
        assert_eq!((march.label.as_str(), march.first, march.last), ("2026-03", 20260301, 20260331));
        let q1 = Granularity::Quarter.period_of(20260315);
        assert_eq!((q1.label.as_str(), q1.first, q1.last), ("2026-Q1", 20260101, 20260331));
        let q4 = Granularity::Quarter.period_of(20261231);
        assert_eq!((q4.label.as_str(), q4.first, q4.last), ("2026-Q4", 20261001, 20261231));
        let feb = Granularity::Month.period_of(20280210);
        assert_eq!(feb.last, 20280229);
        assert_eq!(Period::parse("2026-03"), Some(march));
        assert_eq!(Period::parse("2026-Q1"), Some(q1));
        assert_eq!(Period::parse("2026").map(|p| (p.first, p.last)), Some((20260101, 20261231)));
        for bad in ["2026-13", "2026-Q5", "2026-3", "26-03", "2026-03-01", "1999", "2026-Q1x", ""] {
            assert_eq!(Period::parse(bad), None, "{bad}");
        }
    }
}
