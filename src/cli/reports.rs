//! The operator's report commands: an account's liability report (`levy reports liability`), as the API gives it.

use poem_openapi::types::ToJSON;

use crate::api::filing::{liability_view, report_span};
use crate::engine::money::usd;
use crate::ledger::report::{self, Granularity};
use crate::rules::schema::state_index;
use crate::store::Store;

/// What `levy reports liability` was asked.
#[derive(clap::Args)]
pub struct LiabilityArgs {
    /// The account's email.
    #[arg(long)]
    pub email: String,
    /// First day, YYYY-MM-DD (UTC).
    #[arg(long)]
    pub from: String,
    /// Last day, YYYY-MM-DD (UTC).
    #[arg(long)]
    pub to: String,
    /// One state (default: every state).
    #[arg(long)]
    pub state: Option<String>,
    /// month, quarter or year.
    #[arg(long, default_value = "month")]
    pub period: String,
    /// text (a table of the returns), csv (the worksheet) or json (the API's answer).
    #[arg(long, default_value = "text")]
    pub format: String,
}

/// `levy reports liability`: the account's report as a table (text), the worksheet (csv) or the API's JSON.
pub async fn liability(store: &Store, a: &LiabilityArgs, now_ms: i64) -> Result<String, String> {
    let mut errors = Vec::new();
    let span = report_span(&a.from, &a.to, &mut errors);
    let granularity = Granularity::parse(&a.period);
    if granularity.is_none() {
        errors.push(format!("--period: `{}` is not one of: {}", a.period, Granularity::VALUES.join(", ")));
    }
    let state = a.state.as_deref().map(str::to_ascii_uppercase);
    if let Some(s) = state.as_deref().filter(|s| state_index(s).is_none()) {
        errors.push(format!("--state: `{s}` is not a two-letter US state code or DC"));
    }
    if !["text", "csv", "json"].contains(&a.format.as_str()) {
        errors.push(format!("--format: `{}` is not one of: text, csv, json", a.format));
    }
    let (Some(span), Some(granularity), true) = (span, granularity, errors.is_empty()) else { return Err(errors.join("; ")) };
    let email = a.email.trim().to_ascii_lowercase();
    let account =
        store.entity_by_email(&email).await.map_err(|e| e.to_string())?.ok_or_else(|| format!("no account has the email {email}"))?;
    let report = report::of_account(store, &account.id, span, state.as_deref(), granularity).await.map_err(|e| e.to_string())?;
    Ok(match a.format.as_str() {
        "csv" => report::csv(&report).trim_end().to_string(),
        "json" => {
            serde_json::to_string_pretty(&liability_view(&account.id, state.as_deref(), &report, now_ms).to_json().unwrap_or_default())
                .map_err(|e| e.to_string())?
        }
        _ => {
            let mut text = format!(
                "{} ({}), {} to {} by {}\n{:<6} {:<8} {:<9} {:>14} {:>14} {:>14} {:>12} {:>12} {:>12}\n",
                account.email,
                account.id,
                report.from,
                report.to,
                granularity.id(),
                "state",
                "period",
                "tax",
                "gross",
                "exempt",
                "taxable",
                "tax",
                "refunded",
                "net due"
            );
            let mut row = |state: &str, period: &str, tax: &str, t: &report::Totals| {
                text.push_str(&format!(
                    "{state:<6} {period:<8} {tax:<9} {:>14} {:>14} {:>14} {:>12} {:>12} {:>12}\n",
                    usd(t.sales.gross),
                    usd(t.sales.exempt_total()),
                    usd(t.sales.taxable),
                    usd(t.sales.tax),
                    usd(t.refunds.tax),
                    usd(t.net_tax())
                ));
            };
            for r in &report.returns {
                row(&r.state, &r.period.label, r.tax, &r.totals);
            }
            row("total", "", "", &report.totals);
            text.trim_end().to_string()
        }
    })
}
