//! Wash sales (IRC §1091; Treas. Reg. §1.1091-1): a loss on stock or securities is disallowed when
//! substantially identical stock is acquired within the window (30 days) before or after the sale.
//! Here "substantially identical" means the same symbol. The disallowed loss moves into the
//! replacement shares' basis and the sold shares' holding period is added to theirs.
//!
//! Matching follows §1.1091-1(b)/(c): loss shares and replacement shares are paired in the
//! order of the sales and of the acquisitions, each share used once; when fewer replacement
//! shares than loss shares were bought, only that proportion of the loss is disallowed.

use chrono::{Days, NaiveDate};
use rust_decimal::Decimal;

use crate::rules::gains::WashSaleRule;

/// Whether the rule reaches an asset of this class (an omitted class is outside it).
pub fn applies(rule: &WashSaleRule, asset_class: Option<&str>) -> bool {
    asset_class.is_some_and(|c| rule.asset_classes.iter().any(|x| x == c))
}

/// Whether an acquisition on `acquired` falls in the window around a sale on `sold`.
pub fn in_window(rule: &WashSaleRule, sold: NaiveDate, acquired: NaiveDate) -> bool {
    (acquired - sold).num_days().abs() <= rule.window_days
}

/// The first and last acquisition dates that can replace a sale on `sold`.
pub fn window(rule: &WashSaleRule, sold: NaiveDate) -> (NaiveDate, NaiveDate) {
    let days = Days::new(rule.window_days.max(0) as u64);
    (sold.checked_sub_days(days).unwrap_or(NaiveDate::MIN), sold.checked_add_days(days).unwrap_or(NaiveDate::MAX))
}

/// Pairs loss quantities with replacement quantities, each in the order given, greedily.
/// Returns (loss index, replacement index, quantity) for every pairing.
pub fn allocate(losses: &[Decimal], replacements: &[Decimal]) -> Vec<(usize, usize, Decimal)> {
    let mut out = vec![];
    let mut avail: Vec<Decimal> = replacements.to_vec();
    let mut r = 0;
    for (i, &need) in losses.iter().enumerate() {
        let mut need = need;
        while need > Decimal::ZERO && r < avail.len() {
            let q = need.min(avail[r]);
            if q > Decimal::ZERO {
                out.push((i, r, q));
                need -= q;
                avail[r] -= q;
            }
            if avail[r].is_zero() {
                r += 1;
            }
        }
    }
    out
}

/// The replacement's holding period starts earlier by the days the sold shares were held.
pub fn tacked_start(replacement_acquired: NaiveDate, sold: NaiveDate, sold_holding_start: NaiveDate) -> NaiveDate {
    let held = (sold - sold_holding_start).num_days().max(0) as u64;
    replacement_acquired.checked_sub_days(Days::new(held)).unwrap_or(replacement_acquired)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    #[test]
    fn partial_replacement_pairs_in_order() {
        // 10 loss shares, replacements of 4 then 3: 7 shares washed, 3 keep their loss.
        assert_eq!(allocate(&[dec!(10)], &[dec!(4), dec!(3)]), vec![(0, 0, dec!(4)), (0, 1, dec!(3))]);
        // Two loss sales of 5 and one replacement of 8: the first sale fully, the second 3 of 5.
        assert_eq!(allocate(&[dec!(5), dec!(5)], &[dec!(8)]), vec![(0, 0, dec!(5)), (1, 0, dec!(3))]);
    }

    #[test]
    fn holding_period_is_tacked() {
        let d = |s: &str| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        // Sold shares held 2026-01-02 → 2026-03-01 (58 days); replacement bought 2026-03-10.
        assert_eq!(tacked_start(d("2026-03-10"), d("2026-03-01"), d("2026-01-02")), d("2026-01-11"));
    }
}
