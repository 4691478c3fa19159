//! What an operator watches: every metric levy exposes at `GET /metrics`, in the Prometheus text format.
//!
//! Each application state owns its [`Metrics`] (a registry of its own, not a process-global recorder), so that
//! several instances in one process — the API tests run many at once — count apart, and a test reads exactly the
//! calls it made. [`FAMILIES`] is the one list of names, types, labels and help texts: the registry is built from
//! it, and `docs/operating.md`'s table is checked against it (`tests/api/metrics.rs`).
//!
//! Label values are always from a closed list (operation ids from the OpenAPI document, status classes, modes, error
//! codes, limits, reasons), never a path, a query, an id, a key or a ZIP code: the number of series stays bounded.

use std::time::Duration;

use prometheus::core::Collector;

pub use crate::store::PoolReading;
use prometheus::{Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry};

/// The kind of a metric family, as the exposition's `# TYPE` line says it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

/// One metric family: its name, kind, labels and help text.
#[derive(Clone, Copy, Debug)]
pub struct Family {
    pub name: &'static str,
    pub kind: Kind,
    pub labels: &'static [&'static str],
    pub help: &'static str,
}

const fn family(name: &'static str, kind: Kind, labels: &'static [&'static str], help: &'static str) -> Family {
    Family { name, kind, labels, help }
}

pub const HTTP_REQUESTS: Family = family(
    "levy_http_requests_total",
    Kind::Counter,
    &["operation", "method", "status"],
    "HTTP requests answered, by operation (the OpenAPI operationId; docs, openapi, metrics, livez, readyz, or unmatched for any other path), method and status class (2xx, 4xx, ...).",
);
pub const HTTP_DURATION: Family = family(
    "levy_http_request_duration_seconds",
    Kind::Histogram,
    &["operation", "method", "status"],
    "Time from a request's arrival to its response, by operation, method and status class.",
);
pub const BUILD_INFO: Family =
    family("levy_build_info", Kind::Gauge, &["version"], "Always 1: the service version (the crate's) of this build.");
pub const RULES_INFO: Family = family(
    "levy_rules_info",
    Kind::Gauge,
    &["rules_version", "engine_version", "jurisdictions"],
    "Always 1: the rule set loaded (its version), the engine's version and the number of jurisdictions loaded.",
);
pub const CALCULATIONS: Family = family(
    "levy_calculations_total",
    Kind::Counter,
    &["mode", "outcome"],
    "Calculate calls answered by the handler, by mode (demo, live for an API key, x402, mpp) and outcome (ok, or the error code in lower case, e.g. rate_limited, payment_required).",
);
pub const LEDGER_BATCH_JOBS: Family = family(
    "levy_ledger_batch_jobs",
    Kind::Histogram,
    &[],
    "Jobs (keyed or paid calculate calls, ingest requests) written per ledger batch.",
);
pub const LEDGER_BATCH_COMMIT: Family = family(
    "levy_ledger_batch_commit_seconds",
    Kind::Histogram,
    &[],
    "Time to write one ledger batch, from its first statement to its commit, reruns included.",
);
pub const LEDGER_BATCH_RERUNS: Family = family(
    "levy_ledger_batch_reruns_total",
    Kind::Counter,
    &[],
    "Ledger batch transactions rolled back and run again with what the first run learned (a key past its limit, an external id already recorded).",
);
pub const LIMITER_REFUSALS: Family = family(
    "levy_limiter_refusals_total",
    Kind::Counter,
    &["limit"],
    "Requests refused by a limiter, by limit (burst, monthly, demo, login, signup, verify, network, payment).",
);
pub const PAYMENTS: Family = family(
    "levy_payments_total",
    Kind::Counter,
    &["method", "outcome"],
    "Paid calculate calls (x402, mpp) by outcome: paid (answered: settled now, or replayed under its Idempotency-Key), refused (402), unavailable (503: the facilitator, the processor or the database did not answer), rate_limited (429: too many refused payments from the address), invalid (400) or error (500).",
);
pub const PAYMENT_REFUSALS: Family = family(
    "levy_payment_refusals_total",
    Kind::Counter,
    &["method", "reason"],
    "Refused payments (402), by method and reason: x402's error reasons, MPP's problems, x402_not_configured or mpp_not_configured; any other reason is other.",
);
pub const CHECKOUT_SESSIONS: Family = family(
    "levy_checkout_sessions_total",
    Kind::Counter,
    &["outcome"],
    "Checkout sessions asked of the payment processor, by outcome (created, refused, unavailable).",
);
pub const BILLING_EVENTS: Family = family(
    "levy_billing_events_total",
    Kind::Counter,
    &["outcome"],
    "Billing events received from the payment processor, by outcome (applied, duplicate, ignored, refused: a bad signature or body).",
);
pub const DB_BACKEND: Family =
    family("levy_db_backend_info", Kind::Gauge, &["backend"], "Always 1: the database backend (sqlite, postgres).");
pub const DB_CONNECTIONS: Family = family(
    "levy_db_connections",
    Kind::Gauge,
    &["pool", "state"],
    "Database connections held by a pool (main; writer, SQLite's single writer), by state (in_use, idle), when scraped.",
);
pub const DB_ACQUIRE: Family = family(
    "levy_db_acquire_seconds",
    Kind::Histogram,
    &[],
    "Time a ledger batch waited for its connection from the pool (on SQLite, the writer pool of one).",
);

/// Every family, in the order of the exposition and of `docs/operating.md`.
pub const FAMILIES: &[Family] = &[
    HTTP_REQUESTS,
    HTTP_DURATION,
    BUILD_INFO,
    RULES_INFO,
    CALCULATIONS,
    LEDGER_BATCH_JOBS,
    LEDGER_BATCH_COMMIT,
    LEDGER_BATCH_RERUNS,
    LIMITER_REFUSALS,
    PAYMENTS,
    PAYMENT_REFUSALS,
    CHECKOUT_SESSIONS,
    BILLING_EVENTS,
    DB_BACKEND,
    DB_CONNECTIONS,
    DB_ACQUIRE,
];

/// Latency buckets (seconds): half a millisecond to ten seconds.
const SECONDS: &[f64] = &[0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];
/// Batch sizes, up to the batch's 64 jobs.
const JOBS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

/// The content type of the exposition.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The metrics of one instance.
pub struct Metrics {
    registry: Registry,
    http_requests: IntCounterVec,
    http_duration: HistogramVec,
    calculations: IntCounterVec,
    ledger_batch_jobs: Histogram,
    ledger_batch_commit: Histogram,
    ledger_batch_reruns: IntCounter,
    limiter_refusals: IntCounterVec,
    payments: IntCounterVec,
    payment_refusals: IntCounterVec,
    checkout_sessions: IntCounterVec,
    billing_events: IntCounterVec,
    db_connections: IntGaugeVec,
    db_acquire: Histogram,
}

impl Metrics {
    /// The registry with every family of [`FAMILIES`], and the info gauges set.
    pub fn new(rules_version: &str, engine_version: &str, jurisdictions: usize, backend: &str) -> Metrics {
        let registry = Registry::new();
        // The families are constants with valid names and labels (a unit test builds them): `new` cannot fail.
        let counter = |f: Family| register(&registry, IntCounterVec::new(Opts::new(f.name, f.help), f.labels).expect("a valid family"));
        let histogram = |f: Family, buckets: &[f64]| {
            let opts = HistogramOpts::new(f.name, f.help).buckets(buckets.to_vec());
            register(&registry, HistogramVec::new(opts, f.labels).expect("a valid family"))
        };
        let gauge = |f: Family| register(&registry, IntGaugeVec::new(Opts::new(f.name, f.help), f.labels).expect("a valid family"));
        let http_requests = counter(HTTP_REQUESTS);
        let http_duration = histogram(HTTP_DURATION, SECONDS);
        gauge(BUILD_INFO).with_label_values(&[env!("CARGO_PKG_VERSION")]).set(1);
        gauge(RULES_INFO).with_label_values(&[rules_version, engine_version, &jurisdictions.to_string()]).set(1);
        let calculations = counter(CALCULATIONS);
        let ledger_batch_jobs = histogram(LEDGER_BATCH_JOBS, JOBS).with_label_values::<&str>(&[]);
        let ledger_batch_commit = histogram(LEDGER_BATCH_COMMIT, SECONDS).with_label_values::<&str>(&[]);
        let ledger_batch_reruns = counter(LEDGER_BATCH_RERUNS).with_label_values::<&str>(&[]);
        let limiter_refusals = counter(LIMITER_REFUSALS);
        let payments = counter(PAYMENTS);
        let payment_refusals = counter(PAYMENT_REFUSALS);
        let checkout_sessions = counter(CHECKOUT_SESSIONS);
        let billing_events = counter(BILLING_EVENTS);
        gauge(DB_BACKEND).with_label_values(&[backend]).set(1);
        let db_connections = gauge(DB_CONNECTIONS);
        let db_acquire = histogram(DB_ACQUIRE, SECONDS).with_label_values::<&str>(&[]);
        Metrics {
            registry,
            http_requests,
            http_duration,
            calculations,
            ledger_batch_jobs,
            ledger_batch_commit,
            ledger_batch_reruns,
            limiter_refusals,
            payments,
            payment_refusals,
            checkout_sessions,
            billing_events,
            db_connections,
            db_acquire,
        }
    }

    /// One HTTP request answered. `operation` comes from a closed list (see [`HTTP_REQUESTS`]); the method is
    /// folded to `other` unless it is a standard one.
    pub fn http_request(&self, operation: &str, method: &str, status: u16, elapsed: Duration) {
        let labels = [operation, method_label(method), status_class(status)];
        self.http_requests.with_label_values(&labels).inc();
        self.http_duration.with_label_values(&labels).observe(elapsed.as_secs_f64());
    }

    /// A calculate call answered by its handler.
    pub fn calculation(&self, mode: &str, outcome: &str) {
        self.calculations.with_label_values(&[mode, outcome]).inc();
    }

    /// A ledger batch written: its jobs, the time from its first statement to its commit, and its reruns.
    pub fn ledger_batch(&self, jobs: usize, elapsed: Duration, reruns: u64) {
        self.ledger_batch_jobs.observe(jobs as f64);
        self.ledger_batch_commit.observe(elapsed.as_secs_f64());
        self.ledger_batch_reruns.inc_by(reruns);
    }

    /// The time a ledger batch waited for its connection.
    pub fn db_acquire(&self, elapsed: Duration) {
        self.db_acquire.observe(elapsed.as_secs_f64());
    }

    /// A request refused by `limit`.
    pub fn limiter_refusal(&self, limit: Limit) {
        self.limiter_refusals.with_label_values(&[limit.as_str()]).inc();
    }

    /// A pay-per-call attempt: its outcome, and for a refusal its reason (bounded by [`payment_reason`]).
    pub fn payment(&self, method: &str, outcome: &str, reason: Option<&str>) {
        self.payments.with_label_values(&[method, outcome]).inc();
        if let Some(reason) = reason {
            self.payment_refusals.with_label_values(&[method, payment_reason(reason)]).inc();
        }
    }

    pub fn checkout_session(&self, outcome: &str) {
        self.checkout_sessions.with_label_values(&[outcome]).inc();
    }

    pub fn billing_event(&self, outcome: &str) {
        self.billing_events.with_label_values(&[outcome]).inc();
    }

    /// The exposition, with the pools' connections as `pools` read them now.
    pub fn render(&self, pools: &[PoolReading]) -> String {
        for p in pools {
            self.db_connections.with_label_values(&[p.pool, "in_use"]).set(p.in_use);
            self.db_connections.with_label_values(&[p.pool, "idle"]).set(p.idle);
        }
        let families = self.registry.gather();
        prometheus::TextEncoder::new().encode_to_string(&families).unwrap_or_else(|e| {
            tracing::error!(error = %e, "cannot encode the metrics");
            String::new()
        })
    }
}

/// The reasons a payment refusal is counted under: x402's error reasons (the protocol's list, and the facilitator's
/// `invalidReason` / `errorReason`), MPP's problems, and a protocol not configured. Any other text a facilitator
/// sends is counted as `other`, so that a label never holds what an outside party chose.
pub const PAYMENT_REASONS: &[&str] = &[
    // x402
    "insufficient_funds",
    "invalid_exact_evm_payload_authorization_valid_after",
    "invalid_exact_evm_payload_authorization_valid_before",
    "invalid_exact_evm_payload_authorization_value",
    "invalid_exact_evm_payload_signature",
    "invalid_exact_evm_payload_recipient_mismatch",
    "invalid_network",
    "invalid_payload",
    "invalid_payment_requirements",
    "invalid_scheme",
    "unsupported_scheme",
    "invalid_x402_version",
    "invalid_transaction_state",
    "unexpected_verify_error",
    "unexpected_settle_error",
    "x402_not_configured",
    // MPP
    "invalid-challenge",
    "invalid-payload",
    "malformed-credential",
    "payment-action-required",
    "payment-expired",
    "payment-insufficient",
    "verification-failed",
    "mpp_not_configured",
];

/// A refusal's reason as a label: itself if [`PAYMENT_REASONS`] lists it, else `other`.
pub fn payment_reason(reason: &str) -> &'static str {
    PAYMENT_REASONS.iter().find(|r| **r == reason).copied().unwrap_or("other")
}

/// The limits a request can be refused by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Burst,
    Monthly,
    Demo,
    Login,
    Signup,
    Verify,
    Network,
    Payment,
}

impl Limit {
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::Burst => "burst",
            Limit::Monthly => "monthly",
            Limit::Demo => "demo",
            Limit::Login => "login",
            Limit::Signup => "signup",
            Limit::Verify => "verify",
            Limit::Network => "network",
            Limit::Payment => "payment",
        }
    }
}

fn register<C: Collector + Clone + 'static>(registry: &Registry, collector: C) -> C {
    // Names are unique in FAMILIES (a unit test says so), so registering cannot collide.
    if let Err(e) = registry.register(Box::new(collector.clone())) {
        tracing::error!(error = %e, "cannot register a metric");
    }
    collector
}

fn method_label(method: &str) -> &'static str {
    match method {
        "GET" => "GET",
        "POST" => "POST",
        "PUT" => "PUT",
        "PATCH" => "PATCH",
        "DELETE" => "DELETE",
        "HEAD" => "HEAD",
        "OPTIONS" => "OPTIONS",
        _ => "other",
    }
}

fn status_class(status: u16) -> &'static str {
    match status / 100 {
        1 => "1xx",
        2 => "2xx",
        3 => "3xx",
        4 => "4xx",
        _ => "5xx",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_prometheus_names() {
        let mut names: Vec<&str> = FAMILIES.iter().map(|f| f.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), FAMILIES.len());
        assert!(FAMILIES.iter().all(|f| f.name.starts_with("levy_") && f.name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')));
    }

    #[test]
    fn the_exposition_lists_what_was_counted() {
        let m = Metrics::new("2026.11", "1.0", 51, "sqlite");
        m.http_request("calculate", "POST", 200, Duration::from_millis(3));
        m.http_request("calculate", "BREW", 503, Duration::from_millis(3));
        let text = m.render(&[PoolReading { pool: "main", in_use: 1, idle: 2 }]);
        assert!(text.contains("levy_http_requests_total{method=\"POST\",operation=\"calculate\",status=\"2xx\"} 1"), "{text}");
        assert!(text.contains("levy_http_requests_total{method=\"other\",operation=\"calculate\",status=\"5xx\"} 1"), "{text}");
        assert!(text.contains("levy_db_connections{pool=\"main\",state=\"idle\"} 2"), "{text}");
        assert!(text.contains("levy_rules_info{engine_version=\"1.0\",jurisdictions=\"51\",rules_version=\"2026.11\"} 1"), "{text}");
    }
}
