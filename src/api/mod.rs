//! The REST API (poem-openapi): one `#[OpenApi]` struct per tag, one response enum per operation,
//! and the layers around them (request ids and logs, error envelope, limits, idempotency).

pub mod auth;
pub mod caching;
pub mod conform;
pub mod context;
pub mod error;
pub mod idempotency;
pub mod limits;
pub mod mcp;
pub mod middleware;
pub mod payload;
pub mod query;
pub mod schema;

mod accounts;
pub mod agents;
mod billing;
mod calculate;
mod corrections;
pub mod filing;
mod guides;
mod health;
mod keys;
mod ledger;
mod network;
mod nexus;
pub mod operate;
mod paid;
mod partners;
pub mod pricing;
mod rates;
mod report;
mod trades;
mod wallets;

use std::sync::Arc;

use poem::{Endpoint, EndpointExt, Route};
use poem_openapi::{OpenApiService, Tags};

use crate::clock::Clock;
use crate::config::Limits;
use crate::ledger::{Job, Ledger, Recorded};
use crate::plans::Plans;
use crate::rules::registry::Registry;
use crate::security::DataKey;
use crate::store::Store;
use error::ApiError;

/// Everything a handler needs; shared by all requests of one instance (no per-instance limit state).
pub struct AppState {
    pub store: Store,
    pub registry: Arc<Registry>,
    /// The plans (`rules/plans.yaml`): allowances, prices, the pay-per-call option.
    pub plans: Arc<Plans>,
    pub clock: Clock,
    pub limits: Limits,
    pub data_key: DataKey,
    /// Records keyed calculations and ingested records, in shared ledger transactions.
    pub ledger: Arc<Ledger>,
    /// API keys looked up by this instance, for the calls the ledger batch checks again.
    pub keys: auth::KeyCache,
    /// The agents guide, generated from the served document when the application is built ([`app`]).
    pub agents_guide: std::sync::OnceLock<String>,
    /// Pay per call with x402; `None` while no payee is configured.
    pub x402: Option<crate::payments::x402::X402>,
    /// The payment processor of subscriptions (checkout, billing events); each part off until configured.
    pub billing: Arc<crate::payments::checkout::Stripe>,
    /// Pay per call with MPP; `None` while no challenge secret is configured.
    pub mpp: Option<crate::payments::mpp::Mpp>,
    /// The public base URL (LEVY_PUBLIC_URL), without a final `/`; `None`: taken from each request's Host.
    pub public_url: Option<String>,
    /// This instance's metrics (`GET /metrics`).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The bearer token that opens `/metrics` on this port; `None`: `/metrics` is not served here (404).
    pub metrics_token: Option<String>,
}

impl AppState {
    /// A state on the plans compiled into the binary (`rules/plans.yaml`, default x402 settings).
    pub fn new(store: Store, registry: Arc<Registry>, clock: Clock, limits: Limits, data_key: DataKey) -> AppState {
        let mut sources = Default::default();
        let plans = Plans::compiled_in(&Default::default(), &mut sources)
            .expect("the compiled-in plans.yaml is checked by `levy rules check` and the tests");
        AppState::with_plans(store, registry, Arc::new(plans), clock, limits, data_key)
    }

    pub fn with_plans(
        store: Store,
        registry: Arc<Registry>,
        plans: Arc<Plans>,
        clock: Clock,
        limits: Limits,
        data_key: DataKey,
    ) -> AppState {
        let backend = match store.backend() {
            sea_orm::DbBackend::Postgres => "postgres",
            sea_orm::DbBackend::Sqlite => "sqlite",
            sea_orm::DbBackend::MySql => "mysql",
        };
        let jurisdictions = registry.all_jurisdictions().count();
        let metrics = Arc::new(crate::metrics::Metrics::new(&registry.version, &registry.engine_version, jurisdictions, backend));
        let ledger = Arc::new(Ledger::new(store.clone(), registry.clone(), plans.clone(), limits.burst_per_minute, metrics.clone()));
        let plans_for_billing = plans.clone();
        AppState {
            store,
            registry,
            plans,
            clock,
            limits,
            data_key,
            ledger,
            keys: Default::default(),
            agents_guide: Default::default(),
            x402: None,
            billing: Arc::new(
                crate::payments::checkout::Stripe::from_settings(&Default::default(), &plans_for_billing)
                    .expect("with no settings the processor is off, which always builds"),
            ),
            mpp: None,
            public_url: None,
            metrics,
            metrics_token: None,
        }
    }

    /// The state with `/metrics` opened on the public port by a bearer token, if `token` is one.
    pub fn with_metrics_token(mut self, token: Option<&str>) -> AppState {
        self.metrics_token = token.map(str::to_string);
        self
    }

    /// The state with x402 configured as `settings` say (off without a payee), at the plans' pay-per-call price.
    pub fn with_x402(mut self, settings: &crate::config::X402) -> Result<AppState, String> {
        self.x402 = crate::payments::x402::X402::from_settings(settings, self.plans.pay_per_call.price_usd_per_call)?;
        Ok(self)
    }

    /// The state with the payment processor configured as `settings` say (its prices checked against the plans).
    pub fn with_billing(mut self, settings: &crate::config::Billing) -> Result<AppState, String> {
        self.billing = Arc::new(crate::payments::checkout::Stripe::from_settings(settings, &self.plans)?);
        Ok(self)
    }

    /// The state with MPP configured as `settings` say (off without a secret), at the plans' pay-per-call price, and
    /// the public base URL (which also names MPP's realm: its host, else `levy`).
    pub fn with_mpp(mut self, settings: &crate::config::Mpp, public_url: Option<&str>) -> Result<AppState, String> {
        self.public_url = public_url.map(|u| u.trim_end_matches('/').to_string());
        let realm = public_url
            .and_then(|u| u.split_once("://").map(|(_, rest)| rest.split('/').next().unwrap_or(rest).to_string()))
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "levy".into());
        self.mpp = crate::payments::mpp::Mpp::from_settings(settings, self.plans.mpp.price_usd_per_call, &realm)?;
        Ok(self)
    }

    /// Records a job in the ledger; a calculate call paid by a key reports its burst window (X-RateLimit-*).
    pub async fn record(&self, job: Job) -> Result<Recorded, ApiError> {
        let now_ms = job.now_ms;
        let answer = self.ledger.record(job).await;
        self.answered(now_ms, answer)
    }

    /// A job's answer from the ledger batch: its key's burst window reported (X-RateLimit-*), a refusal counted.
    pub fn answered(&self, now_ms: i64, answer: crate::ledger::Answer) -> Result<Recorded, ApiError> {
        if let Some(count) = answer.burst {
            self.burst_verdict(now_ms, count)?;
        }
        if matches!(answer.result, Err(crate::ledger::Refusal::AllowanceUsedUp(_))) {
            self.metrics.limiter_refusal(crate::metrics::Limit::Monthly);
        }
        answer.result.map_err(ApiError::from)
    }
}

#[derive(Tags)]
pub enum ApiTags {
    /// Sales and use tax for one transaction: full answers with an API key, demo answers without.
    Calculate,
    /// The ledger: calculations recorded by keyed calls, records ingested in bulk, and their history.
    Transactions,
    /// What to file: the liability report per state, period and jurisdiction, and the periods marked filed.
    Filing,
    /// Where the account has nexus, and where its sales approach a state's economic-nexus threshold.
    Nexus,
    /// Sign up, log in, the account view and its agents.
    Accounts,
    /// API keys: list, create, revoke.
    Keys,
    /// Wallets linked to the account: x402 payments they sign are recorded to it.
    Wallets,
    /// The agent network: an account's profiles, the public directory and the public feed.
    Network,
    /// Plans: buying one (checkout at the payment processor), the processor's billing events, and the monthly
    /// usage statement.
    Billing,
    /// The gains tracker: trades, cost-basis lots, realized gains, wash sales, estimates, the draft 1099-DA
    /// and state capital-gains rates.
    Gains,
    /// Public sales-tax rate tables: every state, a zip code's combined rate, and a cross-check of someone's tables.
    Rates,
    /// Liveness and database connectivity.
    Service,
    /// For a caller deciding how to use levy: what it costs (plans, pay-per-call) and the integration guide for agents.
    Guide,
    /// The blog, the onboarding guide and the optimization report.
    Guides,
    /// The partner program: platforms provision accounts for their users (claim links), read their usage and revenue
    /// share, and send signed events.
    Partners,
}

pub use crate::engine::render::API_VERSION;
pub use billing::usage_statement;

/// The version of the interface this server implements (the spec's Versioning section, item 2): the OpenAPI
/// document's `info.version`. Not the crate's version, which numbers builds of this implementation.
pub const INTERFACE_VERSION: &str = "1.5.0";

pub type Apis = (
    health::HealthApi,
    accounts::AccountsApi,
    keys::KeysApi,
    nexus::NexusApi,
    calculate::CalculateApi,
    // (poem-openapi implements OpenApi for tuples of up to 16: some are nested.)
    (ledger::LedgerApi, corrections::CorrectionsApi, filing::FilingApi),
    wallets::WalletsApi,
    billing::BillingApi,
    network::NetworkApi,
    trades::TradesApi,
    trades::RatesApi,
    pricing::PricingApi,
    agents::AgentsApi,
    rates::PublicRatesApi,
    guides::GuidesApi,
    (report::ReportApi, partners::PartnersApi),
);

pub fn openapi_service(state: Arc<AppState>) -> OpenApiService<Apis, ()> {
    // The document lists the operations in this order, and the guide runs their examples in it: an account and its
    // nexus before the calls that need them.
    let apis = (
        health::HealthApi(state.clone()),
        accounts::AccountsApi(state.clone()),
        keys::KeysApi(state.clone()),
        nexus::NexusApi(state.clone()),
        calculate::CalculateApi(state.clone()),
        (ledger::LedgerApi(state.clone()), corrections::CorrectionsApi(state.clone()), filing::FilingApi(state.clone())),
        wallets::WalletsApi(state.clone()),
        billing::BillingApi(state.clone()),
        network::NetworkApi(state.clone()),
        trades::TradesApi(state.clone()),
        trades::RatesApi(state.clone()),
        pricing::PricingApi(state.clone()),
        agents::AgentsApi(state.clone()),
        rates::PublicRatesApi(state.clone()),
        guides::GuidesApi(state.clone()),
        (report::ReportApi(state.clone()), partners::PartnersApi(state)),
    );
    OpenApiService::new(apis, "levy tax-intelligence API", INTERFACE_VERSION)
        .description(
            "US sales and use tax for one transaction across 51 jurisdictions, with the law it applied; the ledger; \
             nexus settings and alerts; 1099 tracking. Errors always use the envelope {success:false, code, error, \
             request_id, errors}; codes are the frozen ErrorCode enum. A query parameter an operation does not list is 400 INVALID_INPUT \
             naming it, before the operation does anything. Every response carries X-Request-Id.",
        )
        .server("/")
}

/// The OpenAPI document as served at /api/v1/openapi.json (no live state needed to produce it).
pub fn openapi_json(state: Arc<AppState>) -> String {
    document(&openapi_service(state))
}

/// The service's document, with two conventions the derives cannot state:
/// - a property that a schema does not require may also be `null`: requests treat `null` as absent
///   (`api::conform`), and responses send `null` for a value that does not
///   apply (`revoked_at` of a live key, `buyer_zip` without a zip);
/// - request objects with listed properties take no others (`additionalProperties: false`): `api::conform` reports
///   unknown fields. Free-form objects (`metadata`) list none.
fn document(service: &OpenApiService<Apis, ()>) -> String {
    let mut doc: serde_json::Value = serde_json::from_str(&service.spec()).expect("poem-openapi writes JSON");
    let mut requests = Vec::new();
    for op in doc["paths"].as_object().into_iter().flat_map(|p| p.values()).filter_map(|m| m.as_object()).flat_map(|m| m.values()) {
        for media in op["requestBody"]["content"].as_object().into_iter().flat_map(|c| c.values()) {
            schema::collect_refs(&doc, &media["schema"], &mut requests);
        }
    }
    for name in &requests {
        if let Some(schema) = doc.pointer_mut(&format!("/components/schemas/{name}")) {
            close_objects(schema);
        }
    }
    if let Some(schemas) = doc.pointer_mut("/components/schemas").and_then(|s| s.as_object_mut()) {
        for schema in schemas.values_mut() {
            let required: Vec<String> =
                schema["required"].as_array().into_iter().flatten().filter_map(|r| r.as_str().map(str::to_string)).collect();
            let Some(props) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) else { continue };
            for (name, prop) in props.iter_mut() {
                if required.contains(name) {
                    continue;
                }
                if let Some(target) = prop.get("$ref").cloned() {
                    // OpenAPI 3.0 ignores a $ref's siblings: wrap it.
                    *prop = serde_json::json!({"allOf": [{"$ref": target}]});
                }
                prop["nullable"] = serde_json::Value::Bool(true);
                if let Some(values) = prop.get_mut("enum").and_then(|e| e.as_array_mut()) {
                    values.push(serde_json::Value::Null);
                }
            }
        }
    }
    serde_json::to_string_pretty(&doc).expect("a JSON value serialises")
}

/// `additionalProperties: false` on every object of `schema` (inline ones included) that lists its properties.
fn close_objects(schema: &mut serde_json::Value) {
    match schema {
        serde_json::Value::Object(map) => {
            if map.get("properties").is_some_and(|p| p.as_object().is_some_and(|p| !p.is_empty()))
                && !map.contains_key("additionalProperties")
            {
                map.insert("additionalProperties".into(), serde_json::Value::Bool(false));
            }
            map.values_mut().for_each(close_objects);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(close_objects),
        _ => {}
    }
}

/// The whole application: API routes, the document, the docs page, and the envelope layer around them.
pub fn app(state: Arc<AppState>, trust_forwarded_for: bool) -> impl Endpoint<Output = poem::Response> {
    let bounds = state.limits.bounds;
    let service = openapi_service(state.clone());
    let spec = document(&service);
    let _ = state.agents_guide.set(agents::guide(&spec, &state));
    let queries = Arc::new(query::QueryParameters::from_spec(&spec));
    let docs = service.swagger_ui();
    let spec_for_tools = spec.clone();
    let spec_text = Arc::new(spec);
    let route = operate::routes(Route::new(), state.clone())
        .nest("/", service)
        .nest("/docs", docs)
        .at(
            "/api/v1/openapi.json",
            poem::get(poem::endpoint::make_sync(move |_| {
                poem::Response::builder().content_type("application/json").body(spec_text.as_str().to_string())
            })),
        )
        .with(poem::middleware::CatchPanic::new());
    let body_budget = payload::BodyBudget::new(&bounds);
    let metrics = state.metrics.clone();
    let rest = middleware::Envelope { inner: route.map_to_response(), trust_forwarded_for, bounds, body_budget, queries, metrics };
    // MCP's tools are REST calls made in-process through the same envelope (src/mcp/).
    let rest = Arc::new(rest.boxed());
    let mcp = crate::api::mcp::http::endpoint(rest.clone(), &spec_for_tools, state.public_url.as_deref(), bounds.max_body_bytes);
    Route::new().at("/mcp", mcp).nest("/", rest)
}
