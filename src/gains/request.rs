//! The trade request as the gains tracker takes it: the body of POST /api/v1/trades once the API has parsed it
//! (`api::trades::trade_request`), its quantities exact.

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;

use super::{EntityType, Method};

pub const TRADE_TYPES: [&str; 2] = ["buy", "sell"];
pub const MAX_QUANTITY: i64 = 1_000_000_000_000;
pub const MAX_PRICE: i64 = 1_000_000_000;
/// How far ahead of the server's clock a trade_date may be (clock skew), in seconds.
pub const FUTURE_SKEW_SECS: i64 = 300;

#[derive(Clone, Debug, PartialEq)]
pub struct TradeRequest {
    pub asset_symbol: String,
    pub is_sell: bool,
    pub quantity: Decimal,
    pub price_per_unit: Decimal,
    pub fee_amount: Decimal,
    /// The trade's time: as sent, or the server's time.
    pub trade_date: DateTime<Utc>,
    pub accounting_method: Method,
    pub specific_lot_id: Option<String>,
    pub asset_name: Option<String>,
    pub counterparty: Option<String>,
    pub exchange: Option<String>,
    pub notes: Option<String>,
    pub resident_state: Option<usize>,
    pub tax_entity_type: Option<EntityType>,
    pub filing_status: Option<usize>,
    pub estimated_annual_income: Option<Decimal>,
    pub asset_class: Option<String>,
}

impl TradeRequest {
    pub fn trade_type(&self) -> &'static str {
        if self.is_sell {
            "sell"
        } else {
            "buy"
        }
    }

    pub fn day(&self) -> NaiveDate {
        self.trade_date.date_naive()
    }

    /// Quantity × price, plus the fee for a buy (its basis) or less it for a sell (net proceeds).
    pub fn amount(&self) -> Decimal {
        let gross = self.quantity * self.price_per_unit;
        if self.is_sell {
            gross - self.fee_amount
        } else {
            gross + self.fee_amount
        }
    }
}

/// Parses `trade_date`: RFC 3339 (`2026-03-15T14:30:00Z`, any offset) or a bare date (midnight UTC).
pub fn parse_instant(s: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().filter(|_| s.len() == 10).and_then(|d| d.and_hms_opt(0, 0, 0)).map(|t| t.and_utc())
}
