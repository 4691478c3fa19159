//! Query and header parameters documented with the constraint the handler enforces, and read as text: the handler
//! checks the text against that same documented schema (`Param::checked`, `Param::check_into`, which tell every
//! parameter's problem at once), or, where its words say more (a did-you-mean, a lower-case state), by its own check.

use std::borrow::Cow;
use std::marker::PhantomData;

use poem_openapi::param::Query;
use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromParameter, ParseResult, Type};

use super::pattern::{
    AGENT_ID_PATTERN, CLAIM_TOKEN_PATTERN, EIN_LAST4_PATTERN, EIN_PATTERN, EMAIL_PATTERN, MONTH_PATTERN, NO_CONTROL_PATTERN,
    SYMBOL_PATTERN, WALLET_ADDRESS_PATTERN, ZIP_OR_EMPTY_PATTERN, ZIP_PATTERN,
};
use crate::listed_enum;
use crate::rules::schema as engine;

/// A parameter documented with `T`'s schema (its enum, pattern, range or format), taken as the text sent.
pub struct Param<T>(pub String, PhantomData<T>);

/// The text of an optional documented query parameter, for the handler to check.
pub fn text<T>(q: Query<Option<Param<T>>>) -> Query<Option<String>> {
    Query(q.0.map(|p| p.0))
}

/// An optional `state` query parameter (two letters, either case): its position in `STATES`, or an error in `errors`.
pub fn state_query(value: Option<&str>, errors: &mut Vec<String>) -> Option<usize> {
    let x = value?;
    let i = engine::state_index(&x.trim().to_ascii_uppercase());
    if i.is_none() {
        errors.push(format!("state: `{x}` is not a two-letter US state code or DC"));
    }
    i
}

/// An optional query parameter taking one of `values` (the first is the default), or an error in `errors`.
pub fn listed_query(name: &str, value: Option<&str>, values: &'static [&'static str], errors: &mut Vec<String>) -> &'static str {
    match value {
        None => values[0],
        Some(x) => values.iter().copied().find(|v| *v == x).unwrap_or_else(|| {
            errors.push(format!("{name}: `{x}` is not one of: {}", values.join(", ")));
            values[0]
        }),
    }
}

/// An optional `true` / `false` query parameter (default false), or an error in `errors`.
pub fn true_false_query(name: &str, value: Option<&str>, errors: &mut Vec<String>) -> bool {
    match value {
        None | Some("false") => false,
        Some("true") => true,
        Some(e) => {
            errors.push(format!("{name}: `{e}` is not true or false"));
            false
        }
    }
}

impl<T: Type + 'static> Param<T> {
    /// The text, when it keeps to `T`'s documented schema; else INVALID_INPUT naming the parameter `name`.
    pub fn checked(self, name: &str) -> Result<String, crate::api::error::ApiError> {
        let mut errors = Vec::new();
        let text = self.check_into(name, &mut errors);
        text.ok_or_else(|| crate::api::error::ApiError::invalid(errors))
    }

    /// As [`Param::checked`], for an integer parameter: its value (the check has read the text as a whole number
    /// within the documented range).
    pub fn checked_whole<N: std::str::FromStr>(self, name: &str) -> Result<N, crate::api::error::ApiError> {
        let text = self.checked(name)?;
        text.trim().parse().map_err(|_| crate::api::error::ApiError::field(name, "must be a whole number"))
    }

    /// As [`Param::checked`], with the problem added to `errors`, so that every parameter's is told at once.
    pub fn check_into(self, name: &str, errors: &mut Vec<String>) -> Option<String> {
        let problems = crate::api::conform::parameter::<T>(name, &self.0);
        errors.extend(problems.iter().map(|e| format!("{}: {}", e.field, e.message)));
        problems.is_empty().then_some(self.0)
    }
}

impl<T: Type> Type for Param<T> {
    const IS_REQUIRED: bool = true;
    type RawValueType = String;
    type RawElementValueType = String;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }

    fn as_raw_value(&self) -> Option<&String> {
        Some(&self.0)
    }

    fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a String> + 'a> {
        Box::new(std::iter::once(&self.0))
    }
}

impl<T: Type> ParseFromParameter for Param<T> {
    fn parse_from_parameter(value: &str) -> ParseResult<Self> {
        Ok(Param(value.to_string(), PhantomData))
    }
}

/// Declares a type whose schema is written out (an inline one: no entry under components). As a body field it
/// holds the JSON sent, which `api::conform` has checked against that schema before the typed parse.
macro_rules! documented {
    ($(#[doc = $doc:literal])* $name:ident => $schema:expr) => {
        $(#[doc = $doc])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name(pub serde_json::Value);

        impl $name {
            /// The value as text (a string schema's value; empty for any other).
            pub fn text(&self) -> &str {
                self.0.as_str().unwrap_or_default()
            }
        }

        // For field validators (`max_length`) on top of the type's own schema.
        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                self.text()
            }
        }

        impl Type for $name {
            $crate::raw_is_self!();

            fn name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn schema_ref() -> MetaSchemaRef {
                // The type's name travels with the schema (not into the document) for `api::conform`'s words.
                MetaSchemaRef::Inline(Box::new(MetaSchema { rust_typename: Some(stringify!($name)), ..$schema }))
            }

            fn register(_: &mut Registry) {}
        }

        impl poem_openapi::types::ParseFromJSON for $name {
            fn parse_from_json(value: Option<serde_json::Value>) -> ParseResult<Self> {
                Ok($name(value.unwrap_or_default()))
            }
        }

        impl poem_openapi::types::ToJSON for $name {
            fn to_json(&self) -> Option<serde_json::Value> {
                Some(self.0.clone())
            }
        }
    };
}

pub(crate) use documented;

fn strings(values: impl IntoIterator<Item = String>) -> MetaSchema {
    MetaSchema { enum_items: values.into_iter().map(serde_json::Value::String).collect(), ..MetaSchema::new("string") }
}

documented!(
    /// A state code as a query parameter: upper or lower case.
    StateParam => strings(engine::STATES.iter().map(|s| s.to_string()).chain(engine::STATES.iter().map(|s| s.to_ascii_lowercase())))
);

documented!(
    /// A state code (upper case, DC included) or empty.
    StateCodeOrEmpty => strings(std::iter::once(String::new()).chain(engine::STATES.iter().map(|s| s.to_string())))
);

documented!(
    /// A state code (upper or lower case) or empty.
    StateOrEmpty => strings(std::iter::once(String::new()).chain(engine::STATES.iter().map(|s| s.to_string())).chain(engine::STATES.iter().map(|s| s.to_ascii_lowercase())))
);

documented!(
    /// An ISO 8601 date (2026-01-31, from 00:00 UTC) or date-time (2026-01-31T12:00:00Z).
    DateOrDateTime => MetaSchema {
        any_of: vec![
            MetaSchemaRef::Inline(Box::new(MetaSchema { format: Some("date"), ..MetaSchema::new("string") })),
            MetaSchemaRef::Inline(Box::new(MetaSchema { format: Some("date-time"), ..MetaSchema::new("string") })),
        ],
        ..MetaSchema::ANY
    }
);

documented!(
    /// A filing period of 2000 to 2099: a month (YYYY-MM), a quarter (YYYY-Qn) or a year (YYYY).
    PeriodParam => MetaSchema { pattern: Some(r"^20\d{2}(-(0[1-9]|1[0-2])|-Q[1-4])?$".to_string()), ..MetaSchema::new("string") }
);

documented!(
    /// 1 to 255 visible ASCII characters (a UUID is a good choice); any other value is 400 IDEMPOTENCY_KEY_INVALID.
    IdempotencyKey => MetaSchema {
        min_length: Some(1),
        max_length: Some(crate::idempotency::MAX_KEY_LEN),
        pattern: Some(crate::idempotency::key_pattern()),
        ..MetaSchema::new("string")
    }
);

documented!(
    /// How many to return: 1 to 1000.
    PageLimit => MetaSchema { minimum: Some(1.0), maximum: Some(1000.0), format: Some("int64"), ..MetaSchema::new("integer") }
);

documented!(
    /// How many to skip: 0 or more.
    PageOffset => MetaSchema { minimum: Some(0.0), format: Some("int64"), ..MetaSchema::new("integer") }
);

documented!(
    /// A tax year from 2020 to 2030.
    TaxYear => MetaSchema { minimum: Some(2020.0), maximum: Some(2030.0), ..MetaSchema::new("integer") }
);

documented!(
    /// An asset symbol: 1 to 50 of A–Z a–z 0–9 . _ -.
    SymbolParam => MetaSchema {
        min_length: Some(1),
        max_length: Some(50),
        pattern: Some(SYMBOL_PATTERN.to_string()),
        ..MetaSchema::new("string")
    }
);

listed_enum!(
    /// compact, or full (the default).
    GainsFormat = ["full", "compact"]
);
listed_enum!(
    /// true or false.
    TrueFalse = ["true", "false"]
);

/// A map from state code (upper or lower case, DC included) to `T`: documented as an object whose properties are
/// the 51 codes in both cases and nothing else, which is what the service accepts.
pub struct StateMap<T>(pub std::collections::BTreeMap<String, T>);

impl<T: Type> Type for StateMap<T> {
    crate::raw_is_self!();

    fn name() -> Cow<'static, str> {
        format!("StateMap<{}>", T::name()).into()
    }

    fn schema_ref() -> MetaSchemaRef {
        let codes = engine::STATES.iter().map(|s| s.to_string()).chain(engine::STATES.iter().map(|s| s.to_ascii_lowercase()));
        let properties = codes.map(|c| (&*Box::leak(c.into_boxed_str()), T::schema_ref())).collect();
        // No other property: `api::document` closes request objects (additionalProperties false).
        MetaSchemaRef::Inline(Box::new(MetaSchema { rust_typename: Some("StateMap"), properties, ..MetaSchema::new("object") }))
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Type + poem_openapi::types::ParseFromJSON> poem_openapi::types::ParseFromJSON for StateMap<T> {
    fn parse_from_json(value: Option<serde_json::Value>) -> ParseResult<Self> {
        std::collections::BTreeMap::<String, T>::parse_from_json(value).map(StateMap).map_err(poem_openapi::types::ParseError::propagate)
    }
}

impl<T: Type + poem_openapi::types::ToJSON> poem_openapi::types::ToJSON for StateMap<T> {
    fn to_json(&self) -> Option<serde_json::Value> {
        self.0.to_json()
    }
}

documented!(
    /// An ISO 8601 calendar date (2026-03-01).
    IsoDate => MetaSchema { format: Some("date"), ..MetaSchema::new("string") }
);

documented!(
    /// A ZIP Code: 5 digits, or ZIP+4 (`55401-1234`).
    ZipParam => MetaSchema { pattern: Some(ZIP_PATTERN.to_string()), ..MetaSchema::new("string") }
);

/// What `ZIP_PATTERN` states.
pub use crate::postal::is_zip;

documented!(
    /// An EVM wallet address: `0x` and 40 hex digits, any case.
    WalletAddress => MetaSchema { pattern: Some(WALLET_ADDRESS_PATTERN.to_string()), ..MetaSchema::new("string") }
);

documented!(
    /// The chain a wallet pays on: a network x402 payments are taken on (`payments::x402::NETWORKS`).
    ChainName => strings(crate::payments::x402::NETWORKS.iter().map(|n| n.name.to_string()))
);

documented!(
    /// A product a plan is bought for: `tax` (calculate and ingest) or `gains` (the gains tracker's trades).
    ProductParam => strings(crate::billing::Product::ALL.iter().map(|p| p.id().to_string()))
);

documented!(
    /// A paid tier of GET /api/v1/pricing (the plans compiled into the service; one with a price on this server).
    PaidTier => strings(
        crate::plans::Plans::compiled_in(&Default::default(), &mut Default::default())
            .map(|p| p.tiers.into_iter().map(|t| t.id).filter(|id| id != crate::plans::DEFAULT_PLAN).collect::<Vec<_>>())
            .unwrap_or_default()
    )
);

documented!(
    /// A calendar month (UTC): `YYYY-MM`.
    MonthParam => MetaSchema { pattern: Some(MONTH_PATTERN.to_string()), ..MetaSchema::new("string") }
);

/// The highest page number the directory and the feed take.
pub const MAX_PAGE: u64 = 100_000;

documented!(
    /// A page number, from 1 (the first page) to 100000.
    PageNumber => MetaSchema { minimum: Some(1.0), maximum: Some(MAX_PAGE as f64), ..MetaSchema::new("integer") }
);

documented!(
    /// Free text, up to 200 characters.
    ShortText => MetaSchema { max_length: Some(200), ..MetaSchema::new("string") }
);

documented!(
    /// A network agent id: 1 to 200 of A–Z a–z 0–9 _ - . : @.
    AgentIdParam => MetaSchema {
        min_length: Some(1),
        max_length: Some(200),
        pattern: Some(AGENT_ID_PATTERN.to_string()),
        ..MetaSchema::new("string")
    }
);

documented!(
    /// The last four digits of an EIN (never the whole number).
    EinLast4 => MetaSchema { max_length: Some(4), pattern: Some(EIN_LAST4_PATTERN.to_string()), ..MetaSchema::new("string") }
);

documented!(
    /// A work type (compute, research, …) to keep; any other value is ignored, as if absent.
    WorkTypeFilter => MetaSchema::new("string")
);

documented!(
    /// How many users `per_user` lists at most: 1 to 5000 (the default).
    PerUserCap => MetaSchema { minimum: Some(1.0), maximum: Some(crate::partners::PER_USER_CAP as f64), ..MetaSchema::new("integer") }
);

documented!(
    /// A claim link's token: `clm_` and 64 lowercase hex characters.
    ClaimToken => MetaSchema { pattern: Some(CLAIM_TOKEN_PATTERN.to_string()), ..MetaSchema::new("string") }
);

documented!(
    /// An email address: one @, a local part, a dotted domain, no spaces; at most 320 characters.
    Email => MetaSchema { max_length: Some(320), pattern: Some(EMAIL_PATTERN.to_string()), ..MetaSchema::new("string") }
);

documented!(
    /// An EIN: nine digits (dashes allowed as 12-3456789), or empty.
    Ein => MetaSchema { pattern: Some(EIN_PATTERN.to_string()), ..MetaSchema::new("string") }
);

documented!(
    /// A ZIP Code (5 digits, or ZIP+4 as 55401-1234) or empty.
    ZipOrEmpty => MetaSchema { pattern: Some(ZIP_OR_EMPTY_PATTERN.to_string()), ..MetaSchema::new("string") }
);

documented!(
    /// A caller's reference: 1 to 200 characters, no control characters (U+0000–U+001F, U+007F–U+009F).
    Reference => MetaSchema {
        min_length: Some(1),
        max_length: Some(200),
        pattern: Some(NO_CONTROL_PATTERN.to_string()),
        ..MetaSchema::new("string")
    }
);

documented!(
    /// A partner's id for its user: 1 to 256 characters, no control characters (U+0000–U+001F, U+007F–U+009F).
    ExternalId => MetaSchema {
        min_length: Some(1),
        max_length: Some(256),
        pattern: Some(NO_CONTROL_PATTERN.to_string()),
        ..MetaSchema::new("string")
    }
);

documented!(
    /// A rate as a decimal from 0 to 1 (0.0625 is 6.25%), read exactly as sent.
    Rate => MetaSchema { minimum: Some(0.0), maximum: Some(1.0), ..MetaSchema::new("number") }
);

impl Rate {
    /// The rate, exactly as sent (`None` only for a value the check refuses).
    pub fn decimal(&self) -> Option<rust_decimal::Decimal> {
        exact(&self.0)
    }
}

pub use crate::engine::money::exact;

documented!(
    /// A quantity: greater than 0, at most 1000000000000, at most 8 decimal places (more is refused, never rounded). A decimal string is accepted.
    Quantity => MetaSchema {
        minimum: Some(0.00000001),
        maximum: Some(crate::gains::request::MAX_QUANTITY as f64),
        multiple_of: Some(0.00000001),
        ..MetaSchema::new("number")
    }
);

documented!(
    /// USD, greater than 0 and at most 100000000, read exactly as sent. A decimal string is accepted. Amounts keep 28
    /// decimal places (cut toward zero), so the smallest is 0.0000000000000000000000000001 (`engine::money::MAX_SCALE`).
    Amount => MetaSchema { minimum: Some(1e-28), maximum: Some(1e8), ..MetaSchema::new("number") }
);

documented!(
    /// USD, 0 or more, read exactly as sent. A decimal string is accepted.
    Dollars => MetaSchema { minimum: Some(0.0), ..MetaSchema::new("number") }
);

documented!(
    /// USD, 0 to 1000000000. A decimal string is accepted.
    Price => MetaSchema { minimum: Some(0.0), maximum: Some(crate::gains::request::MAX_PRICE as f64), ..MetaSchema::new("number") }
);

documented!(
    /// USD, 0 to 1000000000000000. A decimal string is accepted.
    Income => MetaSchema { minimum: Some(0.0), maximum: Some(1e15), ..MetaSchema::new("number") }
);
