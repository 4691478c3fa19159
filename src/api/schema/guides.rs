//! The documented shapes of the blog, the onboarding guide and the optimization report, and their query
//! parameters (the constraints are `crate::blog`'s, which the handlers check).

use std::borrow::Cow;

use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{MaybeUndefined, ParseResult, Type};
use poem_openapi::Object;

use super::calculate::NexusAlert;
use super::number::{Exact, Usd};
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
    /// Its id in `slug=`.
    pub slug: String,
    pub title: String,
    /// The article's category (what `category=` searches).
    pub category: String,
    /// Publication date (YYYY-MM-DD).
    pub date: String,
    pub summary: String,
}

/// One article with its body.
#[derive(Object)]
pub struct BlogArticle {
    /// Its id in `slug=`.
    pub slug: String,
    pub title: String,
    /// The article's category.
    pub category: String,
    /// Publication date (YYYY-MM-DD).
    pub date: String,
    pub summary: String,
    /// The format of `body`: markdown.
    pub format: String,
    /// The article, in Markdown.
    pub body: String,
}

/// The index (newest first, filtered by `category` when given), or with `slug` one article.
#[derive(Object)]
pub struct BlogResponse {
    pub success: bool,
    /// Articles in the index (without slug; absent with it).
    #[oai(skip_serializing_if_is_none)]
    pub count: Option<u32>,
    /// The index, newest first (without slug; absent with it).
    #[oai(skip_serializing_if_is_none)]
    pub articles: Option<Vec<BlogEntry>>,
    /// The category filter, as sent (absent when none was sent, and with slug).
    #[oai(skip_serializing_if_is_none)]
    pub category: Option<String>,
    /// The article (with slug; absent without it).
    #[oai(skip_serializing_if_is_none)]
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
    /// The endpoint's path.
    pub path: String,
    /// What to do.
    pub description: String,
    /// With an API key: whether the account's data shows the step done (absent without a key).
    #[oai(skip_serializing_if_is_none)]
    pub done: Option<bool>,
    /// With an API key: what the account's data shows (counts; absent without a key).
    #[oai(skip_serializing_if_is_none)]
    pub progress: Option<String>,
}

/// The onboarding guide: the steps, and with an API key the account's own progress.
#[derive(Object)]
pub struct OnboardingResponse {
    pub success: bool,
    /// Whether the answer reflects an account (an API key was sent).
    pub personalized: bool,
    /// The five steps, in order.
    pub steps: Vec<OnboardingStep>,
    /// With an API key: steps done (absent without a key).
    #[oai(skip_serializing_if_is_none)]
    pub completed: Option<u32>,
    /// With an API key: the id of the first step not done, null when all are (absent without a key).
    pub next_step: MaybeUndefined<String>,
}

/// The report allowance of the account's plan this month (UTC).
#[derive(Object)]
pub struct ReportAllowance {
    /// The tax plan held (a tier id of GET /api/v1/pricing).
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
    /// total_tax with the fact declared so (USD).
    pub total_tax: Usd,
    /// The tax the law imposes before nexus, with the fact declared so (USD).
    pub tax_due: Usd,
    /// total_tax with the fact declared so, less total_tax as answered (negative: less tax).
    pub total_tax_change: Usd,
    /// tax_due with the fact declared so, less tax_due as answered.
    pub tax_due_change: Usd,
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
    /// The answer with each value of the fact declared, in the fact's value order.
    pub readings: Vec<FactReading>,
}

/// A recorded calculation answered conservatively, determined again with each missing fact declared.
#[derive(Object)]
pub struct ConservativeCalculation {
    pub transaction_id: String,
    /// When it was recorded (ISO 8601, UTC).
    pub created_at: String,
    /// seller or buyer.
    pub role: String,
    pub buyer_state: String,
    pub transaction_type: String,
    /// The amount sent (USD), without trailing zeros.
    pub amount: Exact,
    /// total_tax as determined again (as of the call's date, with the account's nexus today; USD).
    pub total_tax: Usd,
    /// tax_due as determined again (USD).
    pub tax_due: Usd,
    /// The facts it left out.
    pub missing: Vec<MissingFactOfCalculation>,
}

/// Per value, the sum over the calculations that left the fact out.
#[derive(Object)]
pub struct FactValueTotal {
    /// The value declared.
    pub value: String,
    /// The sum of total_tax_change (USD).
    pub total_tax_change: Usd,
    /// The sum of tax_due_change (USD).
    pub tax_due_change: Usd,
}

/// A fact left out, over every calculation of the window.
#[derive(Object)]
pub struct MissingFactTotal {
    /// The engine's fact.
    pub fact: String,
    /// The calculate request field that declares it.
    pub field: String,
    /// The assumption advisory the answers carried.
    pub advisory: String,
    /// Calculations that left it out.
    pub transactions: u32,
    /// In the fact's value order.
    pub by_value: Vec<FactValueTotal>,
}

/// A counterparty paid at or above the report's share of the 1099 threshold this tax year.
#[derive(Object)]
pub struct Vendor1099 {
    pub counterparty_id: String,
    /// Paid this tax year (USD).
    pub total: Usd,
    pub payments: i64,
    /// total as a percentage of the threshold, to one decimal, without trailing zeros (85.5, 100).
    pub percent_of_threshold: Exact,
    pub threshold_reached: bool,
}

/// 1099 vendors near or past the threshold this tax year.
#[derive(Object)]
pub struct Vendors1099 {
    pub tax_year: i32,
    /// The threshold in force today (USD).
    pub threshold: Usd,
    /// The information return it is reported on.
    pub form: String,
    /// The share of the threshold from which a vendor is listed (80).
    pub listed_from_percent: i64,
    /// The law that sets the threshold.
    pub citation: String,
    /// Largest total first.
    pub vendors: Vec<Vendor1099>,
}

/// Seller sales into one state that owed no tax only because the account has no nexus there.
#[derive(Object)]
pub struct UncollectedState {
    /// Two-letter state code.
    pub state: String,
    pub transactions: u32,
    /// The sales' amounts (USD).
    pub sales: Usd,
    /// Sum of tax_if_nexus.total_tax: what would have been due with nexus (USD).
    pub tax_if_nexus: Usd,
}

/// Seller sales of the window that owed no tax only because the account has no nexus in the buyer's state.
#[derive(Object)]
pub struct UncollectedNoNexus {
    pub transactions: u32,
    /// What would have been due with nexus, over all states (USD).
    pub tax_if_nexus: Usd,
    /// By state, in state-code order.
    pub states: Vec<UncollectedState>,
}

/// The optimization report: where the account's ledger shows tax it could plan for or avoid.
#[derive(Object)]
pub struct OptimizationReport {
    pub success: bool,
    /// Today (YYYY-MM-DD, UTC).
    pub as_of: String,
    pub allowance: ReportAllowance,
    pub window: ReportWindow,
    /// States at 80% or more of their economic-nexus threshold, each as GET /api/v1/nexus-alerts lists it.
    pub nexus_alerts: Vec<NexusAlert>,
    /// Facts left out, with what declaring each value would have changed, summed over the window.
    pub missing_facts: Vec<MissingFactTotal>,
    /// The calculations answered conservatively (at most 200, newest first).
    pub conservative_calculations: Vec<ConservativeCalculation>,
    /// Null when no 1099 threshold is in force today.
    pub vendors_1099: Option<Vendors1099>,
    pub uncollected_no_nexus: UncollectedNoNexus,
    pub disclaimer: String,
}
