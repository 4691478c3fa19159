//! Settings, from flags and environment: where to listen, which database, where the rules and secrets are,
//! the limiter values (the spec's, overridable only for load benchmarks) and the bounds that protect the
//! service from abusive clients (body size, read and request time, login and signup rates).

use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Debug)]
pub struct Limits {
    /// Keyed calculate calls per key per 60-second window (spec: 120).
    pub burst_per_minute: i64,
    /// Keyless demo calls per IP per minute (spec: 30).
    pub demo_per_minute: i64,
    /// Keyless demo calls per IP per UTC day (spec: 50).
    pub demo_per_day: i64,
    /// Keyless POST /verify calls per IP per minute.
    pub verify_per_minute: i64,
    /// Keyless POST /verify calls per IP per UTC day.
    pub verify_per_day: i64,
    /// Refused pay-per-call attempts (x402 or MPP) per IP per minute.
    pub payment_failures_per_address: i64,
    /// Keyless reads of the network directory and feed per IP per minute, and per UTC day.
    pub network_per_minute: i64,
    pub network_per_day: i64,
    /// Failed logins per account (by email, known or not) in one login window.
    pub login_failures_per_account: i64,
    /// Failed logins per client address in one login window (password spraying across accounts).
    pub login_failures_per_address: i64,
    /// The login window, in seconds.
    pub login_window_secs: i64,
    /// Signups per client address per hour.
    pub signups_per_hour: i64,
    /// Signups per client address per UTC day.
    pub signups_per_day: i64,
    /// Request size and time bounds.
    pub bounds: Bounds,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            burst_per_minute: 120,
            demo_per_minute: 30,
            demo_per_day: 50,
            verify_per_minute: 30,
            verify_per_day: 300,
            payment_failures_per_address: 30,
            network_per_minute: 60,
            network_per_day: 2000,
            login_failures_per_account: 10,
            login_failures_per_address: 30,
            login_window_secs: 15 * 60,
            signups_per_hour: 5,
            signups_per_day: 20,
            bounds: Bounds::default(),
        }
    }
}

/// A whole number from the environment, or `default` when unset or not a number.
fn env_number<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(default)
}

impl Limits {
    /// The defaults, except where the LEVY_* variables of docs/operating.md's settings table say otherwise.
    pub fn from_env() -> Self {
        let d = Limits::default();
        Limits {
            burst_per_minute: env_number("LEVY_BURST_LIMIT", d.burst_per_minute),
            demo_per_minute: env_number("LEVY_DEMO_MINUTE_LIMIT", d.demo_per_minute),
            demo_per_day: env_number("LEVY_DEMO_DAY_LIMIT", d.demo_per_day),
            verify_per_minute: env_number("LEVY_VERIFY_MINUTE_LIMIT", d.verify_per_minute),
            verify_per_day: env_number("LEVY_VERIFY_DAY_LIMIT", d.verify_per_day),
            payment_failures_per_address: env_number("LEVY_PAYMENT_FAILURE_LIMIT", d.payment_failures_per_address),
            network_per_minute: env_number("LEVY_NETWORK_MINUTE_LIMIT", d.network_per_minute),
            network_per_day: env_number("LEVY_NETWORK_DAY_LIMIT", d.network_per_day),
            login_failures_per_account: env_number("LEVY_LOGIN_ACCOUNT_LIMIT", d.login_failures_per_account),
            login_failures_per_address: env_number("LEVY_LOGIN_ADDRESS_LIMIT", d.login_failures_per_address),
            login_window_secs: env_number("LEVY_LOGIN_WINDOW_SECS", d.login_window_secs),
            signups_per_hour: env_number("LEVY_SIGNUP_HOUR_LIMIT", d.signups_per_hour),
            signups_per_day: env_number("LEVY_SIGNUP_DAY_LIMIT", d.signups_per_day),
            bounds: Bounds::from_env(),
        }
    }
}

/// How much a client may send, and how long it may take: enforced while the request is read, so an
/// oversized or slow request costs at most these bounds.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// The largest request body read; a larger one is refused without being read past this size.
    pub max_body_bytes: usize,
    /// Body bytes held at once across all requests, past each body's first 16 KiB (see `api::payload::BodyBudget`).
    pub body_budget_bytes: usize,
    /// Time allowed for a request's headers, from the first byte of the request (HTTP/1).
    pub header_timeout: Duration,
    /// Time allowed for a request's body, from when the handler starts reading it.
    pub body_timeout: Duration,
    /// Time allowed for a whole request, from its headers to its response.
    pub request_timeout: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_body_bytes: 1 << 20,
            body_budget_bytes: 8 << 20,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
        }
    }
}

impl Bounds {
    /// The defaults, except where LEVY_MAX_BODY_BYTES, LEVY_BODY_BUDGET_BYTES and the LEVY_*_TIMEOUT_SECS
    /// variables say otherwise.
    pub fn from_env() -> Self {
        let d = Bounds::default();
        let secs = |name: &str, default: Duration| Duration::from_secs(env_number(name, default.as_secs()).max(1));
        Bounds {
            max_body_bytes: env_number("LEVY_MAX_BODY_BYTES", d.max_body_bytes),
            body_budget_bytes: env_number("LEVY_BODY_BUDGET_BYTES", d.body_budget_bytes),
            header_timeout: secs("LEVY_HEADER_TIMEOUT_SECS", d.header_timeout),
            body_timeout: secs("LEVY_BODY_TIMEOUT_SECS", d.body_timeout),
            request_timeout: secs("LEVY_REQUEST_TIMEOUT_SECS", d.request_timeout),
        }
    }
}

/// Where pay-per-call (x402) payments go: published by GET /api/v1/pricing with the price from `rules/plans.yaml`.
#[derive(Clone, Debug, PartialEq)]
pub struct X402 {
    /// The chain payments settle on (LEVY_X402_NETWORK, default `base`, Base mainnet).
    pub network: String,
    /// The address paid (LEVY_X402_PAYEE); `None` until the operator configures one.
    pub payee: Option<String>,
    /// The facilitator that verifies and settles payments (LEVY_X402_FACILITATOR). The default is PayAI's public
    /// facilitator, open without an API key, which lists Base mainnet among the networks it settles (its
    /// `GET /supported`, checked 2026-10-19); the x402 project's own facilitator (x402.org) serves testnets only.
    pub facilitator: String,
}

/// The default x402 facilitator (see [`X402::facilitator`]).
pub const DEFAULT_X402_FACILITATOR: &str = "https://facilitator.payai.network";

impl Default for X402 {
    fn default() -> Self {
        X402 { network: "base".into(), payee: None, facilitator: DEFAULT_X402_FACILITATOR.into() }
    }
}

impl X402 {
    /// The defaults, except where LEVY_X402_NETWORK, LEVY_X402_PAYEE and LEVY_X402_FACILITATOR say otherwise (an
    /// empty value counts as unset).
    pub fn from_env() -> Self {
        let d = X402::default();
        let var = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        X402 {
            network: var("LEVY_X402_NETWORK").unwrap_or(d.network),
            payee: var("LEVY_X402_PAYEE").or(d.payee),
            facilitator: var("LEVY_X402_FACILITATOR").unwrap_or(d.facilitator),
        }
    }
}

/// Subscriptions through the payment processor (Stripe): checkout sessions and the billing events that change an
/// account's plans. Each part is off until its settings are given; `levy accounts set-plan` needs none of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Billing {
    /// The processor's API, `https://api.stripe.com` unless LEVY_STRIPE_API_BASE says otherwise.
    pub api_base: String,
    /// The secret API key (LEVY_STRIPE_SECRET_KEY); `None`: checkout is off.
    pub secret_key: Option<String>,
    /// The webhook endpoint's signing secret (LEVY_STRIPE_WEBHOOK_SECRET); `None`: billing events are refused.
    pub webhook_secret: Option<String>,
    /// The processor's price of each product and tier (LEVY_STRIPE_PRICES), as `product:tier=price_id` pairs
    /// separated by commas, e.g. `tax:starter=price_1Q...,gains:pro=price_1R...`. Checked against the plans file at
    /// start-up (`billing::Prices`).
    pub prices: String,
    /// Where the processor sends the buyer after paying, and after giving up (LEVY_CHECKOUT_SUCCESS_URL,
    /// LEVY_CHECKOUT_CANCEL_URL); required with a secret key.
    pub success_url: Option<String>,
    pub cancel_url: Option<String>,
}

/// The processor's API when LEVY_STRIPE_API_BASE is unset.
pub const DEFAULT_STRIPE_API_BASE: &str = "https://api.stripe.com";

impl Billing {
    /// The LEVY_STRIPE_* and LEVY_CHECKOUT_* settings (an empty value counts as unset).
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        Billing {
            api_base: var("LEVY_STRIPE_API_BASE").unwrap_or_else(|| DEFAULT_STRIPE_API_BASE.into()),
            secret_key: var("LEVY_STRIPE_SECRET_KEY"),
            webhook_secret: var("LEVY_STRIPE_WEBHOOK_SECRET"),
            prices: var("LEVY_STRIPE_PRICES").unwrap_or_default(),
            success_url: var("LEVY_CHECKOUT_SUCCESS_URL"),
            cancel_url: var("LEVY_CHECKOUT_CANCEL_URL"),
        }
    }
}

/// MPP, the `Payment` HTTP authentication scheme, with its Stripe charge method: taken on calculate once a
/// challenge secret is set, at the plans' pay-per-call price.
#[derive(Clone, Default, PartialEq)]
pub struct Mpp {
    /// The server secret that binds a challenge's id to its parameters by HMAC-SHA256 (LEVY_MPP_SECRET, at least 32
    /// bytes); `None`: MPP is off. Instances that share a database share it, so any of them verifies a challenge.
    pub secret: Option<String>,
    /// The Stripe secret key PaymentIntents are created with (LEVY_MPP_STRIPE_SECRET_KEY).
    pub stripe_secret_key: Option<String>,
    /// The Stripe Business Network profile paid (LEVY_MPP_STRIPE_NETWORK_ID): the challenge's `methodDetails.networkId`.
    pub stripe_network_id: Option<String>,
    /// Where Stripe's API is (LEVY_MPP_STRIPE_API_BASE, default `https://api.stripe.com`).
    pub stripe_api_base: String,
}

impl std::fmt::Debug for Mpp {
    /// Secrets are never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mpp")
            .field("secret", &self.secret.as_ref().map(|_| "(set)"))
            .field("stripe_secret_key", &self.stripe_secret_key.as_ref().map(|_| "(set)"))
            .field("stripe_network_id", &self.stripe_network_id)
            .field("stripe_api_base", &self.stripe_api_base)
            .finish()
    }
}

impl Mpp {
    /// The settings from LEVY_MPP_SECRET, LEVY_MPP_STRIPE_SECRET_KEY, LEVY_MPP_STRIPE_NETWORK_ID and
    /// LEVY_MPP_STRIPE_API_BASE (an empty value counts as unset).
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        Mpp {
            secret: var("LEVY_MPP_SECRET"),
            stripe_secret_key: var("LEVY_MPP_STRIPE_SECRET_KEY"),
            stripe_network_id: var("LEVY_MPP_STRIPE_NETWORK_ID"),
            stripe_api_base: var("LEVY_MPP_STRIPE_API_BASE").unwrap_or_else(|| DEFAULT_STRIPE_API_BASE.into()),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Config {
    /// Address to listen on (LEVY_BIND, default 127.0.0.1:8080).
    pub bind: String,
    /// DATABASE_URL; default: the SQLite file `<data_dir>/levy.db`.
    pub database_url: String,
    /// The rules directory loaded and checked at start (LEVY_RULES); `None`: the rules compiled into the binary.
    pub rules_dir: Option<PathBuf>,
    /// Where the embedded database and the generated data key live (LEVY_DATA_DIR, default `levy-data`).
    pub data_dir: PathBuf,
    /// The EIN encryption key as 64 hex characters (LEVY_DATA_KEY); default: `<data_dir>/data.key`, created on first start.
    pub data_key: Option<String>,
    pub limits: Limits,
    pub x402: X402,
    pub billing: Billing,
    pub mpp: Mpp,
    /// The service's public base URL (LEVY_PUBLIC_URL, e.g. `https://levy.example.com`): the URL a payment names
    /// (x402's `resource`) and MPP's realm. Unset: the request's Host header, over https.
    pub public_url: Option<String>,
    /// Whether per-address limits read the client's address from X-Forwarded-For (LEVY_TRUST_FORWARDED_FOR=1;
    /// only behind a proxy of the operator's that sets it), not the TCP peer's.
    pub trust_forwarded_for: bool,
    pub observability: Observability,
}

/// Who may read `GET /metrics`, and how the logs are written.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observability {
    /// A second listener serving only `/metrics`, for the operator's network (LEVY_METRICS_BIND; unset: none).
    pub metrics_bind: Option<String>,
    /// A bearer token that opens `/metrics` on the public port (LEVY_METRICS_TOKEN; unset: `/metrics` is 404 there).
    pub metrics_token: Option<String>,
    /// One JSON object per log line (LEVY_LOG_FORMAT=json) instead of text.
    pub json_logs: bool,
}

impl Observability {
    pub fn from_env() -> Self {
        let set = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        Observability {
            metrics_bind: set("LEVY_METRICS_BIND"),
            metrics_token: set("LEVY_METRICS_TOKEN"),
            json_logs: set("LEVY_LOG_FORMAT").is_some_and(|v| v.eq_ignore_ascii_case("json")),
        }
    }
}

impl Config {
    pub fn from_env() -> Self {
        let data_dir = PathBuf::from(std::env::var("LEVY_DATA_DIR").unwrap_or_else(|_| "levy-data".into()));
        let database_url = std::env::var("DATABASE_URL").unwrap_or_else(|_| sqlite_url(&data_dir.join("levy.db")));
        Config {
            bind: std::env::var("LEVY_BIND").unwrap_or_else(|_| "127.0.0.1:8080".into()),
            database_url,
            rules_dir: std::env::var_os("LEVY_RULES").map(PathBuf::from),
            data_dir,
            data_key: std::env::var("LEVY_DATA_KEY").ok(),
            limits: Limits::from_env(),
            x402: X402::from_env(),
            billing: Billing::from_env(),
            mpp: Mpp::from_env(),
            public_url: std::env::var("LEVY_PUBLIC_URL").ok().map(|v| v.trim().trim_end_matches('/').to_string()).filter(|v| !v.is_empty()),
            trust_forwarded_for: std::env::var("LEVY_TRUST_FORWARDED_FOR").is_ok_and(|v| v == "1"),
            observability: Observability::from_env(),
        }
    }
}

/// A sqlx SQLite URL that creates the file when missing.
pub fn sqlite_url(path: &std::path::Path) -> String {
    format!("sqlite://{}?mode=rwc", path.display())
}
