//! Recording a trade: a buy adds a lot, a sell matches open lots (FIFO, LIFO or a specific lot) and applies the
//! wash-sale rule both ways, each in one database transaction with the position it changes; and the draft 1099-DA
//! of an account's dispositions.

use super::views::*;
use super::*;

/// The new position totals, applied at the end of a trade.
fn add(field: &mut String, x: Decimal) {
    *field = t(d(field) + x);
}

struct WashPiece {
    disposition: usize,
    lot: usize,
    quantity: Decimal,
}

impl AppState {
    /// The draft 1099-DA of an account for a year.
    pub fn render_1099da(
        &self,
        account: &entity::Model,
        year: i32,
        generated_at: &str,
        rows: impl IntoIterator<Item = Disposition>,
    ) -> String {
        let ein_last4 = account
            .ein_ciphertext
            .as_deref()
            .and_then(|c| self.data_key.decrypt(c).ok())
            .map(|e| e.chars().rev().take(4).collect::<Vec<_>>().into_iter().rev().collect::<String>());
        let name = if account.company_name.is_empty() { account.agent_name.clone() } else { account.company_name.clone() };
        let recipient = Form1099DaRecipient {
            name,
            tin: ein_last4.map(|l| format!("XX-XXX{l}")),
            state: (!account.state.is_empty()).then(|| account.state.clone()),
            email: account.email.clone(),
            account_number: account.id.clone(),
        };
        let payer = Form1099DaPayer {
            name: None,
            tin: None,
            note: "the broker files the official form and is named in each entry's exchange; this draft is the recipient's own ledger"
                .into(),
        };
        form1099da::render(year, generated_at, &text_of(&payer), &text_of(&recipient), rows).0
    }

    pub(super) async fn record_trade(
        &self,
        account: &entity::Model,
        req: &TradeRequest,
        raw: &Value,
        idem: Option<&str>,
    ) -> Result<String, ApiError> {
        let now_ms = self.clock.now_ms();
        let txn = self.store.writer.begin().await.map_err(ApiError::from)?;
        let mut pos = Store::lock_position(&txn, &account.id, &req.asset_symbol, now_ms).await?;
        let trade_ms = req.trade_date.timestamp_millis();
        if let Some(last) = pos.last_sell_at {
            if trade_ms < last {
                return Err(ApiError::field(
                    "trade_date",
                    format!(
                        "{} is before the latest recorded sell of {} ({}); trades of an asset take effect in trade-date order and a recorded sale is never rematched, so a trade may not be dated before it",
                        iso(trade_ms),
                        req.asset_symbol,
                        iso(last)
                    ),
                ));
            }
        }
        if req.asset_class.is_some() {
            pos.asset_class = req.asset_class.clone();
        }
        if req.asset_name.is_some() {
            pos.asset_name = req.asset_name.clone();
        }
        let trade_id = new_ordered_id("trd", now_ms);
        let (body, realized) = if req.is_sell {
            self.sell(&txn, account, req, &mut pos, &trade_id, now_ms).await?
        } else {
            (self.buy(&txn, account, req, &mut pos, &trade_id, now_ms).await?, None)
        };
        // Kept as text: the trade row and an idempotent replay send these bytes again.
        let text = text_of(&body);
        pos.updated_at = now_ms;
        Store::save_position(&txn, pos).await?;
        let row = trade::Model {
            id: trade_id,
            entity_id: account.id.clone(),
            asset_symbol: req.asset_symbol.clone(),
            trade_type: req.trade_type().into(),
            quantity: t(req.quantity),
            price_per_unit: t(req.price_per_unit),
            fee_amount: t(req.fee_amount),
            trade_date: trade_ms,
            created_at: now_ms,
            accounting_method: req.is_sell.then(|| req.accounting_method.name().to_string()),
            specific_lot_id: req.specific_lot_id.clone(),
            asset_class: req.asset_class.clone(),
            asset_name: req.asset_name.clone(),
            counterparty: req.counterparty.clone(),
            exchange: req.exchange.clone(),
            notes: req.notes.clone(),
            realized_gain: realized.map(t),
            request: raw.to_string(),
            result: text.clone(),
        };
        Store::insert_trade(&txn, row).await?;
        // The trade counts against the gains plan's monthly allowance, in the trade's own transaction: a refused or
        // failed trade counts nothing.
        let usage = Product::Gains.usage_hit(&account.id, now_ms);
        let calls = Store::hit_counters(&txn, std::slice::from_ref(&usage)).await?.first().copied().unwrap_or(0);
        if let Some(overage) = billing::allowance(&self.plans, account, Product::Gains, now_ms, calls).map_err(ApiError::rate_limited)? {
            Store::hit_counters(&txn, &[overage]).await?;
        }
        if let Some(k) = idem {
            Store::finish_idempotency_key(&txn, &account.id, k, 201, &text).await?;
        }
        txn.commit().await.map_err(ApiError::from)?;
        Ok(text)
    }

    /// The members every trade's result has; a buy or a sell adds its own.
    fn trade_result(
        account: &entity::Model,
        req: &TradeRequest,
        trade_id: &str,
        class: Option<&str>,
        wash_sale: WashSaleInfo,
        now_ms: i64,
    ) -> TradeResult {
        TradeResult {
            success: true,
            trade_id: trade_id.to_string(),
            trade_type: TradeType(req.trade_type().to_string()),
            asset_symbol: req.asset_symbol.clone(),
            asset_class: class.map(|c| AssetClass(c.to_string())),
            quantity: qty(req.quantity),
            price_per_unit: Exact::normalized(req.price_per_unit),
            fee_amount: Usd::cents(req.fee_amount),
            trade_date: iso(req.trade_date.timestamp_millis()),
            cost_basis: None,
            lot: None,
            lots: None,
            accounting_method: None,
            gross_proceeds: None,
            net_proceeds: None,
            lots_consumed: None,
            totals: None,
            realized_gain_loss: None,
            holding_period: None,
            wash_sale,
            estimates: None,
            entity_id: account.id.clone(),
            recorded_at: iso(now_ms),
            api_version: API_VERSION.to_string(),
            disclaimer: DISCLAIMER.to_string(),
        }
    }

    async fn buy<C: ConnectionTrait>(
        &self,
        conn: &C,
        account: &entity::Model,
        req: &TradeRequest,
        pos: &mut position::Model,
        trade_id: &str,
        now_ms: i64,
    ) -> Result<TradeResult, ApiError> {
        let day = req.day();
        let cost = req.amount();
        let rule = self.registry.gains.wash_sale_rule(day);
        // Earlier losses this buy replaces (IRC §1091: acquired within the window after the sale).
        let mut losses: Vec<disposition::Model> = vec![];
        if let Some(rule) = rule {
            let (from, _) = wash::window(&rule.value, day);
            losses = Store::open_wash_losses(conn, &account.id, &req.asset_symbol, day_start_ms(from), req.trade_date.timestamp_millis())
                .await?;
            losses.retain(|x| wash::in_window(&rule.value, day_of(x.sold_at), day));
        }
        let open: Vec<Decimal> = losses.iter().map(|x| d(&x.wash_open_quantity)).collect();
        let pairs = wash::allocate(&open, &[req.quantity]);
        let lot_id = new_ordered_id("lot", now_ms);
        let mut lots: Vec<lot::Model> = vec![];
        let mut adjustments = vec![];
        let mut cost_left = cost;
        let mut qty_left = req.quantity;
        let base_lot = |id: String,
                        quantity: Decimal,
                        basis: Decimal,
                        start: NaiveDate,
                        adj: Decimal,
                        replacement_for: Option<String>,
                        split_from: Option<String>| lot::Model {
            id,
            entity_id: account.id.clone(),
            asset_symbol: req.asset_symbol.clone(),
            trade_id: trade_id.to_string(),
            acquired_at: req.trade_date.timestamp_millis(),
            holding_start: start.to_string(),
            quantity: t(quantity),
            cost_basis: t(basis),
            remaining_quantity: t(quantity),
            remaining_basis: t(basis),
            open: true,
            wash_adjustment: t(adj),
            replacement_for,
            split_from,
            created_at: now_ms,
        };
        let mut added_basis = Decimal::ZERO;
        for (li, _, q) in pairs {
            let x = &mut losses[li];
            let open_q = d(&x.wash_open_quantity);
            let open_loss = d(&x.wash_open_loss);
            let disallowed = pro_rata(open_loss, q, open_q);
            let share = pro_rata(cost_left, q, qty_left);
            cost_left -= share;
            qty_left -= q;
            let id = if lots.is_empty() { lot_id.clone() } else { new_ordered_id("lot", now_ms) };
            let start = wash::tacked_start(day, day_of(x.sold_at), date_of(&x.holding_start));
            let split_from = (!lots.is_empty()).then(|| lot_id.clone());
            lots.push(base_lot(id.clone(), q, share + disallowed, start, disallowed, Some(x.id.clone()), split_from));
            added_basis += disallowed;
            x.wash_open_quantity = t(open_q - q);
            x.wash_open_loss = t(open_loss - disallowed);
            x.wash_open = open_q - q > Decimal::ZERO;
            add(&mut x.wash_disallowed, disallowed);
            let mut reps: Vec<Value> = serde_json::from_str(&x.replacements).unwrap_or_default();
            let rep = Replacement {
                lot_id: id.clone(),
                quantity: qty(q),
                disallowed_loss: Usd::cents(disallowed),
                holding_period_start: None,
                trade_id: Some(trade_id.to_string()),
            };
            reps.extend(rep.to_json());
            x.replacements = Value::Array(reps).to_string();
            if is_long_term(&x.term) {
                add(&mut pos.realized_long_term, disallowed)
            } else {
                add(&mut pos.realized_short_term, disallowed)
            }
            add(&mut pos.wash_disallowed, disallowed);
            adjustments.push(ReplacedLoss {
                disposition_id: x.id.clone(),
                sell_trade_id: x.trade_id.clone(),
                sold: iso(x.sold_at),
                quantity: qty(q),
                disallowed_loss: Usd::cents(disallowed),
                replacement_lot_id: id,
                holding_period_start: start.to_string(),
            });
            Store::save_disposition(conn, x.clone()).await?;
        }
        if qty_left > Decimal::ZERO {
            let id = if lots.is_empty() { lot_id.clone() } else { new_ordered_id("lot", now_ms) };
            let split_from = (!lots.is_empty()).then(|| lot_id.clone());
            lots.push(base_lot(id, qty_left, cost_left, day, Decimal::ZERO, None, split_from));
        }
        for l in &lots {
            Store::insert_lot(conn, l.clone()).await?;
        }
        add(&mut pos.held_quantity, req.quantity);
        add(&mut pos.remaining_basis, cost + added_basis);
        pos.open_lots += lots.len() as i64;
        pos.buys += 1;
        let class = req.asset_class.as_deref().or(pos.asset_class.as_deref());
        let mut w = wash_rule_view(rule, class, rule.is_some_and(|r| wash::applies(&r.value, class)));
        w.replaced_losses = Some(adjustments);
        w.note = Some(
            "a buy within the window after a loss sale under the wash-sale rule disallows that loss; the loss is added to this lot's basis"
                .into(),
        );
        let views: Vec<LotView> = lots.iter().map(lot_view).collect();
        Ok(TradeResult {
            cost_basis: Some(Usd::cents(cost)),
            lot: lots.first().map(lot_view),
            lots: Some(views),
            ..Self::trade_result(account, req, trade_id, class, w, now_ms)
        })
    }

    /// The lots a sell consumes, in matching order, fetched a page at a time.
    async fn lots_for_sell<C: ConnectionTrait>(
        &self,
        conn: &C,
        account: &entity::Model,
        req: &TradeRequest,
    ) -> Result<Vec<lot::Model>, ApiError> {
        let until = req.trade_date.timestamp_millis();
        if req.accounting_method == Method::SpecificId {
            let id = req.specific_lot_id.as_deref().unwrap_or_default();
            let Some(l) = Store::lot(conn, &account.id, id).await? else {
                return Err(ApiError::field("specific_lot_id", format!("`{id}` is not a lot of this account")));
            };
            let problem = if l.asset_symbol != req.asset_symbol {
                Some(format!("`{id}` is a lot of {}, not {}", l.asset_symbol, req.asset_symbol))
            } else if !l.open {
                Some(format!("`{id}` is exhausted: all of it has been sold"))
            } else if l.acquired_at > until {
                Some(format!("`{id}` was acquired {}, after this sell's trade_date", iso(l.acquired_at)))
            } else if d(&l.remaining_quantity) < req.quantity {
                Some(format!(
                    "`{id}` holds {} units; this sell asks for {}",
                    quantity_text(d(&l.remaining_quantity)),
                    quantity_text(req.quantity)
                ))
            } else {
                None
            };
            return match problem {
                Some(p) => Err(ApiError::field("specific_lot_id", p)),
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
                have += d(&l.remaining_quantity);
                cursor = Some((l.acquired_at, l.id.clone()));
                out.push(l);
            }
            if !full {
                break;
            }
        }
        if have < req.quantity {
            return Err(ApiError::field(
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

    async fn sell<C: ConnectionTrait>(
        &self,
        conn: &C,
        account: &entity::Model,
        req: &TradeRequest,
        pos: &mut position::Model,
        trade_id: &str,
        now_ms: i64,
    ) -> Result<(TradeResult, Option<Decimal>), ApiError> {
        let held = d(&pos.held_quantity);
        if req.quantity > held {
            return Err(ApiError::field(
                "quantity",
                format!(
                    "sells {} {} but {} are held; nothing was recorded",
                    quantity_text(req.quantity),
                    req.asset_symbol,
                    quantity_text(held)
                ),
            ));
        }
        let day = req.day();
        let mut sold = self.lots_for_sell(conn, account, req).await?;
        let view: Vec<Lot> = sold
            .iter()
            .map(|l| Lot {
                id: l.id.clone(),
                acquired_at: DateTime::<Utc>::from_timestamp_millis(l.acquired_at).unwrap_or_default(),
                holding_start: date_of(&l.holding_start),
                remaining_quantity: d(&l.remaining_quantity),
                remaining_basis: d(&l.remaining_basis),
            })
            .collect();
        let months = self.registry.gains.long_term_after_months(day);
        let consumed = match_sell(view.iter(), req.quantity, req.amount(), day, months)
            .map_err(|s| ApiError::field("quantity", format!("only {} held", quantity_text(s.available))))?;

        let class = req.asset_class.clone().or_else(|| pos.asset_class.clone());
        let rule = self.registry.gains.wash_sale_rule(day);
        let applies = rule.is_some_and(|r| wash::applies(&r.value, class.as_deref()));
        let ids: Vec<String> = consumed.iter().map(|_| new_ordered_id("dsp", now_ms)).collect();
        let loss_idx: Vec<usize> =
            consumed.iter().enumerate().filter(|(_, c)| applies && c.gain() < Decimal::ZERO).map(|(i, _)| i).collect();
        // Replacements: lots of the symbol bought within the window, other than those this sell consumed.
        let mut candidates: Vec<lot::Model> = vec![];
        if let (Some(rule), false) = (rule, loss_idx.is_empty()) {
            let (from, to) = wash::window(&rule.value, day);
            candidates = Store::replacement_lots(conn, &account.id, &req.asset_symbol, day_start_ms(from), day_end_ms(to)).await?;
            candidates.retain(|l| !consumed.iter().any(|c| c.lot_id == l.id) && d(&l.remaining_quantity) > Decimal::ZERO);
        }
        let pairs = wash::allocate(
            &loss_idx.iter().map(|&i| consumed[i].quantity).collect::<Vec<_>>(),
            &candidates.iter().map(|l| d(&l.remaining_quantity)).collect::<Vec<_>>(),
        );
        let mut pieces: Vec<WashPiece> =
            pairs.into_iter().map(|(li, ci, q)| WashPiece { disposition: loss_idx[li], lot: ci, quantity: q }).collect();
        let mut disallowed = vec![Decimal::ZERO; consumed.len()];
        let mut matched = vec![Decimal::ZERO; consumed.len()];
        let mut replacements: Vec<Vec<Replacement>> = consumed.iter().map(|_| vec![]).collect();
        let mut new_lots: Vec<lot::Model> = vec![];
        for p in pieces.drain(..) {
            let c = &consumed[p.disposition];
            let loss = -c.gain();
            let loss_left = loss - disallowed[p.disposition];
            let q_left = c.quantity - matched[p.disposition];
            let dis = pro_rata(loss_left, p.quantity, q_left);
            disallowed[p.disposition] += dis;
            matched[p.disposition] += p.quantity;
            let r = &mut candidates[p.lot];
            let start = wash::tacked_start(day_of(r.acquired_at), day, c.holding_start);
            let r_qty = d(&r.remaining_quantity);
            let target_id = if p.quantity == r_qty {
                // The whole remaining lot is the replacement: adjust it in place.
                add(&mut r.remaining_basis, dis);
                add(&mut r.cost_basis, dis);
                add(&mut r.wash_adjustment, dis);
                r.holding_start = start.to_string();
                r.replacement_for = Some(ids[p.disposition].clone());
                r.id.clone()
            } else {
                let share = pro_rata(d(&r.remaining_basis), p.quantity, r_qty);
                r.remaining_quantity = t(r_qty - p.quantity);
                r.remaining_basis = t(d(&r.remaining_basis) - share);
                let child = lot::Model {
                    id: new_ordered_id("lot", now_ms),
                    entity_id: r.entity_id.clone(),
                    asset_symbol: r.asset_symbol.clone(),
                    trade_id: r.trade_id.clone(),
                    acquired_at: r.acquired_at,
                    holding_start: start.to_string(),
                    quantity: t(p.quantity),
                    cost_basis: t(share + dis),
                    remaining_quantity: t(p.quantity),
                    remaining_basis: t(share + dis),
                    open: true,
                    wash_adjustment: t(dis),
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
                quantity: qty(p.quantity),
                disallowed_loss: Usd::cents(dis),
                holding_period_start: Some(start.to_string()),
                trade_id: None,
            });
        }
        for r in &candidates {
            Store::save_lot(conn, r.clone()).await?;
        }
        for l in &new_lots {
            Store::insert_lot(conn, l.clone()).await?;
        }
        pos.open_lots += new_lots.len() as i64;

        // The consumed lots and the dispositions.
        let mut gains = Gains::default();
        let (mut basis_total, mut dis_total) = (Decimal::ZERO, Decimal::ZERO);
        // Totals of the figures shown.
        let mut shown = form1099da::Totals::default();
        let mut out = vec![];
        for ((i, c), reps) in consumed.iter().enumerate().zip(replacements) {
            let l = &mut sold[i];
            l.remaining_quantity = t(c.lot_remaining_quantity);
            l.remaining_basis = t(c.lot_remaining_basis);
            l.open = c.lot_remaining_quantity > Decimal::ZERO;
            if !l.open {
                pos.open_lots -= 1;
            }
            Store::save_lot(conn, l.clone()).await?;
            let loss_open = applies && c.gain() < Decimal::ZERO;
            let row = disposition::Model {
                id: ids[i].clone(),
                entity_id: account.id.clone(),
                trade_id: trade_id.to_string(),
                lot_id: c.lot_id.clone(),
                asset_symbol: req.asset_symbol.clone(),
                asset_name: req.asset_name.clone().or_else(|| pos.asset_name.clone()),
                asset_class: class.clone(),
                exchange: req.exchange.clone(),
                quantity: t(c.quantity),
                acquired_at: c.acquired_at.timestamp_millis(),
                holding_start: c.holding_start.to_string(),
                sold_at: req.trade_date.timestamp_millis(),
                tax_year: day.year(),
                proceeds: t(c.proceeds),
                cost_basis: t(c.cost_basis),
                term: c.term.name().to_string(),
                holding_days: c.holding_days,
                wash_applicable: loss_open,
                wash_disallowed: t(disallowed[i]),
                wash_open: loss_open && matched[i] < c.quantity,
                wash_open_quantity: t(if loss_open { c.quantity - matched[i] } else { Decimal::ZERO }),
                wash_open_loss: t(if loss_open { -c.gain() - disallowed[i] } else { Decimal::ZERO }),
                replacements: text_of(&reps),
            };
            Store::insert_disposition(conn, row.clone()).await?;
            let allowed = c.gain() + disallowed[i];
            match c.term {
                Term::ShortTerm => gains.short_term += allowed,
                Term::LongTerm => gains.long_term += allowed,
            }
            basis_total += c.cost_basis;
            dis_total += disallowed[i];
            let figures = form1099da::reported(&to_export(&row));
            shown.add(figures);
            out.push(disposition_view(&row, figures, reps));
        }
        add(&mut pos.held_quantity, -req.quantity);
        add(&mut pos.remaining_basis, dis_total - basis_total);
        add(&mut pos.realized_short_term, gains.short_term);
        add(&mut pos.realized_long_term, gains.long_term);
        add(&mut pos.wash_disallowed, dis_total);
        pos.sells += 1;
        pos.last_sell_at = Some(pos.last_sell_at.map_or(req.trade_date.timestamp_millis(), |x| x.max(req.trade_date.timestamp_millis())));

        let (b, p, w, r) = (shown.cost_basis, shown.proceeds, shown.wash_sale_disallowed, shown.gain_or_loss);
        let g = p - b;
        let terms: Vec<&str> = consumed.iter().map(|c| c.term.name()).collect();
        let holding = if terms.iter().all(|x| *x == terms[0]) { terms[0] } else { "mixed" };
        let profile = Profile {
            entity: req.tax_entity_type,
            filing_status: req.filing_status,
            income: req.estimated_annual_income,
            state: req.resident_state,
        };
        let mut wv = wash_rule_view(rule, class.as_deref(), applies);
        wv.disallowed_loss = Some(Usd::cents(w));
        let result = TradeResult {
            accounting_method: Some(AccountingMethod(req.accounting_method.name().to_string())),
            gross_proceeds: Some(Usd::cents(req.quantity * req.price_per_unit)),
            net_proceeds: Some(Usd::cents(req.amount())),
            lots_consumed: Some(out),
            totals: Some(SellTotals {
                cost_basis: Usd::cents(b),
                proceeds: Usd::cents(p),
                gain_or_loss: Usd::cents(g),
                wash_sale_disallowed: Usd::cents(w),
                realized_gain_or_loss: Usd::cents(r),
                short_term: Usd::cents(gains.short_term),
                long_term: Usd::cents(gains.long_term),
            }),
            realized_gain_loss: Some(Usd::cents(r)),
            holding_period: Some(holding.to_string()),
            estimates: Some(estimate::estimate(&self.registry.gains, gains, &profile, day).into()),
            ..Self::trade_result(account, req, trade_id, class.as_deref(), wv, now_ms)
        };
        Ok((result, Some(gains.short_term + gains.long_term)))
    }
}
