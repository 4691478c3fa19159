//! GET /api/v1/reports/liability and POST /api/v1/reports/liability/filed.

use std::sync::Arc;

use chrono::NaiveDate;
use poem::IntoResponse;
use poem_openapi::param::Query;
use poem_openapi::registry::{MetaHeader, MetaMediaType, MetaResponse, MetaResponses, Registry};
use poem_openapi::types::Type;
use poem_openapi::{ApiResponse, OpenApi};

use super::auth::KeyAuth;
use super::error::ApiError;
use super::payload::{Body, Json};
use super::schema::filing::{
    FiledBody, FiledPeriod, JurisdictionLiability, LiabilityFigures, LiabilityReport, LiabilityReturn, ReportFormat, ReportPeriod,
    ReturnTax,
};
use super::schema::param::{listed_query, state_query, text, IsoDate, Param, StateParam};
use super::{ApiTags, AppState};
use crate::clock::iso;
use crate::ledger::report::{self, Granularity, Period, Report};
use crate::ledger::report::{day_number, day_of};
use crate::rules::schema::STATES;
use crate::store::entity::filed_period;
use crate::{error_responses, ok_responses};

pub struct FilingApi(pub Arc<AppState>);

/// The longest span one report covers, in days (five years).
pub const MAX_REPORT_DAYS: i64 = 5 * 366;

/// The report as JSON, or its worksheet as CSV: one 200 answer with two media types (poem-openapi's derive keeps one
/// media type per status, so this is written out).
pub enum ReportResponses {
    Ok(Box<LiabilityReport>),
    Csv(String),
}

impl ApiResponse for ReportResponses {
    fn meta() -> MetaResponses {
        MetaResponses {
            responses: vec![MetaResponse {
                description: "The report as JSON; or, with `format=csv` or `Accept: text/csv`, the worksheet as CSV: a row \
                    per return (level `return`), a row per jurisdiction, and a last row of totals (state `TOTAL`).",
                status: Some(200),
                status_range: None,
                content: vec![
                    MetaMediaType { content_type: "application/json", schema: LiabilityReport::schema_ref() },
                    MetaMediaType { content_type: "text/csv", schema: String::schema_ref() },
                ],
                headers: vec![MetaHeader {
                    name: "X-Request-Id".into(),
                    description: Some("The request id.".into()),
                    required: true,
                    deprecated: false,
                    schema: String::schema_ref(),
                }],
            }],
        }
    }

    fn register(registry: &mut Registry) {
        LiabilityReport::register(registry);
    }
}

impl IntoResponse for ReportResponses {
    fn into_response(self) -> poem::Response {
        match self {
            ReportResponses::Ok(report) => Json(*report).into_response(),
            ReportResponses::Csv(text) => poem::Response::builder().content_type("text/csv; charset=utf-8").body(text),
        }
    }
}

error_responses!(ReportErrors {
    400 => BadRequest: "INVALID_INPUT: from or to missing or not a date, to before from, a span over five years, or a state, period or format not in its list.",
    401 => Unauthorized: "UNAUTHORIZED.",
    429 => TooManyRequests: "RATE_LIMITED: the key's 120 calls per 60 s (Retry-After sent).",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(FiledResponses {
    200 => Ok(Json<FiledPeriod>): "The period is marked filed (now, or before: already_filed says which).",
});

error_responses!(FiledErrors {
    400 => BadRequest: "INVALID_INPUT: state or period (YYYY-MM, YYYY-Qn, YYYY) invalid, or a period that has not ended. Or INVALID_JSON_BODY.",
    401 => Unauthorized: "UNAUTHORIZED.",
    429 => TooManyRequests: "RATE_LIMITED: the key's 120 calls per 60 s (Retry-After sent).",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

fn date_text(day: i32) -> String {
    day_of(day).to_string()
}

fn returns_view(report: &Report) -> Vec<LiabilityReturn> {
    report
        .returns
        .iter()
        .map(|r| LiabilityReturn {
            state: r.state.clone(),
            tax: if r.tax == "use_tax" { ReturnTax::UseTax } else { ReturnTax::SalesTax },
            period: r.period.label.clone(),
            first_day: date_text(r.period.first),
            last_day: date_text(r.period.last),
            filed: r.filed_at.is_some(),
            filed_at: r.filed_at.map(iso),
            figures: LiabilityFigures::from(&r.totals),
            jurisdictions: r
                .jurisdictions
                .iter()
                .map(|j| JurisdictionLiability {
                    jurisdiction_id: j.id.clone(),
                    level: j.level.clone(),
                    name: j.name.clone(),
                    figures: LiabilityFigures::from(&j.totals),
                })
                .collect(),
        })
        .collect()
}

/// The report as GET /api/v1/reports/liability answers it (and `levy reports liability --format json` prints it).
pub fn liability_view(entity_id: &str, state: Option<&str>, report: &Report, generated_at_ms: i64) -> LiabilityReport {
    LiabilityReport {
        success: true,
        entity_id: entity_id.to_string(),
        from: report.from.to_string(),
        to: report.to.to_string(),
        period: report.granularity.id().to_string(),
        state: state.map(str::to_string),
        returns: returns_view(report),
        totals: LiabilityFigures::from(&report.totals),
        generated_at: iso(generated_at_ms),
    }
}

/// A report's days, checked: dates, in order, at most [`MAX_REPORT_DAYS`] apart.
pub fn report_span(from: &str, to: &str, errors: &mut Vec<String>) -> Option<(NaiveDate, NaiveDate)> {
    let mut day = |name: &str, t: &str| {
        NaiveDate::parse_from_str(t, "%Y-%m-%d").map_err(|_| errors.push(format!("{name}: `{t}` is not a date (YYYY-MM-DD)"))).ok()
    };
    let (from, to) = (day("from", from)?, day("to", to)?);
    if to < from {
        errors.push(format!("to: {to} is before from ({from})"));
        return None;
    }
    if (to - from).num_days() >= MAX_REPORT_DAYS {
        errors.push(format!("to: a report covers at most {MAX_REPORT_DAYS} days; ask for {from} to {to} in parts"));
        return None;
    }
    Some((from, to))
}

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Filing")]
impl FilingApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const LIABILITY_REPORT_EXAMPLE: &'static str = r#"{
        "query": "from=2026-01-01&to=2026-12-31&period=quarter",
        "status": 200,
        "expect": {"/period": "quarter", "/returns/0/state": "TX", "/returns/0/voids/count": 2, "/returns/0/net_tax_due": 6.6}
    }"#;

    /// What to file: the liability report
    ///
    /// Per state, tax (sales_tax on the account's sales as seller, use_tax on its purchases as buyer) and filing
    /// period, then per jurisdiction (the state, each county, city and special district, each special tax, with its
    /// id): gross sales, exempt sales by reason, taxable sales, tax collected, the refunds dated in the period, the
    /// voided transactions (apart: in no other figure) and the net tax due. Transactions are placed by their date
    /// (the UTC day recorded; a refund by its refund_date). The returns' net_tax_due add up to the ledger's tax over
    /// the days asked, to the cent, and each return's jurisdictions add up to it. `format=csv` or `Accept: text/csv`
    /// gives the worksheet as CSV. A period holding a day outside from..to shows only the days asked.
    #[oai(
        path = "/reports/liability",
        method = "get",
        operation_id = "liabilityReport",
        code_sample(lang = "json", label = "example", source = "Self::LIABILITY_REPORT_EXAMPLE")
    )]
    #[allow(clippy::too_many_arguments, reason = "one argument per query parameter, as poem-openapi takes them")]
    async fn report(
        &self,
        auth: KeyAuth,
        req: &poem::Request,
        /// First day (YYYY-MM-DD, UTC).
        from: Query<Param<IsoDate>>,
        /// Last day (YYYY-MM-DD, UTC): not before from, and within five years of it.
        to: Query<Param<IsoDate>>,
        /// One state (either case); every state when absent.
        state: Query<Option<Param<StateParam>>>,
        /// month (default), quarter or year.
        period: Query<Option<Param<ReportPeriod>>>,
        /// json (default) or csv.
        format: Query<Option<Param<ReportFormat>>>,
    ) -> Result<ReportResponses, ReportErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        s.check_burst(&owner.key_id).await?;
        let mut errors = Vec::new();
        let span = report_span(&from.0 .0, &to.0 .0, &mut errors);
        let state = state_query(text(state).0.as_deref(), &mut errors).map(|i| STATES[i]);
        let granularity = listed_query("period", text(period).0.as_deref(), ReportPeriod::VALUES, &mut errors);
        let format = listed_query("format", text(format).0.as_deref(), ReportFormat::VALUES, &mut errors);
        let (Some(span), true) = (span, errors.is_empty()) else { return Err(ApiError::invalid(errors).into()) };
        let granularity = Granularity::parse(granularity).unwrap_or(Granularity::Month);
        let report = report::of_account(&s.store, &owner.entity.id, span, state, granularity).await.map_err(ApiError::from)?;
        let wants_csv =
            format == "csv" || req.headers().get("accept").and_then(|a| a.to_str().ok()).is_some_and(|a| a.contains("text/csv"));
        if wants_csv {
            return Ok(ReportResponses::Csv(report::csv(&report)));
        }
        Ok(ReportResponses::Ok(Box::new(liability_view(&owner.entity.id, state, &report, s.clock.now_ms()))))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const MARK_PERIOD_FILED_EXAMPLE: &'static str = r#"{
        "body": {"state": "TX", "period": "2025-12"},
        "status": 200,
        "expect": {"/last_day": "2025-12-31", "/already_filed": false}
    }"#;

    /// Mark a period filed
    ///
    /// Records that the state's return for the period (a month YYYY-MM, a quarter YYYY-Qn or a year YYYY) was filed.
    /// From then on no transaction dated in it may be voided, and no refund may be dated in it: its figures stay as
    /// filed, and corrections land in an open period. The period must have ended. Marking it again changes nothing.
    #[oai(
        path = "/reports/liability/filed",
        method = "post",
        operation_id = "markPeriodFiled",
        code_sample(lang = "json", label = "example", source = "Self::MARK_PERIOD_FILED_EXAMPLE")
    )]
    async fn filed(&self, auth: KeyAuth, body: Body<FiledBody>) -> Result<FiledResponses, FiledErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        s.check_burst(&owner.key_id).await?;
        let b = body.parse()?;
        let state = b.state.text().to_ascii_uppercase();
        let label = b.period.text();
        let period: Period = Period::parse(label)
            .ok_or_else(|| ApiError::field("period", format!("`{label}` is not a period: YYYY-MM, YYYY-Qn or YYYY")))?;
        let today = day_number(s.clock.now().date_naive());
        if period.last >= today {
            return Err(ApiError::field(
                "period",
                format!("{label} has not ended (it runs to {}); a return is filed for a period that is over", date_text(period.last)),
            )
            .into());
        }
        let row = filed_period::Model {
            entity_id: owner.entity.id.clone(),
            state,
            period: period.label.clone(),
            first_day: period.first,
            last_day: period.last,
            filed_at: s.clock.now_ms(),
        };
        let (stored, already) = s.store.mark_filed(row).await.map_err(ApiError::from)?;
        Ok(FiledResponses::Ok(Json(FiledPeriod {
            success: true,
            state: stored.state,
            period: stored.period,
            first_day: date_text(stored.first_day),
            last_day: date_text(stored.last_day),
            filed_at: iso(stored.filed_at),
            already_filed: already,
        })))
    }
}
