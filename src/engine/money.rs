//! Money: rust_decimal only; a tax leg is rounded once, to cents, half away from zero.

use rust_decimal::{Decimal, RoundingStrategy};

pub fn cents(x: Decimal) -> Decimal {
    x.round_dp_with_strategy(2, RoundingStrategy::MidpointAwayFromZero)
}

/// The tax on `base` at `rate`, rounded once. Amounts are capped at 1e8 and rates at 1, so the
/// product fits easily; the checked form keeps a bad input from ever panicking.
pub fn tax(base: Decimal, rate: Decimal) -> Option<Decimal> {
    base.checked_mul(rate).map(cents)
}
