//! The patterns the document states for string fields and parameters, each beside what a value that does not match
//! it is told (`api::conform` reads the words by the pattern's text; `{}` is the value).

/// The pattern of a ZIP Code query parameter, 5 digits or ZIP+4 (documented, and checked by `is_zip`).
pub const ZIP_PATTERN: &str = "^[0-9]{5}(-[0-9]{4})?$";

/// A ZIP Code or empty: a body field that may be left blank (calculate's buyer_zip, seller_zip).
pub const ZIP_OR_EMPTY_PATTERN: &str = "^([0-9]{5}(-[0-9]{4})?)?$";

/// An EVM wallet address: `0x` and 40 hex digits, any case (compared case-insensitively).
pub const WALLET_ADDRESS_PATTERN: &str = "^0x[0-9a-fA-F]{40}$";

/// The pattern of a calendar month, `YYYY-MM`.
pub const MONTH_PATTERN: &str = "^[0-9]{4}-(0[1-9]|1[0-2])$";

/// The pattern of an agent id (a network profile's, a counterparty's): letters, digits and _ - . : @.
pub const AGENT_ID_PATTERN: &str = r"^[A-Za-z0-9_\-.:@]+$";

/// The pattern of an EIN's last four digits.
pub const EIN_LAST4_PATTERN: &str = r"^[0-9]{4}$";

/// The pattern of a claim token: `clm_` and 64 lowercase hex characters.
pub const CLAIM_TOKEN_PATTERN: &str = "^clm_[0-9a-f]{64}$";

/// The pattern of an email address: one @, a local part, a dotted domain, no spaces.
pub const EMAIL_PATTERN: &str = r"^[^@\s\u0085]+@[^@\s\u0085.][^@\s\u0085]*\.[^@\s\u0085]*[^@\s\u0085.]$";

/// The pattern of an EIN: nine digits, or two, a dash and seven; or empty.
pub const EIN_PATTERN: &str = r"^([0-9]{9}|[0-9]{2}-[0-9]{7})?$";

/// The pattern of a caller's identifier: no control characters (U+0000 to U+001F, U+007F to U+009F).
pub const NO_CONTROL_PATTERN: &str = r"^[^\u0000-\u001F\u007F-\u009F]*$";

/// An asset symbol: 1 to 50 of A–Z a–z 0–9 . _ -.
pub const SYMBOL_PATTERN: &str = r"^[A-Za-z0-9._\-]{1,50}$";

/// Each pattern and its words.
const WORDS: [(&str, &str); 11] = [
    (ZIP_PATTERN, "`{}` is not a ZIP Code (5 digits, or ZIP+4 as 55401-1234)"),
    (ZIP_OR_EMPTY_PATTERN, "`{}` is not a ZIP Code (5 digits, or ZIP+4 as 55401-1234) or empty"),
    (WALLET_ADDRESS_PATTERN, "`{}` is not a wallet address: 0x and 40 hex digits expected"),
    (MONTH_PATTERN, "`{}` is not a month (YYYY-MM)"),
    (AGENT_ID_PATTERN, "may contain only letters, digits and _ - . : @"),
    (EIN_LAST4_PATTERN, "must be the last 4 digits of the EIN (never the whole number)"),
    (CLAIM_TOKEN_PATTERN, "is not a claim token"),
    (EMAIL_PATTERN, "`{}` is not an email address"),
    (EIN_PATTERN, "must be 9 digits (12-3456789 or 123456789)"),
    (NO_CONTROL_PATTERN, "must not contain control characters"),
    (SYMBOL_PATTERN, "may hold only letters, digits, `.`, `_` and `-`"),
];

/// What a value that does not match `pattern` is told, if the pattern is one of these.
pub fn words(pattern: &str) -> Option<&'static str> {
    WORDS.iter().find(|(p, _)| *p == pattern).map(|(_, w)| *w)
}
