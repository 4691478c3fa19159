//! Exact numbers in responses. Money keeps its cents (66.00, not 66.0) and a rate its digits (0.0825), as the
//! engine computed them in decimal: the JSON number is written from the decimal's own text, never through a
//! float. Read back (`ParseFromJSON`), each takes any JSON number and keeps its text, so a body parsed into its
//! response type and written again comes out byte for byte the same (the renderer's test relies on it).

use std::borrow::Cow;

use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseError, ParseFromJSON, ParseResult, ToJSON, Type};
use rust_decimal::Decimal;
use serde_json::{Number, Value};

macro_rules! exact_number {
    ($(#[doc = $doc:literal])* $name:ident) => {
        $(#[doc = $doc])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name(pub Number);

        impl Type for $name {
            $crate::raw_is_self!();

            fn name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn schema_ref() -> MetaSchemaRef {
                MetaSchemaRef::Inline(Box::new(MetaSchema { rust_typename: Some(stringify!($name)), ..MetaSchema::new("number") }))
            }

            fn register(_: &mut Registry) {}
        }

        impl ParseFromJSON for $name {
            fn parse_from_json(value: Option<Value>) -> ParseResult<Self> {
                match value.unwrap_or_default() {
                    Value::Number(n) => Ok($name(n)),
                    other => Err(ParseError::expected_type(other)),
                }
            }
        }

        impl ToJSON for $name {
            fn to_json(&self) -> Option<Value> {
                Some(Value::Number(self.0.clone()))
            }
        }
    };
}

exact_number!(
    /// USD with exactly two decimals, rounded half away from zero to cents.
    Usd
);
exact_number!(
    /// A rate as a fraction (0.0825 is 8.25%), exactly its digits, no trailing zeros.
    Fraction
);
exact_number!(
    /// A decimal, exactly its digits (an amount as sent, a quantity, a percentage).
    Exact
);

/// The JSON number of a decimal's text (serde_json keeps the digits: its `arbitrary_precision` feature).
fn number(d: Decimal) -> Number {
    d.to_string().parse().unwrap_or_else(|_| Number::from(0))
}

impl Usd {
    /// Money, rounded to cents and written with both decimals.
    pub fn cents(d: Decimal) -> Usd {
        Usd(number(crate::engine::money::two_places(d)))
    }
}

impl Fraction {
    /// A rate without trailing zeros.
    pub fn of(d: Decimal) -> Fraction {
        Fraction(number(d.normalize()))
    }
}

impl Exact {
    /// A decimal as it is (its scale kept: 100.50 stays 100.50).
    pub fn of(d: Decimal) -> Exact {
        Exact(number(d))
    }

    /// A decimal without trailing zeros.
    pub fn normalized(d: Decimal) -> Exact {
        Exact(number(d.normalize()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(v: impl ToJSON) -> String {
        v.to_json().unwrap_or_default().to_string()
    }

    #[test]
    fn numbers_keep_their_digits() {
        let d = |s: &str| s.parse::<Decimal>().unwrap();
        assert_eq!(text(Usd::cents(d("66"))), "66.00");
        assert_eq!(text(Usd::cents(d("6.625"))), "6.63");
        assert_eq!(text(Usd::cents(d("-6.625"))), "-6.63");
        assert_eq!(text(Usd::cents(d("2000"))), "2000.00");
        assert_eq!(text(Fraction::of(d("0.08250"))), "0.0825");
        assert_eq!(text(Fraction::of(d("0"))), "0");
        assert_eq!(text(Exact::of(d("100.50"))), "100.50");
        assert_eq!(text(Exact::normalized(d("80.00"))), "80");
        assert_eq!(text(Exact::of(d("79228162514264337593543950335"))), "79228162514264337593543950335");
        // Read back and written again, the text is the same.
        let back = Usd::parse_from_json(Some(serde_json::from_str("1000.00").unwrap())).unwrap();
        assert_eq!(text(back), "1000.00");
        assert!(Usd::parse_from_json(Some(Value::String("1.00".into()))).is_err());
    }
}
