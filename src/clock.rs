//! The service's clock: the system clock in production, a settable one in tests
//! (rate windows, 24-hour idempotency, session expiry, tax years).

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, TimeZone, Utc};

#[derive(Clone, Default)]
pub struct Clock {
    /// Unix milliseconds to report instead of the system time; `None` means the system clock.
    fixed: Option<Arc<AtomicI64>>,
}

impl Clock {
    pub fn system() -> Self {
        Clock { fixed: None }
    }

    /// A clock that stands still at `at` until moved with [`Clock::set`] or [`Clock::advance_ms`].
    pub fn fixed(at: DateTime<Utc>) -> Self {
        Clock { fixed: Some(Arc::new(AtomicI64::new(at.timestamp_millis()))) }
    }

    pub fn now_ms(&self) -> i64 {
        match &self.fixed {
            Some(ms) => ms.load(Ordering::SeqCst),
            None => Utc::now().timestamp_millis(),
        }
    }

    pub fn now(&self) -> DateTime<Utc> {
        Utc.timestamp_millis_opt(self.now_ms()).single().unwrap_or_else(Utc::now)
    }

    pub fn set(&self, at: DateTime<Utc>) {
        if let Some(ms) = &self.fixed {
            ms.store(at.timestamp_millis(), Ordering::SeqCst);
        }
    }

    pub fn advance_ms(&self, by: i64) {
        if let Some(ms) = &self.fixed {
            ms.fetch_add(by, Ordering::SeqCst);
        }
    }
}

/// An instant in Unix milliseconds as RFC 3339 UTC with milliseconds (`2026-11-21T10:00:00.000Z`).
pub fn iso(ms: i64) -> String {
    chrono::DateTime::<chrono::Utc>::from_timestamp_millis(ms).unwrap_or_default().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The UTC date of an instant in Unix milliseconds.
pub fn utc_date(ms: i64) -> NaiveDate {
    DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default().date_naive()
}

/// The first millisecond (Unix) of a UTC date.
pub fn day_start_ms(day: NaiveDate) -> i64 {
    day.and_hms_opt(0, 0, 0).map_or(0, |t| t.and_utc().timestamp_millis())
}
