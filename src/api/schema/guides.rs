//! The documented shapes of the blog, the onboarding guide and the optimization report, and their query
//! parameters (the constraints are `crate::blog`'s, which the handlers check).

use std::borrow::Cow;

use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseResult, Type};
use poem_openapi::Object;

use super::calculate::NexusAlert;
use super::param::documented;
use crate::blog;

documented!(
    /// An article's slug: lowercase letters and digits in words joined by single hyphens, at most 100 characters.
    BlogSlug => MetaSchema {
        min_length: Some(1),
        max_length: Some(blog::MAX_SLUG),
        pattern: Some(blog::SLUG_PATTERN.to_string()),
        ..MetaSchema::new("string")
    }
);

documented!(
    /// Text to find in an article's category, case-insensitive: 1 to 100 characters.
    BlogCategory => MetaSchema { min_length: Some(1), max_length: Some(blog::MAX_CATEGORY), ..MetaSchema::new("string") }
);

/// An article in the index.
#[derive(Object)]
pub struct BlogEntry {
    pub slug: String,
    pub title: String,
    pub category: String,
    /// Publication date (YYYY-MM-DD).
    pub date: String,
    pub summary: String,
}

/// One article with its body.
#[derive(Object)]
pub struct BlogArticle {
    pub slug: String,
    pub title: String,
    pub category: String,
    /// Publication date (YYYY-MM-DD).
    pub date: String,
    pub summary: String,
    /// markdown.
    pub format: String,
    /// The article, in Markdown.
    pub body: String,
}

/// The index (newest first, filtered by `category` when given), or with `slug` one article.
#[derive(Object)]
pub struct BlogResponse {
    pub success: bool,
    /// Articles in the index (without slug).
    pub count: Option<u32>,
    /// The category filter, as sent.
    pub category: Option<String>,
    /// The index, newest first (without slug).
    pub articles: Option<Vec<BlogEntry>>,
    /// The article (with slug).
    pub article: Option<BlogArticle>,
}

/// One step of getting started.
#[derive(Object)]
pub struct OnboardingStep {
    /// 1 to 5, in order.
    pub step: u32,
    /// sign_up, set_nexus, first_calculation, ingest or alerts.
    pub id: String,
    pub title: String,
    /// The HTTP method of the endpoint for the step.
    pub method: String,
    pub path: String,
    pub description: String,
    /// With an API key: whether the account's data shows the step done.
    pub done: Option<bool>,
    /// With an API key: what the account's data shows (counts).
    pub progress: Option<String>,
}

/// The onboarding guide: the steps, and with an API key the account's own progress.
#[derive(Object)]
pub struct OnboardingResponse {
    pub success: bool,
    /// Whether the answer reflects an account (an API key was sent).
    pub personalized: bool,
    pub steps: Vec<OnboardingStep>,
    /// With an API key: steps done.
    pub completed: Option<u32>,
    /// With an API key: the id of the first step not done (null when all are).
    pub next_step: Option<String>,
}

/// The report allowance of the account's plan this month (UTC).
#[derive(Object)]
pub struct ReportAllowance {
    pub plan: String,
    pub reports_per_month: i64,
    /// Reports run this month, this one included.
    pub used: i64,
    pub remaining: i64,
}

/// The ledger window the report read.
#[derive(Object)]
pub struct ReportWindow {
    /// First day (YYYY-MM-DD): January 1 of the current year.
    pub from: String,
    /// Today (YYYY-MM-DD).
    pub to: String,
    /// Ledger rows read (the newest, at most `limit`).
    pub transactions_examined: u32,
    pub limit: u32,
}

/// The answer had the fact been declared with one value.
#[derive(Object)]
pub struct FactReading {
    /// The value declared.
    pub value: String,
    /// total_tax with the fact declared so.
    pub total_tax: f64,
    /// The tax the law imposes before nexus, with the fact declared so.
    pub tax_due: f64,
    /// total_tax with the fact declared so, less total_tax as answered (negative: less tax).
    pub total_tax_change: f64,
    /// tax_due with the fact declared so, less tax_due as answered.
    pub tax_due_change: f64,
}

/// A fact a calculation left out, answered conservatively.
#[derive(Object)]
pub struct MissingFactOfCalculation {
    /// The engine's fact.
    pub fact: String,
    /// The calculate request field that declares it.
    pub field: String,
    /// The assumption advisory the answer carried.
    pub advisory: String,
    pub readings: Vec<FactReading>,
}

/// A recorded calculation answered conservatively, determined again with each missing fact declared.
#[derive(Object)]
pub struct ConservativeCalculation {
    pub transaction_id: String,
    pub created_at: String,
    pub role: String,
    pub buyer_state: String,
    pub transaction_type: String,
    pub amount: f64,
    /// total_tax as determined again (as of the call's date, with the account's nexus today).
    pub total_tax: f64,
    pub tax_due: f64,
    pub missing: Vec<MissingFactOfCalculation>,
}

/// Per value, the sum over the calculations that left the fact out.
#[derive(Object)]
pub struct FactValueTotal {
    pub value: String,
    pub total_tax_change: f64,
    pub tax_due_change: f64,
}

/// A fact left out, over every calculation of the window.
#[derive(Object)]
pub struct MissingFactTotal {
    pub fact: String,
    pub field: String,
    pub advisory: String,
    /// Calculations that left it out.
    pub transactions: u32,
    pub by_value: Vec<FactValueTotal>,
}

/// A counterparty paid at or above the report's share of the 1099 threshold this tax year.
#[derive(Object)]
pub struct Vendor1099 {
    pub counterparty_id: String,
    pub total: f64,
    pub payments: i64,
    pub percent_of_threshold: f64,
    pub threshold_reached: bool,
}

/// 1099 vendors near or past the threshold this tax year.
#[derive(Object)]
pub struct Vendors1099 {
    pub tax_year: i32,
    pub threshold: f64,
    pub form: String,
    /// The share of the threshold from which a vendor is listed (80).
    pub listed_from_percent: f64,
    pub citation: String,
    pub vendors: Vec<Vendor1099>,
}

/// Seller sales into one state that owed no tax only because the account has no nexus there.
#[derive(Object)]
pub struct UncollectedState {
    pub state: String,
    pub transactions: u32,
    pub sales: f64,
    /// Sum of tax_if_nexus.total_tax: what would have been due with nexus.
    pub tax_if_nexus: f64,
}

#[derive(Object)]
pub struct UncollectedNoNexus {
    pub transactions: u32,
    pub tax_if_nexus: f64,
    pub states: Vec<UncollectedState>,
}

/// The optimization report: where the account's ledger shows tax it could plan for or avoid.
#[derive(Object)]
pub struct OptimizationReport {
    pub success: bool,
    pub as_of: String,
    pub allowance: ReportAllowance,
    pub window: ReportWindow,
    /// States at 80% or more of their economic-nexus threshold (as GET /api/v1/nexus-alerts).
    pub nexus_alerts: Vec<NexusAlert>,
    /// Facts left out, with what declaring each value would have changed, summed over the window.
    pub missing_facts: Vec<MissingFactTotal>,
    /// The calculations answered conservatively (at most 200, newest first).
    pub conservative_calculations: Vec<ConservativeCalculation>,
    pub vendors_1099: Vendors1099,
    pub uncollected_no_nexus: UncollectedNoNexus,
    pub disclaimer: String,
}
