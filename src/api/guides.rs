//! GET /api/v1/blog (articles compiled in from content/blog, `crate::blog`) and GET /api/v1/onboarding (the
//! steps of getting started; with an API key, the account's own progress read from its data).

use std::sync::Arc;

use poem_openapi::param::Query;
use poem_openapi::types::MaybeUndefined;
use poem_openapi::OpenApi;

use super::auth::KeyOrDemo;
use super::error::ApiError;
use super::payload::Json;
use super::schema::guides::{BlogArticle, BlogCategory, BlogEntry, BlogResponse, BlogSlug, OnboardingResponse, OnboardingStep};
use super::schema::param::{text, Param};
use super::{ApiTags, AppState};
use crate::blog::{self, Article};
use crate::{error_responses, ok_responses};

pub struct GuidesApi(pub Arc<AppState>);

ok_responses!(BlogResponses {
    200 => Ok(Json<BlogResponse>): "The index, or one article.",
});

error_responses!(BlogErrors {
    400 => BadRequest: "INVALID_INPUT: slug is not a well-formed slug, or category is empty or longer than 100 characters.",
    404 => NotFound: "RESOURCE_NOT_FOUND: no article has this slug (in the category, when one is sent too).",
});

ok_responses!(OnboardingResponses {
    200 => Ok(Json<OnboardingResponse>): "The steps; with an API key, each with whether the account has done it.",
});

error_responses!(OnboardingErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter this operation does not take.",
    401 => Unauthorized: "UNAUTHORIZED: an API key was sent but is malformed, unknown or revoked.",
    503 => DbUnavailable: "DB_UNAVAILABLE: the database does not answer; retry.",
});

fn entry(a: &Article) -> BlogEntry {
    BlogEntry {
        slug: a.slug.clone(),
        title: a.title.clone(),
        category: a.category.clone(),
        date: a.date.to_string(),
        summary: a.summary.clone(),
    }
}

/// The steps of getting started: (id, title, method, path, what to do).
const STEPS: [(&str, &str, &str, &str, &str); 5] = [
    (
        "sign_up",
        "Sign up for an API key",
        "POST",
        "/api/v1/auth/signup",
        "Create the account; the response shows the API key once. Send it as X-API-Key on every keyed call.",
    ),
    (
        "set_nexus",
        "Say where you have nexus",
        "POST",
        "/api/v1/nexus",
        "List the states where you must collect (hasNexus true). Until then seller calls answer total_tax 0 with tax_if_nexus.",
    ),
    (
        "first_calculation",
        "Make a first calculation",
        "POST",
        "/api/v1/calculate",
        "Send amount, buyer_state and counterparty_id (and buyer_zip for local rates); the answer is recorded in your ledger.",
    ),
    (
        "ingest",
        "Ingest sales computed elsewhere",
        "POST",
        "/api/v1/transactions/ingest",
        "Send 1 to 100 records with external_tx_id so that nexus and 1099 totals count every sale.",
    ),
    (
        "alerts",
        "Watch your nexus alerts",
        "GET",
        "/api/v1/nexus-alerts",
        "States where your recorded sales reach 80% of the economic-nexus threshold; needs seller-role sales in the ledger.",
    ),
];

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Guides")]
impl GuidesApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const BLOG_EXAMPLE: &'static str = r#"{
        "query": "category=state",
        "status": 200,
        "expect": {"/count": 1, "/articles/0/slug": "texas-80-percent-rule-for-data-processing"}
    }"#;

    /// The blog: articles on how levy reads the law
    ///
    /// Without parameters, the index of articles (slug, title, category, date, summary), newest first.
    /// `category=` keeps the articles whose category contains the text, ignoring case. `slug=` returns one
    /// article with its Markdown body (404 RESOURCE_NOT_FOUND when no article has it, or when a category sent
    /// with it does not match). No key needed.
    #[oai(
        path = "/blog",
        method = "get",
        operation_id = "blog",
        code_sample(lang = "json", label = "example", source = "Self::BLOG_EXAMPLE")
    )]
    async fn blog(
        &self,
        /// One article, by its slug.
        slug: Query<Option<Param<BlogSlug>>>,
        /// Keep the articles whose category contains this text (case-insensitive).
        category: Query<Option<Param<BlogCategory>>>,
    ) -> Result<BlogResponses, BlogErrors> {
        let (slug, category) = (text(slug).0, text(category).0);
        let mut errors = vec![];
        if let Some(s) = &slug {
            if !blog::is_slug(s) {
                errors.push(format!("slug: `{s}` must match {} (at most {} characters)", blog::SLUG_PATTERN, blog::MAX_SLUG));
            }
        }
        if let Some(c) = &category {
            let n = c.chars().count();
            if n == 0 || n > blog::MAX_CATEGORY {
                errors.push(format!("category: must be 1 to {} characters", blog::MAX_CATEGORY));
            }
        }
        ApiError::check(errors)?;
        // Checked at start-up (`server::serve`), so this is an error only in a server started some other way.
        let articles = blog::articles().map_err(|e| ApiError::internal(format!("blog: {}", e.len())))?;
        let needle = category.as_deref().map(str::to_lowercase);
        let in_category = |a: &Article| needle.as_ref().is_none_or(|n| a.category.to_lowercase().contains(n));
        let body = match (slug, category) {
            (Some(s), _) => {
                let a = articles
                    .iter()
                    .find(|a| a.slug == s && in_category(a))
                    .ok_or_else(|| ApiError::not_found(format!("no article has the slug `{s}` (in that category, when one is given)")))?;
                let BlogEntry { slug, title, category, date, summary } = entry(a);
                let article = BlogArticle { slug, title, category, date, summary, format: "markdown".into(), body: a.body.clone() };
                BlogResponse { success: true, count: None, articles: None, category: None, article: Some(article) }
            }
            (None, category) => {
                let list: Vec<BlogEntry> = articles.iter().filter(|a| in_category(a)).map(entry).collect();
                BlogResponse { success: true, count: Some(list.len() as u32), articles: Some(list), category, article: None }
            }
        };
        Ok(BlogResponses::Ok(Json(body)))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const ONBOARDING_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/steps/0/id": "sign_up", "/steps/1/path": "/api/v1/nexus"}
    }"#;

    /// Getting started: the steps, and with an API key your progress
    ///
    /// Without a key: the five steps (sign up, set nexus, first calculation, ingest, alerts), each with its
    /// endpoint. With a key: the same steps, each marked done or not from the account's data (nexus configured,
    /// calculations and ingested records in the ledger, seller-role sales for the alerts to watch), with counts.
    #[oai(
        path = "/onboarding",
        method = "get",
        operation_id = "onboarding",
        code_sample(lang = "json", label = "example", source = "Self::ONBOARDING_EXAMPLE")
    )]
    async fn onboarding(&self, auth: KeyOrDemo) -> Result<OnboardingResponses, OnboardingErrors> {
        let s = &self.0;
        let progress = match auth.key() {
            None => None,
            Some(key) => {
                let owner = s.authenticate(&key).await?;
                let account = owner.entity;
                let ledger = s.store.ledger_progress(&account.id).await.map_err(ApiError::from)?;
                let nexus = s.store.nexus_states(&account.id).await.map_err(ApiError::from)?.iter().filter(|r| r.has_nexus).count();
                let alerts = if ledger.seller_sales > 0 {
                    s.nexus_alerts(&account, s.nexus_map(&account).await?.as_ref(), s.clock.now_ms()).await?.len()
                } else {
                    0
                };
                Some([
                    (true, "account created".to_string()),
                    (account.nexus_configured, format!("{nexus} state(s) with nexus")),
                    (ledger.calculations > 0, format!("{} calculation(s) recorded", ledger.calculations)),
                    (ledger.ingested > 0, format!("{} record(s) ingested", ledger.ingested)),
                    (
                        ledger.seller_sales > 0,
                        format!("{} seller-role sale(s) watched; {alerts} state(s) at 80% or more of the threshold", ledger.seller_sales),
                    ),
                ])
            }
        };
        let steps = STEPS
            .iter()
            .enumerate()
            .map(|(i, (id, title, method, path, description))| {
                let own = progress.as_ref().and_then(|p| p.get(i));
                OnboardingStep {
                    step: i as u32 + 1,
                    id: id.to_string(),
                    title: title.to_string(),
                    method: method.to_string(),
                    path: path.to_string(),
                    description: description.to_string(),
                    done: own.map(|o| o.0),
                    progress: own.map(|o| o.1.clone()),
                }
            })
            .collect();
        Ok(OnboardingResponses::Ok(Json(OnboardingResponse {
            success: true,
            personalized: progress.is_some(),
            steps,
            completed: progress.as_ref().map(|p| p.iter().filter(|x| x.0).count() as u32),
            // Absent without a key; null with one when every step is done.
            next_step: match &progress {
                None => MaybeUndefined::Undefined,
                Some(p) => MaybeUndefined::from_opt_null(p.iter().zip(STEPS).find(|(x, _)| !x.0).map(|(_, s)| s.0.to_string())),
            },
        })))
    }
}
