//! GET /api/v1/pricing, the plans file it publishes (`rules/plans.yaml`), and the limiter reading the same file.

use std::path::Path;

use levy::config::{Limits, X402};
use levy::plans::Plans;
use levy::rules::diag::SourceMap;
use serde_json::json;

use super::harness::{num, Backend, TestApp};
use crate::on_both;

/// Runs `$name(backend)` on SQLite, and on PostgreSQL when TEST_DATABASE_URL is set (tests that build their own app).
macro_rules! on_backends {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                use super::super::harness::Backend;

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$name(Backend::Sqlite).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if std::env::var("TEST_DATABASE_URL").is_err() {
                        eprintln!("TEST_DATABASE_URL not set: PostgreSQL run skipped");
                        return;
                    }
                    super::$name(Backend::Postgres).await;
                }
            }
        )+
    };
}

fn shipped() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("rules/plans.yaml")).unwrap()
}

/// A rules directory holding only `plans.yaml` with `text`.
fn plans_dir(text: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plans.yaml"), text).unwrap();
    dir
}

async fn pricing_has_the_spec_fields_and_the_spec_figures(app: TestApp) {
    let r = app.get("/api/v1/pricing", None).await;
    assert_eq!(r.status, 200, "{}", r.text);
    let v = &r.json;
    // PricingResponse, field for field (interface spec, Resources: Pricing).
    let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    keys.sort();
    assert_eq!(keys, ["billing_provider", "currency", "docs", "pay_per_call", "schema_version", "tiers", "updated_at"]);
    assert_eq!((v["currency"].as_str(), v["billing_provider"].as_str()), (Some("USD"), Some("stripe")));
    // The spec's Limits table: free 1,500 hard cutoff; starter 25 USD 10,000 (metered at 0.01, see plans.yaml);
    // growth 99 USD 100,000 at 0.01; pro 199 USD 1,000,000 at 0.005.
    let tiers: Vec<_> = v["tiers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_string(),
                t["price_usd_monthly"].as_f64(),
                t["monthly_calls_included"].as_i64(),
                t["overage_policy"].as_str().unwrap().to_string(),
                t["overage_usd_per_call"].as_f64(),
                t["features"].as_array().unwrap().last().unwrap().as_str().unwrap().to_string(),
            )
        })
        .collect();
    // The optimization-report allowances: free 1, starter 5, growth 25, pro 100 (plans.yaml).
    let expected = [
        ("free", Some(0.0), Some(1500), "hard_cutoff", None, "1 optimization report per month"),
        ("starter", Some(25.0), Some(10_000), "meter", Some(0.01), "5 optimization reports per month"),
        ("growth", Some(99.0), Some(100_000), "meter", Some(0.01), "25 optimization reports per month"),
        ("pro", Some(199.0), Some(1_000_000), "meter", Some(0.005), "100 optimization reports per month"),
    ];
    assert_eq!(tiers.len(), expected.len());
    for (got, want) in tiers.iter().zip(expected) {
        assert_eq!((got.0.as_str(), got.1, got.2, got.3.as_str(), got.4, got.5.as_str()), want);
    }
    // The plan lookup the limiter and the optimization report use holds the same figures.
    let reports: Vec<i64> =
        ["free", "starter", "growth", "pro"].iter().map(|id| app.state.plans.plan(id).optimization_reports_per_month).collect();
    assert_eq!(reports, [1, 5, 25, 100]);
    assert_eq!(app.state.plans.plan("no-such-plan").id, "free", "an unknown plan id is held to the free plan");
    for t in v["tiers"].as_array().unwrap() {
        let mut keys: Vec<&str> = t.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort();
        // No tier is custom, so none has `contact`.
        assert_eq!(
            keys,
            [
                "features",
                "id",
                "monthly_calls_included",
                "name",
                "overage_policy",
                "overage_usd_per_call",
                "price_usd_monthly",
                "stripe_price_id"
            ]
        );
        assert_eq!(t["stripe_price_id"], json!(null), "no price id configured in the shipped file");
        assert!(!t["features"].as_array().unwrap().is_empty());
    }
    // x402: 0.005 USD per call (spec, Limits); network, payee and facilitator are the settings' defaults.
    let p = &v["pay_per_call"];
    assert_eq!(p["id"], json!("x402"));
    assert_eq!(num(&p["price_usd_per_call"]), 0.005);
    assert_eq!(p["network"], json!("base"));
    assert_eq!(p["payee"], json!(null));
    assert_eq!(p["facilitator"], json!(levy::config::DEFAULT_X402_FACILITATOR));
    assert!(p["notes"].as_str().unwrap().contains("Taken where the operator has configured a payee (LEVY_X402_PAYEE)"));
    assert_eq!(v["updated_at"], json!("2026-11-26"));

    // The free plan's figure reaches the signup block and the demo's upgrade hint from the same file.
    let r = app.post("/api/v1/calculate", None, &json!({"amount": 10, "buyer_state": "TX", "counterparty_id": "c"})).await;
    assert_eq!(r.json["upgrade"]["free_tier"], json!("1,500 calls per month"));
}

async fn x402_settings_reach_pricing(backend: Backend) {
    let x402 = X402 {
        network: "base-sepolia".into(),
        payee: Some("0x00000000000000000000000000000000000000aa".into()),
        facilitator: "https://x402.org/facilitator".into(),
    };
    let dir = plans_dir(&shipped());
    let plans = Plans::configured(Some(dir.path()), &x402).unwrap();
    let app = TestApp::start_with_plans(backend, Limits::default(), plans).await.unwrap();
    let p = app.get("/api/v1/pricing", None).await.json["pay_per_call"].clone();
    assert_eq!(
        (p["network"].as_str(), p["payee"].as_str(), p["facilitator"].as_str()),
        (Some("base-sepolia"), Some("0x00000000000000000000000000000000000000aa"), Some("https://x402.org/facilitator"))
    );
}

/// The limiter reads the plans file: with the free plan's allowance changed from 1500 to 3 in a copy, the fourth
/// call of the month is refused, and /pricing and the guide say 3.
async fn allowance_follows_the_plans_file(backend: Backend) {
    let text = shipped();
    assert_eq!(text.matches("monthly_calls_included: 1500").count(), 1);
    let dir = plans_dir(&text.replace("monthly_calls_included: 1500", "monthly_calls_included: 3"));
    let plans = Plans::configured(Some(dir.path()), &X402::default()).unwrap();
    let app = TestApp::start_with_plans(backend, Limits::default(), plans).await.unwrap();
    let a = app.signup("small@example.com").await;
    let body = json!({"amount": 10, "buyer_state": "TX", "counterparty_id": "c"});
    for i in 1..=3 {
        let r = app.post("/api/v1/calculate", Some(&a.key), &body).await;
        assert_eq!(r.status, 200, "call {i}: {}", r.text);
    }
    let r = app.post("/api/v1/calculate", Some(&a.key), &body).await;
    assert_eq!((r.status, r.code()), (429, "RATE_LIMITED"), "{}", r.text);
    assert_eq!(r.json["error"], json!("Monthly limit reached: the Free plan includes 3 calls per month; upgrade to continue"));
    assert_eq!(r.json["agent_guide"], json!("/api/v1/agents"));
    assert!(r.header("retry-after").is_none());
    assert_eq!(app.ledger_rows(&a.entity_id).await, 3);
    // Ingest counts against the same allowance.
    let r = app.post("/api/v1/transactions/ingest", Some(&a.key), &json!({"amount": 5, "buyer_state": "TX", "counterparty_id": "c"})).await;
    assert_eq!(r.status, 429, "{}", r.text);
    assert_eq!(app.get("/api/v1/pricing", None).await.json["tiers"][0]["monthly_calls_included"], json!(3));
    let guide = app.get("/api/v1/agents", None).await.text;
    assert!(guide.contains("  Free (free): 0 USD per month; 3 calls per month;"), "{guide}");
}

/// The shipped file, with the same account and calls: the fourth call is served.
async fn shipped_allowance_serves_the_fourth_call(app: TestApp) {
    let a = app.signup("big@example.com").await;
    for i in 1..=4 {
        let r = app.post("/api/v1/calculate", Some(&a.key), &json!({"amount": 10, "buyer_state": "TX", "counterparty_id": "c"})).await;
        assert_eq!(r.status, 200, "call {i}: {}", r.text);
    }
}

fn diagnostics(text: &str) -> String {
    let dir = plans_dir(text);
    let mut sources = SourceMap::default();
    let diags = Plans::load(dir.path(), &X402::default(), &mut sources).unwrap_err();
    diags.iter().map(|d| sources.render(d)).collect::<Vec<_>>().join("").replace(&*dir.path().to_string_lossy(), "<dir>")
}

#[test]
fn plans_file_errors_are_located_diagnostics() {
    let text = shipped();
    // An unknown policy: the line, a caret under the value, and the likely meaning.
    let out = diagnostics(&text.replacen("overage_policy: meter", "overage_policy: metered", 1));
    let line = text.lines().position(|l| l.contains("overage_policy: meter")).unwrap() + 1;
    assert!(out.contains("error[R704]: unknown overage_policy `metered`"), "{out}");
    assert!(out.contains(&format!("--> <dir>/plans.yaml:{line}:21")), "{out}");
    assert!(out.contains("^^^^^^^"), "{out}");
    assert!(out.contains("did you mean `meter`?"), "{out}");

    // A metered tier without a price; a hard cutoff with one; a misspelt key; no free tier; a second pro.
    let out = diagnostics(&text.replacen("overage_usd_per_call: 0.01", "overage_usd_per_call: null", 1));
    assert!(out.contains("error[R704]: a metered tier needs a positive `overage_usd_per_call`"), "{out}");
    let out = diagnostics(&text.replacen("overage_usd_per_call: null", "overage_usd_per_call: 0.02", 1));
    assert!(out.contains("error[R704]: a hard_cutoff tier bills no overage"), "{out}");
    let out = diagnostics(&text.replacen("monthly_calls_included: 1500", "monthly_call_included: 1500", 1));
    assert!(out.contains("error[R103]: unknown key `monthly_call_included` in a tier"), "{out}");
    assert!(out.contains("did you mean `monthly_calls_included`?"), "{out}");
    let out = diagnostics(&text.replacen("monthly_calls_included: 1500", "monthly_calls_included: 1,500", 1));
    assert!(out.contains("error[R701]: `monthly_calls_included` must be a whole number of at least 0"), "{out}");
    let out = diagnostics(&text.replacen("  - id: free", "  - id: gratis", 1));
    assert!(out.contains("error[R703]: no tier `free`"), "{out}");
    let out = diagnostics(&text.replacen("  - id: growth", "  - id: pro", 1));
    assert!(out.contains("error[R702]: tier `pro` is listed twice"), "{out}");
    let out = diagnostics(&text.replacen("billing_provider: stripe", "billing_provider: paddle", 1));
    assert!(out.contains("error[R705]: `billing_provider` must be `stripe`, found `paddle`"), "{out}");
    // MPP is charged in whole cents (Stripe's charge method): half a cent is refused where the file is read.
    let out = diagnostics(&text.replacen("price_usd_per_call: 0.50", "price_usd_per_call: 0.005", 1));
    assert!(out.contains("error[R706]: the MPP price must be a whole number of cents above 0, found 0.005"), "{out}");

    // The shipped file and the compiled-in one load clean.
    assert!(Plans::configured(Some(plans_dir(&text).path()), &X402::default()).is_ok());
    assert!(Plans::compiled_in(&X402::default(), &mut SourceMap::default()).is_ok());
}

#[test]
fn rules_check_covers_the_plans_file() {
    let rules = Path::new(env!("CARGO_MANIFEST_DIR")).join("rules");
    let copy = tempfile::tempdir().unwrap();
    copy_dir(&rules, copy.path());
    assert_eq!(levy::cli::check(copy.path()), 0);
    let plans = copy.path().join("plans.yaml");
    std::fs::write(&plans, shipped().replacen("overage_policy: meter", "overage_policy: metered", 1)).unwrap();
    assert_eq!(levy::cli::check(copy.path()), 1, "a plans error fails the check");
    std::fs::remove_file(&plans).unwrap();
    assert_eq!(levy::cli::check(copy.path()), 1, "a rules directory needs its plans file");
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_dir(&path, &target);
        } else {
            std::fs::copy(&path, &target).unwrap();
        }
    }
}

on_both!(pricing_has_the_spec_fields_and_the_spec_figures, shipped_allowance_serves_the_fourth_call);
on_backends!(x402_settings_reach_pricing, allowance_follows_the_plans_file);
