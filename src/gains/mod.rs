//! The gains tracker's accounting: cost-basis lots and their matching (FIFO, LIFO, specific ID),
//! holding periods, wash sales (IRC §1091), federal and state estimates, and the draft Form
//! 1099-DA. Pure functions over values and the rule data in rules/gains/: no HTTP, no database.
//!
//! Money is `rust_decimal` at full precision throughout; a figure is rounded to cents only where
//! it is reported, and a reported total is the sum of the reported figures it totals.

pub mod estimate;
pub mod form1099da;
pub mod holding;
pub mod lots;
pub mod request;
pub mod wash;

use rust_decimal::Decimal;

pub use holding::{holding, Term};
pub use lots::{match_sell, Consumed, Lot, Shortfall};
pub use request::TradeRequest;

/// Quantities keep exactly this many decimal places.
pub const QUANTITY_DP: u32 = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    Fifo,
    Lifo,
    SpecificId,
}

impl Method {
    pub const NAMES: [&'static str; 3] = ["fifo", "lifo", "specific_id"];

    pub fn parse(s: &str) -> Option<Method> {
        match s {
            "fifo" => Some(Method::Fifo),
            "lifo" => Some(Method::Lifo),
            "specific_id" => Some(Method::SpecificId),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntityType {
    Individual,
    CCorp,
    PassThrough,
}

impl EntityType {
    pub const NAMES: [&'static str; 3] = ["individual", "c_corp", "pass_through"];

    pub fn parse(s: &str) -> Option<EntityType> {
        Self::NAMES.iter().position(|n| *n == s).map(|i| [EntityType::Individual, EntityType::CCorp, EntityType::PassThrough][i])
    }

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// A quantity as written, in units of 10^-8: `None` when it has more than 8 decimal places.
pub fn exact_quantity(q: Decimal) -> Option<Decimal> {
    let n = q.normalize();
    (n.scale() <= QUANTITY_DP).then_some(n)
}

/// A quantity for display, always with its 8 decimal places (`"0.50000000"`).
pub fn quantity_text(q: Decimal) -> String {
    let mut x = q.normalize();
    x.rescale(QUANTITY_DP);
    x.to_string()
}
