//! The operator's account commands: set a plan without a payment processor, list the accounts, and export the
//! month's usage statements (CSV or JSON) from which overage is billed.

use poem_openapi::types::ToJSON;
use serde_json::Value;

use crate::billing::month_start_ms;
use crate::billing::{month_counts, month_label, parse_month, Product, Standing, Statement};
use crate::plans::Plans;
use crate::store::Store;

/// `levy accounts set-plan EMAIL PLAN [--product P]`: what changed, or why nothing did.
pub async fn set_plan(store: &Store, plans: &Plans, email: &str, plan: &str, product: &str) -> Result<String, String> {
    let product = Product::parse(product).ok_or_else(|| format!("`{product}` is not a product: tax or gains"))?;
    if !plans.tiers.iter().any(|t| t.id == plan) {
        let ids: Vec<&str> = plans.tiers.iter().map(|t| t.id.as_str()).collect();
        let hint =
            crate::rules::diag::did_you_mean(plan, ids.iter().copied()).map(|x| format!("; did you mean `{x}`?")).unwrap_or_default();
        return Err(format!("`{plan}` is not a plan of the plans file: {}{hint}", ids.join(", ")));
    }
    let email = email.trim().to_ascii_lowercase();
    let (tax_plan, gains_plan) = match product {
        Product::Tax => (Some(plan), None),
        Product::Gains => (None, Some(plan)),
    };
    match store.set_plan(&email, tax_plan, gains_plan, chrono::Utc::now().timestamp_millis()).await.map_err(|e| e.to_string())? {
        Some(a) => Ok(format!("ok: {} ({}) is on the {plan} plan for {}, from its next call", a.email, a.id, product.id())),
        None => Err(format!("no account has the email {email}")),
    }
}

/// `levy accounts list [--json]`: every account with its plans, standing and this month's calls.
pub async fn list(store: &Store, plans: &Plans, now_ms: i64, json: bool) -> Result<String, String> {
    let month = month_start_ms(now_ms);
    let mut rows = Vec::new();
    for a in store.all_accounts().await.map_err(|e| e.to_string())? {
        let counts = month_counts(store, &a.id, month).await.map_err(|e| e.to_string())?;
        let standing = Standing::of(&a, now_ms);
        rows.push((Statement::new(plans, &a, month, now_ms, &counts), a.plan, a.gains_plan, standing));
    }
    if json {
        let out: Vec<Value> = rows
            .iter()
            .map(|(s, tax, gains, standing)| {
                serde_json::json!({
                    "entity_id": s.entity_id, "email": s.email, "tax_plan": tax, "gains_plan": gains,
                    "plan_status": standing.status(), "month": s.month,
                    "tax_calls": s.lines[0].calls, "gains_calls": s.lines[1].calls,
                })
            })
            .collect();
        return serde_json::to_string_pretty(&out).map_err(|e| e.to_string());
    }
    let mut text = format!(
        "{:<40} {:<36} {:<10} {:<10} {:<10} {:>10} {:>10}\n",
        "email", "entity_id", "tax", "gains", "status", "tax calls", "trades"
    );
    for (s, tax, gains, standing) in &rows {
        text.push_str(&format!(
            "{:<40} {:<36} {:<10} {:<10} {:<10} {:>10} {:>10}\n",
            s.email,
            s.entity_id,
            tax,
            gains,
            standing.status(),
            s.lines[0].calls,
            s.lines[1].calls
        ));
    }
    text.push_str(&format!("{} accounts; calls of {}", rows.len(), month_label(month)));
    Ok(text)
}

/// `levy accounts usage [--month YYYY-MM] [--format csv|json]`: every account's statement of the month (the current
/// one by default), with its overage amount.
pub async fn usage(store: &Store, plans: &Plans, now_ms: i64, month: Option<&str>, format: &str) -> Result<String, String> {
    let month_ms = match month {
        None => month_start_ms(now_ms),
        Some(m) => parse_month(m).ok_or_else(|| format!("`{m}` is not a month (YYYY-MM)"))?,
    };
    let mut statements = Vec::new();
    for a in store.all_accounts().await.map_err(|e| e.to_string())? {
        let counts = month_counts(store, &a.id, month_ms).await.map_err(|e| e.to_string())?;
        statements.push(Statement::new(plans, &a, month_ms, now_ms, &counts));
    }
    match format {
        // Each account's statement as GET /api/v1/usage answers it.
        "json" => {
            let answers: Vec<_> = statements.into_iter().map(|s| crate::api::usage_statement(s).to_json().unwrap_or_default()).collect();
            serde_json::to_string_pretty(&answers).map_err(|e| e.to_string())
        }
        "csv" => {
            let mut lines = vec![Statement::CSV_HEADER.to_string()];
            lines.extend(statements.iter().flat_map(Statement::csv_rows));
            Ok(lines.join("\n"))
        }
        other => Err(format!("`{other}` is not a format: csv or json")),
    }
}
