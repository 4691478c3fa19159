//! How the gains tracker's rows and rules read in its answers: lots, dispositions, positions, trades and the
//! capital-gains table, as the types that document them.

use super::*;

pub(super) use crate::store::decimal as d;

/// A quantity without trailing zeros.
pub(super) fn qty(x: Decimal) -> Exact {
    Exact::normalized(x)
}

/// A stored amount as money.
pub(super) fn usd(text: &str) -> Usd {
    Usd::cents(d(text))
}

pub fn lot_view(l: &lot::Model) -> LotView {
    LotView {
        lot_id: l.id.clone(),
        trade_id: l.trade_id.clone(),
        asset_symbol: l.asset_symbol.clone(),
        acquired: iso(l.acquired_at),
        holding_period_start: l.holding_start.clone(),
        quantity: qty(d(&l.quantity)),
        cost_basis: usd(&l.cost_basis),
        remaining_quantity: qty(d(&l.remaining_quantity)),
        remaining_basis: usd(&l.remaining_basis),
        wash_sale_adjustment: usd(&l.wash_adjustment),
        wash_sale_replacement_for: l.replacement_for.clone(),
        split_from: l.split_from.clone(),
        status: if l.open { LotStatus::Open } else { LotStatus::Closed },
    }
}

pub(super) fn wash_rule_view(rule: Option<&Dated<crate::rules::gains::WashSaleRule>>, class: Option<&str>, applies: bool) -> WashSaleInfo {
    let reason = match (rule, class) {
        (None, _) => "no wash-sale rule is in force on the trade date".to_string(),
        (Some(_), None) => {
            "asset_class not given: the wash-sale rule (IRC §1091) reaches stock and securities only, so it is not applied".to_string()
        }
        (Some(_), Some(c)) if applies => {
            format!("asset_class {c}: IRC §1091 applies to a loss when the same symbol is bought within 30 days before or after the sale")
        }
        (Some(_), Some(c)) => format!(
            "asset_class {c}: not stock or securities, so the wash-sale rule (IRC §1091) does not apply; a loss with a rebuy stays allowed"
        ),
    };
    WashSaleInfo {
        rule_applies: applies,
        reason,
        window_days: rule.map(|r| r.value.window_days),
        citation: rule.map(|r| CitationView::from(&r.citation)),
        disallowed_loss: None,
        replaced_losses: None,
        note: None,
    }
}

/// A disposition with its reported figures (from [`form1099da::reported`]) and its replacement lots.
pub(super) fn disposition_view(
    x: &disposition::Model,
    (p, b, w, g): (Decimal, Decimal, Decimal, Decimal),
    replacements: Vec<Replacement>,
) -> ConsumedLot {
    ConsumedLot {
        disposition_id: x.id.clone(),
        lot_id: x.lot_id.clone(),
        quantity: qty(d(&x.quantity)),
        acquired: iso(x.acquired_at),
        holding_period_start: x.holding_start.clone(),
        sold: iso(x.sold_at),
        cost_basis: Usd::cents(b),
        proceeds: Usd::cents(p),
        gain_or_loss: Usd::cents(p - b),
        wash_sale_disallowed: Usd::cents(w),
        realized_gain_or_loss: Usd::cents(g),
        holding_days: x.holding_days,
        term: term_view(&x.term),
        wash_sale: DispositionWash { applicable: x.wash_applicable, unreplaced_quantity: qty(d(&x.wash_open_quantity)), replacements },
    }
}

pub(super) fn term_view(term: &str) -> TermView {
    if term == Term::LongTerm.name() {
        TermView::LongTerm
    } else {
        TermView::ShortTerm
    }
}

pub(super) fn position_view(p: &position::Model) -> AssetSummary {
    let (st, lt) = (d(&p.realized_short_term), d(&p.realized_long_term));
    AssetSummary {
        asset_symbol: p.asset_symbol.clone(),
        asset_class: p.asset_class.clone().map(AssetClass),
        asset_name: p.asset_name.clone(),
        held_quantity: qty(d(&p.held_quantity)),
        open_lots: p.open_lots,
        remaining_basis: usd(&p.remaining_basis),
        realized_short_term: Usd::cents(st),
        realized_long_term: Usd::cents(lt),
        realized_total: Usd::cents(st + lt),
        wash_sale_disallowed: usd(&p.wash_disallowed),
        buys: p.buys,
        sells: p.sells,
    }
}

pub(super) fn trade_view(row: &trade::Model) -> TradeRecord {
    TradeRecord {
        trade_id: row.id.clone(),
        trade_type: TradeType(row.trade_type.clone()),
        asset_symbol: row.asset_symbol.clone(),
        asset_class: row.asset_class.clone().map(AssetClass),
        quantity: qty(d(&row.quantity)),
        price_per_unit: Exact::normalized(d(&row.price_per_unit)),
        fee_amount: usd(&row.fee_amount),
        trade_date: iso(row.trade_date),
        recorded_at: iso(row.created_at),
        accounting_method: row.accounting_method.clone().map(AccountingMethod),
        realized_gain_or_loss: row.realized_gain.as_deref().map(usd),
        exchange: row.exchange.clone(),
        counterparty: row.counterparty.clone(),
        notes: row.notes.clone(),
        as_recorded: Recorded(serde_json::from_str(&row.result).unwrap_or(Value::Null)),
    }
}

pub(super) fn state_rate_view(code: &str, entry: &Dated<StateGains>, explanation: Option<String>) -> StateGainsRate {
    let g = &entry.value;
    let surtax = |x: &crate::rules::gains::Surtax| GainsSurtax {
        rate: Fraction::of(x.rate),
        over: Usd::cents(x.over),
        on: SurtaxOn(SurtaxOn::VALUES.get(x.on as usize).copied().unwrap_or_default().to_string()),
    };
    StateGainsRate {
        state: code.to_string(),
        kind: estimate::kind_name(g.kind).into(),
        treatment: estimate::treatment(g).into(),
        short_term_rate: Fraction::of(g.short_term()),
        long_term_rate: Fraction::of(g.long_term()),
        top_ordinary_rate: Fraction::of(g.rate),
        rate_structure: g.graduated.map(|x| if x { "graduated" } else { "flat" }.to_string()),
        long_term_exclusion: Fraction::of(g.long_term_exclusion),
        long_term_cap: g.long_term_cap.map(Fraction::of),
        gain_deduction: Usd::cents(g.gain_deduction),
        short_term_taxed: g.kind != crate::rules::gains::StateKind::None && g.short_term_taxed,
        surtaxes: g.surtaxes.iter().map(surtax).collect(),
        effective_from: entry.from.to_string(),
        effective_to: entry.to.map(|x| x.to_string()),
        citation: CitationView::from(&entry.citation),
        note: g.note.clone(),
        explanation,
    }
}

pub(super) fn explain_state(code: &str, g: &StateGains) -> String {
    use crate::rules::gains::StateKind;
    match g.kind {
        StateKind::None => format!("{code} does not tax a resident individual's capital gains."),
        StateKind::GainsExcise => {
            let mut s = format!("{code} has no income tax but levies an excise of {} on long-term capital gains", pct(g.rate));
            if !g.gain_deduction.is_zero() {
                s.push_str(&format!(" above a deduction of {}", g.gain_deduction.normalize()));
            }
            s.push('.');
            for x in &g.surtaxes {
                s.push_str(&format!(" A further {} applies to taxable gains over {}.", pct(x.rate), x.over.normalize()));
            }
            if !g.short_term_taxed {
                s.push_str(" Short-term gains are not taxed.");
            }
            s
        }
        StateKind::IncomeTax => {
            let mut s = format!(
                "{code} taxes capital gains as income at {} ({}).",
                pct(g.rate),
                if g.graduated == Some(true) { "the top bracket of a graduated schedule" } else { "a flat rate" }
            );
            if let Some(r) = g.short_term_rate {
                s.push_str(&format!(" Short-term gains are taxed at {}.", pct(r)));
            }
            if let Some(r) = g.long_term_rate {
                s.push_str(&format!(" Long-term gains are taxed at {}.", pct(r)));
            }
            if !g.long_term_exclusion.is_zero() {
                s.push_str(&format!(" {} of net long-term gain is excluded.", pct(g.long_term_exclusion)));
            }
            if let Some(c) = g.long_term_cap {
                s.push_str(&format!(" Long-term gain is taxed at no more than {}.", pct(c)));
            }
            if !g.gain_deduction.is_zero() {
                s.push_str(&format!(" The first {} of gain is deducted.", g.gain_deduction.normalize()));
            }
            for x in &g.surtaxes {
                s.push_str(&format!(" A surtax of {} applies above {}.", pct(x.rate), x.over.normalize()));
            }
            s.push_str(&format!(" Effective top rates: short-term {}, long-term {}.", pct(g.short_term()), pct(g.long_term())));
            s
        }
    }
}

/// A replacement lot as the answer shows it.
fn replacement_view(r: &trades::Replacement) -> Replacement {
    Replacement {
        lot_id: r.lot_id.clone(),
        quantity: qty(r.quantity),
        disallowed_loss: Usd::cents(r.disallowed),
        holding_period_start: r.holding_start.map(|s| s.to_string()),
        trade_id: r.trade_id.clone(),
    }
}

/// The answer of a recorded trade: the members every trade has, and a buy's lots or a sell's dispositions.
pub(super) fn trade_result(recorded: &trades::Recorded) -> TradeResult {
    let trade = &recorded.trade;
    let (account, req) = (trade.account, trade.req);
    let mut result = TradeResult {
        success: true,
        trade_id: trade.trade_id.clone(),
        trade_type: TradeType(req.trade_type().to_string()),
        asset_symbol: req.asset_symbol.clone(),
        asset_class: trade.class.clone().map(AssetClass),
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
        wash_sale: wash_rule_view(trade.wash_rule, trade.class.as_deref(), trade.wash_applies),
        estimates: None,
        entity_id: account.id.clone(),
        recorded_at: iso(trade.now_ms),
        api_version: API_VERSION.to_string(),
        disclaimer: DISCLAIMER.to_string(),
    };
    match &recorded.kind {
        trades::Kind::Buy(b) => {
            let replaced = b.replaced.iter().map(|x| ReplacedLoss {
                disposition_id: x.disposition_id.clone(),
                sell_trade_id: x.sell_trade_id.clone(),
                sold: iso(x.sold_ms),
                quantity: qty(x.quantity),
                disallowed_loss: Usd::cents(x.disallowed),
                replacement_lot_id: x.lot_id.clone(),
                holding_period_start: x.holding_start.to_string(),
            });
            result.wash_sale.replaced_losses = Some(replaced.collect());
            result.wash_sale.note = Some(
                "a buy within the window after a loss sale under the wash-sale rule disallows that loss; the loss is added to this lot's basis"
                    .into(),
            );
            result.cost_basis = Some(Usd::cents(b.cost));
            result.lot = b.lots.first().map(lot_view);
            result.lots = Some(b.lots.iter().map(lot_view).collect());
        }
        trades::Kind::Sell(s) => {
            let (b, p, w, r) = (s.shown.cost_basis, s.shown.proceeds, s.shown.wash_sale_disallowed, s.shown.gain_or_loss);
            result.wash_sale.disallowed_loss = Some(Usd::cents(w));
            let consumed =
                s.dispositions.iter().map(|x| disposition_view(&x.row, x.figures, x.replacements.iter().map(replacement_view).collect()));
            result.accounting_method = Some(AccountingMethod(req.accounting_method.name().to_string()));
            result.gross_proceeds = Some(Usd::cents(req.quantity * req.price_per_unit));
            result.net_proceeds = Some(Usd::cents(req.amount()));
            result.lots_consumed = Some(consumed.collect());
            result.totals = Some(SellTotals {
                cost_basis: Usd::cents(b),
                proceeds: Usd::cents(p),
                gain_or_loss: Usd::cents(p - b),
                wash_sale_disallowed: Usd::cents(w),
                realized_gain_or_loss: Usd::cents(r),
                short_term: Usd::cents(s.gains.short_term),
                long_term: Usd::cents(s.gains.long_term),
            });
            result.realized_gain_loss = Some(Usd::cents(r));
            result.holding_period = Some(s.holding.to_string());
            result.estimates = Some(s.estimates.clone().into());
        }
    }
    result
}

/// The draft 1099-DA of an account for a year: its recipient block from the account (the EIN's last four digits
/// only), its entries from the year's dispositions.
pub(super) fn render_1099da(s: &AppState, account: &entity::Model, year: i32, generated_at: &str, rows: &[disposition::Model]) -> String {
    let ein_last4 = account
        .ein_ciphertext
        .as_deref()
        .and_then(|c| s.data_key.decrypt(c).ok())
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
        note: "the broker files the official form and is named in each entry's exchange; this draft is the recipient's own ledger".into(),
    };
    form1099da::render(year, generated_at, &text_of(&payer), &text_of(&recipient), rows.iter().map(trades::disposition_of)).0
}
