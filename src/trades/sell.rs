//! A sell: the lots it consumes (FIFO, LIFO or the one named), a disposition for each, and under the wash-sale rule
//! each loss matched with lots of the symbol bought within the window (adjusted in place, or split off).

use chrono::{DateTime, Datelike, Utc};
use rust_decimal::Decimal;
use sea_orm::ConnectionTrait;

use super::{add, date_of, number, text, Book, Refused, Replacement, Sold, SoldLot, Trade};
use crate::clock::iso;
use crate::clock::{day_start_ms, utc_date};
use crate::gains::estimate::{self, Gains, Profile};
use crate::gains::form1099da::{self, Disposition};
use crate::gains::lots::pro_rata;
use crate::gains::{match_sell, quantity_text, wash, Lot, Method, Term, TradeRequest};
use crate::security::new_ordered_id;
use crate::store::entity::{disposition, entity, lot, position};
use crate::store::Store;

/// Lots fetched per page while a FIFO or LIFO sell gathers what it needs.
const LOT_PAGE: u64 = 64;

/// A sell's loss units matched with a replacement lot.
struct WashPiece {
    disposition: usize,
    lot: usize,
    quantity: Decimal,
}

/// A disposition as the draft 1099-DA reads it.
pub fn disposition_of(x: &disposition::Model) -> Disposition {
    Disposition {
        id: x.id.clone(),
        trade_id: x.trade_id.clone(),
        lot_id: x.lot_id.clone(),
        asset_symbol: x.asset_symbol.clone(),
        asset_name: x.asset_name.clone(),
        asset_class: x.asset_class.clone(),
        exchange: x.exchange.clone(),
        quantity: number(&x.quantity),
        acquired: utc_date(x.acquired_at),
        sold: utc_date(x.sold_at),
        proceeds: number(&x.proceeds),
        cost_basis: number(&x.cost_basis),
        wash_sale_disallowed: number(&x.wash_disallowed),
        term: if x.term == Term::LongTerm.name() { Term::LongTerm } else { Term::ShortTerm },
    }
}

impl Book<'_> {
    /// The lots a sell consumes, in matching order, fetched a page at a time.
    async fn lots_for_sell<C: ConnectionTrait>(
        &self,
        conn: &C,
        account: &entity::Model,
        req: &TradeRequest,
    ) -> Result<Vec<lot::Model>, Refused> {
        let until = req.trade_date.timestamp_millis();
        if req.accounting_method == Method::SpecificId {
            let id = req.specific_lot_id.as_deref().unwrap_or_default();
            let Some(l) = Store::lot(conn, &account.id, id).await? else {
                return Err(Refused::Field("specific_lot_id", format!("`{id}` is not a lot of this account")));
            };
            let problem = if l.asset_symbol != req.asset_symbol {
                Some(format!("`{id}` is a lot of {}, not {}", l.asset_symbol, req.asset_symbol))
            } else if !l.open {
                Some(format!("`{id}` is exhausted: all of it has been sold"))
            } else if l.acquired_at > until {
                Some(format!("`{id}` was acquired {}, after this sell's trade_date", iso(l.acquired_at)))
            } else if number(&l.remaining_quantity) < req.quantity {
                Some(format!(
                    "`{id}` holds {} units; this sell asks for {}",
                    quantity_text(number(&l.remaining_quantity)),
                    quantity_text(req.quantity)
                ))
            } else {
                None
            };
            return match problem {
                Some(p) => Err(Refused::Field("specific_lot_id", p)),
                None => Ok(vec![l]),
            };
        }
        let newest_first = req.accounting_method == Method::Lifo;
        let mut out: Vec<lot::Model> = vec![];
        let mut have = Decimal::ZERO;
        let mut cursor = None;
        while have < req.quantity {
            let page = Store::open_lots_page(conn, &account.id, &req.asset_symbol, until, newest_first, cursor.clone(), LOT_PAGE).await?;
            let full = page.len() as u64 == LOT_PAGE;
            for l in page {
                if have >= req.quantity {
                    break;
                }
                have += number(&l.remaining_quantity);
                cursor = Some((l.acquired_at, l.id.clone()));
                out.push(l);
            }
            if !full {
                break;
            }
        }
        if have < req.quantity {
            return Err(Refused::Field(
                "quantity",
                format!(
                    "sells {} {} but only {} were held on {}; nothing was recorded",
                    quantity_text(req.quantity),
                    req.asset_symbol,
                    quantity_text(have),
                    iso(until)
                ),
            ));
        }
        Ok(out)
    }

    pub(super) async fn sell<C: ConnectionTrait>(&self, conn: &C, pos: &mut position::Model, trade: &Trade<'_>) -> Result<Sold, Refused> {
        let (account, req) = (trade.account, trade.req);
        let held = number(&pos.held_quantity);
        if req.quantity > held {
            return Err(Refused::Field(
                "quantity",
                format!(
                    "sells {} {} but {} are held; nothing was recorded",
                    quantity_text(req.quantity),
                    req.asset_symbol,
                    quantity_text(held)
                ),
            ));
        }
        let (day, now_ms) = (req.day(), trade.now_ms);
        let mut sold = self.lots_for_sell(conn, account, req).await?;
        let view: Vec<Lot> = sold
            .iter()
            .map(|l| Lot {
                id: l.id.clone(),
                acquired_at: DateTime::<Utc>::from_timestamp_millis(l.acquired_at).unwrap_or_default(),
                holding_start: date_of(&l.holding_start),
                remaining_quantity: number(&l.remaining_quantity),
                remaining_basis: number(&l.remaining_basis),
            })
            .collect();
        let months = self.gains.long_term_after_months(day);
        let consumed = match_sell(view.iter(), req.quantity, req.amount(), day, months)
            .map_err(|s| Refused::Field("quantity", format!("only {} held", quantity_text(s.available))))?;

        let applies = trade.wash_applies;
        let ids: Vec<String> = consumed.iter().map(|_| new_ordered_id("dsp", now_ms)).collect();
        let loss_idx: Vec<usize> =
            consumed.iter().enumerate().filter(|(_, c)| applies && c.gain() < Decimal::ZERO).map(|(i, _)| i).collect();
        // Replacements: lots of the symbol bought within the window, other than those this sell consumed.
        let mut candidates: Vec<lot::Model> = vec![];
        if let (Some(rule), false) = (trade.wash_rule, loss_idx.is_empty()) {
            let (from, to) = wash::window(&rule.value, day);
            candidates =
                Store::replacement_lots(conn, &account.id, &req.asset_symbol, day_start_ms(from), day_start_ms(to) + 86_400_000 - 1)
                    .await?;
            candidates.retain(|l| !consumed.iter().any(|c| c.lot_id == l.id) && number(&l.remaining_quantity) > Decimal::ZERO);
        }
        let pairs = wash::allocate(
            &loss_idx.iter().map(|&i| consumed[i].quantity).collect::<Vec<_>>(),
            &candidates.iter().map(|l| number(&l.remaining_quantity)).collect::<Vec<_>>(),
        );
        let pieces = pairs.into_iter().map(|(li, ci, q)| WashPiece { disposition: loss_idx[li], lot: ci, quantity: q });
        let mut disallowed = vec![Decimal::ZERO; consumed.len()];
        let mut matched = vec![Decimal::ZERO; consumed.len()];
        let mut replacements: Vec<Vec<Replacement>> = consumed.iter().map(|_| vec![]).collect();
        let mut new_lots: Vec<lot::Model> = vec![];
        for p in pieces {
            let c = &consumed[p.disposition];
            let loss = -c.gain();
            let loss_left = loss - disallowed[p.disposition];
            let q_left = c.quantity - matched[p.disposition];
            let dis = pro_rata(loss_left, p.quantity, q_left);
            disallowed[p.disposition] += dis;
            matched[p.disposition] += p.quantity;
            let r = &mut candidates[p.lot];
            let start = wash::tacked_start(utc_date(r.acquired_at), day, c.holding_start);
            let r_qty = number(&r.remaining_quantity);
            let target_id = if p.quantity == r_qty {
                // The whole remaining lot is the replacement: adjust it in place.
                add(&mut r.remaining_basis, dis);
                add(&mut r.cost_basis, dis);
                add(&mut r.wash_adjustment, dis);
                r.holding_start = start.to_string();
                r.replacement_for = Some(ids[p.disposition].clone());
                r.id.clone()
            } else {
                let share = pro_rata(number(&r.remaining_basis), p.quantity, r_qty);
                r.remaining_quantity = text(r_qty - p.quantity);
                r.remaining_basis = text(number(&r.remaining_basis) - share);
                let child = lot::Model {
                    id: new_ordered_id("lot", now_ms),
                    entity_id: r.entity_id.clone(),
                    asset_symbol: r.asset_symbol.clone(),
                    trade_id: r.trade_id.clone(),
                    acquired_at: r.acquired_at,
                    holding_start: start.to_string(),
                    quantity: text(p.quantity),
                    cost_basis: text(share + dis),
                    remaining_quantity: text(p.quantity),
                    remaining_basis: text(share + dis),
                    open: true,
                    wash_adjustment: text(dis),
                    replacement_for: Some(ids[p.disposition].clone()),
                    split_from: Some(r.id.clone()),
                    created_at: now_ms,
                };
                let id = child.id.clone();
                new_lots.push(child);
                id
            };
            replacements[p.disposition].push(Replacement {
                lot_id: target_id,
                quantity: p.quantity,
                disallowed: dis,
                holding_start: Some(start),
                trade_id: None,
            });
        }
        for r in &candidates {
            Store::save(conn, r.clone()).await?;
        }
        for l in &new_lots {
            Store::insert(conn, l.clone()).await?;
        }
        pos.open_lots += new_lots.len() as i64;

        // The consumed lots and the dispositions.
        let mut gains = Gains::default();
        let (mut basis_total, mut dis_total) = (Decimal::ZERO, Decimal::ZERO);
        // Totals of the figures shown.
        let mut shown = form1099da::Totals::default();
        let mut dispositions = vec![];
        for ((i, c), reps) in consumed.iter().enumerate().zip(replacements) {
            let l = &mut sold[i];
            l.remaining_quantity = text(c.lot_remaining_quantity);
            l.remaining_basis = text(c.lot_remaining_basis);
            l.open = c.lot_remaining_quantity > Decimal::ZERO;
            if !l.open {
                pos.open_lots -= 1;
            }
            Store::save(conn, l.clone()).await?;
            let loss_open = applies && c.gain() < Decimal::ZERO;
            let stored: Vec<serde_json::Value> = reps.iter().map(Replacement::stored).collect();
            let row = disposition::Model {
                id: ids[i].clone(),
                entity_id: account.id.clone(),
                trade_id: trade.trade_id.clone(),
                lot_id: c.lot_id.clone(),
                asset_symbol: req.asset_symbol.clone(),
                asset_name: req.asset_name.clone().or_else(|| pos.asset_name.clone()),
                asset_class: trade.class.clone(),
                exchange: req.exchange.clone(),
                quantity: text(c.quantity),
                acquired_at: c.acquired_at.timestamp_millis(),
                holding_start: c.holding_start.to_string(),
                sold_at: req.trade_date.timestamp_millis(),
                tax_year: day.year(),
                proceeds: text(c.proceeds),
                cost_basis: text(c.cost_basis),
                term: c.term.name().to_string(),
                holding_days: c.holding_days,
                wash_applicable: loss_open,
                wash_disallowed: text(disallowed[i]),
                wash_open: loss_open && matched[i] < c.quantity,
                wash_open_quantity: text(if loss_open { c.quantity - matched[i] } else { Decimal::ZERO }),
                wash_open_loss: text(if loss_open { -c.gain() - disallowed[i] } else { Decimal::ZERO }),
                replacements: serde_json::Value::Array(stored).to_string(),
            };
            Store::insert(conn, row.clone()).await?;
            let allowed = c.gain() + disallowed[i];
            match c.term {
                Term::ShortTerm => gains.short_term += allowed,
                Term::LongTerm => gains.long_term += allowed,
            }
            basis_total += c.cost_basis;
            dis_total += disallowed[i];
            let figures = form1099da::reported(&disposition_of(&row));
            shown.add(figures);
            dispositions.push(SoldLot { row, figures, replacements: reps });
        }
        add(&mut pos.held_quantity, -req.quantity);
        add(&mut pos.remaining_basis, dis_total - basis_total);
        add(&mut pos.realized_short_term, gains.short_term);
        add(&mut pos.realized_long_term, gains.long_term);
        add(&mut pos.wash_disallowed, dis_total);
        pos.sells += 1;
        pos.last_sell_at = Some(pos.last_sell_at.map_or(req.trade_date.timestamp_millis(), |x| x.max(req.trade_date.timestamp_millis())));

        let terms: Vec<&'static str> = consumed.iter().map(|c| c.term.name()).collect();
        let holding = if terms.iter().all(|x| *x == terms[0]) { terms[0] } else { "mixed" };
        let profile = Profile {
            entity: req.tax_entity_type,
            filing_status: req.filing_status,
            income: req.estimated_annual_income,
            state: req.resident_state,
        };
        let estimates = estimate::estimate(self.gains, gains, &profile, day);
        Ok(Sold { dispositions, shown, gains, holding, estimates })
    }
}
