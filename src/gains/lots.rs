//! Cost-basis lots and the matching of a sell against them.
//!
//! A buy makes a lot whose basis is quantity × price plus the buy fee. A sell takes lots in the
//! order the caller gives them (oldest first for FIFO, newest first for LIFO, the one named for
//! specific ID) until its quantity is met; it never needs to see more lots than it consumes. A
//! partly consumed lot gives up its basis pro rata; a lot taken whole gives up exactly what is
//! left of it, so a lot's pieces always add up to its basis. Net proceeds (gross less the sell
//! fee) are shared across the pieces by quantity, the last piece taking the remainder.

use chrono::{DateTime, NaiveDate, Utc};
use rust_decimal::Decimal;

use super::holding::{holding, Term};

/// An open lot as the matcher sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct Lot {
    pub id: String,
    pub acquired_at: DateTime<Utc>,
    /// The first day of the holding period: the acquisition date, or earlier when a wash sale
    /// added the sold lot's holding period to this replacement (IRC §1223(3)).
    pub holding_start: NaiveDate,
    pub remaining_quantity: Decimal,
    pub remaining_basis: Decimal,
}

/// One lot's share of a sell.
#[derive(Clone, Debug, PartialEq)]
pub struct Consumed {
    pub lot_id: String,
    pub acquired_at: DateTime<Utc>,
    pub holding_start: NaiveDate,
    pub quantity: Decimal,
    pub cost_basis: Decimal,
    pub proceeds: Decimal,
    pub holding_days: i64,
    pub term: Term,
    /// What is left of the lot after this sell.
    pub lot_remaining_quantity: Decimal,
    pub lot_remaining_basis: Decimal,
}

impl Consumed {
    /// Gain (positive) or loss (negative) before any wash-sale adjustment.
    pub fn gain(&self) -> Decimal {
        self.proceeds - self.cost_basis
    }
}

/// The lots offered held less than the sell asks for.
#[derive(Clone, Debug, PartialEq)]
pub struct Shortfall {
    pub available: Decimal,
}

/// The share of `amount` that `part` of `whole` units carries (all of it when `part == whole`).
pub fn pro_rata(amount: Decimal, part: Decimal, whole: Decimal) -> Decimal {
    if part == whole || whole.is_zero() {
        amount
    } else {
        // Multiply first (exact while it fits), divide once.
        amount.checked_mul(part).and_then(|x| x.checked_div(whole)).unwrap_or_else(|| amount * (part / whole))
    }
}

/// Matches a sell of `quantity` for `net_proceeds` on `sold` against `lots`, in the order given.
pub fn match_sell<'a>(
    lots: impl IntoIterator<Item = &'a Lot>,
    quantity: Decimal,
    net_proceeds: Decimal,
    sold: NaiveDate,
    more_than_months: u32,
) -> Result<Vec<Consumed>, Shortfall> {
    let mut left = quantity;
    let mut proceeds_left = net_proceeds;
    let mut out = vec![];
    let mut available = Decimal::ZERO;
    for lot in lots {
        if left.is_zero() {
            break;
        }
        if lot.remaining_quantity <= Decimal::ZERO {
            continue;
        }
        available += lot.remaining_quantity;
        let take = left.min(lot.remaining_quantity);
        let cost_basis = pro_rata(lot.remaining_basis, take, lot.remaining_quantity);
        left -= take;
        let proceeds = if left.is_zero() { proceeds_left } else { pro_rata(net_proceeds, take, quantity) };
        proceeds_left -= proceeds;
        let (holding_days, term) = holding(lot.holding_start, sold, more_than_months);
        out.push(Consumed {
            lot_id: lot.id.clone(),
            acquired_at: lot.acquired_at,
            holding_start: lot.holding_start,
            quantity: take,
            cost_basis,
            proceeds,
            holding_days,
            term,
            lot_remaining_quantity: lot.remaining_quantity - take,
            lot_remaining_basis: lot.remaining_basis - cost_basis,
        });
    }
    if left.is_zero() {
        Ok(out)
    } else {
        Err(Shortfall { available })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    fn lot(id: &str, day: &str, q: Decimal, basis: Decimal) -> Lot {
        let at = DateTime::parse_from_rfc3339(&format!("{day}T12:00:00Z")).unwrap().with_timezone(&Utc);
        Lot { id: id.into(), acquired_at: at, holding_start: at.date_naive(), remaining_quantity: q, remaining_basis: basis }
    }

    fn day(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    // Lots: A 10 @ 100 + 10 fee = 1010; B 5 @ 120 + 0 = 600. Sell 12 @ 130 less 6 fee = 1554 net.
    // FIFO: A 10 units (basis 1010, proceeds 1554 × 10/12 = 1295) and B 2 units (basis 600 × 2/5
    // = 240, proceeds 1554 − 1295 = 259).
    #[test]
    fn fifo_partial_lot_and_fees() {
        let lots = [lot("A", "2025-01-10", dec!(10), dec!(1010)), lot("B", "2025-06-01", dec!(5), dec!(600))];
        let out = match_sell(lots.iter(), dec!(12), dec!(1554), day("2026-03-01"), 12).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!((out[0].quantity, out[0].cost_basis, out[0].proceeds, out[0].term), (dec!(10), dec!(1010), dec!(1295), Term::LongTerm));
        assert_eq!((out[1].quantity, out[1].cost_basis, out[1].proceeds, out[1].term), (dec!(2), dec!(240), dec!(259), Term::ShortTerm));
        assert_eq!((out[1].lot_remaining_quantity, out[1].lot_remaining_basis), (dec!(3), dec!(360)));
        assert_eq!(out[0].gain() + out[1].gain(), dec!(304));
    }

    #[test]
    fn shortfall_reports_what_was_held() {
        let lots = [lot("A", "2025-01-10", dec!(1.5), dec!(150))];
        assert_eq!(match_sell(lots.iter(), dec!(2), dec!(10), day("2025-02-01"), 12), Err(Shortfall { available: dec!(1.5) }));
    }

    #[test]
    fn thirds_add_back_to_the_whole() {
        let lots = [lot("A", "2025-01-10", dec!(3), dec!(100))];
        let mut left = lots[0].clone();
        let mut basis = Decimal::ZERO;
        for _ in 0..3 {
            let out = match_sell([&left], dec!(1), dec!(50), day("2025-02-01"), 12).unwrap();
            basis += out[0].cost_basis;
            left.remaining_quantity = out[0].lot_remaining_quantity;
            left.remaining_basis = out[0].lot_remaining_basis;
        }
        assert_eq!(basis, dec!(100));
        assert!(left.remaining_basis.is_zero());
    }
}
