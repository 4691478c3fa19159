//! Plans on accounts. An account holds two plans, one per product: the tax plan (`entities.plan`: calculate and
//! ingest count against it) and the gains tracker's plan (`entities.gains_plan`: recorded trades count against
//! it), each a tier of `rules/plans.yaml`. This module says which plan applies to a call ([`plan`]), whether the
//! account's subscription is paid up ([`Standing`]), and what a month's usage comes to ([`Statement`]).
//!
//! Plans change through the payment processor (checkout, then its signed billing events: `payments::checkout`, applied by [`changes`]) or by an
//! operator (`levy accounts set-plan`). Nothing here is cached: every call reads the account, so a change applies
//! from the next call on every instance.

pub mod changes;
pub mod events;

use chrono::{Datelike, NaiveDate, TimeZone, Utc};
use rust_decimal::Decimal;

use crate::engine::money::{cents, usd};

use crate::plans::{Plan, Plans, DEFAULT_PLAN};
use crate::store::entity::entity;
use crate::store::limits::CounterHit;

/// Start of the UTC month holding `now_ms`, in Unix ms.
pub fn month_start_ms(now_ms: i64) -> i64 {
    let now = Utc.timestamp_millis_opt(now_ms).single().unwrap_or_else(Utc::now);
    NaiveDate::from_ymd_opt(now.year(), now.month(), 1).and_then(|d| d.and_hms_opt(0, 0, 0)).map_or(0, |d| d.and_utc().timestamp_millis())
}

fn next_month_start_ms(now_ms: i64) -> i64 {
    month_start_ms(month_start_ms(now_ms) + 32 * DAY_MS)
}

/// The hit that counts one billable call (keyed calculate, ingest) in the account's month.
pub fn monthly_call(entity_id: &str, now_ms: i64) -> CounterHit {
    CounterHit {
        name: format!("usage:{entity_id}"),
        window_start: month_start_ms(now_ms),
        expires_at: next_month_start_ms(now_ms) + 31 * DAY_MS,
        n: 1,
    }
}

/// What a plan is bought for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Product {
    /// Sales and use tax: keyed calculate calls and ingested records.
    Tax,
    /// The capital-gains tracker: recorded trades.
    Gains,
}

impl Product {
    pub const ALL: [Product; 2] = [Product::Tax, Product::Gains];

    /// The id a checkout names it by.
    pub fn id(self) -> &'static str {
        match self {
            Product::Tax => "tax",
            Product::Gains => "gains",
        }
    }

    pub fn parse(id: &str) -> Option<Product> {
        Product::ALL.into_iter().find(|p| p.id() == id)
    }

    /// What counts against the product's allowance, in words.
    pub fn counts(self) -> &'static str {
        match self {
            Product::Tax => "keyed calculate calls and ingested records",
            Product::Gains => "recorded trades",
        }
    }

    /// The account's plan id for the product, as recorded.
    pub fn plan_id(self, account: &entity::Model) -> &str {
        match self {
            Product::Tax => &account.plan,
            Product::Gains => &account.gains_plan,
        }
    }

    /// The hit that counts one call of the product in the account's month.
    pub fn usage_hit(self, entity_id: &str, now_ms: i64) -> CounterHit {
        let hit = monthly_call(entity_id, now_ms);
        match self {
            Product::Tax => hit,
            Product::Gains => CounterHit { name: format!("gains_usage:{entity_id}"), ..hit },
        }
    }

    /// The hit that records one call past the allowance (metered overage) in the account's month.
    pub fn overage_hit(self, entity_id: &str, now_ms: i64) -> CounterHit {
        let prefix = match self {
            Product::Tax => "overage",
            Product::Gains => "gains_overage",
        };
        CounterHit { name: format!("{prefix}:{entity_id}"), ..monthly_call(entity_id, now_ms) }
    }
}

/// Days a past-due account keeps its paid plans: long enough for the processor's retries of a failed payment
/// (Stripe's recommended smart-retry schedule ends within two weeks) and for the customer to change cards.
pub const GRACE_DAYS: i64 = 14;
const DAY_MS: i64 = 24 * 3600 * 1000;

/// Whether the account's subscription is paid up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Standing {
    Active,
    /// A payment failed; the paid plans still apply until `grace_ends_at` (Unix ms).
    PastDue {
        since: i64,
        grace_ends_at: i64,
    },
    /// Past due beyond the grace period: the free plan applies to both products until a payment succeeds.
    Suspended {
        since: i64,
    },
}

impl Standing {
    /// The values of `entities.plan_status`.
    pub const ACTIVE: &'static str = entity::PLAN_ACTIVE;
    pub const PAST_DUE: &'static str = entity::PLAN_PAST_DUE;

    pub fn of(account: &entity::Model, now_ms: i64) -> Standing {
        match (account.plan_status.as_str(), account.past_due_since) {
            (Standing::PAST_DUE, Some(since)) => {
                let grace_ends_at = since + GRACE_DAYS * DAY_MS;
                if now_ms < grace_ends_at {
                    Standing::PastDue { since, grace_ends_at }
                } else {
                    Standing::Suspended { since }
                }
            }
            _ => Standing::Active,
        }
    }

    /// `active`, `past_due` or `suspended`.
    pub fn status(&self) -> &'static str {
        match self {
            Standing::Active => "active",
            Standing::PastDue { .. } => "past_due",
            Standing::Suspended { .. } => "suspended",
        }
    }

    /// When the paid plans stop applying, for a past-due account.
    pub fn grace_ends_at(&self) -> Option<i64> {
        match self {
            Standing::PastDue { grace_ends_at, .. } => Some(*grace_ends_at),
            Standing::Suspended { since } => Some(since + GRACE_DAYS * DAY_MS),
            Standing::Active => None,
        }
    }
}

/// The plan that applies to the account's calls of `product` at `now_ms`: its own, or the free plan while it is
/// suspended.
pub fn plan<'p>(plans: &'p Plans, account: &entity::Model, product: Product, now_ms: i64) -> &'p Plan {
    match Standing::of(account, now_ms) {
        Standing::Suspended { .. } => plans.plan(DEFAULT_PLAN),
        _ => plans.plan(product.plan_id(account)),
    }
}

/// Whether the plan that applies allows the account's `calls`-th call of `product` this month. A hard cutoff
/// refuses it (`Err`, "Monthly limit reached"); a plan that meters serves it: the hit that records the overage.
pub fn allowance(plans: &Plans, account: &entity::Model, product: Product, now_ms: i64, calls: i64) -> Result<Option<CounterHit>, String> {
    Ok(plan(plans, account, product, now_ms).past_allowance(calls)?.then(|| product.overage_hit(&account.id, now_ms)))
}

/// One product's line of a monthly statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub product: Product,
    pub plan: String,
    pub calls: i64,
    /// The plan's monthly allowance; `None`: unlimited.
    pub included: Option<i64>,
    /// Calls served past the allowance, as the ledger recorded them.
    pub overage_calls: i64,
    /// The plan's overage price per call (`rules/plans.yaml`); `None` for a plan without one.
    pub overage_usd_per_call: Option<Decimal>,
    /// `overage_calls` times the price, to the cent; `None` when the plan publishes no price (custom terms).
    pub overage_usd: Option<Decimal>,
}

/// An account's usage of one calendar month (UTC) against its plans.
#[derive(Clone, Debug, PartialEq)]
pub struct Statement {
    pub entity_id: String,
    pub email: String,
    /// `YYYY-MM`.
    pub month: String,
    pub status: &'static str,
    pub lines: Vec<Line>,
}

/// Per product (in [`Product::ALL`]'s order), the account's calls and overage calls in the month starting at
/// `month_ms`: the figures of its usage statement.
pub async fn month_counts(
    store: &crate::store::Store,
    entity_id: &str,
    month_ms: i64,
) -> Result<Vec<(i64, i64)>, crate::store::StoreError> {
    let mut counts = Vec::new();
    for (_, usage, overage) in statement_counters(entity_id, month_ms) {
        counts.push((
            store.read_counter(&usage.name, usage.window_start).await?,
            store.read_counter(&overage.name, overage.window_start).await?,
        ));
    }
    Ok(counts)
}

/// The counters a statement reads: per product, its usage and overage counter names.
pub fn statement_counters(entity_id: &str, month_ms: i64) -> Vec<(Product, CounterHit, CounterHit)> {
    Product::ALL.into_iter().map(|p| (p, p.usage_hit(entity_id, month_ms), p.overage_hit(entity_id, month_ms))).collect()
}

impl Statement {
    /// The statement from the month's counters (`counts`: per product, in [`Product::ALL`]'s order, calls and
    /// overage calls), with the plans that apply at `now_ms`.
    pub fn new(plans: &Plans, account: &entity::Model, month_ms: i64, now_ms: i64, counts: &[(i64, i64)]) -> Statement {
        let lines = Product::ALL
            .into_iter()
            .zip(counts)
            .map(|(product, &(calls, overage_calls))| {
                let p = plan(plans, account, product, now_ms);
                let price = p.overage.price();
                Line {
                    product,
                    plan: p.id.clone(),
                    calls,
                    included: p.monthly_calls,
                    overage_calls,
                    overage_usd_per_call: price,
                    overage_usd: price.map(|price| cents(price * Decimal::from(overage_calls))),
                }
            })
            .collect();
        Statement {
            entity_id: account.id.clone(),
            email: account.email.clone(),
            month: month_label(month_ms),
            status: Standing::of(account, now_ms).status(),
            lines,
        }
    }

    /// The total of the lines' overage amounts, to the cent.
    pub fn overage_usd(&self) -> Decimal {
        cents(self.lines.iter().filter_map(|l| l.overage_usd).sum::<Decimal>())
    }

    /// The CSV header of [`Statement::csv_rows`].
    pub const CSV_HEADER: &'static str =
        "month,entity_id,email,plan_status,product,plan,calls,included,overage_calls,overage_usd_per_call,overage_usd";

    /// One CSV row per product (fields never hold a comma except the email, which is quoted when it does).
    pub fn csv_rows(&self) -> Vec<String> {
        self.lines
            .iter()
            .map(|l| {
                let opt = |v: Option<String>| v.unwrap_or_default();
                [
                    self.month.clone(),
                    self.entity_id.clone(),
                    crate::csv::field(&self.email),
                    self.status.to_string(),
                    l.product.id().to_string(),
                    l.plan.clone(),
                    l.calls.to_string(),
                    opt(l.included.map(|n| n.to_string())),
                    l.overage_calls.to_string(),
                    opt(l.overage_usd_per_call.map(|d| d.normalize().to_string())),
                    opt(l.overage_usd.map(usd)),
                ]
                .join(",")
            })
            .collect()
    }
}

/// `YYYY-MM` of the month holding `ms`.
pub fn month_label(ms: i64) -> String {
    use chrono::{Datelike, TimeZone, Utc};
    let t = Utc.timestamp_millis_opt(ms).single().unwrap_or_else(Utc::now);
    format!("{:04}-{:02}", t.year(), t.month())
}

/// The start (Unix ms) of the month `YYYY-MM`; `None` for anything else.
pub fn parse_month(text: &str) -> Option<i64> {
    let (y, m) = text.split_once('-')?;
    if y.len() != 4 || m.len() != 2 {
        return None;
    }
    let date = chrono::NaiveDate::from_ymd_opt(y.parse().ok()?, m.parse().ok()?, 1)?;
    Some(month_start_ms(date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis()))
}
