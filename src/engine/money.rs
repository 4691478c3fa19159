//! Money: rust_decimal only; a tax leg is rounded once, to cents, half away from zero. Numbers are read from JSON
//! exactly, from their text.

use rust_decimal::{Decimal, RoundingStrategy};
use serde_json::Value;

pub fn cents(x: Decimal) -> Decimal {
    x.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero)
}

/// A money figure as every answer and report writes it: rounded to cents ([`cents`]) and kept at two places, so
/// that 66 reads 66.00 and 2.5 reads 2.50.
pub fn two_places(x: Decimal) -> Decimal {
    let mut c = cents(x);
    c.rescale(2);
    c
}

/// [`two_places`] as text: "2.50".
pub fn usd(x: Decimal) -> String {
    two_places(x).to_string()
}

/// The tax on `base` at `rate`, rounded once. Amounts are capped at 1e8 and rates at 1, so the
/// product fits easily; the checked form keeps a bad input from ever panicking.
pub fn tax(base: Decimal, rate: Decimal) -> Option<Decimal> {
    base.checked_mul(rate).map(cents)
}

/// The exact decimal of a JSON number (or decimal string), normalised: how every number of a request is read, never
/// through a binary float. `None` for anything else (the check refuses it).
pub fn exact(v: &Value) -> Option<Decimal> {
    match v {
        Value::Number(n) => decimal(&n.to_string()),
        Value::String(s) => decimal(s.trim()),
        _ => None,
    }
}

/// A decimal number's text (plain or in exponent form) as a decimal, normalised.
fn decimal(text: &str) -> Option<Decimal> {
    let parsed = if text.contains(['e', 'E']) {
        Decimal::from_scientific(text).ok().or_else(|| beyond_scale(text))
    } else {
        text.parse::<Decimal>().ok()
    };
    parsed.map(|d| d.normalize())
}

/// The most decimal places an amount keeps.
pub const MAX_SCALE: u32 = 28;

/// A finite number in exponent form with more decimal places than [`MAX_SCALE`] (`5e-324`, `1.25e-30`), cut
/// to that many toward zero: what the spec allows ("a number greater than 0") is read, not refused as
/// unreadable, and a bound is then checked on the value kept.
fn beyond_scale(text: &str) -> Option<Decimal> {
    let (mantissa, exponent) = text.split_once(['e', 'E'])?;
    let exponent: i64 = exponent.parse().ok()?;
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa.strip_prefix('+').unwrap_or(mantissa)),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() && frac.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) || !(-400..0).contains(&exponent) {
        return None;
    }
    // Move the point: the digits are int ++ frac, with the point `point` digits from the left.
    let digits = format!("{int}{frac}");
    let point = int.len() as i64 + exponent;
    let plain = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else {
        format!("{}.{}", &digits[..point as usize], &digits[point as usize..])
    };
    let (whole, places) = plain.split_once('.')?;
    let kept = &places[..places.len().min(MAX_SCALE as usize)];
    let value: Decimal = format!("{whole}.{}", if kept.is_empty() { "0" } else { kept }).parse().ok()?;
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn exponents_past_the_kept_places_are_cut_toward_zero() {
        // serde_json keeps the number's text (arbitrary_precision), as the wire sent it.
        let n = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        assert_eq!(exact(&n("5e-324")), Some(Decimal::ZERO));
        assert_eq!(exact(&n("9.99e-29")), Some(Decimal::ZERO));
        assert_eq!(exact(&n("1e-28")), Some("0.0000000000000000000000000001".parse().unwrap()));
        assert_eq!(exact(&n("1.00000000000000001e-28")), Some("0.0000000000000000000000000001".parse().unwrap()));
        assert_eq!(exact(&n("-2.5e-29")), Some(Decimal::ZERO));
        assert_eq!(exact(&json!("1.5e-3")), Some("0.0015".parse().unwrap()));
        assert_eq!(exact(&json!("1e-x")), None);
    }

    #[test]
    fn money_is_written_with_two_places_rounded_half_away_from_zero() {
        let d = |s: &str| s.parse::<Decimal>().unwrap();
        assert_eq!(usd(d("66")), "66.00");
        assert_eq!(usd(d("2.5")), "2.50");
        assert_eq!(usd(d("0.125")), "0.13");
        assert_eq!(usd(d("-0.125")), "-0.13");
        assert_eq!(usd(d("1.2349")), "1.23");
        assert_eq!(two_places(d("0")).to_string(), "0.00");
    }
}
