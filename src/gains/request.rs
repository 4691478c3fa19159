//! The trade request (body of POST /api/v1/trades), validated field by field: every problem is
//! reported at once, unknown fields included, and nothing is rounded silently.

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;
use serde_json::{Map, Value};

use super::{exact_quantity, EntityType, Method};
use crate::engine::FieldError;
use crate::rules::schema::{state_index, ASSET_CLASSES, FILING_STATUSES};
use crate::validate::Checker;

pub const TRADE_FIELDS: &[&str] = &[
    "asset_symbol",
    "trade_type",
    "quantity",
    "price_per_unit",
    "fee_amount",
    "trade_date",
    "accounting_method",
    "specific_lot_id",
    "asset_name",
    "counterparty",
    "exchange",
    "notes",
    "resident_state",
    "tax_entity_type",
    "filing_status",
    "estimated_annual_income",
    "asset_class",
];

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

fn ranged(
    v: &mut Checker,
    obj: &Map<String, Value>,
    field: &str,
    required: bool,
    min: Decimal,
    max: Decimal,
    min_exclusive: bool,
) -> Option<Decimal> {
    let d = v.decimal(field, obj.get(field));
    let Some(d) = d else {
        if required && !v.errors.iter().any(|e| e.field == field) {
            v.err(field, "is required");
        }
        return None;
    };
    let low_ok = if min_exclusive { d > min } else { d >= min };
    if !low_ok || d > max {
        let low = if min_exclusive { format!("greater than {min}") } else { format!("at least {min}") };
        v.err(field, format!("must be {low} and at most {max}"));
        return None;
    }
    Some(d)
}

/// An asset symbol: 1 to 50 of A–Z a–z 0–9 . _ - (^[A-Za-z0-9._\-]{1,50}$).
pub fn is_symbol(s: &str) -> bool {
    (1..=50).contains(&s.len()) && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Parses `trade_date`: RFC 3339 (`2026-03-15T14:30:00Z`, any offset) or a bare date (midnight UTC).
pub fn parse_instant(s: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().filter(|_| s.len() == 10).and_then(|d| d.and_hms_opt(0, 0, 0)).map(|t| t.and_utc())
}

/// Validates a trade body; `now` supplies the default trade_date and the bound on future dates.
pub fn parse_trade(body: &Value, now: DateTime<Utc>) -> Result<TradeRequest, Vec<FieldError>> {
    let mut v = Checker::default();
    let Some(obj) = v.object(body, TRADE_FIELDS) else { return Err(v.errors) };

    let asset_symbol = v.text(obj, "asset_symbol", true, 1, 50).and_then(|s| {
        if is_symbol(&s) {
            Some(s.to_ascii_uppercase())
        } else {
            v.err("asset_symbol", "may hold only letters, digits, `.`, `_` and `-` (pattern ^[A-Za-z0-9._\\-]{1,50}$)");
            None
        }
    });
    let trade_type = v.one_of(obj, "trade_type", true, &TRADE_TYPES);
    let quantity =
        ranged(&mut v, obj, "quantity", true, Decimal::ZERO, Decimal::from(MAX_QUANTITY), true).and_then(|q| match exact_quantity(q) {
            Some(q) => Some(q),
            None => {
                v.err("quantity", format!("`{q}` has more than 8 decimal places; quantities are kept exactly and never rounded"));
                None
            }
        });
    let price = ranged(&mut v, obj, "price_per_unit", true, Decimal::ZERO, Decimal::from(MAX_PRICE), false);
    let fee = ranged(&mut v, obj, "fee_amount", false, Decimal::ZERO, Decimal::from(MAX_PRICE), false);
    let trade_date = match v.string("trade_date", obj.get("trade_date")) {
        None => Some(now),
        Some(s) => match parse_instant(s) {
            Some(t) if (t - now).num_seconds() > FUTURE_SKEW_SECS => {
                v.err("trade_date", format!("`{s}` is in the future; record a trade once it has happened"));
                None
            }
            Some(t) => Some(t),
            None => {
                v.err("trade_date", format!("`{s}` is not an ISO 8601 date-time such as 2026-03-15T14:30:00Z"));
                None
            }
        },
    };
    let method = v.one_of(obj, "accounting_method", false, &Method::NAMES).and_then(|m| Method::parse(&m));
    let lot_id = v.text(obj, "specific_lot_id", false, 1, 100);
    let asset_name = v.text(obj, "asset_name", false, 0, 200);
    let counterparty = v.text(obj, "counterparty", false, 0, 200);
    let exchange = v.text(obj, "exchange", false, 0, 200);
    let notes = v.text(obj, "notes", false, 0, 1000);
    let resident_state = v.text(obj, "resident_state", false, 0, 200).and_then(|s| match state_index(&s.to_ascii_uppercase()) {
        Some(i) => Some(i),
        None => {
            v.err("resident_state", format!("`{s}` is not a state code (50 states and DC)"));
            None
        }
    });
    let entity = v.one_of(obj, "tax_entity_type", false, &EntityType::NAMES).and_then(|e| EntityType::parse(&e));
    let filing_status = v.one_of(obj, "filing_status", false, &FILING_STATUSES).and_then(|s| FILING_STATUSES.iter().position(|x| *x == s));
    let income =
        ranged(&mut v, obj, "estimated_annual_income", false, Decimal::ZERO, Decimal::from(MAX_QUANTITY) * Decimal::from(1000), false);
    let asset_class = v.one_of(obj, "asset_class", false, &ASSET_CLASSES);

    let is_sell = trade_type.as_deref() == Some("sell");
    let method_given = obj.get("accounting_method").is_some_and(|m| !m.is_null());
    if trade_type.as_deref() == Some("buy") && method_given {
        v.err("accounting_method", "applies to sells only; a buy always makes a new lot");
    }
    match (method, &lot_id) {
        (Some(Method::SpecificId), None) if is_sell && !v.errors.iter().any(|e| e.field == "specific_lot_id") => {
            v.err("specific_lot_id", "is required when accounting_method is specific_id")
        }
        (m, Some(_)) if m != Some(Method::SpecificId) && !(m.is_none() && method_given) => {
            v.err("specific_lot_id", "is used only with accounting_method specific_id on a sell")
        }
        _ => {}
    }

    if !v.errors.is_empty() {
        return Err(v.errors);
    }
    match (asset_symbol, quantity, price, trade_date) {
        (Some(asset_symbol), Some(quantity), Some(price_per_unit), Some(trade_date)) => Ok(TradeRequest {
            asset_symbol,
            is_sell,
            quantity,
            price_per_unit,
            fee_amount: fee.unwrap_or(Decimal::ZERO),
            trade_date,
            accounting_method: method.unwrap_or(Method::Fifo),
            specific_lot_id: lot_id,
            asset_name,
            counterparty,
            exchange,
            notes,
            resident_state,
            tax_entity_type: entity,
            filing_status,
            estimated_annual_income: income,
            asset_class,
        }),
        _ => Err(vec![FieldError { field: "body".into(), message: "is not a valid trade".into() }]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> DateTime<Utc> {
        parse_instant("2026-11-21T10:00:00Z").unwrap()
    }

    fn fields(body: Value) -> Vec<String> {
        parse_trade(&body, now()).unwrap_err().into_iter().map(|e| e.field).collect()
    }

    #[test]
    fn normalises_and_defaults() {
        let t = parse_trade(&json!({"asset_symbol": "btc", "trade_type": "buy", "quantity": "0.50000000", "price_per_unit": 60000}), now())
            .unwrap();
        assert_eq!(
            (t.asset_symbol.as_str(), t.quantity.to_string().as_str(), t.trade_date, t.accounting_method),
            ("BTC", "0.5", now(), Method::Fifo)
        );
    }

    #[test]
    fn every_problem_is_named() {
        let f = fields(
            json!({"asset_symbol": "BT C", "trade_type": "hold", "quantity": 0.123456789, "price_per_unit": -1, "colour": 1, "trade_date": "2027-01-01T00:00:00Z"}),
        );
        assert_eq!(f, ["colour", "asset_symbol", "trade_type", "quantity", "price_per_unit", "trade_date"]);
        assert_eq!(
            fields(
                json!({"asset_symbol": "X", "trade_type": "sell", "quantity": 1, "price_per_unit": 1, "accounting_method": "specific_id"})
            ),
            ["specific_lot_id"]
        );
        assert_eq!(
            fields(json!({"asset_symbol": "X", "trade_type": "sell", "quantity": 1, "price_per_unit": 1, "specific_lot_id": "lot_1"})),
            ["specific_lot_id"]
        );
        assert_eq!(fields(json!({"asset_symbol": "X", "trade_type": "sell", "quantity": 1e13, "price_per_unit": 1})), ["quantity"]);
    }
}
