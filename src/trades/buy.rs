//! A buy: a new lot, or, where it replaces earlier loss sales under the wash-sale rule, one lot per loss it
//! replaces (the disallowed loss added to its basis, the sold lot's holding period carried over) and one for the rest.

use rust_decimal::Decimal;
use sea_orm::ConnectionTrait;
use serde_json::Value;

use super::{add, date_of, number, text, Book, Bought, Refused, ReplacedLoss, Replacement, Trade};
use crate::clock::{day_start_ms, utc_date};
use crate::gains::lots::pro_rata;
use crate::gains::wash;
use crate::security::new_ordered_id;
use crate::store::entity::{disposition, lot, position};
use crate::store::Store;

impl Book<'_> {
    pub(super) async fn buy<C: ConnectionTrait>(&self, conn: &C, pos: &mut position::Model, trade: &Trade<'_>) -> Result<Bought, Refused> {
        let (account, req) = (trade.account, trade.req);
        let (day, now_ms, trade_id) = (req.day(), trade.now_ms, trade.trade_id.as_str());
        let cost = req.amount();
        // Earlier losses this buy replaces (IRC §1091: acquired within the window after the sale).
        let mut losses: Vec<disposition::Model> = vec![];
        if let Some(rule) = trade.wash_rule {
            let (from, _) = wash::window(&rule.value, day);
            losses = Store::open_wash_losses(conn, &account.id, &req.asset_symbol, day_start_ms(from), req.trade_date.timestamp_millis())
                .await?;
            losses.retain(|x| wash::in_window(&rule.value, utc_date(x.sold_at), day));
        }
        let open: Vec<Decimal> = losses.iter().map(|x| number(&x.wash_open_quantity)).collect();
        let pairs = wash::allocate(&open, &[req.quantity]);
        let lot_id = new_ordered_id("lot", now_ms);
        let mut lots: Vec<lot::Model> = vec![];
        let mut replaced = vec![];
        let mut cost_left = cost;
        let mut qty_left = req.quantity;
        let new_lot = |id: String, quantity: Decimal, basis: Decimal, start, adj: Decimal, replacement_for, split_from| lot::Model {
            id,
            entity_id: account.id.clone(),
            asset_symbol: req.asset_symbol.clone(),
            trade_id: trade_id.to_string(),
            acquired_at: req.trade_date.timestamp_millis(),
            holding_start: chrono::NaiveDate::to_string(&start),
            quantity: text(quantity),
            cost_basis: text(basis),
            remaining_quantity: text(quantity),
            remaining_basis: text(basis),
            open: true,
            wash_adjustment: text(adj),
            replacement_for,
            split_from,
            created_at: now_ms,
        };
        let mut added_basis = Decimal::ZERO;
        for (li, _, q) in pairs {
            let x = &mut losses[li];
            let open_q = number(&x.wash_open_quantity);
            let open_loss = number(&x.wash_open_loss);
            let disallowed = pro_rata(open_loss, q, open_q);
            let share = pro_rata(cost_left, q, qty_left);
            cost_left -= share;
            qty_left -= q;
            let id = if lots.is_empty() { lot_id.clone() } else { new_ordered_id("lot", now_ms) };
            let start = wash::tacked_start(day, utc_date(x.sold_at), date_of(&x.holding_start));
            let split_from = (!lots.is_empty()).then(|| lot_id.clone());
            lots.push(new_lot(id.clone(), q, share + disallowed, start, disallowed, Some(x.id.clone()), split_from));
            added_basis += disallowed;
            x.wash_open_quantity = text(open_q - q);
            x.wash_open_loss = text(open_loss - disallowed);
            x.wash_open = open_q - q > Decimal::ZERO;
            add(&mut x.wash_disallowed, disallowed);
            let mut reps: Vec<Value> = serde_json::from_str(&x.replacements).unwrap_or_default();
            let rep =
                Replacement { lot_id: id.clone(), quantity: q, disallowed, holding_start: None, trade_id: Some(trade_id.to_string()) };
            reps.push(rep.stored());
            x.replacements = Value::Array(reps).to_string();
            if x.term == crate::gains::Term::LongTerm.name() {
                add(&mut pos.realized_long_term, disallowed)
            } else {
                add(&mut pos.realized_short_term, disallowed)
            }
            add(&mut pos.wash_disallowed, disallowed);
            replaced.push(ReplacedLoss {
                disposition_id: x.id.clone(),
                sell_trade_id: x.trade_id.clone(),
                sold_ms: x.sold_at,
                quantity: q,
                disallowed,
                lot_id: id,
                holding_start: start,
            });
            Store::save(conn, x.clone()).await?;
        }
        if qty_left > Decimal::ZERO {
            let id = if lots.is_empty() { lot_id.clone() } else { new_ordered_id("lot", now_ms) };
            let split_from = (!lots.is_empty()).then(|| lot_id.clone());
            lots.push(new_lot(id, qty_left, cost_left, day, Decimal::ZERO, None, split_from));
        }
        for l in &lots {
            Store::insert(conn, l.clone()).await?;
        }
        add(&mut pos.held_quantity, req.quantity);
        add(&mut pos.remaining_basis, cost + added_basis);
        pos.open_lots += lots.len() as i64;
        pos.buys += 1;
        Ok(Bought { cost, lots, replaced })
    }
}
