//! GET /api/v1/optimization-report: what the account's ledger shows it could plan for or avoid — states nearing a
//! nexus threshold, calculations answered conservatively because a declared fact was missing (each determined
//! again with the fact declared, value by value), 1099 vendors near the threshold, and sales that owed no tax
//! only for want of nexus. Runs are counted per calendar month against the plan's allowance.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use poem::http::StatusCode;
use poem_openapi::{ApiResponse, OpenApi};
use rust_decimal::Decimal;
use serde_json::{Map, Value};

use super::auth::KeyAuth;
use super::error::{ApiError, ErrorCode};
use super::ledger::EXTRA_FIELDS;
use super::payload::Json;
use super::schema::guides::{
    ConservativeCalculation, FactReading, FactValueTotal, MissingFactOfCalculation, MissingFactTotal, OptimizationReport, ReportAllowance,
    ReportWindow, UncollectedNoNexus, UncollectedState, Vendor1099, Vendors1099,
};
use super::schema::number::{Exact, Usd};
use super::{ApiTags, AppState};
use crate::clock::iso;
use crate::engine::missing::what_if;
use crate::engine::render::DISCLAIMER;
use crate::engine::{parse_request, Input};
use crate::error_responses;
use crate::rules::registry::in_force;
use crate::store::entity::transaction;

pub struct ReportApi(pub Arc<AppState>);

/// Ledger rows a report reads at most (the newest of the year).
pub const LEDGER_LIMIT: u64 = 1000;
/// Conservative calculations listed one by one at most (all are summed in `missing_facts`).
const LISTED: usize = 200;
/// A vendor is listed from this share of the 1099 threshold (percent), as nexus alerts are from 80%.
const VENDOR_NEAR_PERCENT: i64 = 80;

#[derive(ApiResponse)]
#[oai(header(name = "X-Request-Id", ty = "String", description = "The request id."))]
pub enum ReportResponses {
    /// The report; this run is counted against the month's allowance.
    #[oai(status = 200)]
    Ok(Json<OptimizationReport>),
}

error_responses!(ReportErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter this operation does not take.",
    401 => Unauthorized: "UNAUTHORIZED: the API key is malformed, unknown or revoked.",
    429 => TooManyRequests: "TIER_LIMIT_REACHED: the plan's optimization reports for this calendar month (UTC) are used up (rules/plans.yaml, GET /api/v1/pricing); no Retry-After: the allowance renews on the 1st.",
    503 => DbUnavailable: "DB_UNAVAILABLE: the database does not answer; retry.",
});

fn dec(v: &Value) -> Option<Decimal> {
    match v {
        Value::Number(n) => n.to_string().parse().ok(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn day_of(ms: i64) -> NaiveDate {
    DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default().date_naive()
}

#[derive(Default)]
struct FactTotal {
    field: String,
    advisory: String,
    transactions: u32,
    /// value → (total_tax change, tax_due change), in the fact's value order.
    by_value: Vec<(String, Decimal, Decimal)>,
}

#[derive(Default)]
struct Uncollected {
    transactions: u32,
    sales: Decimal,
    tax: Decimal,
}

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Guides")]
impl ReportApi {
    /// The optimization report
    ///
    /// Reads the account's ledger for the current calendar year (the newest 1,000 rows) and reports, with figures:
    /// states at 80% or more of an economic-nexus threshold; calculations answered conservatively because a
    /// declared fact was missing (the engine's assumption advisories), each determined again as of its date with
    /// the fact declared, one value at a time, and the change in tax per fact and value; counterparties at 80% or
    /// more of this tax year's 1099 threshold; and seller sales that owed no tax only because the account has no
    /// nexus in the state (their tax_if_nexus). Each run counts against the plan's monthly allowance (`rules/plans.yaml`,
    /// shown by GET /api/v1/pricing); past it, 429 TIER_LIMIT_REACHED until the next month (UTC).
    #[oai(path = "/optimization-report", method = "get", operation_id = "optimizationReport")]
    async fn report(&self, auth: KeyAuth) -> Result<ReportResponses, ReportErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let account = owner.entity;
        let now_ms = s.clock.now_ms();
        let today = day_of(now_ms);
        let plan = crate::billing::plan(&s.plans, &account, crate::billing::Product::Tax, now_ms);
        let allowance = plan.optimization_reports_per_month;
        let month = today.year() * 100 + today.month() as i32;
        let Some(used) = s.store.take_report_run(&account.id, month, allowance, now_ms).await.map_err(ApiError::from)? else {
            return Err(ApiError::new(
                StatusCode::TOO_MANY_REQUESTS,
                ErrorCode::TierLimitReached,
                format!(
                    "the {} plan includes {allowance} optimization report(s) per month and they are used up; the allowance renews on the 1st (UTC)",
                    plan.name
                ),
            )
            .into());
        };

        let nexus = s.nexus_map(&account).await?;
        let alerts = s.nexus_alerts(&account, nexus.as_ref(), now_ms).await?;
        let year_start = NaiveDate::from_ymd_opt(today.year(), 1, 1).unwrap_or(today);
        let since_ms = year_start.and_hms_opt(0, 0, 0).map_or(0, |t| t.and_utc().timestamp_millis());
        let rows = s.store.ledger_since(&account.id, since_ms, LEDGER_LIMIT).await.map_err(ApiError::from)?;

        let mut listed = Vec::new();
        let mut totals: BTreeMap<String, FactTotal> = BTreeMap::new();
        let mut uncollected: BTreeMap<String, Uncollected> = BTreeMap::new();
        for row in &rows {
            let result: Value = serde_json::from_str(&row.result).unwrap_or(Value::Null);
            if let Some(t) = result.get("tax_if_nexus").and_then(|t| dec(&t["total_tax"])) {
                let u = uncollected.entry(row.buyer_state.clone()).or_default();
                u.transactions += 1;
                u.sales += row.amount.parse::<Decimal>().unwrap_or_default();
                u.tax += t;
            }
            if let Some(c) = self.conservative(row, nexus.as_ref(), &mut totals) {
                if listed.len() < LISTED {
                    listed.push(c);
                }
            }
        }

        let missing_facts = totals
            .into_iter()
            .map(|(fact, t)| MissingFactTotal {
                fact,
                field: t.field,
                advisory: t.advisory,
                transactions: t.transactions,
                by_value: t
                    .by_value
                    .into_iter()
                    .map(|(value, total, due)| FactValueTotal {
                        value,
                        total_tax_change: Usd::cents(total),
                        tax_due_change: Usd::cents(due),
                    })
                    .collect(),
            })
            .collect();
        let uncollected_no_nexus = UncollectedNoNexus {
            transactions: uncollected.values().map(|u| u.transactions).sum(),
            tax_if_nexus: Usd::cents(uncollected.values().map(|u| u.tax).sum()),
            states: uncollected
                .into_iter()
                .map(|(state, u)| UncollectedState {
                    state,
                    transactions: u.transactions,
                    sales: Usd::cents(u.sales),
                    tax_if_nexus: Usd::cents(u.tax),
                })
                .collect(),
        };
        Ok(ReportResponses::Ok(Json(OptimizationReport {
            success: true,
            as_of: today.to_string(),
            allowance: ReportAllowance { plan: plan.id.clone(), reports_per_month: allowance, used, remaining: (allowance - used).max(0) },
            window: ReportWindow {
                from: year_start.to_string(),
                to: today.to_string(),
                transactions_examined: rows.len() as u32,
                limit: LEDGER_LIMIT as u32,
            },
            nexus_alerts: alerts,
            missing_facts,
            conservative_calculations: listed,
            vendors_1099: self.vendors(&account.id, today).await?,
            uncollected_no_nexus,
            disclaimer: DISCLAIMER.to_string(),
        })))
    }
}

impl ReportApi {
    /// The row determined again as of its date with the account's nexus, and with each fact the answer assumed
    /// declared value by value; `None` when the answer assumed nothing (or the row cannot be determined again).
    fn conservative(
        &self,
        row: &transaction::Model,
        nexus: Option<&BTreeMap<usize, bool>>,
        totals: &mut BTreeMap<String, FactTotal>,
    ) -> Option<ConservativeCalculation> {
        let mut request: Map<String, Value> = serde_json::from_str(&row.request).ok()?;
        for f in EXTRA_FIELDS {
            request.remove(*f);
        }
        let request = parse_request(&Value::Object(request)).ok()?;
        let input = Input { request: &request, nexus, vendor_ytd: None, as_of: day_of(row.created_at) };
        let w = what_if(&self.0.registry, &input).ok()?;
        if w.missing.is_empty() {
            return None;
        }
        let (base_total, base_due) = (w.answer.total_tax, w.answer.tax_due);
        let mut missing = Vec::new();
        for m in &w.missing {
            let t = totals.entry(m.fact.name().to_string()).or_insert_with(|| FactTotal {
                field: m.field.clone(),
                advisory: m.advisory.clone(),
                transactions: 0,
                by_value: m.readings.iter().map(|r| (r.value.to_string(), Decimal::ZERO, Decimal::ZERO)).collect(),
            });
            t.transactions += 1;
            let mut readings = Vec::new();
            for r in &m.readings {
                let (dt, dd) = (r.total_tax - base_total, r.tax_due - base_due);
                if let Some(v) = t.by_value.iter_mut().find(|v| v.0 == r.value) {
                    v.1 += dt;
                    v.2 += dd;
                }
                readings.push(FactReading {
                    value: r.value.to_string(),
                    total_tax: Usd::cents(r.total_tax),
                    tax_due: Usd::cents(r.tax_due),
                    total_tax_change: Usd::cents(dt),
                    tax_due_change: Usd::cents(dd),
                });
            }
            missing.push(MissingFactOfCalculation {
                fact: m.fact.name().to_string(),
                field: m.field.clone(),
                advisory: m.advisory.clone(),
                readings,
            });
        }
        Some(ConservativeCalculation {
            transaction_id: row.id.clone(),
            created_at: iso(row.created_at),
            role: row.role.clone(),
            buyer_state: row.buyer_state.clone(),
            transaction_type: w.answer.transaction_type.to_string(),
            amount: Exact::normalized(request.amount),
            total_tax: Usd::cents(base_total),
            tax_due: Usd::cents(base_due),
            missing,
        })
    }

    /// Counterparties at 80% or more of this tax year's 1099 threshold; `None` when no threshold is in force.
    async fn vendors(&self, entity_id: &str, today: NaiveDate) -> Result<Option<Vendors1099>, ApiError> {
        let s = &self.0;
        let Some(t) = in_force(&s.registry.information_returns, today) else {
            return Ok(None);
        };
        let threshold = t.value.threshold;
        let near = threshold * Decimal::from(VENDOR_NEAR_PERCENT) / Decimal::from(100);
        let rows = s.store.vendor_totals(entity_id, today.year()).await?;
        let vendors = rows
            .iter()
            .map(|r| (r, Decimal::new(r.total_micros, 6)))
            .filter(|(_, total)| *total >= near)
            .map(|(r, total)| {
                let percent = if threshold.is_zero() { Decimal::ZERO } else { (total * Decimal::from(100) / threshold).round_dp(1) };
                Vendor1099 {
                    counterparty_id: r.counterparty_id.clone(),
                    total: Usd::cents(total),
                    payments: r.payments,
                    percent_of_threshold: Exact::normalized(percent),
                    threshold_reached: total >= threshold,
                }
            })
            .collect();
        Ok(Some(Vendors1099 {
            tax_year: today.year(),
            threshold: Usd::cents(threshold),
            form: t.value.form.clone(),
            listed_from_percent: VENDOR_NEAR_PERCENT,
            citation: t.citation.cite.clone(),
            vendors,
        }))
    }
}
