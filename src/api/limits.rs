//! The limiters: per-key burst, per-account monthly allowance, the per-IP demo windows, and the windows that
//! bound login failures (per account and per address) and signups (per address).
//! Every count is reserved by an atomic upsert in the shared database, so several instances behind one
//! PostgreSQL never grant more than a limit between them. Keyed calculate calls are counted one by one, in
//! the ledger batch with the month's usage (`ledger`); trades and the demo take their units from leases
//! (`store::limits`: busy windows reserve a few units at a time while far from their limit). The monthly
//! allowance, which bills, is counted call by call.

use poem::http::StatusCode;

use super::context::set_header;
use super::error::{ApiError, ErrorCode, PayPerCallOffer, SignupBlock};
use super::AppState;
use crate::ledger::burst_call;
use crate::metrics::Limit;
use crate::plans::Plans;
use crate::security::sha256_hex;

const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 60 * MINUTE_MS;
const DAY_MS: i64 = 24 * HOUR_MS;

fn ceil_seconds(ms: i64) -> i64 {
    (ms + 999) / 1000
}

/// The login-failure counter of an email, known or not (hashed: counter names are not a list of emails).
fn login_account(email: &str) -> String {
    format!("login-account:{}", sha256_hex(email.as_bytes()))
}

fn login_address(ip: &str) -> String {
    format!("login-address:{ip}")
}

/// The 429 of a window used up, with Retry-After: the seconds until it ends.
fn payment_attempts(ip: &str) -> String {
    format!("payment-attempts:{ip}")
}

fn window_used_up(now_ms: i64, window_end_ms: i64, message: String) -> ApiError {
    set_header("Retry-After", ceil_seconds(window_end_ms - now_ms).max(1));
    ApiError::rate_limited(message)
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
            self.metrics.limiter_refusal(Limit::Burst);
            set_header("Retry-After", ceil_seconds(reset - now_ms).max(1));
            return Err(ApiError::burst_exceeded(limit));
        }
        Ok(())
    }

    /// Adds `n` to counter `name` in the fixed window of `len_ms` that holds `now_ms`, exactly (no lease), in the
    /// shared database; the count after it and the window's end.
    async fn count_in_window(&self, name: &str, now_ms: i64, len_ms: i64, n: i64) -> Result<(i64, i64), ApiError> {
        let start = now_ms - now_ms.rem_euclid(len_ms);
        let count = self.store.hit_counter_by(name, start, start + 2 * len_ms, n).await?;
        Ok((count, start + len_ms))
    }

    /// The login window, in ms (at least a second).
    fn login_window_ms(&self) -> i64 {
        self.limits.login_window_secs.max(1) * 1000
    }

    /// Counts a login attempt for `email` (registered or not) and for the client's address, before any password is
    /// checked. Past either window's limit: 429 with Retry-After. A login that succeeds gives its attempt back
    /// ([`AppState::login_succeeded`]), so what the windows hold is failures (and attempts still running).
    pub async fn check_login(&self, email: &str, ip: &str) -> Result<(), ApiError> {
        let now = self.clock.now_ms();
        let len = self.login_window_ms();
        let (account, end) = self.count_in_window(&login_account(email), now, len, 1).await?;
        let (address, _) = self.count_in_window(&login_address(ip), now, len, 1).await?;
        if account > self.limits.login_failures_per_account || address > self.limits.login_failures_per_address {
            self.metrics.limiter_refusal(Limit::Login);
            let minutes = self.limits.login_window_secs / 60;
            return Err(window_used_up(
                now,
                end,
                format!("too many failed logins for this account or from this address in {minutes} minutes; retry later"),
            ));
        }
        Ok(())
    }

    /// A successful login: the account's failures are forgotten, and the address's count of this attempt returned.
    pub async fn login_succeeded(&self, email: &str, ip: &str) -> Result<(), ApiError> {
        self.store.clear_counter(&login_account(email)).await?;
        let len = self.login_window_ms();
        self.count_in_window(&login_address(ip), self.clock.now_ms(), len, -1).await?;
        Ok(())
    }

    /// Counts a signup from the client's address in its hour and its UTC day; past either limit, 429 with
    /// Retry-After. Every signup that passed validation counts, whether it created an account or found the
    /// email taken (so the 409 cannot be used to test many emails).
    pub async fn check_signup(&self, ip: &str) -> Result<(), ApiError> {
        let now = self.clock.now_ms();
        let (day, day_end) = self.count_in_window(&format!("signup-day:{ip}"), now, DAY_MS, 1).await?;
        let (hour, hour_end) = self.count_in_window(&format!("signup-hour:{ip}"), now, HOUR_MS, 1).await?;
        if day > self.limits.signups_per_day || hour > self.limits.signups_per_hour {
            self.metrics.limiter_refusal(Limit::Signup);
        }
        if day > self.limits.signups_per_day {
            return Err(window_used_up(
                now,
                day_end,
                format!("at most {} signups per UTC day from one address", self.limits.signups_per_day),
            ));
        }
        if hour > self.limits.signups_per_hour {
            return Err(window_used_up(
                now,
                hour_end,
                format!("at most {} signups per hour from one address", self.limits.signups_per_hour),
            ));
        }
        Ok(())
    }

    /// Counts a keyless demo call for the client's address (every call, whatever its outcome).
    /// Past the daily cap: 402 with the ways to continue; past the per-minute cap: 429 with Retry-After.
    /// The X-RateLimit-* headers describe the daily window.
    pub async fn check_demo(&self, ip: &str) -> Result<(), ApiError> {
        let now = self.clock.now_ms();
        let minute = now - now.rem_euclid(MINUTE_MS);
        let day_ms = DAY_MS;
        let day = now - now.rem_euclid(day_ms);
        let per_minute =
            self.store.take_unit(&format!("demo-minute:{ip}"), minute, minute + 2 * MINUTE_MS, self.limits.demo_per_minute).await?;
        let per_day = self.store.take_unit(&format!("demo-day:{ip}"), day, day + 2 * day_ms, self.limits.demo_per_day).await?;
        let limit = self.limits.demo_per_day;
        set_header("X-RateLimit-Limit", limit);
        set_header("X-RateLimit-Remaining", (limit - per_day).max(0));
        set_header("X-RateLimit-Reset", (day + day_ms) / 1000);
        if per_day > limit || per_minute > self.limits.demo_per_minute {
            self.metrics.limiter_refusal(Limit::Demo);
        }
        if per_day > limit {
            let mut e = ApiError::new(
                StatusCode::PAYMENT_REQUIRED,
                ErrorCode::PaymentRequired,
                format!("the keyless demo allows {limit} calls per UTC day from one address; sign up for a free API key or pay per call"),
            );
            e.signup = Some(signup_block(&self.plans));
            let ppc = &self.plans.pay_per_call;
            e.pay_per_call = Some(PayPerCallOffer { note: ppc.notes.clone(), ..PayPerCallOffer::x402(ppc) });
            return Err(e);
        }
        if per_minute > self.limits.demo_per_minute {
            set_header("Retry-After", ceil_seconds(minute + MINUTE_MS - now).max(1));
            let mut e = ApiError::rate_limited(format!(
                "the keyless demo allows {} calls per minute from one address",
                self.limits.demo_per_minute
            ));
            e.signup = Some(signup_block(&self.plans));
            return Err(e);
        }
        Ok(())
    }
}

impl AppState {
    /// Counts a pay-per-call attempt (x402 or MPP) from the client's address in its minute, before the payment is
    /// checked; past the limit, 429 with Retry-After. A call whose payment is taken gives its attempt back
    /// ([`AppState::payment_taken`]), so what the window holds is refused payments (and attempts still running):
    /// each refused credential may have cost a call to the facilitator or the processor.
    pub async fn check_payment_attempt(&self, ip: &str) -> Result<(), ApiError> {
        let now = self.clock.now_ms();
        let (count, end) = self.count_in_window(&payment_attempts(ip), now, MINUTE_MS, 1).await?;
        let limit = self.limits.payment_failures_per_address;
        if count > limit {
            self.metrics.limiter_refusal(Limit::Payment);
            return Err(window_used_up(
                now,
                end,
                format!("too many refused payments from this address in a minute (at most {limit}); retry later"),
            ));
        }
        Ok(())
    }

    /// A paid call answered: its attempt is given back (a failure to do so is logged: the call is answered).
    pub async fn payment_taken(&self, ip: &str) {
        if let Err(e) = self.count_in_window(&payment_attempts(ip), self.clock.now_ms(), MINUTE_MS, -1).await {
            tracing::warn!(error = %e.message, "a paid call's attempt was not given back");
        }
    }

    /// Counts a keyless POST /verify call for the client's address (every call, whatever its outcome), in a
    /// per-minute and a per-UTC-day window; past either, 429 RATE_LIMITED with Retry-After (the end of the window).
    pub async fn check_verify(&self, ip: &str) -> Result<(), ApiError> {
        self.check_address(Limit::Verify, "POST /verify", ip, self.limits.verify_per_minute, self.limits.verify_per_day).await
    }

    /// Counts a keyless read of the network directory or feed for the client's address, as [`AppState::check_verify`]
    /// does for /verify (the two reads share one pair of windows).
    pub async fn check_network_read(&self, ip: &str) -> Result<(), ApiError> {
        let what = "the network directory and feed";
        self.check_address(Limit::Network, what, ip, self.limits.network_per_minute, self.limits.network_per_day).await
    }

    /// Counts a call of a keyless endpoint for the client's address, in a per-minute and a per-UTC-day window named
    /// after `kind`; past either, 429 RATE_LIMITED with Retry-After (the end of the window). The X-RateLimit-*
    /// headers describe the daily window.
    async fn check_address(&self, limit: Limit, what: &str, ip: &str, per_minute_limit: i64, per_day_limit: i64) -> Result<(), ApiError> {
        let kind = limit.as_str();
        let now = self.clock.now_ms();
        let minute = now - now.rem_euclid(MINUTE_MS);
        let day = now - now.rem_euclid(DAY_MS);
        let per_minute = self.store.take_unit(&format!("{kind}-minute:{ip}"), minute, minute + 2 * MINUTE_MS, per_minute_limit).await?;
        let per_day = self.store.take_unit(&format!("{kind}-day:{ip}"), day, day + 2 * DAY_MS, per_day_limit).await?;
        set_header("X-RateLimit-Limit", per_day_limit);
        set_header("X-RateLimit-Remaining", (per_day_limit - per_day).max(0));
        set_header("X-RateLimit-Reset", (day + DAY_MS) / 1000);
        if per_day > per_day_limit || per_minute > per_minute_limit {
            self.metrics.limiter_refusal(limit);
        }
        if per_day > per_day_limit {
            set_header("Retry-After", ceil_seconds(day + DAY_MS - now).max(1));
            return Err(ApiError::rate_limited(format!("{what} allows {per_day_limit} calls per UTC day from one address")));
        }
        if per_minute > per_minute_limit {
            set_header("Retry-After", ceil_seconds(minute + MINUTE_MS - now).max(1));
            return Err(ApiError::rate_limited(format!("{what} allows {per_minute_limit} calls per minute from one address")));
        }
        Ok(())
    }
}

/// How a keyless caller gets a key; the free tier's allowance from the plans.
pub fn signup_block(plans: &Plans) -> SignupBlock {
    SignupBlock {
        method: "POST".into(),
        url: "/api/v1/auth/signup".into(),
        free_tier: format!("{}, no card required", plans.free_allowance()),
        required_fields: ["email", "password", "agent_name", "agent_work_type"].map(String::from).to_vec(),
    }
}
