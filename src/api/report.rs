//! GET /api/v1/optimization-report: the report `ledger::optimization` makes from the account's ledger, written as
//! the documented answer.

use std::sync::Arc;

use poem::http::StatusCode;
use poem_openapi::OpenApi;
use rust_decimal::Decimal;

use super::auth::KeyAuth;
use super::error::{ApiError, ErrorCode};
use super::payload::Json;
use super::schema::calculate::read_request;
use super::schema::guides::{
    ConservativeCalculation, FactReading, FactValueTotal, MissingFactOfCalculation, MissingFactTotal, OptimizationReport, ReportAllowance,
    ReportWindow, UncollectedNoNexus, UncollectedState, Vendor1099, Vendors1099,
};
use super::schema::number::{Exact, Usd};
use super::{ApiTags, AppState};
use crate::clock::iso;
use crate::engine::render::DISCLAIMER;
use crate::ledger::optimization::{self, Conservative, Refused, Vendors, LEDGER_LIMIT, VENDOR_NEAR_PERCENT};
use crate::{error_responses, ok_responses};

pub struct ReportApi(pub Arc<AppState>);

ok_responses!(ReportResponses {
    200 => Ok(Json<OptimizationReport>): "The report; this run is counted against the month's allowance.",
});

error_responses!(ReportErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter this operation does not take.",
    401 => Unauthorized: "UNAUTHORIZED: the API key is malformed, unknown or revoked.",
    429 => TooManyRequests: "TIER_LIMIT_REACHED: the plan's optimization reports for this calendar month (UTC) are used up (rules/plans.yaml, GET /api/v1/pricing); no Retry-After: the allowance renews on the 1st.",
    503 => DbUnavailable: "DB_UNAVAILABLE: the database does not answer; retry.",
});

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Guides")]
impl ReportApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const OPTIMIZATION_REPORT_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/allowance/used": 1}
    }"#;

    /// The optimization report
    ///
    /// Reads the account's ledger for the current calendar year (the newest 1,000 rows) and reports, with figures:
    /// states at 80% or more of an economic-nexus threshold; calculations answered conservatively because a
    /// declared fact was missing (the engine's assumption advisories), each determined again as of its date with
    /// the fact declared, one value at a time, and the change in tax per fact and value; counterparties at 80% or
    /// more of this tax year's 1099 threshold; and seller sales that owed no tax only because the account has no
    /// nexus in the state (their tax_if_nexus). Each run counts against the plan's monthly allowance (`rules/plans.yaml`,
    /// shown by GET /api/v1/pricing); past it, 429 TIER_LIMIT_REACHED until the next month (UTC).
    #[oai(
        path = "/optimization-report",
        method = "get",
        operation_id = "optimizationReport",
        code_sample(lang = "json", label = "example", source = "Self::OPTIMIZATION_REPORT_EXAMPLE")
    )]
    async fn report(&self, auth: KeyAuth) -> Result<ReportResponses, ReportErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let f = match optimization::run(&s.store, &s.registry, &s.plans, &owner.entity, s.clock.now_ms(), read_request).await {
            Ok(f) => f,
            Err(Refused::UsedUp { plan, allowance }) => {
                return Err(ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    ErrorCode::TierLimitReached,
                    format!(
                        "the {plan} plan includes {allowance} optimization report(s) per month and they are used up; the allowance renews on the 1st (UTC)"
                    ),
                )
                .into())
            }
            Err(Refused::Store(e)) => return Err(ApiError::from(e).into()),
        };
        let missing_facts = f
            .facts
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
            transactions: f.uncollected.values().map(|u| u.transactions).sum(),
            tax_if_nexus: Usd::cents(f.uncollected.values().map(|u| u.tax).sum()),
            states: f
                .uncollected
                .into_iter()
                .map(|(state, u)| UncollectedState {
                    state,
                    transactions: u.transactions,
                    sales: Usd::cents(u.sales),
                    tax_if_nexus: Usd::cents(u.tax),
                })
                .collect(),
        };
        let allowance = f.plan.optimization_reports_per_month;
        Ok(ReportResponses::Ok(Json(OptimizationReport {
            success: true,
            as_of: f.today.to_string(),
            allowance: ReportAllowance {
                plan: f.plan.id.clone(),
                reports_per_month: allowance,
                used: f.used,
                remaining: (allowance - f.used).max(0),
            },
            window: ReportWindow {
                from: f.year_start.to_string(),
                to: f.today.to_string(),
                transactions_examined: f.examined as u32,
                limit: LEDGER_LIMIT as u32,
            },
            nexus_alerts: super::nexus::alert_views(f.alerts)?,
            missing_facts,
            conservative_calculations: f.conservative.iter().map(conservative_view).collect(),
            vendors_1099: f.vendors.map(vendors_view),
            uncollected_no_nexus,
            disclaimer: DISCLAIMER.to_string(),
        })))
    }
}

/// A conservative calculation with each missing fact's readings and their changes of tax.
fn conservative_view(c: &Conservative) -> ConservativeCalculation {
    let w = &c.what_if;
    let (base_total, base_due) = (w.answer.total_tax, w.answer.tax_due);
    let missing = w
        .missing
        .iter()
        .map(|m| MissingFactOfCalculation {
            fact: m.fact.name().to_string(),
            field: m.field.clone(),
            advisory: m.advisory.clone(),
            readings: m
                .readings
                .iter()
                .map(|r| FactReading {
                    value: r.value.to_string(),
                    total_tax: Usd::cents(r.total_tax),
                    tax_due: Usd::cents(r.tax_due),
                    total_tax_change: Usd::cents(r.total_tax - base_total),
                    tax_due_change: Usd::cents(r.tax_due - base_due),
                })
                .collect(),
        })
        .collect();
    ConservativeCalculation {
        transaction_id: c.row.id.clone(),
        created_at: iso(c.row.created_at),
        role: c.row.role.clone(),
        buyer_state: c.row.buyer_state.clone(),
        transaction_type: w.answer.transaction_type.to_string(),
        amount: Exact::normalized(c.amount),
        total_tax: Usd::cents(base_total),
        tax_due: Usd::cents(base_due),
        missing,
    }
}

fn vendors_view(v: Vendors) -> Vendors1099 {
    let threshold = v.threshold;
    let vendors = v
        .near
        .iter()
        .map(|(r, total)| {
            let percent = if threshold.is_zero() { Decimal::ZERO } else { (total * Decimal::from(100) / threshold).round_dp(1) };
            Vendor1099 {
                counterparty_id: r.counterparty_id.clone(),
                total: Usd::cents(*total),
                payments: r.payments,
                percent_of_threshold: Exact::normalized(percent),
                threshold_reached: *total >= threshold,
            }
        })
        .collect();
    Vendors1099 {
        tax_year: v.tax_year,
        threshold: Usd::cents(threshold),
        form: v.form,
        listed_from_percent: VENDOR_NEAR_PERCENT,
        citation: v.citation,
        vendors,
    }
}
