//! The gains tracker over HTTP: POST and GET /api/v1/trades, GET /api/v1/export/1099-da and
//! GET /api/v1/rates/capital-gains. The accounting is `crate::gains`; this module reads and
//! writes the rows it works on, inside one database transaction per trade.
//!
//! Backdated trades: trades of one asset take effect in trade-date order. A trade may be dated
//! in the past, before other buys, but not before the latest sell already recorded for the same
//! asset (400 naming trade_date): every recorded figure then equals what replaying the trades
//! in trade-date order gives, and no recorded sale is ever rematched. A sell consumes only lots
//! acquired at or before its trade_date. The one thing a later trade changes in an earlier one
//! is the wash-sale rule's own look-ahead: a buy within the window after a loss sale disallows
//! that loss (IRC §1091), adjusting the earlier disposition and the new lot.

use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use poem_openapi::param::{Header, Query};
use poem_openapi::types::ToJSON;
use poem_openapi::{ApiResponse, OpenApi};
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, TransactionTrait};
use serde_json::Value;

use super::auth::KeyAuth;
use super::caching::not_modified_json;
use super::error::ApiError;
use super::idempotency::{body_hash, parse_key, Begin};
use super::ledger::parse_since;
use super::payload::{Body, Json, JsonText};
use super::schema::gains::{
    AccountingMethod, AssetClass, AssetSummary, CapitalGainsRates, CompactGainsRate, ConsumedLot, DispositionWash, Export1099Da,
    Form1099DaPayer, Form1099DaRecipient, FullGainsRates, GainsSurtax, LotStatus, LotView, Recorded, ReplacedLoss, Replacement, SellTotals,
    StateGainsRate, SurtaxOn, Term as TermView, TradeBody, TradeList, TradeRecord, TradeResult, TradeSummary, TradeType, WashSaleInfo,
};
use super::schema::number::{Exact, Fraction, Usd};
use super::schema::param::{
    exact, listed_query, state_query, text, true_false_query, DateOrDateTime, GainsFormat, IdempotencyKey, PageLimit, PageOffset, Param,
    StateParam, SymbolParam, TaxYear, TrueFalse,
};
use super::schema::rates::CitationView;
use super::{ApiTags, AppState, API_VERSION};
use crate::billing::{self, Product};
use crate::clock::iso;
use crate::engine::determine::pct;
use crate::engine::render::DISCLAIMER;
use crate::error_responses;
use crate::gains::estimate::{self, Gains, Profile};
use crate::gains::form1099da::{self, Disposition};
use crate::gains::lots::pro_rata;
use crate::gains::request::is_symbol;
use crate::gains::{exact_quantity, match_sell, quantity_text, wash, EntityType, Lot, Method, Term, TradeRequest};
use crate::rules::gains::StateGains;
use crate::rules::registry::{Citation, Dated};
use crate::rules::schema::STATES;
use crate::security::new_ordered_id;
use crate::store::entity::{disposition, entity, lot, position, trade};
use crate::store::gains::TradeFilter;
use crate::store::Store;

pub struct TradesApi(pub Arc<AppState>);

/// Lots fetched per page while a FIFO or LIFO sell gathers what it needs.
const LOT_PAGE: u64 = 64;

#[derive(ApiResponse)]
#[oai(
    header(name = "X-Request-Id", ty = "String", description = "The request id."),
    header(name = "X-RateLimit-Limit", ty = "i64", description = "Calls allowed per 60-second window for this key (120)."),
    header(name = "X-RateLimit-Remaining", ty = "i64", description = "Calls left in that window."),
    header(name = "X-RateLimit-Reset", ty = "i64", description = "Unix time (seconds) at which that window resets."),
    header(
        name = "X-Idempotency-Status",
        ty = "Option<String>",
        description = "`cached` when this is the stored response of an earlier request with the same Idempotency-Key."
    )
)]
pub enum TradeResponse {
    /// The trade was recorded: a buy with its lot, a sell with every lot it consumed, its gain and the estimates.
    #[oai(status = 201)]
    Created(JsonText<TradeResult>),
}

error_responses!(TradeErrors {
    400 => BadRequest: "INVALID_INPUT: errors name each field — a constraint of the trade request, more than 8 decimal places, a sell of more than is held on its trade_date, a specific_lot_id that is unknown, of another asset or exhausted, or a trade_date before the asset's latest recorded sell. Nothing is written. Or INVALID_JSON_BODY, IDEMPOTENCY_KEY_INVALID.",
    401 => Unauthorized: "UNAUTHORIZED: the API key is malformed, unknown or revoked.",
    409 => Conflict: "IDEMPOTENCY_KEY_CONFLICT (same key, different body) or RESOURCE_CONFLICT (same key still running after 5 s; Retry-After sent).",
    429 => TooManyRequests: "RATE_LIMITED: the key's 120 calls per 60 s (Retry-After sent), or the gains plan's monthly allowance of trades is used up on a plan without overage (\"Monthly limit reached\", no Retry-After; nothing is written).",
    503 => DbUnavailable: "DB_UNAVAILABLE: the database does not answer; retry.",
});

#[derive(ApiResponse)]
#[oai(header(name = "X-Request-Id", ty = "String", description = "The request id."))]
pub enum TradeListResponse {
    /// A page of trades and the account's (or the asset's) summary.
    #[oai(status = 200)]
    Ok(Json<TradeList>),
}

error_responses!(TradeListErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter is invalid (trade_type, since, until, limit, offset, asset_symbol).",
    401 => Unauthorized: "UNAUTHORIZED.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

#[derive(ApiResponse)]
#[oai(header(name = "X-Request-Id", ty = "String", description = "The request id."))]
pub enum ExportResponse {
    #[oai(status = 200)]
    Ok(JsonText<Export1099Da>),
}

error_responses!(ExportErrors {
    400 => BadRequest: "INVALID_INPUT: year must be an integer from 2020 to 2030.",
    401 => Unauthorized: "UNAUTHORIZED.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

#[derive(ApiResponse)]
#[oai(
    header(name = "X-Request-Id", ty = "String", description = "The request id."),
    header(
        name = "ETag",
        ty = "String",
        description = "The rule set's version and a hash of this representation; send it in If-None-Match to get 304 while it is current."
    ),
    header(name = "Cache-Control", ty = "String", description = "public, max-age=3600.")
)]
pub enum RatesResponse {
    /// Each state's treatment: the full table, or the compact form.
    #[oai(status = 200)]
    Ok(Json<CapitalGainsRates>),
    /// If-None-Match names the current ETag: no body.
    #[oai(status = 304)]
    NotModified,
}

error_responses!(RatesErrors {
    400 => BadRequest: "INVALID_INPUT: state is not a state code, format is not compact or full, or explain is not true or false.",
});

fn d(text: &str) -> Decimal {
    text.parse().unwrap_or_default()
}

fn t(x: Decimal) -> String {
    x.normalize().to_string()
}

fn day_of(ms: i64) -> NaiveDate {
    DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default().date_naive()
}

fn day_start_ms(day: NaiveDate) -> i64 {
    day.and_hms_opt(0, 0, 0).map(|x| x.and_utc().timestamp_millis()).unwrap_or(0)
}

fn day_end_ms(day: NaiveDate) -> i64 {
    day_start_ms(day) + 86_400_000 - 1
}

fn date_of(text: &str) -> NaiveDate {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap_or_default()
}

/// A quantity without trailing zeros.
fn qty(x: Decimal) -> Exact {
    Exact::normalized(x)
}

/// A stored amount as money.
fn usd(text: &str) -> Usd {
    Usd::cents(d(text))
}

fn cite(c: &Citation) -> CitationView {
    CitationView { cite: c.cite.clone(), url: c.url.clone() }
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

fn wash_rule_view(rule: Option<&Dated<crate::rules::gains::WashSaleRule>>, class: Option<&str>, applies: bool) -> WashSaleInfo {
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
        citation: rule.map(|r| cite(&r.citation)),
        disallowed_loss: None,
        replaced_losses: None,
        note: None,
    }
}

/// A disposition with its reported figures (from [`form1099da::reported`]) and its replacement lots.
fn disposition_view(
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

fn is_long_term(term: &str) -> bool {
    term == "long_term"
}

fn term_view(term: &str) -> TermView {
    if is_long_term(term) {
        TermView::LongTerm
    } else {
        TermView::ShortTerm
    }
}

fn to_export(x: &disposition::Model) -> Disposition {
    Disposition {
        id: x.id.clone(),
        trade_id: x.trade_id.clone(),
        lot_id: x.lot_id.clone(),
        asset_symbol: x.asset_symbol.clone(),
        asset_name: x.asset_name.clone(),
        asset_class: x.asset_class.clone(),
        exchange: x.exchange.clone(),
        quantity: d(&x.quantity),
        acquired: day_of(x.acquired_at),
        sold: day_of(x.sold_at),
        proceeds: d(&x.proceeds),
        cost_basis: d(&x.cost_basis),
        wash_sale_disallowed: d(&x.wash_disallowed),
        term: if is_long_term(&x.term) { Term::LongTerm } else { Term::ShortTerm },
    }
}

fn position_view(p: &position::Model) -> AssetSummary {
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

fn trade_view(row: &trade::Model) -> TradeRecord {
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

/// A typed body as the JSON text it is sent as.
fn json_text<T: ToJSON>(v: &T) -> String {
    v.to_json().unwrap_or_default().to_string()
}

/// The new position totals, applied at the end of a trade.
fn add(field: &mut String, x: Decimal) {
    *field = t(d(field) + x);
}

struct WashPiece {
    disposition: usize,
    lot: usize,
    quantity: Decimal,
}

/// A checked trade body as the gains tracker takes it, with what JSON Schema cannot say: the trade date (not in
/// the future), a quantity kept exactly, and which fields go together (accounting_method on sells,
/// specific_lot_id with specific_id).
fn trade_request(b: TradeBody, now: DateTime<Utc>) -> Result<TradeRequest, ApiError> {
    use crate::gains::request::{parse_instant, FUTURE_SKEW_SECS};
    use crate::rules::schema::{state_index, FILING_STATUSES};
    let mut errors = Vec::new();
    let number = |v: &Value| exact(v).unwrap_or_default();
    let is_sell = b.trade_type.0 == "sell";
    let quantity = exact_quantity(number(&b.quantity.0)).unwrap_or_default();
    let trade_date = match b.trade_date.as_deref() {
        None => now,
        Some(t) => match parse_instant(t) {
            Some(d) if (d - now).num_seconds() > FUTURE_SKEW_SECS => {
                errors.push(format!("trade_date: `{t}` is in the future; record a trade once it has happened"));
                now
            }
            Some(d) => d,
            None => {
                errors.push(format!("trade_date: `{t}` is not an ISO 8601 date-time such as 2026-03-15T14:30:00Z"));
                now
            }
        },
    };
    let method = b.accounting_method.as_ref().and_then(|m| Method::parse(&m.0));
    if !is_sell && b.accounting_method.is_some() {
        errors.push("accounting_method: applies to sells only; a buy always makes a new lot".to_string());
    }
    let lot_id = b.specific_lot_id;
    match (method, &lot_id) {
        (Some(Method::SpecificId), None) if is_sell => {
            errors.push("specific_lot_id: is required when accounting_method is specific_id".into())
        }
        (m, Some(_)) if m != Some(Method::SpecificId) => {
            errors.push("specific_lot_id: is used only with accounting_method specific_id on a sell".into())
        }
        _ => {}
    }
    if !errors.is_empty() {
        return Err(ApiError::invalid(errors));
    }
    Ok(TradeRequest {
        asset_symbol: b.asset_symbol.to_ascii_uppercase(),
        is_sell,
        quantity,
        price_per_unit: number(&b.price_per_unit.0),
        fee_amount: b.fee_amount.map(|f| number(&f.0)).unwrap_or(Decimal::ZERO),
        trade_date,
        accounting_method: method.unwrap_or(Method::Fifo),
        specific_lot_id: lot_id,
        asset_name: b.asset_name,
        counterparty: b.counterparty,
        exchange: b.exchange,
        notes: b.notes,
        resident_state: b.resident_state.and_then(|s| state_index(&s.text().to_ascii_uppercase())),
        tax_entity_type: b.tax_entity_type.and_then(|e| EntityType::parse(&e.0)),
        filing_status: b.filing_status.and_then(|f| FILING_STATUSES.iter().position(|x| *x == f.0)),
        estimated_annual_income: b.estimated_annual_income.map(|i| number(&i.0)),
        asset_class: b.asset_class.map(|c| c.0),
    })
}

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Gains")]
impl TradesApi {
    /// Record a buy or a sell
    ///
    /// A buy makes a cost-basis lot (quantity × price + fee). A sell consumes lots by accounting_method — fifo
    /// (oldest first, the default), lifo (newest first) or specific_id (the lot named in specific_lot_id) — and
    /// answers with every lot consumed (quantity, acquired, cost basis, proceeds net of the sell fee pro rata,
    /// gain or loss, holding days, short_term or long_term) and federal and state estimates that say which tax
    /// year and assumptions they used. Quantities keep exactly 8 decimal places; more is a 400, never rounded.
    ///
    /// For asset_class stock, security, securities or equity a loss is tested against IRC §1091: a buy of the
    /// same symbol within 30 days before or after disallows the loss in proportion to the replacement quantity,
    /// adds it to the replacement lot's basis and carries the holding period over (a replacement bought later
    /// adjusts the earlier sale). digital_asset, crypto or no class: no wash-sale rule, and `wash_sale` says so.
    ///
    /// Trades of one asset take effect in trade-date order; a trade may be backdated, but not before the
    /// asset's latest recorded sell (so every figure stays reproducible). Idempotency-Key works as on calculate.
    /// Each recorded trade counts against the gains plan's monthly allowance (GET /api/v1/usage).
    #[oai(path = "/trades", method = "post", operation_id = "recordTrade")]
    async fn record(
        &self,
        auth: KeyAuth,
        /// Makes a retry safe: same key and body within 24 hours replays the stored response, writing nothing.
        #[oai(name = "Idempotency-Key")]
        _idempotency_key: Header<Option<Param<IdempotencyKey>>>,
        req: &poem::Request,
        mut body: Body<TradeBody>,
    ) -> Result<TradeResponse, TradeErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        s.check_burst(&owner.key_id).await?;
        let raw = std::mem::take(&mut body.raw);
        let typed = body.parse();
        let idem = parse_key(super::idempotency::header_text(req).as_deref())?;
        let req = trade_request(typed?, s.clock.now())?;
        // The body as sent: what Idempotency-Key compares and what the trade row keeps.
        let value: Value = serde_json::from_slice(&raw).map_err(ApiError::invalid_json)?;
        let value = &value;
        let entity_id = owner.entity.id.clone();
        if let Some(k) = &idem {
            if let Begin::Replay { body, .. } = s.begin_idempotent(&entity_id, k, &body_hash("trades", value)).await? {
                return Ok(TradeResponse::Created(JsonText::new(body)));
            }
        }
        let result = s.record_trade(&owner.entity, &req, value, idem.as_deref()).await;
        if let (Err(_), Some(k)) = (&result, &idem) {
            s.release_idempotency_key(&entity_id, k).await;
        }
        Ok(TradeResponse::Created(JsonText::new(result?)))
    }

    /// List trades, with per-asset summaries
    ///
    /// Trades newest trade_date first, filtered by asset_symbol, trade_type, since and until, paged by limit and
    /// offset. `summary` covers each asset of the account (or the one asked for) over all time: held quantity,
    /// open lots, remaining basis, realized short- and long-term gain or loss after wash-sale adjustments, and
    /// the losses disallowed as wash sales.
    #[oai(path = "/trades", method = "get", operation_id = "listTrades")]
    #[allow(clippy::too_many_arguments, reason = "one argument per query parameter, as poem-openapi takes them")]
    async fn list(
        &self,
        auth: KeyAuth,
        /// One asset (case-insensitive).
        asset_symbol: Query<Option<Param<SymbolParam>>>,
        /// buy or sell.
        trade_type: Query<Option<Param<TradeType>>>,
        /// Trades dated at or after: an ISO 8601 date (from 00:00 UTC) or date-time.
        since: Query<Option<Param<DateOrDateTime>>>,
        /// Trades dated at or before: an ISO 8601 date (through 23:59:59.999 UTC) or date-time.
        until: Query<Option<Param<DateOrDateTime>>>,
        /// 1 to 1000, default 100.
        limit: Query<Option<Param<PageLimit>>>,
        /// Trades to skip, default 0.
        offset: Query<Option<Param<PageOffset>>>,
    ) -> Result<TradeListResponse, TradeListErrors> {
        let s = &self.0;
        let (asset_symbol, trade_type, since, until) = (text(asset_symbol), text(trade_type), text(since), text(until));
        let owner = s.authenticate(&auth).await?;
        let mut errors = vec![];
        let symbol = asset_symbol.0.map(|x| x.to_ascii_uppercase());
        if let Some(sym) = &symbol {
            if !is_symbol(sym) {
                errors.push(format!("asset_symbol: `{sym}` does not match ^[A-Za-z0-9._\\-]{{1,50}}$"));
            }
        }
        if let Some(tt) = &trade_type.0 {
            if tt != "buy" && tt != "sell" {
                errors.push(format!("trade_type: `{tt}` is not one of: buy, sell"));
            }
        }
        let mut bound = |name: &str, v: Option<String>, end_of_day: bool| -> Option<i64> {
            let v = v?;
            match parse_since(&v) {
                Ok(ms) if end_of_day && v.len() == 10 => Some(ms + 86_400_000 - 1),
                Ok(ms) => Some(ms),
                Err(e) => {
                    errors.push(format!("{name}: {e}"));
                    None
                }
            }
        };
        let since_ms = bound("since", since.0, false);
        let until_ms = bound("until", until.0, true);
        // Read here rather than by the parameter types, so that every invalid parameter is reported at once.
        let whole = |t: String| t.trim().parse::<i64>().unwrap_or(i64::MIN);
        let limit = text(limit).0.map(whole).unwrap_or(100);
        if !(1..=1000).contains(&limit) {
            errors.push("limit: must be between 1 and 1000".into());
        }
        let offset = text(offset).0.map(whole).unwrap_or(0);
        if offset < 0 {
            errors.push("offset: must be 0 or more".into());
        }
        if !errors.is_empty() {
            return Err(ApiError::invalid(errors).into());
        }
        let filter = TradeFilter {
            asset_symbol: symbol.clone(),
            trade_type: trade_type.0,
            since_ms,
            until_ms,
            limit: limit as u64,
            offset: offset as u64,
        };
        let rows = s.store.list_trades(&owner.entity.id, &filter).await.map_err(ApiError::from)?;
        let positions = s.store.positions(&owner.entity.id, symbol.as_deref()).await.map_err(ApiError::from)?;
        let (mut st, mut lt, mut w) = (Decimal::ZERO, Decimal::ZERO, Decimal::ZERO);
        for p in &positions {
            st += d(&p.realized_short_term);
            lt += d(&p.realized_long_term);
            w += d(&p.wash_disallowed);
        }
        let trades: Vec<TradeRecord> = rows.iter().map(trade_view).collect();
        Ok(TradeListResponse::Ok(Json(TradeList {
            success: true,
            count: trades.len() as u32,
            limit,
            offset,
            trades,
            summary: TradeSummary {
                assets: positions.iter().map(position_view).collect(),
                realized_short_term: Usd::cents(st),
                realized_long_term: Usd::cents(lt),
                realized_total: Usd::cents(st + lt),
                wash_sale_disallowed: Usd::cents(w),
            },
        })))
    }

    /// Draft Form 1099-DA for a tax year
    ///
    /// One entry per disposition sold in the year, its values under the box names of the final Form 1099-DA
    /// (box_1b name, box_1c units, box_1d date acquired, box_1e date sold, box_1f proceeds, box_1g cost or other
    /// basis, box_1i wash sale loss disallowed, box_6 term), payer and recipient blocks from the account, and
    /// totals by term (sums of the entries' rounded figures). Marked `draft: true`: it is compiled from the
    /// account's own ledger to prepare a return, not an information return filed with the IRS.
    #[oai(path = "/export/1099-da", method = "get", operation_id = "export1099Da")]
    async fn export(
        &self,
        auth: KeyAuth,
        /// Tax year, 2020 to 2030; default the current year.
        year: Query<Option<Param<TaxYear>>>,
    ) -> Result<ExportResponse, ExportErrors> {
        let s = &self.0;
        let year = text(year);
        let owner = s.authenticate(&auth).await?;
        let now = s.clock.now();
        let year = match year.0 {
            None => now.year(),
            Some(y) => match y.trim().parse::<i32>() {
                Ok(n) if (2020..=2030).contains(&n) => n,
                _ => return Err(ApiError::field("year", format!("`{y}` is not a tax year from 2020 to 2030")).into()),
            },
        };
        let rows = s.store.dispositions_for_year(&owner.entity.id, year).await.map_err(ApiError::from)?;
        let text = s.render_1099da(&owner.entity, year, &iso(now.timestamp_millis()), rows.iter().map(to_export));
        Ok(ExportResponse::Ok(JsonText::new(text)))
    }
}

pub struct RatesApi(pub Arc<AppState>);

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Gains")]
impl RatesApi {
    /// State capital-gains rates
    ///
    /// How each of the 51 jurisdictions taxes a resident individual's capital gains today, from rules/gains/states:
    /// the top rate on short-term and on long-term gain (after exclusions and caps), the kind of tax, deductions,
    /// surtaxes and the citation. `format=compact` gives {state: {st, lt, t}} where st and lt are those rates and
    /// t the treatment: none (no tax on gains), exempt, ordinary (taxed like wages), preferential (long-term
    /// taxed lower) or excise (WA's excise on long-term gains). `explain=true` with a state adds a plain-language
    /// explanation. No key needed; ETag and Cache-Control are sent, and If-None-Match gives 304.
    #[oai(path = "/rates/capital-gains", method = "get", operation_id = "capitalGainsRates")]
    async fn rates(
        &self,
        /// One state (two letters, upper or lower case) instead of all 51.
        state: Query<Option<Param<StateParam>>>,
        /// compact, or full (the default).
        format: Query<Option<Param<GainsFormat>>>,
        /// true adds an explanation block (with state).
        explain: Query<Option<Param<TrueFalse>>>,
        /// An ETag from an earlier answer: 304 while it is current.
        #[oai(name = "If-None-Match")]
        if_none_match: Header<Option<String>>,
    ) -> Result<RatesResponse, RatesErrors> {
        let s = &self.0;
        let (state, format, explain) = (text(state), text(format), text(explain));
        let mut errors = vec![];
        let one = state_query(state.0.as_deref(), &mut errors);
        let compact = listed_query("format", format.0.as_deref(), GainsFormat::VALUES, &mut errors) == "compact";
        let explain = true_false_query("explain", explain.0.as_deref(), &mut errors);
        if !errors.is_empty() {
            return Err(ApiError::invalid(errors).into());
        }
        let today = s.clock.now().date_naive();
        let states: Vec<usize> = one.map_or_else(|| (0..STATES.len()).collect(), |i| vec![i]);
        let entries = states.into_iter().filter_map(|i| Some((STATES[i], s.registry.gains.state(i, today)?)));
        let body = if compact {
            let map = entries
                .map(|(code, e)| {
                    let g = &e.value;
                    let rate = CompactGainsRate {
                        st: Fraction::of(g.short_term()),
                        lt: Fraction::of(g.long_term()),
                        t: estimate::treatment(g).into(),
                    };
                    (code.to_string(), rate)
                })
                .collect();
            CapitalGainsRates::Compact(map)
        } else {
            let states = entries
                .map(|(code, e)| {
                    let explanation = (explain && one.is_some()).then(|| explain_state(code, &e.value));
                    (code.to_string(), state_rate_view(code, e, explanation))
                })
                .collect();
            CapitalGainsRates::Full(FullGainsRates {
                success: true,
                as_of: today.to_string(),
                tax_year: today.year(),
                states,
                disclaimer: DISCLAIMER.to_string(),
            })
        };
        if not_modified_json(if_none_match.0.as_deref(), &s.registry.version, "/api/v1/rates/capital-gains", &body) {
            return Ok(RatesResponse::NotModified);
        }
        Ok(RatesResponse::Ok(Json(body)))
    }
}

fn state_rate_view(code: &str, entry: &Dated<StateGains>, explanation: Option<String>) -> StateGainsRate {
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
        citation: cite(&entry.citation),
        note: g.note.clone(),
        explanation,
    }
}

fn explain_state(code: &str, g: &StateGains) -> String {
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
        form1099da::render(year, generated_at, &json_text(&payer), &json_text(&recipient), rows).0
    }

    async fn record_trade(&self, account: &entity::Model, req: &TradeRequest, raw: &Value, idem: Option<&str>) -> Result<String, ApiError> {
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
        let text = json_text(&body);
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
                replacements: json_text(&reps),
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
            estimates: Some(estimate::estimate(&self.registry.gains, gains, &profile, day)),
            ..Self::trade_result(account, req, trade_id, class.as_deref(), wv, now_ms)
        };
        Ok((result, Some(gains.short_term + gains.long_term)))
    }
}
