//! The optimization report: what an account's ledger of the current calendar year shows it could plan for or avoid.
//! States nearing a nexus threshold; calculations answered conservatively because a declared fact was missing, each
//! determined again as of its date with the fact declared, value by value; 1099 vendors near the threshold; and
//! sales that owed no tax only for want of nexus. Runs are counted per calendar month against the plan's allowance.

use std::collections::BTreeMap;

use chrono::{Datelike, NaiveDate};
use rust_decimal::Decimal;
use serde_json::{Map, Value};

use super::alerts::{alerts, nexus_of};
use super::{Reader, EXTRA_FIELDS};
use crate::billing::{self, Product};
use crate::clock::{day_start_ms, utc_date};
use crate::engine::missing::{what_if, WhatIf};
use crate::engine::money::exact;
use crate::engine::Input;
use crate::plans::{Plan, Plans};
use crate::rules::registry::{in_force, Registry};
use crate::store::entity::{entity, transaction, vendor_ytd};
use crate::store::{Store, StoreError};

/// Ledger rows a report reads at most (the newest of the year).
pub const LEDGER_LIMIT: u64 = 1000;
/// Conservative calculations listed one by one at most (all are summed in the fact totals).
const LISTED: usize = 200;
/// A vendor is listed from this share of the 1099 threshold (percent), as nexus alerts are from 80%.
pub const VENDOR_NEAR_PERCENT: i64 = 80;

/// Why no report was made; the run was not counted.
pub enum Refused {
    /// The plan's reports for this calendar month are used up.
    UsedUp {
        plan: String,
        allowance: i64,
    },
    Store(StoreError),
}

crate::store_failure!(Refused);

/// A report's findings.
pub struct Findings<'p> {
    pub today: NaiveDate,
    pub year_start: NaiveDate,
    /// The plan whose allowance the run counted against, and the runs of the month with this one.
    pub plan: &'p Plan,
    pub used: i64,
    /// The nexus alerts, as calculate's `nexus_alerts` carries them.
    pub alerts: Vec<Value>,
    /// Ledger rows read.
    pub examined: usize,
    /// The first calculations answered conservatively: each row, its amount and what the engine answers with each
    /// missing fact declared.
    pub conservative: Vec<Conservative>,
    /// Per missing fact (by name), over every calculation that assumed it.
    pub facts: BTreeMap<String, FactTotal>,
    /// Per state, the seller sales that owed no tax only for want of nexus.
    pub uncollected: BTreeMap<String, Uncollected>,
    /// `None` when no 1099 threshold is in force.
    pub vendors: Option<Vendors>,
}

pub struct Conservative {
    pub row: transaction::Model,
    pub amount: Decimal,
    pub what_if: WhatIf,
}

pub struct FactTotal {
    pub field: String,
    pub advisory: String,
    pub transactions: u32,
    /// value → (total_tax change, tax_due change), in the fact's value order.
    pub by_value: Vec<(String, Decimal, Decimal)>,
}

#[derive(Default)]
pub struct Uncollected {
    pub transactions: u32,
    pub sales: Decimal,
    pub tax: Decimal,
}

/// The counterparties at [`VENDOR_NEAR_PERCENT`] or more of this tax year's 1099 threshold.
pub struct Vendors {
    pub tax_year: i32,
    pub threshold: Decimal,
    pub form: String,
    pub citation: String,
    /// Each vendor's row and its total.
    pub near: Vec<(vendor_ytd::Model, Decimal)>,
}

/// Runs the report for `account` at `now_ms`, counting the run against its plan's monthly allowance; `read` reads a
/// stored request body as the API reads one.
pub async fn run<'p>(
    store: &Store,
    registry: &Registry,
    plans: &'p Plans,
    account: &entity::Model,
    now_ms: i64,
    read: Reader,
) -> Result<Findings<'p>, Refused> {
    let today = utc_date(now_ms);
    let plan = billing::plan(plans, account, Product::Tax, now_ms);
    let allowance = plan.optimization_reports_per_month;
    let month = today.year() * 100 + today.month() as i32;
    let Some(used) = store.take_report_run(&account.id, month, allowance, now_ms).await? else {
        return Err(Refused::UsedUp { plan: plan.name.clone(), allowance });
    };
    let nexus = nexus_of(store, account).await?;
    let alerts = alerts(store, registry, account, nexus.as_ref(), now_ms).await?;
    let year_start = NaiveDate::from_ymd_opt(today.year(), 1, 1).unwrap_or(today);
    let since_ms = day_start_ms(year_start);
    let rows = store.ledger_since(&account.id, since_ms, LEDGER_LIMIT).await?;

    let mut conservative = Vec::new();
    let mut facts = BTreeMap::new();
    let mut uncollected: BTreeMap<String, Uncollected> = BTreeMap::new();
    for row in &rows {
        let result: Value = serde_json::from_str(&row.result).unwrap_or(Value::Null);
        if let Some(t) = result.get("tax_if_nexus").and_then(|t| exact(&t["total_tax"])) {
            let u = uncollected.entry(row.buyer_state.clone()).or_default();
            u.transactions += 1;
            u.sales += row.amount.parse::<Decimal>().unwrap_or_default();
            u.tax += t;
        }
        if let Some((amount, w)) = again(registry, row, nexus.as_ref(), read) {
            add_facts(&mut facts, &w);
            if conservative.len() < LISTED {
                conservative.push(Conservative { row: row.clone(), amount, what_if: w });
            }
        }
    }
    let vendors = vendors(store, registry, &account.id, today).await?;
    Ok(Findings { today, year_start, plan, used, alerts, examined: rows.len(), conservative, facts, uncollected, vendors })
}

/// The row determined again as of its date with the account's nexus, and with each fact the answer assumed declared
/// value by value; `None` when the answer assumed nothing (or the row cannot be determined again).
fn again(registry: &Registry, row: &transaction::Model, nexus: Option<&BTreeMap<usize, bool>>, read: Reader) -> Option<(Decimal, WhatIf)> {
    let mut request: Map<String, Value> = serde_json::from_str(&row.request).ok()?;
    for f in EXTRA_FIELDS {
        request.remove(*f);
    }
    let request = read(&Value::Object(request)).ok()?;
    let input = Input { request: &request, nexus, vendor_ytd: None, as_of: utc_date(row.created_at) };
    let w = what_if(registry, &input).ok()?;
    (!w.missing.is_empty()).then_some((request.amount, w))
}

/// Adds a calculation's changes of tax, fact by fact and value by value, to the totals.
fn add_facts(facts: &mut BTreeMap<String, FactTotal>, w: &WhatIf) {
    let (base_total, base_due) = (w.answer.total_tax, w.answer.tax_due);
    for m in &w.missing {
        let t = facts.entry(m.fact.name().to_string()).or_insert_with(|| FactTotal {
            field: m.field.clone(),
            advisory: m.advisory.clone(),
            transactions: 0,
            by_value: m.readings.iter().map(|r| (r.value.to_string(), Decimal::ZERO, Decimal::ZERO)).collect(),
        });
        t.transactions += 1;
        for r in &m.readings {
            if let Some(v) = t.by_value.iter_mut().find(|v| v.0 == r.value) {
                v.1 += r.total_tax - base_total;
                v.2 += r.tax_due - base_due;
            }
        }
    }
}

/// Counterparties at [`VENDOR_NEAR_PERCENT`] or more of this tax year's 1099 threshold.
async fn vendors(store: &Store, registry: &Registry, entity_id: &str, today: NaiveDate) -> Result<Option<Vendors>, StoreError> {
    let Some(t) = in_force(&registry.information_returns, today) else {
        return Ok(None);
    };
    let threshold = t.value.threshold;
    let near_from = threshold * Decimal::from(VENDOR_NEAR_PERCENT) / Decimal::from(100);
    let near = store
        .vendor_totals(entity_id, today.year())
        .await?
        .into_iter()
        .map(|r| {
            let total = Decimal::new(r.total_micros, 6);
            (r, total)
        })
        .filter(|(_, total)| *total >= near_from)
        .collect();
    Ok(Some(Vendors { tax_year: today.year(), threshold, form: t.value.form.clone(), citation: t.citation.cite.clone(), near }))
}
