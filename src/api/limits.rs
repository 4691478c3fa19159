//! The limiters: per-key burst, per-account monthly allowance, and the per-IP demo windows.
//! Every count is reserved by an atomic upsert in the shared database, so several instances behind one
//! PostgreSQL never grant more than a limit between them. Keyed calculate calls are counted one by one, in
//! the ledger batch with the month's usage (`recorder`); trades and the demo take their units from leases
//! (`store::limits`: busy windows reserve a few units at a time while far from their limit). The monthly
//! allowance, which bills, is counted call by call.

use chrono::{Datelike, NaiveDate, TimeZone, Utc};
use poem::http::StatusCode;
use serde_json::json;

use super::context::set_header;
use super::error::{ApiError, ErrorCode};
use super::plans::{plan, Overage};
use super::AppState;
use crate::store::entity::entity;
use crate::store::limits::CounterHit;

const MINUTE_MS: i64 = 60_000;

/// Start of the current UTC month, in Unix ms.
pub fn month_start_ms(now_ms: i64) -> i64 {
    let now = Utc.timestamp_millis_opt(now_ms).single().unwrap_or_else(Utc::now);
    NaiveDate::from_ymd_opt(now.year(), now.month(), 1).and_then(|d| d.and_hms_opt(0, 0, 0)).map_or(0, |d| d.and_utc().timestamp_millis())
}

fn next_month_start_ms(now_ms: i64) -> i64 {
    month_start_ms(month_start_ms(now_ms) + 32 * 24 * 3600 * 1000)
}

fn ceil_seconds(ms: i64) -> i64 {
    (ms + 999) / 1000
}

/// The hit that counts one billable call (keyed calculate, ingest) in the account's month.
pub fn monthly_call(entity_id: &str, now_ms: i64) -> CounterHit {
    CounterHit { name: format!("usage:{entity_id}"), window_start: month_start_ms(now_ms), expires_at: next_month_start_ms(now_ms) + 31 * 24 * 3600 * 1000, n: 1 }
}

/// The hit that counts one call in its key's 60-second window (kept a minute past its end).
pub fn burst_call(key_id: &str, now_ms: i64) -> CounterHit {
    let window = now_ms - now_ms.rem_euclid(MINUTE_MS);
    CounterHit { name: format!("burst:{key_id}"), window_start: window, expires_at: window + 2 * MINUTE_MS, n: 1 }
}

/// The refusal of a call past its key's burst limit (the headers are [`AppState::burst_verdict`]'s).
pub fn burst_exceeded(limit: i64) -> ApiError {
    ApiError::rate_limited(format!("rate limit of {limit} requests per 60 seconds for this key exceeded; retry after the window resets"))
}

/// Whether the account's plan allows its `calls`-th call this month. Free: a hard cutoff (429 "Monthly limit
/// reached"); paid plans serve it and meter it: the hit that records the overage.
pub fn allowance(account: &entity::Model, now_ms: i64, calls: i64) -> Result<Option<CounterHit>, ApiError> {
    let p = plan(&account.plan);
    if calls <= p.monthly_calls {
        return Ok(None);
    }
    match p.overage {
        Overage::HardCutoff => Err(ApiError::rate_limited(format!("Monthly limit reached: the {} plan includes {} calls per month; upgrade to continue", p.name, p.monthly_calls))),
        Overage::Meter(_) => Ok(Some(CounterHit { name: format!("overage:{}", account.id), ..monthly_call(&account.id, now_ms) })),
    }
}

/// What an account has used this month.
pub struct MonthlyUsage {
    pub calls: i64,
    pub included: i64,
    pub overage_calls: i64,
}

impl AppState {
    /// Counts a call in its key's 60-second window from this instance's lease (see `store::limits`) and sets
    /// the X-RateLimit-* headers; over the limit is 429 with Retry-After. Trades are counted this way; keyed
    /// calculate calls are counted exactly, in the ledger batch or by [`AppState::count_burst`].
    pub async fn check_burst(&self, key_id: &str) -> Result<(), ApiError> {
        let now = self.clock.now_ms();
        let hit = burst_call(key_id, now);
        let count = self.store.take_unit(&hit.name, hit.window_start, hit.expires_at, self.limits.burst_per_minute).await?;
        self.burst_verdict(now, count)
    }

    /// Counts exactly one call in its key's window (no lease): a keyed calculate call that ends before the
    /// ledger batch, which counts the others. Headers and verdict as [`AppState::check_burst`].
    pub async fn count_burst(&self, key_id: &str, now_ms: i64) -> Result<(), ApiError> {
        let hit = burst_call(key_id, now_ms);
        let count = self.store.hit_counter_by(&hit.name, hit.window_start, hit.expires_at, hit.n).await?;
        self.burst_verdict(now_ms, count)
    }

    /// The X-RateLimit-* headers for the `count`-th call of the key's window that holds `now_ms`; past the
    /// limit, Retry-After and the 429.
    pub fn burst_verdict(&self, now_ms: i64, count: i64) -> Result<(), ApiError> {
        let reset = now_ms - now_ms.rem_euclid(MINUTE_MS) + MINUTE_MS;
        let limit = self.limits.burst_per_minute;
        set_header("X-RateLimit-Limit", limit);
        set_header("X-RateLimit-Remaining", (limit - count).max(0));
        set_header("X-RateLimit-Reset", reset / 1000);
        if count > limit {
            set_header("Retry-After", ceil_seconds(reset - now_ms).max(1));
            return Err(burst_exceeded(limit));
        }
        Ok(())
    }

    pub async fn monthly_usage(&self, account: &entity::Model) -> Result<MonthlyUsage, ApiError> {
        let month = month_start_ms(self.clock.now_ms());
        Ok(MonthlyUsage {
            calls: self.store.read_counter(&format!("usage:{}", account.id), month).await?,
            included: plan(&account.plan).monthly_calls,
            overage_calls: self.store.read_counter(&format!("overage:{}", account.id), month).await?,
        })
    }

    /// Counts a keyless demo call for the client's address (every call, whatever its outcome).
    /// Past the daily cap: 402 with the ways to continue; past the per-minute cap: 429 with Retry-After.
    /// The X-RateLimit-* headers describe the daily window.
    pub async fn check_demo(&self, ip: &str) -> Result<(), ApiError> {
        let now = self.clock.now_ms();
        let minute = now - now.rem_euclid(MINUTE_MS);
        let day_ms = 24 * 3600 * 1000;
        let day = now - now.rem_euclid(day_ms);
        let per_minute = self.store.take_unit(&format!("demo-minute:{ip}"), minute, minute + 2 * MINUTE_MS, self.limits.demo_per_minute).await?;
        let per_day = self.store.take_unit(&format!("demo-day:{ip}"), day, day + 2 * day_ms, self.limits.demo_per_day).await?;
        let limit = self.limits.demo_per_day;
        set_header("X-RateLimit-Limit", limit);
        set_header("X-RateLimit-Remaining", (limit - per_day).max(0));
        set_header("X-RateLimit-Reset", (day + day_ms) / 1000);
        if per_day > limit {
            let mut e = ApiError::new(
                StatusCode::PAYMENT_REQUIRED,
                ErrorCode::PaymentRequired,
                format!("the keyless demo allows {limit} calls per UTC day from one address; sign up for a free API key or pay per call"),
            );
            e.signup = Some(signup_block());
            e.pay_per_call = Some(json!({
                "id": "x402",
                "price_usd_per_call": 0.005,
                "currency": "USDC",
                "header": "X-PAYMENT",
                "note": "per-call USDC payment under the x402 protocol; no account needed",
            }));
            return Err(e);
        }
        if per_minute > self.limits.demo_per_minute {
            set_header("Retry-After", ceil_seconds(minute + MINUTE_MS - now).max(1));
            let mut e = ApiError::rate_limited(format!("the keyless demo allows {} calls per minute from one address", self.limits.demo_per_minute));
            e.signup = Some(signup_block());
            return Err(e);
        }
        Ok(())
    }
}

/// How a keyless caller gets a key.
pub fn signup_block() -> serde_json::Value {
    json!({
        "method": "POST",
        "url": "/api/v1/auth/signup",
        "free_tier": "1,500 calls per month, no card required",
        "required_fields": ["email", "password", "agent_name", "agent_work_type"],
    })
}
