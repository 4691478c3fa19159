//! The partner program: partner keys and webhook secrets, a partner's terms, the webhook signature
//! (`X-Service-Signature`), the period of a usage or revenue-share report, and the figures of both (free and billable
//! calls, wholesale cost, the revenue share's months and payout). With the store: `users` (an account provisioned for
//! a partner's user, and claimed by the user), `reports` (a period's usage and revenue share) and `events` (the
//! partner's signed events).

pub mod events;
pub mod reports;
pub mod users;

use chrono::{Datelike, Months, NaiveDate, TimeZone, Utc};
use hmac::{Hmac, Mac};
use rust_decimal::Decimal;
use sha2::Sha256;

use crate::clock::day_start_ms;
use crate::security::random_hex;
use crate::store::StoreError;

/// Why a partner's request was refused; nothing of it was written.
#[derive(Debug)]
pub enum Refused {
    NotFound(String),
    /// The partner is deactivated, or the record is another partner's.
    Forbidden(String),
    Conflict(String),
    /// A field of the request, and why.
    Field(&'static str, String),
    /// The event's headers or signature do not verify, or its nonce was used before.
    SignatureInvalid(String),
    Internal(String),
    Store(StoreError),
}

crate::store_failure!(Refused);

/// The neutral partner-key prefix of the interface spec.
pub const PARTNER_KEY_PREFIX: &str = "partner_live_";
/// How far a webhook's `t` may be from the server's clock, either way (seconds).
pub const WEBHOOK_TOLERANCE_SECS: i64 = 300;
/// How long a rotated-out webhook secret still verifies (24 hours).
pub const SECRET_GRACE_MS: i64 = 24 * 3600 * 1000;
/// How long a claim link is valid (7 days).
pub const CLAIM_LIFETIME_MS: i64 = 7 * 24 * 3600 * 1000;
/// Partner-route calls per partner per minute unless the partner's row says otherwise.
pub const DEFAULT_RATE_LIMIT_PER_MINUTE: i64 = 600;
/// Users listed in `per_user` unless the query asks for fewer.
pub const PER_USER_CAP: usize = 5000;
/// Decimal places of every money string of the partner reports.
pub const MONEY_DP: u32 = 6;
/// The longest period a report covers (days, both ends included).
pub const MAX_PERIOD_DAYS: i64 = 366;
/// The webhook events.
pub const EVENTS: [&str; 2] = ["user.created", "user.deleted"];

/// A new partner key: `partner_live_` and 32 lowercase hex characters.
pub fn new_partner_key() -> String {
    format!("{PARTNER_KEY_PREFIX}{}", random_hex(16))
}

/// True when the text has the shape of a partner key.
pub fn looks_like_partner_key(key: &str) -> bool {
    key.strip_prefix(PARTNER_KEY_PREFIX).is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A new webhook signing secret (256 random bits).
pub fn new_webhook_secret() -> String {
    format!("pwhsec_{}", random_hex(32))
}

/// A new claim token (256 random bits), kept as its SHA-256.
pub fn new_claim_token() -> String {
    format!("clm_{}", random_hex(32))
}

/// True when the text has the shape of a claim token.
pub fn looks_like_claim_token(token: &str) -> bool {
    token.strip_prefix("clm_").is_some_and(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// A slug: 2 to 64 of a–z 0–9 and `-`, starting with a letter or digit.
pub fn valid_slug(s: &str) -> bool {
    (2..=64).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') && !s.starts_with('-')
}

/// A percentage from 0 to 100 with at most 2 decimal places.
pub fn parse_revshare(text: &str) -> Result<Decimal, String> {
    let d: Decimal = text.trim().parse().map_err(|_| format!("`{text}` is not a percentage (e.g. 20 or 12.5)"))?;
    if d.is_sign_negative() || d > Decimal::from(100) || d.scale() > 2 {
        return Err(format!("`{text}`: the revenue share is a percentage from 0 to 100 with at most 2 decimal places"));
    }
    Ok(d.normalize())
}

/// A price per call in USD: 0 or more, at most 6 decimal places.
pub fn parse_wholesale(text: &str) -> Result<Decimal, String> {
    let d: Decimal = text.trim().parse().map_err(|_| format!("`{text}` is not an amount in USD (e.g. 0.002)"))?;
    if d.is_sign_negative() || d.scale() > MONEY_DP || d > Decimal::from(1000) {
        return Err(format!("`{text}`: the wholesale price is from 0 to 1000 USD per call with at most {MONEY_DP} decimal places"));
    }
    Ok(d.normalize())
}

/// `N/min` (or `N`): calls per minute, from 1 to 1,000,000.
pub fn parse_rate_limit(text: &str) -> Result<i64, String> {
    let n = text.trim().strip_suffix("/min").unwrap_or(text.trim());
    match n.parse::<i64>() {
        Ok(n) if (1..=1_000_000).contains(&n) => Ok(n),
        _ => Err(format!("`{text}` is not a rate limit: N/min with N from 1 to 1000000")),
    }
}

/// A money figure as the reports write it: fixed [`MONEY_DP`] decimal places.
pub fn money(d: Decimal) -> String {
    let mut d = d.round_dp_with_strategy(MONEY_DP, rust_decimal::RoundingStrategy::MidpointNearestEven);
    d.rescale(MONEY_DP);
    d.to_string()
}

/// Why a webhook's signature is refused (every reason is 401 WEBHOOK_SIGNATURE_INVALID).
pub fn signature_problem(secrets: &[&str], header: &str, body: &[u8], now_secs: i64) -> Option<&'static str> {
    let mut t = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        let Some((k, v)) = part.trim().split_once('=') else { return Some("X-Service-Signature is not t=<unix seconds>,v1=<hex>") };
        match k {
            "t" => t = v.parse::<i64>().ok(),
            "v1" => match hex::decode(v) {
                Ok(s) => signatures.push(s),
                Err(_) => return Some("X-Service-Signature's v1 is not hex"),
            },
            _ => {}
        }
    }
    let Some(t) = t else { return Some("X-Service-Signature has no t=<unix seconds>") };
    if signatures.is_empty() {
        return Some("X-Service-Signature has no v1 signature");
    }
    if (now_secs - t).abs() > WEBHOOK_TOLERANCE_SECS {
        return Some("X-Service-Signature's timestamp is more than 5 minutes from the server's clock");
    }
    let matches = secrets.iter().any(|secret| signatures.iter().any(|s| mac(secret, body).verify_slice(s).is_ok()));
    (!matches).then_some("no v1 signature matches the body")
}

fn mac(secret: &str, body: &[u8]) -> Hmac<Sha256> {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes()).expect("HMAC takes a key of any length");
    m.update(body);
    m
}

/// `t=<t>,v1=<hex HMAC-SHA256 of the body>`: the header a partner sends (used by the tests and in the docs).
pub fn sign_webhook(secret: &str, t: i64, body: &[u8]) -> String {
    format!("t={t},v1={}", hex::encode(mac(secret, body).finalize().into_bytes()))
}

/// A report's period: whole UTC days from `from` to `to`, both included.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Period {
    pub from: NaiveDate,
    pub to: NaiveDate,
}

fn first_of_month(d: NaiveDate) -> NaiveDate {
    d.with_day(1).unwrap_or(d)
}

impl Period {
    /// The period `from`..`to` (YYYY-MM-DD); each defaults to the first or the last day of the current month (UTC).
    /// Errors name the parameter.
    pub fn parse(from: Option<&str>, to: Option<&str>, now_ms: i64) -> Result<Period, Vec<String>> {
        let today = Utc.timestamp_millis_opt(now_ms).single().map_or(NaiveDate::MIN, |t| t.date_naive());
        let month = first_of_month(today);
        let month_end = month.checked_add_months(Months::new(1)).and_then(|d| d.pred_opt()).unwrap_or(today);
        let mut errors = Vec::new();
        let mut date = |name: &str, text: Option<&str>, default: NaiveDate| match text {
            None => Some(default),
            Some(t) => match NaiveDate::parse_from_str(t, "%Y-%m-%d") {
                Ok(d) if t.len() == 10 => Some(d),
                _ => {
                    errors.push(format!("{name}: `{t}` is not a date (YYYY-MM-DD)"));
                    None
                }
            },
        };
        let from = date("from", from, month);
        let to = date("to", to, month_end);
        if let (Some(from), Some(to)) = (from, to) {
            if to < from {
                errors.push(format!("to: `{to}` is before from `{from}`"));
            } else if (to - from).num_days() + 1 > MAX_PERIOD_DAYS {
                errors.push(format!("to: a period covers at most {MAX_PERIOD_DAYS} days"));
            } else if errors.is_empty() {
                return Ok(Period { from, to });
            }
        }
        Err(errors)
    }

    pub fn start_ms(&self) -> i64 {
        day_start_ms(self.from)
    }

    /// The end of the last day (exclusive).
    pub fn end_ms(&self) -> i64 {
        day_start_ms(self.to.succ_opt().unwrap_or(self.to))
    }

    /// The calendar months the period touches: each month's start and end (exclusive), Unix ms, and the part of it
    /// inside the period.
    pub fn months(&self) -> Vec<MonthSlice> {
        let mut out = Vec::new();
        let mut m = first_of_month(self.from);
        while m <= self.to {
            let next = m.checked_add_months(Months::new(1)).unwrap_or(m);
            out.push(MonthSlice {
                start_ms: day_start_ms(m),
                end_ms: day_start_ms(next),
                from_ms: day_start_ms(m).max(self.start_ms()),
                to_ms: day_start_ms(next).min(self.end_ms()),
            });
            if next <= m {
                break;
            }
            m = next;
        }
        out
    }
}

/// A calendar month and the part of it a period covers (Unix ms; ends exclusive).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MonthSlice {
    pub start_ms: i64,
    pub end_ms: i64,
    pub from_ms: i64,
    pub to_ms: i64,
}

/// A user's calls in a period split by the partner's free calls per user and calendar month: the first `free_per_month`
/// calls of each calendar month are free, whether or not the earlier calls of that month fall inside the period.
/// `per_month` is, for each month the period touches, (calls of the month before the period, calls inside it).
pub fn split_calls(per_month: &[(i64, i64)], free_per_month: i64) -> (i64, i64) {
    let (mut free, mut billable) = (0, 0);
    for &(before, inside) in per_month {
        let left = (free_per_month - before).max(0);
        let f = inside.min(left);
        free += f;
        billable += inside - f;
    }
    (free, billable)
}

/// When an account's revenue-share window ends: its first upgrade plus 12 months.
pub fn window_end_ms(first_upgrade_ms: i64) -> i64 {
    Utc.timestamp_millis_opt(first_upgrade_ms)
        .single()
        .and_then(|t| t.checked_add_months(Months::new(12)))
        .map_or(first_upgrade_ms, |t| t.timestamp_millis())
}

/// The months of `period` for which an account upgraded at `first_upgrade_ms` contributes its share: a month counts
/// when the window (first upgrade to first upgrade plus 12 months) holds the month's last moment, so an account
/// contributes in the month of its first upgrade and in 12 months in all.
pub fn contributing_months(period: &Period, first_upgrade_ms: i64) -> i64 {
    let window_end = window_end_ms(first_upgrade_ms);
    period.months().iter().filter(|m| first_upgrade_ms < m.end_ms && m.end_ms <= window_end).count() as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_terms() {
        assert!(looks_like_partner_key(&new_partner_key()));
        assert!(looks_like_claim_token(&new_claim_token()));
        assert!(!looks_like_claim_token("clm_0") && !looks_like_claim_token(&format!("clm_{}", "A".repeat(64))));
        assert!(!looks_like_partner_key("svc_live_00000000000000000000000000000000"));
        assert_eq!(parse_revshare("12.5").unwrap().to_string(), "12.5");
        assert!(parse_revshare("100.01").is_err() && parse_revshare("1.234").is_err() && parse_revshare("-1").is_err());
        assert_eq!(parse_rate_limit("120/min"), Ok(120));
        assert!(parse_rate_limit("0/min").is_err());
        assert_eq!(money(Decimal::new(3125, 3)), "3.125000");
    }

    #[test]
    fn signatures() {
        let body = br#"{"external_id":"u1"}"#;
        let h = sign_webhook("s", 1000, body);
        assert_eq!(signature_problem(&["s"], &h, body, 1000), None);
        assert_eq!(signature_problem(&["old", "s"], &h, body, 1300), None);
        assert!(signature_problem(&["s"], &h, body, 1301).is_some());
        assert!(signature_problem(&["s"], &h, body, 699).is_some());
        assert!(signature_problem(&["x"], &h, body, 1000).is_some());
        assert!(signature_problem(&["s"], &h, b"{}", 1000).is_some());
    }

    #[test]
    fn months_of_the_window() {
        // First upgrade 2026-11-21: window to 2027-11-21; Nov 2026 … Oct 2027 contribute (12 months).
        let up = Utc.with_ymd_and_hms(2026, 11, 21, 10, 0, 0).unwrap().timestamp_millis();
        let year = Period::parse(Some("2026-01-01"), Some("2026-12-31"), up).unwrap();
        assert_eq!(contributing_months(&year, up), 2);
        let next = Period::parse(Some("2027-01-01"), Some("2027-12-31"), up).unwrap();
        assert_eq!(contributing_months(&next, up), 10);
        assert_eq!(split_calls(&[(3, 4), (0, 2)], 5), (4, 2));
    }
}
