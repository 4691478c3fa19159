//! Subscription plans, the pay-per-call option and the billing provider, as loaded from `rules/plans.yaml` (the
//! only place their figures are written). The limiter and the monthly allowance ([`Plans::plan`]), the demo's
//! 402, the agents guide and GET /api/v1/pricing read the loaded [`Plans`].
//!
//! The file is read like a rule file: every problem is a located diagnostic (file, line, column, caret), and
//! `levy rules check` reports them with the rules'.

use std::path::Path;
use std::sync::Arc;

use chrono::NaiveDate;
use rust_decimal::Decimal;

use crate::config::X402;
use crate::rules::diag::{did_you_mean, Diagnostic, SourceMap};
use crate::rules::read::read_yaml;
use crate::rules::read::{self, seq, string, Diags, Fields};
use crate::rules::yaml::{self, Node};

/// The plans file, relative to a rules directory.
pub const FILE: &str = "plans.yaml";

/// The plan of an account that has none recorded, and the one every other plan falls back to.
pub const DEFAULT_PLAN: &str = "free";

/// What happens past a plan's monthly allowance (the spec's overage_policy).
#[derive(Clone, Debug, PartialEq)]
pub enum Overage {
    /// Refuse further calls until the month ends (429 "Monthly limit reached", no Retry-After).
    HardCutoff,
    /// Serve the call and record it as metered usage at this price per call (USD).
    Meter(Decimal),
    /// Terms agreed with the customer: calls past the allowance are served and recorded as overage, priced by
    /// contract (`contact` says whom to ask).
    Custom,
}

impl Overage {
    /// The spec's overage_policy value.
    pub fn policy(&self) -> &'static str {
        match self {
            Overage::HardCutoff => "hard_cutoff",
            Overage::Meter(_) => "meter",
            Overage::Custom => "custom",
        }
    }

    /// The price of a call past the allowance, when the plan publishes one.
    pub fn price(&self) -> Option<Decimal> {
        match self {
            Overage::Meter(p) => Some(*p),
            _ => None,
        }
    }
}

/// The overage policies a plans file may name.
pub const OVERAGE_POLICIES: [&str; 3] = ["hard_cutoff", "meter", "custom"];

#[derive(Clone, Debug)]
pub struct Plan {
    pub id: String,
    pub name: String,
    /// USD per month; `None` for a price agreed per customer.
    pub price_usd_monthly: Option<Decimal>,
    /// Calls per calendar month (UTC) before the overage policy applies; `None`: no allowance (unlimited).
    pub monthly_calls: Option<i64>,
    pub overage: Overage,
    /// Optimization reports per calendar month (UTC); past it, 429 TIER_LIMIT_REACHED.
    pub optimization_reports_per_month: i64,
    pub features: Vec<String>,
    /// Whom to contact (custom plans).
    pub contact: Option<String>,
}

impl Plan {
    /// "5 optimization reports per month".
    pub fn reports_allowance(&self) -> String {
        let n = self.optimization_reports_per_month;
        format!("{n} optimization report{} per month", if n == 1 { "" } else { "s" })
    }

    /// Whether the plan allows the `calls`-th call of a month: `Ok(false)` within the allowance, `Ok(true)` past
    /// it but served (overage to record), `Err(message)` refused ("Monthly limit reached").
    pub fn past_allowance(&self, calls: i64) -> Result<bool, String> {
        let Some(included) = self.monthly_calls else { return Ok(false) };
        if calls <= included {
            return Ok(false);
        }
        match self.overage {
            Overage::HardCutoff => Err(format!(
                "Monthly limit reached: the {} plan includes {} calls per month; upgrade to continue",
                self.name,
                thousands(included)
            )),
            Overage::Meter(_) | Overage::Custom => Ok(true),
        }
    }
}

/// Paying for each call instead of holding a key.
#[derive(Clone, Debug)]
pub struct PayPerCall {
    pub id: String,
    pub name: String,
    pub price_usd_per_call: Decimal,
    /// From the service's settings (LEVY_X402_*), not the file.
    pub network: String,
    pub payee: Option<String>,
    pub facilitator: String,
    pub notes: String,
}

/// Paying for each call with MPP (the `Payment` HTTP authentication scheme, Stripe's charge method).
#[derive(Clone, Debug)]
pub struct MppPrice {
    /// USD per call: a whole number of cents (the charge method charges cents).
    pub price_usd_per_call: Decimal,
    pub notes: String,
}

/// Everything `rules/plans.yaml` says, checked.
#[derive(Clone, Debug)]
pub struct Plans {
    pub schema_version: String,
    pub updated_at: NaiveDate,
    pub cite: String,
    pub currency: String,
    pub billing_provider: String,
    pub docs: String,
    /// In the file's order; holds [`DEFAULT_PLAN`].
    pub tiers: Vec<Plan>,
    pub pay_per_call: PayPerCall,
    pub mpp: MppPrice,
}

impl Plans {
    /// The plan of that id; an unknown id is the default plan's (an account's plan column holds ids of this file).
    pub fn plan(&self, id: &str) -> &Plan {
        self.tiers.iter().find(|p| p.id == id).or_else(|| self.tiers.iter().find(|p| p.id == DEFAULT_PLAN)).unwrap_or(&self.tiers[0])
    }

    /// The default (free) plan's allowance in words: "1,500 calls per month".
    pub fn free_allowance(&self) -> String {
        self.plan(DEFAULT_PLAN).monthly_calls.map_or_else(|| "unlimited calls".to_string(), |n| format!("{} calls per month", thousands(n)))
    }

    /// The plans of `<dir>/plans.yaml`, or every diagnostic found (their text recorded in `sources`).
    pub fn load(dir: &Path, x402: &X402, sources: &mut SourceMap) -> Result<Plans, Diags> {
        let mut d: Diags = vec![];
        let plans = read_yaml(&dir.join(FILE), sources, &mut d).and_then(|n| plans(&n, x402, &mut d));
        finish(plans, d)
    }

    /// The plans compiled into the binary (build.rs embeds `rules/`).
    pub fn compiled_in(x402: &X402, sources: &mut SourceMap) -> Result<Plans, Diags> {
        let name: Arc<str> = Arc::from(format!("rules/{FILE}").as_str());
        let Some((_, bytes)) = crate::rules::embedded::FILES.iter().find(|(rel, _)| *rel == FILE) else {
            return Err(vec![Diagnostic::error("R001", None, format!("no {FILE} was compiled into this binary"))]);
        };
        let text = String::from_utf8_lossy(bytes);
        sources.add(&name, &text);
        let mut d: Diags = vec![];
        let plans = match yaml::parse(&name, &text) {
            Ok((n, mut warnings)) => {
                d.append(&mut warnings);
                plans(&n, x402, &mut d)
            }
            Err(mut e) => {
                d.append(&mut e);
                None
            }
        };
        finish(plans, d)
    }

    /// The plans the service runs: `<dir>/plans.yaml` when a rules directory is named, else the compiled-in file;
    /// `Err` after printing every diagnostic.
    pub fn configured(dir: Option<&Path>, x402: &X402) -> Result<Plans, String> {
        let mut sources = SourceMap::default();
        let loaded = match dir {
            Some(dir) => Plans::load(dir, x402, &mut sources),
            None => Plans::compiled_in(x402, &mut sources),
        };
        loaded.map_err(|diags| {
            crate::rules::load::print_diagnostics(&diags, &sources);
            let at = dir.map_or_else(|| format!("the compiled-in rules/{FILE}"), |d| d.join(FILE).display().to_string());
            format!("{at} has errors (listed above); fix them and start again")
        })
    }
}

fn finish(plans: Option<Plans>, d: Diags) -> Result<Plans, Diags> {
    match plans {
        Some(p) if !d.iter().any(|x| x.severity == crate::rules::diag::Severity::Error) => Ok(p),
        _ => Err(d),
    }
}

/// 1500 → "1,500".
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        out.insert(0, '-');
    }
    out
}

const TOP: &[&str] = &["schema_version", "updated_at", "cite", "currency", "billing_provider", "docs", "tiers", "pay_per_call", "mpp"];
const TIER: &[&str] = &[
    "id",
    "name",
    "price_usd_monthly",
    "monthly_calls_included",
    "overage_policy",
    "overage_usd_per_call",
    "optimization_reports_per_month",
    "features",
    "contact",
];
const PAY_PER_CALL: &[&str] = &["id", "name", "price_usd_per_call", "notes"];

/// The one value a field may hold (`currency: USD`).
fn fixed(f: &Fields, key: &str, value: &str, d: &mut Diags) -> Option<String> {
    let got = f.req_str(key, FILE, d)?;
    if got != value {
        let span = f.get(key).map(|n| n.text_span());
        d.push(Diagnostic::error("R705", span.as_ref(), format!("`{key}` must be `{value}`, found `{got}`")));
        return None;
    }
    Some(got)
}

/// A whole number of at least `min`, or `null` when `nullable`.
fn count(f: &Fields, key: &str, min: i64, nullable: bool, d: &mut Diags) -> Option<Option<i64>> {
    let Some(n) = f.get(key) else {
        if nullable && f.has(key) {
            return Some(None);
        }
        f.req(key, "a tier", d);
        return None;
    };
    match n.as_scalar().and_then(|t| t.parse::<i64>().ok()) {
        Some(v) if v >= min => Some(Some(v)),
        _ => {
            d.push(
                Diagnostic::error("R701", Some(&n.span), format!("`{key}` must be a whole number of at least {min}"))
                    .with_help("write digits only, e.g. 1500"),
            );
            None
        }
    }
}

/// A non-negative amount of USD, or `null` when `nullable` (absent counts as null).
fn usd(f: &Fields, key: &str, what: &str, nullable: bool, d: &mut Diags) -> Option<Option<Decimal>> {
    match f.get(key) {
        Some(n) => read::money(n, d).map(Some),
        None if nullable => Some(None),
        None => {
            f.req(key, what, d);
            None
        }
    }
}

fn plans(node: &Node, x402: &X402, d: &mut Diags) -> Option<Plans> {
    let f = Fields::of(node, FILE, TOP, d)?;
    let schema_version = f.req_str("schema_version", FILE, d);
    let updated_at = f.req_date("updated_at", FILE, d);
    let cite = f.req_str("cite", FILE, d);
    if cite.as_deref().is_some_and(|c| c.trim().is_empty()) {
        d.push(Diagnostic::error("R502", Some(&node.span), format!("{FILE} has an empty citation")));
    }
    let currency = fixed(&f, "currency", "USD", d);
    let billing_provider = fixed(&f, "billing_provider", "stripe", d);
    let docs = f.req_str("docs", FILE, d);
    let mut tiers = vec![];
    if let Some(list) = f.req("tiers", FILE, d) {
        for item in seq(list, "`tiers`", d) {
            if let Some(t) = tier(item, d) {
                if let Some(prev) = tiers.iter().find(|p: &&(Plan, Node)| p.0.id == t.id) {
                    d.push(
                        Diagnostic::error("R702", Some(&item.span), format!("tier `{}` is listed twice", t.id))
                            .with_help(format!("the first is at line {}", prev.1.span.line)),
                    );
                } else {
                    tiers.push((t, item.clone()));
                }
            }
        }
        if !tiers.iter().any(|(p, _)| p.id == DEFAULT_PLAN) {
            d.push(
                Diagnostic::error("R703", Some(&list.span), format!("no tier `{DEFAULT_PLAN}`"))
                    .with_help("accounts start on the free plan; an account whose plan is not listed is held to it"),
            );
        }
    }
    let pay_per_call = f.req("pay_per_call", FILE, d).and_then(|n| pay_per_call(n, x402, d));
    let mpp = f.req("mpp", FILE, d).and_then(|n| mpp_price(n, d));
    Some(Plans {
        schema_version: schema_version?,
        updated_at: updated_at?,
        cite: cite?,
        currency: currency?,
        billing_provider: billing_provider?,
        docs: docs?,
        tiers: tiers.into_iter().map(|(p, _)| p).collect(),
        pay_per_call: pay_per_call?,
        mpp: mpp?,
    })
}

fn tier(node: &Node, d: &mut Diags) -> Option<Plan> {
    let f = Fields::of(node, "a tier", TIER, d)?;
    let id = f.req_str("id", "a tier", d);
    if let (Some(id), Some(n)) = (&id, f.get("id")) {
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
            d.push(Diagnostic::error("R112", Some(&n.text_span()), format!("tier id `{id}` must be lowercase letters, digits and `_`")));
        }
    }
    let name = f.req_str("name", "a tier", d);
    let price = usd(&f, "price_usd_monthly", "a tier", true, d);
    let calls = count(&f, "monthly_calls_included", 0, true, d);
    let reports = count(&f, "optimization_reports_per_month", 0, false, d).flatten();
    let overage_price = usd(&f, "overage_usd_per_call", "a tier", true, d);
    let policy = f.req("overage_policy", "a tier", d).and_then(|n| {
        let text = n.as_scalar().unwrap_or("");
        if OVERAGE_POLICIES.contains(&text) {
            Some((text.to_string(), n))
        } else {
            let help = match did_you_mean(text, OVERAGE_POLICIES) {
                Some(best) => format!("did you mean `{best}`?"),
                None => format!("one of: {}", OVERAGE_POLICIES.join(", ")),
            };
            d.push(Diagnostic::error("R704", Some(&n.span), format!("unknown overage_policy `{text}`")).with_help(help));
            None
        }
    });
    let contact = f.opt_str("contact", d);
    let overage = match (policy, overage_price) {
        (Some((p, n)), Some(price)) => match (p.as_str(), price) {
            ("hard_cutoff", None) => Some(Overage::HardCutoff),
            ("meter", Some(v)) if v > Decimal::ZERO => Some(Overage::Meter(v)),
            ("custom", None) if contact.is_some() => Some(Overage::Custom),
            (policy, _) => {
                let (message, help) = match policy {
                    "meter" => {
                        ("a metered tier needs a positive `overage_usd_per_call`", "write the price per call past the allowance, e.g. 0.01")
                    }
                    "custom" => (
                        "a custom tier publishes no overage price and needs `contact`",
                        "set `overage_usd_per_call: null` and name a contact",
                    ),
                    _ => ("a hard_cutoff tier bills no overage", "set `overage_usd_per_call: null`"),
                };
                d.push(Diagnostic::error("R704", Some(&n.span), message).with_help(help));
                None
            }
        },
        _ => None,
    };
    if let (Some(Overage::HardCutoff), Some(None)) = (&overage, calls) {
        d.push(Diagnostic::error("R704", Some(&node.span), "a hard_cutoff tier needs `monthly_calls_included`"));
    }
    let mut features = vec![];
    match f.get("features") {
        Some(list) => {
            for item in seq(list, "`features`", d) {
                if let Some(s) = string(item, "features", d) {
                    features.push(s);
                }
            }
        }
        None => {
            f.req("features", "a tier", d);
        }
    }
    Some(Plan {
        id: id?,
        name: name?,
        price_usd_monthly: price?,
        monthly_calls: calls?,
        overage: overage?,
        optimization_reports_per_month: reports?,
        features,
        contact,
    })
}

fn mpp_price(node: &Node, d: &mut Diags) -> Option<MppPrice> {
    let f = Fields::of(node, "mpp", &["price_usd_per_call", "notes"], d)?;
    let price = usd(&f, "price_usd_per_call", "mpp", false, d).flatten();
    if let (Some(p), Some(n)) = (price, f.get("price_usd_per_call")) {
        if p.is_zero() || (p * Decimal::ONE_HUNDRED).fract() != Decimal::ZERO {
            d.push(
                Diagnostic::error("R706", Some(&n.span), format!("the MPP price must be a whole number of cents above 0, found {p}"))
                    .with_help("Stripe's charge method charges an integer amount in the currency's smallest unit (cents for USD)"),
            );
            return None;
        }
    }
    let notes = f.req_str("notes", "mpp", d);
    Some(MppPrice { price_usd_per_call: price?, notes: notes? })
}

fn pay_per_call(node: &Node, x402: &X402, d: &mut Diags) -> Option<PayPerCall> {
    let f = Fields::of(node, "pay_per_call", PAY_PER_CALL, d)?;
    let id = fixed(&f, "id", "x402", d);
    let name = f.req_str("name", "pay_per_call", d);
    let price = usd(&f, "price_usd_per_call", "pay_per_call", false, d).flatten();
    let notes = f.req_str("notes", "pay_per_call", d);
    Some(PayPerCall {
        id: id?,
        name: name?,
        price_usd_per_call: price?,
        network: x402.network.clone(),
        payee: x402.payee.clone(),
        facilitator: x402.facilitator.clone(),
        notes: notes?,
    })
}

/// `levy rules check`'s part: the plans file of `dir`, with its diagnostics printed; `None` when it has an error.
pub fn check(dir: &Path) -> Option<Plans> {
    let mut sources = SourceMap::default();
    let (plans, diags) = match Plans::load(dir, &X402::default(), &mut sources) {
        Ok(p) => (Some(p), vec![]),
        Err(diags) => (None, diags),
    };
    crate::rules::load::print_diagnostics(&diags, &sources);
    plans
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1500), "1,500");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
