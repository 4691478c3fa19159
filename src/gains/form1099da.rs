//! The draft Form 1099-DA (Digital Asset Proceeds From Broker Transactions) for one tax year:
//! one entry per disposition, its values under names that say which box of the final form
//! (TY2025 layout) they belong to, and totals by term. It is a draft from the account's own
//! ledger for review and for a tax preparer — not a filed information return.
//!
//! Written straight to text: an export of 100,000 dispositions is one pass with no
//! intermediate tree.

use std::fmt::Write;

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::holding::Term;
use super::quantity_text;
use crate::engine::money::{cents, usd};

pub const NOTICE: &str = "DRAFT, not filed with the IRS. Compiled from this account's own trade ledger to help prepare a return and reconcile the brokers' statements; a broker files the official Form 1099-DA. Layout of the final 2025 form (boxes 1a-1i, 2, 3a, 6, 14-16).";

/// One disposition, as the export needs it.
#[derive(Clone, Debug)]
pub struct Disposition {
    pub id: String,
    pub trade_id: String,
    pub lot_id: String,
    pub asset_symbol: String,
    pub asset_name: Option<String>,
    pub asset_class: Option<String>,
    pub exchange: Option<String>,
    pub quantity: Decimal,
    pub acquired: NaiveDate,
    pub sold: NaiveDate,
    pub proceeds: Decimal,
    pub cost_basis: Decimal,
    pub wash_sale_disallowed: Decimal,
    pub term: Term,
}

/// Totals of the reported (rounded) figures.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Totals {
    pub count: u64,
    pub proceeds: Decimal,
    pub cost_basis: Decimal,
    pub wash_sale_disallowed: Decimal,
    pub gain_or_loss: Decimal,
}

impl Totals {
    /// Adds one disposition's reported figures (as [`reported`] gives them).
    pub fn add(&mut self, (proceeds, basis, wash, gain): (Decimal, Decimal, Decimal, Decimal)) {
        self.count += 1;
        self.proceeds += proceeds;
        self.cost_basis += basis;
        self.wash_sale_disallowed += wash;
        self.gain_or_loss += gain;
    }

    /// Both sets of totals together.
    pub fn plus(self, other: Totals) -> Totals {
        Totals {
            count: self.count + other.count,
            proceeds: self.proceeds + other.proceeds,
            cost_basis: self.cost_basis + other.cost_basis,
            wash_sale_disallowed: self.wash_sale_disallowed + other.wash_sale_disallowed,
            gain_or_loss: self.gain_or_loss + other.gain_or_loss,
        }
    }

    fn write(&self, out: &mut String) {
        let _ = write!(
            out,
            "{{\"count\":{},\"box_1f_proceeds\":{},\"box_1g_cost_or_other_basis\":{},\"box_1i_wash_sale_loss_disallowed\":{},\"gain_or_loss\":{}}}",
            self.count,
            usd(self.proceeds),
            usd(self.cost_basis),
            usd(self.wash_sale_disallowed),
            usd(self.gain_or_loss)
        );
    }
}

fn s(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

fn opt(text: &Option<String>) -> String {
    text.as_deref().map_or_else(|| "null".into(), s)
}

/// The reported figures of one disposition: proceeds, basis, disallowed loss, and the gain
/// that follows from them (proceeds − basis + disallowed loss), each in cents.
pub fn reported(d: &Disposition) -> (Decimal, Decimal, Decimal, Decimal) {
    let (p, b, w) = (cents(d.proceeds), cents(d.cost_basis), cents(d.wash_sale_disallowed));
    (p, b, w, p - b + w)
}

/// Renders the draft. `payer` and `recipient` are JSON objects already rendered.
pub fn render(
    year: i32,
    generated_at: &str,
    payer: &str,
    recipient: &str,
    dispositions: impl IntoIterator<Item = Disposition>,
) -> (String, [Totals; 2]) {
    let mut out = String::with_capacity(1 << 16);
    let _ = write!(
        out,
        "{{\"form\":\"1099-DA\",\"title\":\"Digital Asset Proceeds From Broker Transactions\",\"draft\":true,\"notice\":{},\"tax_year\":{year},\"generated_at\":{},\"payer\":{payer},\"recipient\":{recipient},\"entries\":[",
        s(NOTICE),
        s(generated_at)
    );
    let mut totals = [Totals::default(); 2];
    for (i, d) in dispositions.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let (p, b, w, g) = reported(&d);
        totals[d.term as usize].add((p, b, w, g));
        let _ = write!(
            out,
            "{{\"disposition_id\":{},\"trade_id\":{},\"lot_id\":{},\"asset_symbol\":{},\"asset_class\":{},\"exchange\":{},\
\"box_1a_digital_asset_code\":null,\"box_1b_digital_asset_name\":{},\"box_1c_number_of_units\":{},\"box_1d_date_acquired\":\"{}\",\
\"box_1e_date_sold_or_disposed\":\"{}\",\"box_1f_proceeds\":{},\"box_1g_cost_or_other_basis\":{},\"box_1h_accrued_market_discount\":null,\
\"box_1i_wash_sale_loss_disallowed\":{},\"box_2_basis_reported_to_irs\":false,\"box_3a_proceeds_reported\":\"net\",\
\"box_6_gain_or_loss_type\":\"{}\",\"gain_or_loss\":{}}}",
            s(&d.id),
            s(&d.trade_id),
            s(&d.lot_id),
            s(&d.asset_symbol),
            opt(&d.asset_class),
            opt(&d.exchange),
            s(d.asset_name.as_deref().unwrap_or(&d.asset_symbol)),
            quantity_text(d.quantity),
            d.acquired,
            d.sold,
            usd(p),
            usd(b),
            usd(w),
            d.term.name(),
            usd(g)
        );
    }
    out.push_str("],\"totals\":{\"short_term\":");
    totals[0].write(&mut out);
    out.push_str(",\"long_term\":");
    totals[1].write(&mut out);
    out.push_str(",\"all\":");
    totals[0].plus(totals[1]).write(&mut out);
    out.push_str("},\"box_notes\":{\"box_1a\":\"the DTIF digital-asset code is not known to the ledger; the broker supplies it\",\"box_1c\":\"units to 8 decimal places, as recorded\",\"box_1d\":\"the lot's acquisition date; a wash-sale replacement's holding period is longer (see box 6)\",\"box_1f\":\"net proceeds: gross less the sell fee\",\"box_1g\":\"cost including the buy fee, plus any disallowed wash-sale loss moved into the lot\",\"box_1i\":\"loss disallowed under IRC 1091 (stock and securities, including tokenized securities); stock and securities not in digital form are reported on Form 1099-B instead\",\"box_2\":\"nothing here has been reported to the IRS\",\"boxes_14_16\":\"state information is left to the broker\"}}");
    (out, totals)
}
