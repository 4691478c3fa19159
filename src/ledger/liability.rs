//! What a ledger row owes and where: its sales, taxable and exempt by reason, and its tax by jurisdiction (the
//! state, each local tax, each special tax), each jurisdiction's part in cents so that the parts add up to the
//! row's tax. Decided once, when the row is recorded, and kept with it: the liability report adds these up, and a
//! refund takes its share of them.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::engine::determine::{Determination, FinalDetermination};
use crate::engine::money::cents;
use crate::engine::Role;

/// Why a part of a sale owes no tax, in the words of a return's deductions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// Not taxable by its category in the state (or the exempt share of a partly taxable one, or a local tax that
    /// does not reach the category).
    NotTaxable,
    /// Exempt because the buyer is a business (the rule that decided it reads `is_b2b`).
    B2bExemption,
    /// The buyer gave an exemption certificate.
    ExemptionCertificate,
    /// A marketplace facilitator collects and remits the tax.
    MarketplaceFacilitator,
    /// The seller has no nexus in the state.
    NoNexus,
    /// The buyer's seller collected the tax (a purchase with no use tax due).
    SellerCollected,
    /// Outside the sales tax altogether (the category is taxed otherwise, or not at all).
    OutsideSalesTax,
    /// Recorded before the ledger kept liabilities: only its totals are known.
    NotItemized,
}

impl Reason {
    pub const ALL: [Reason; 8] = [
        Reason::NotTaxable,
        Reason::B2bExemption,
        Reason::ExemptionCertificate,
        Reason::MarketplaceFacilitator,
        Reason::NoNexus,
        Reason::SellerCollected,
        Reason::OutsideSalesTax,
        Reason::NotItemized,
    ];

    pub fn id(self) -> &'static str {
        match self {
            Reason::NotTaxable => "not_taxable",
            Reason::B2bExemption => "b2b_exemption",
            Reason::ExemptionCertificate => "exemption_certificate",
            Reason::MarketplaceFacilitator => "marketplace_facilitator",
            Reason::NoNexus => "no_nexus",
            Reason::SellerCollected => "seller_collected",
            Reason::OutsideSalesTax => "outside_sales_tax",
            Reason::NotItemized => "not_itemized",
        }
    }
}

/// One jurisdiction's part of a row.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Line {
    /// The state's code (`TX`), a local tax's id in the rule files (`tx.austin`), or a special tax's id.
    pub id: String,
    /// `state`, a local level (`county`, `city`, `special_district`, …) or `special`.
    pub level: String,
    pub name: String,
    /// The sales sourced to it.
    pub gross: Decimal,
    /// The part of `gross` it taxes.
    pub taxable: Decimal,
    /// The rest of `gross`, by reason.
    pub exempt: BTreeMap<Reason, Decimal>,
    /// Its tax, in cents.
    pub tax: Decimal,
}

/// What a row owes: the state's line first, then each local and special tax's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Liability {
    pub lines: Vec<Line>,
    /// Whether the row counted toward the state's economic-nexus threshold (a void takes it back out).
    pub nexus: bool,
}

impl Liability {
    /// The row's tax: its lines' sum.
    pub fn tax(&self) -> Decimal {
        self.lines.iter().map(|l| l.tax).sum()
    }

    /// The state's line (the row's sales as a return counts them), if the row has one.
    pub fn state(&self) -> Option<&Line> {
        self.lines.first().filter(|l| l.level == "state")
    }

    /// The liability a row keeps (`text`, its `liability` column), or, for a row recorded before liabilities were
    /// kept, its totals (its `amount` and `total_tax` columns).
    pub fn kept(text: Option<&str>, state: &str, amount: &str, total_tax: &str) -> Liability {
        text.and_then(|t| serde_json::from_str(t).ok()).unwrap_or_else(|| {
            let d = |t: &str| t.parse::<Decimal>().unwrap_or_default();
            Liability::from_totals(state, d(amount), d(total_tax))
        })
    }

    /// A row recorded before liabilities were kept: its sales and tax at the state, taxable when it owed tax.
    fn from_totals(state: &str, amount: Decimal, tax: Decimal) -> Liability {
        let (taxable, exempt) =
            if tax.is_zero() { (Decimal::ZERO, BTreeMap::from([(Reason::NotItemized, amount)])) } else { (amount, BTreeMap::new()) };
        let line = Line { id: state.to_string(), level: "state".into(), name: state.to_string(), gross: amount, taxable, exempt, tax };
        Liability { lines: vec![line], nexus: false }
    }

    /// What a determination owes, by jurisdiction.
    pub fn of(det: &Determination) -> Liability {
        let gross = det.amount;
        // A reason that covers the whole sale, or None when the legs decide.
        let whole = match (&det.final_determination, det.role) {
            (FinalDetermination::ExemptionCertificate, _) => Some(Reason::ExemptionCertificate),
            (FinalDetermination::OutsideSalesTax, _) => Some(Reason::OutsideSalesTax),
            (FinalDetermination::NoNexus, _) => Some(Reason::NoNexus),
            _ if det.collected_by_marketplace => Some(Reason::MarketplaceFacilitator),
            (_, Role::Buyer) if det.seller_remitting == Some(true) => Some(Reason::SellerCollected),
            _ => None,
        };
        // Each line's sales, split by the legs: `applies(leg)` says whether the line's rate reached a taxable leg.
        let split = |applies: &dyn Fn(&crate::engine::determine::Leg) -> bool| -> (Decimal, BTreeMap<Reason, Decimal>) {
            let mut exempt = BTreeMap::new();
            if let Some(r) = whole {
                exempt.insert(r, gross);
                return (Decimal::ZERO, exempt);
            }
            let mut taxable = Decimal::ZERO;
            for leg in &det.legs {
                let taxed = if leg.result.is_taxable() && applies(leg) { leg.taxable_amount } else { Decimal::ZERO };
                taxable += taxed;
                let rest = leg.amount - taxed;
                if rest > Decimal::ZERO {
                    let reason = if !leg.result.is_taxable() && leg.reads_b2b { Reason::B2bExemption } else { Reason::NotTaxable };
                    *exempt.entry(reason).or_insert(Decimal::ZERO) += rest;
                }
            }
            (taxable, exempt)
        };
        let mut lines = Vec::new();
        let mut weights = Vec::new();
        let (taxable, exempt) = split(&|l| !l.state_rate.is_zero());
        weights.push(det.legs.iter().filter(|l| l.result.is_taxable()).map(|l| l.taxable_amount * l.state_rate).sum());
        lines.push(Line {
            id: det.buyer_state.to_string(),
            level: "state".into(),
            name: det.buyer_state_name.clone(),
            gross,
            taxable,
            exempt,
            tax: Decimal::ZERO,
        });
        // Every local tax reaches the same legs: the local rate applies to a leg or not.
        let (local_taxable, local_exempt) = split(&|l| !l.local_rate.is_zero());
        for layer in &det.layers {
            let (taxable, exempt) = (local_taxable, local_exempt.clone());
            weights.push(
                det.legs.iter().filter(|l| l.result.is_taxable() && !l.local_rate.is_zero()).map(|l| l.taxable_amount * layer.rate).sum(),
            );
            lines.push(Line {
                id: layer.id.clone(),
                level: layer.level.clone(),
                name: layer.name.clone(),
                gross,
                taxable,
                exempt,
                tax: Decimal::ZERO,
            });
        }
        // The sales and use tax owed (special taxes apart) shared by the rates that made it.
        let special: Decimal = det.special.iter().map(|s| s.tax).sum();
        let own = cents(det.total_tax - special).max(Decimal::ZERO);
        for (line, part) in lines.iter_mut().zip(apportion(own, &weights)) {
            line.tax = part;
        }
        let owed = det.total_tax > Decimal::ZERO;
        for s in &det.special {
            let taxable = if owed && !s.tax.is_zero() { gross } else { Decimal::ZERO };
            let mut exempt = BTreeMap::new();
            if taxable.is_zero() {
                exempt.insert(whole.unwrap_or(Reason::NotTaxable), gross);
            }
            let tax = if owed { s.tax } else { Decimal::ZERO };
            lines.push(Line { id: s.id.clone(), level: "special".into(), name: s.name.clone(), gross, taxable, exempt, tax });
        }
        let nexus = det.role == Role::Seller && det.counts_toward_nexus_threshold != Some(false);
        Liability { lines, nexus }
    }
}

/// Why a refund cannot be made as asked: the field at fault and what is wrong, in words.
#[derive(Clone, Debug, PartialEq)]
pub struct RefundProblem {
    pub field: &'static str,
    pub message: String,
}

fn problem(field: &'static str, message: String) -> RefundProblem {
    RefundProblem { field, message }
}

/// What is left of one line after the refunds so far (the original's figures plus the refunds', which are
/// negative).
fn left(line: &Line, prior: &[Liability]) -> Line {
    let mut l = line.clone();
    for r in prior.iter().flat_map(|p| p.lines.iter()).filter(|r| r.id == line.id) {
        l.gross += r.gross;
        l.taxable += r.taxable;
        l.tax += r.tax;
        for (reason, x) in &r.exempt {
            *l.exempt.entry(*reason).or_insert(Decimal::ZERO) += *x;
        }
    }
    l
}

impl Liability {
    /// What is left to refund of each line after `prior` refunds.
    pub fn remaining(&self, prior: &[Liability]) -> Vec<Line> {
        self.lines.iter().map(|l| left(l, prior)).collect()
    }

    /// The refund of `amount` of the sale (all that is left when `None`) on the lines named (every line when
    /// `None`), after `prior` refunds: negative figures, each line's tax its share of the line's tax in proportion to
    /// the amount, the lines' parts apportioned to the cent; a line refunded to its end gives back exactly what it
    /// has left.
    pub fn refund(&self, prior: &[Liability], amount: Option<Decimal>, lines: Option<&[String]>) -> Result<Liability, RefundProblem> {
        let remaining = self.remaining(prior);
        let chosen: Vec<usize> = match lines {
            None => (0..self.lines.len()).collect(),
            Some(ids) => {
                let mut chosen = Vec::new();
                for id in ids {
                    match self.lines.iter().position(|l| l.id == *id) {
                        Some(i) if !chosen.contains(&i) => chosen.push(i),
                        Some(_) => {}
                        None => {
                            let known: Vec<&str> = self.lines.iter().map(|l| l.id.as_str()).collect();
                            return Err(problem(
                                "tax_lines",
                                format!("`{id}` is not a jurisdiction of this transaction: {}", known.join(", ")),
                            ));
                        }
                    }
                }
                chosen
            }
        };
        if chosen.is_empty() {
            return Err(problem("tax_lines", "names no jurisdiction; leave it out to refund every one".into()));
        }
        let most = chosen.iter().map(|&i| remaining[i].gross).max().unwrap_or_default();
        if most <= Decimal::ZERO {
            return Err(problem("amount", "nothing remains to refund of this transaction (remaining 0.00)".into()));
        }
        if let Some(a) = amount {
            let least = chosen.iter().map(|&i| remaining[i].gross).min().unwrap_or_default();
            let tax: Decimal = chosen.iter().map(|&i| remaining[i].tax).sum();
            if a > least {
                return Err(problem(
                    "amount",
                    format!("{a} is more than remains unrefunded of this transaction: {} (tax {tax})", least.normalize()),
                ));
            }
        }
        let mut out: Vec<Line> = Vec::with_capacity(chosen.len());
        // The lines refunded in part share one rounded tax: (line, share of the original line's figures).
        let mut partial: Vec<(usize, Decimal)> = Vec::new();
        for &i in &chosen {
            let (orig, rest) = (&self.lines[i], &remaining[i]);
            let a = amount.unwrap_or(rest.gross).min(rest.gross);
            if a == rest.gross || orig.gross.is_zero() {
                out.push(Line {
                    gross: -rest.gross,
                    taxable: -rest.taxable,
                    exempt: rest.exempt.iter().filter(|(_, x)| !x.is_zero()).map(|(r, x)| (*r, -*x)).collect(),
                    tax: -rest.tax,
                    ..orig.clone()
                });
                continue;
            }
            let share = a / orig.gross;
            let taxable = cents(orig.taxable * share).min(rest.taxable).min(a);
            let reasons: Vec<Reason> = orig.exempt.keys().copied().collect();
            let weights: Vec<Decimal> = reasons.iter().map(|r| orig.exempt[r]).collect();
            let exempt =
                reasons.into_iter().zip(apportion(a - taxable, &weights)).filter(|(_, x)| !x.is_zero()).map(|(r, x)| (r, -x)).collect();
            partial.push((out.len(), share));
            out.push(Line { gross: -a, taxable: -taxable, exempt, tax: Decimal::ZERO, ..orig.clone() });
        }
        if let Some(&(_, share)) = partial.first() {
            let taxes: Vec<Decimal> = partial.iter().map(|(k, _)| self.lines[chosen[*k]].tax).collect();
            let total = cents(taxes.iter().copied().sum::<Decimal>() * share);
            for ((k, _), part) in partial.iter().zip(apportion(total, &taxes)) {
                out[*k].tax = -part.min(remaining[chosen[*k]].tax);
            }
        }
        Ok(Liability { lines: out, nexus: false })
    }
}

/// `total` (in cents) shared in proportion to `weights`, each part in cents, the parts adding up to `total`
/// exactly: each takes its share rounded down, and the cents left go one each to the parts with the largest
/// remainders (the earlier part on a tie). Without weights, the first part takes it all.
pub fn apportion(total: Decimal, weights: &[Decimal]) -> Vec<Decimal> {
    if weights.is_empty() {
        return Vec::new();
    }
    let sum: Decimal = weights.iter().copied().filter(|w| *w > Decimal::ZERO).sum();
    let sign = if total < Decimal::ZERO { -Decimal::ONE } else { Decimal::ONE };
    let whole = (total.abs() * Decimal::ONE_HUNDRED).round();
    let mut parts = vec![Decimal::ZERO; weights.len()];
    if sum.is_zero() {
        parts[0] = total;
        return parts;
    }
    let mut remainders = Vec::with_capacity(weights.len());
    let mut given = Decimal::ZERO;
    for (i, w) in weights.iter().enumerate() {
        let exact = if *w > Decimal::ZERO { whole * *w / sum } else { Decimal::ZERO };
        let floor = exact.floor();
        parts[i] = floor;
        given += floor;
        remainders.push((exact - floor, i));
    }
    remainders.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut left = whole - given;
    for (_, i) in remainders {
        if left <= Decimal::ZERO {
            break;
        }
        parts[i] += Decimal::ONE;
        left -= Decimal::ONE;
    }
    parts.into_iter().map(|p| sign * p / Decimal::ONE_HUNDRED).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    /// 1,000 of TX SaaS into Austin: 800 taxable; 50.00 state, 8.00 city, 8.00 transit.
    fn austin() -> Liability {
        let line = |id: &str, level: &str, gross: &str, tax: &str| Line {
            id: id.into(),
            level: level.into(),
            name: id.into(),
            gross: d(gross),
            taxable: d("800"),
            exempt: BTreeMap::from([(Reason::NotTaxable, d(gross) - d("800"))]),
            tax: d(tax),
        };
        Liability {
            lines: vec![
                line("TX", "state", "1000", "50.00"),
                line("tx.austin", "city", "1000", "8.00"),
                line("tx.mta", "special_district", "1000", "8.00"),
            ],
            nexus: true,
        }
    }

    #[test]
    fn refunds_share_the_tax_and_end_exactly() {
        let sale = austin();
        // A third of the sale, 333.33: taxable 800 × 0.33333 = 266.66, exempt the rest of it, 66.67; tax 66.00 × 0.33333 = 22.00
        // shared 50 : 8 : 8 as 16.67, 2.67, 2.66 (the largest remainders, the earlier first on a tie).
        let third = sale.refund(&[], Some(d("333.33")), None).unwrap();
        let taxes: Vec<Decimal> = third.lines.iter().map(|l| l.tax).collect();
        assert_eq!(taxes, vec![d("-16.67"), d("-2.67"), d("-2.66")]);
        assert_eq!(third.tax(), d("-22.00"));
        assert_eq!((third.lines[0].taxable, third.lines[0].exempt[&Reason::NotTaxable]), (d("-266.66"), d("-66.67")));
        // The rest gives back exactly what is left: 66.00 in all.
        let rest = sale.refund(std::slice::from_ref(&third), None, None).unwrap();
        assert_eq!(rest.tax() + third.tax(), d("-66.00"));
        assert_eq!(rest.lines[0].gross + third.lines[0].gross, d("-1000"));
        assert_eq!(rest.lines[2].tax + third.lines[2].tax, d("-8.00"));
        let done = [third, rest];
        assert!(sale.remaining(&done).iter().all(|l| l.gross.is_zero() && l.tax.is_zero() && l.taxable.is_zero()));
        let e = sale.refund(&done, Some(d("1")), None).unwrap_err();
        assert_eq!(e.field, "amount");
        // One line only, and an unknown one.
        let city = sale.refund(&[], None, Some(&["tx.austin".to_string()])).unwrap();
        assert_eq!((city.lines.len(), city.tax()), (1, d("-8.00")));
        let e = sale.refund(&[], None, Some(&["tx.dallas".to_string()])).unwrap_err();
        assert_eq!(e.message, "`tx.dallas` is not a jurisdiction of this transaction: TX, tx.austin, tx.mta");
        // More than is left of the chosen line after the city refund: 1,000 of the state is fine, of the city not.
        assert!(sale.refund(std::slice::from_ref(&city), Some(d("1000")), Some(&["TX".to_string()])).is_ok());
        assert!(sale.refund(std::slice::from_ref(&city), Some(d("1")), Some(&["tx.austin".to_string()])).is_err());
    }

    #[test]
    fn parts_add_up_to_the_cent() {
        // 10.00 in three equal shares: 3.34 + 3.33 + 3.33 (the first takes the cent on the tie).
        assert_eq!(apportion(d("10.00"), &[d("1"), d("1"), d("1")]), vec![d("3.34"), d("3.33"), d("3.33")]);
        // 66.00 at 6.25 % state, 1 % city, 1 % transit: 50.00 + 8.00 + 8.00.
        assert_eq!(apportion(d("66.00"), &[d("0.0625"), d("0.01"), d("0.01")]), vec![d("50.00"), d("8.00"), d("8.00")]);
        // 0.07 shared 3 : 2 : 2 is 0.03, 0.02, 0.02; negated for a refund.
        assert_eq!(apportion(d("-0.07"), &[d("3"), d("2"), d("2")]), vec![d("-0.03"), d("-0.02"), d("-0.02")]);
        // 1.00 by 0.0625 : 0.0200 : 0.0050 (8.75 %): 0.714…, 0.228…, 0.057… -> 0.71 + 0.23 + 0.06.
        assert_eq!(apportion(d("1.00"), &[d("0.0625"), d("0.02"), d("0.005")]), vec![d("0.71"), d("0.23"), d("0.06")]);
        // No weight: the first part takes it.
        assert_eq!(apportion(d("5.00"), &[d("0"), d("0")]), vec![d("5.00"), d("0")]);
        assert!(apportion(d("5.00"), &[]).is_empty());
    }
}
