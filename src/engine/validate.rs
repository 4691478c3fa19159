//! Field-by-field validation of JSON request bodies, shared by the engine's request parser and the API:
//! every problem is collected (with a did-you-mean for unknown fields), none stops the others.

use rust_decimal::Decimal;
use serde_json::{Map, Value};

use crate::engine::FieldError;

/// Collects every problem of a JSON request body, field by field, before anything is written.
#[derive(Default)]
pub struct Checker {
    pub errors: Vec<FieldError>,
}

impl Checker {
    pub fn err(&mut self, field: &str, message: impl Into<String>) {
        self.errors.push(FieldError { field: field.to_string(), message: message.into() });
    }

    pub fn unknown_fields(&mut self, prefix: &str, obj: &Map<String, Value>, allowed: &[&str]) {
        for k in obj.keys() {
            if !allowed.contains(&k.as_str()) {
                let hint = crate::rules::diag::did_you_mean(k, allowed.iter().copied())
                    .map(|s| format!(" (did you mean `{s}`?)"))
                    .unwrap_or_default();
                self.err(&format!("{prefix}{k}"), format!("unknown field{hint}"));
            }
        }
    }

    pub fn string<'a>(&mut self, field: &str, v: Option<&'a Value>) -> Option<&'a str> {
        match v {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => {
                self.err(field, "must be a string");
                None
            }
        }
    }

    pub fn boolean(&mut self, field: &str, v: Option<&Value>) -> Option<bool> {
        match v {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => {
                self.err(field, "must be true or false");
                None
            }
        }
    }

    /// A number, or a decimal string (normalised).
    pub fn decimal(&mut self, field: &str, v: Option<&Value>) -> Option<Decimal> {
        let text = match v {
            None | Some(Value::Null) => return None,
            Some(Value::Number(n)) => n.to_string(),
            Some(Value::String(s)) => s.trim().to_string(),
            Some(_) => {
                self.err(field, "must be a number");
                return None;
            }
        };
        let parsed = if text.contains(['e', 'E']) {
            Decimal::from_scientific(&text).ok().or_else(|| beyond_scale(&text))
        } else {
            text.parse::<Decimal>().ok()
        };
        match parsed {
            Some(d) => Some(d.normalize()),
            None => {
                self.err(field, format!("`{text}` is not a finite decimal number"));
                None
            }
        }
    }

    pub fn max_len(&mut self, field: &str, s: &str, max: usize) -> bool {
        if s.chars().count() > max {
            self.err(field, format!("must be at most {max} characters"));
            false
        } else {
            true
        }
    }

    /// A required or optional string with a length range (in characters).
    pub fn text(&mut self, obj: &Map<String, Value>, field: &str, required: bool, min: usize, max: usize) -> Option<String> {
        match self.string(field, obj.get(field)) {
            None => {
                if required && !self.errors.iter().any(|e| e.field == field) {
                    self.err(field, "is required");
                }
                None
            }
            Some(s) if s.chars().count() < min => {
                self.err(field, if min == 1 { "must not be empty".to_string() } else { format!("must be at least {min} characters") });
                None
            }
            Some(s) => self.max_len(field, s, max).then(|| s.to_string()),
        }
    }

    /// A caller's identifier: text without control characters (U+0000 to U+001F, U+007F to U+009F).
    pub fn identifier(&mut self, obj: &Map<String, Value>, field: &str, required: bool, min: usize, max: usize) -> Option<String> {
        let s = self.text(obj, field, required, min, max)?;
        if s.chars().any(char::is_control) {
            self.err(field, "must not contain control characters");
            return None;
        }
        Some(s)
    }

    /// A string that must be one of `values`.
    pub fn one_of(&mut self, obj: &Map<String, Value>, field: &str, required: bool, values: &[&str]) -> Option<String> {
        let s = self.text(obj, field, required, 0, 200)?;
        if values.contains(&s.as_str()) {
            return Some(s);
        }
        let hint =
            crate::rules::diag::did_you_mean(&s, values.iter().copied()).map(|x| format!("; did you mean `{x}`?")).unwrap_or_default();
        self.err(field, format!("`{s}` is not one of: {}{hint}", values.join(", ")));
        None
    }

    /// The body as an object, with unknown fields reported.
    pub fn object<'a>(&mut self, body: &'a Value, allowed: &[&str]) -> Option<&'a Map<String, Value>> {
        match body.as_object() {
            Some(obj) => {
                self.unknown_fields("", obj, allowed);
                Some(obj)
            }
            None => {
                self.err("body", "must be a JSON object");
                None
            }
        }
    }
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

    fn read(v: Value) -> Option<Decimal> {
        Checker::default().decimal("amount", Some(&v))
    }

    #[test]
    fn exponents_past_the_kept_places_are_cut_toward_zero() {
        // serde_json keeps the number's text (arbitrary_precision), as the wire sent it.
        let n = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        assert_eq!(read(n("5e-324")), Some(Decimal::ZERO));
        assert_eq!(read(n("9.99e-29")), Some(Decimal::ZERO));
        assert_eq!(read(n("1e-28")), Some("0.0000000000000000000000000001".parse().unwrap()));
        assert_eq!(read(n("1.00000000000000001e-28")), Some("0.0000000000000000000000000001".parse().unwrap()));
        assert_eq!(read(n("-2.5e-29")), Some(Decimal::ZERO));
        assert_eq!(read(json!("1.5e-3")), Some("0.0015".parse().unwrap()));
        assert_eq!(read(json!("1e-x")), None);
    }
}
