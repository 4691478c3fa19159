//! The gains tracker over HTTP: POST and GET /api/v1/trades, GET /api/v1/export/1099-da and
//! GET /api/v1/rates/capital-gains. A trade is recorded by `crate::trades` (its rows, in one transaction) with the
//! accounting of `crate::gains`; `views` turns what it did, rows and rules into the documented answers, and this
//! file holds the operations.

use std::sync::Arc;

use chrono::{DateTime, Datelike, Utc};
use poem_openapi::param::{Header, Query};
use poem_openapi::{ApiResponse, OpenApi};
use rust_decimal::Decimal;
use serde_json::Value;

use super::auth::KeyAuth;
use super::caching::unless_current;
use super::error::ApiError;
use super::idempotency::{parse_key, replayed};
use super::ledger::parse_since;
use super::payload::{text_of, Body, Json, JsonText};
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
use crate::clock::iso;
use crate::engine::determine::pct;
use crate::engine::render::DISCLAIMER;
use crate::gains::estimate;
use crate::gains::form1099da;
use crate::gains::{exact_quantity, EntityType, Method, Term, TradeRequest};
use crate::rules::gains::StateGains;
use crate::rules::registry::Dated;
use crate::rules::schema::STATES;
use crate::store::entity::{disposition, entity, lot, position, trade};
use crate::store::gains::TradeFilter;
use crate::trades::{self, Book, Outcome};
use crate::{error_responses, ok_responses};

mod views;

use views::*;

pub struct TradesApi(pub Arc<AppState>);

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

impl From<trades::Refused> for ApiError {
    fn from(r: trades::Refused) -> Self {
        match r {
            trades::Refused::Field(field, message) => ApiError::field(field, message),
            trades::Refused::AllowanceUsedUp(message) => ApiError::rate_limited(message),
            trades::Refused::Idempotency(e) => e.into(),
            trades::Refused::Store(e) => e.into(),
        }
    }
}

error_responses!(TradeErrors {
    400 => BadRequest: "INVALID_INPUT: errors name each field — a constraint of the trade request, more than 8 decimal places, a sell of more than is held on its trade_date, a specific_lot_id that is unknown, of another asset or exhausted, or a trade_date before the asset's latest recorded sell. Nothing is written. Or INVALID_JSON_BODY, IDEMPOTENCY_KEY_INVALID.",
    401 => Unauthorized: "UNAUTHORIZED: the API key is malformed, unknown or revoked.",
    409 => Conflict: "IDEMPOTENCY_KEY_CONFLICT (same key, different body) or RESOURCE_CONFLICT (same key still running after 5 s; Retry-After sent).",
    429 => TooManyRequests: "RATE_LIMITED: the key's 120 calls per 60 s (Retry-After sent), or the gains plan's monthly allowance of trades is used up on a plan without overage (\"Monthly limit reached\", no Retry-After; nothing is written).",
    503 => DbUnavailable: "DB_UNAVAILABLE: the database does not answer; retry.",
});

ok_responses!(TradeListResponse {
    200 => Ok(Json<TradeList>): "A page of trades and the account's (or the asset's) summary.",
});

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

crate::cached_response!(RatesResponse, CapitalGainsRates, "Each state's treatment: the full table, or the compact form.");

error_responses!(RatesErrors {
    400 => BadRequest: "INVALID_INPUT: state is not a state code, format is not compact or full, or explain is not true or false.",
});

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
    ApiError::check(errors)?;
    Ok(TradeRequest {
        asset_symbol: b.asset_symbol.text().to_ascii_uppercase(),
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
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const RECORD_TRADE_EXAMPLE: &'static str = r#"{
        "body": {"asset_symbol": "BTC", "trade_type": "buy", "quantity": 0.5, "price_per_unit": 60000, "fee_amount": 10, "trade_date": "2026-03-02T15:00:00Z", "asset_class": "crypto"},
        "headers": {"Idempotency-Key": "buy-btc-1"},
        "status": 201,
        "expect": {"/success": true}
    }"#;

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
    #[oai(
        path = "/trades",
        method = "post",
        operation_id = "recordTrade",
        code_sample(lang = "json", label = "example", source = "Self::RECORD_TRADE_EXAMPLE")
    )]
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
        let book = Book { store: &s.store, gains: &s.registry.gains, plans: &s.plans, clock: &s.clock };
        let answer = |recorded: &trades::Recorded| text_of(&trade_result(recorded));
        match book.record(&owner.entity, &req, &value, idem.as_deref(), answer).await.map_err(ApiError::from)? {
            Outcome::New(text) => Ok(TradeResponse::Created(JsonText::new(text))),
            Outcome::Replay(text) => {
                replayed();
                Ok(TradeResponse::Created(JsonText::new(text)))
            }
        }
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const LIST_TRADES_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/success": true}
    }"#;

    /// List trades, with per-asset summaries
    ///
    /// Trades newest trade_date first, filtered by asset_symbol, trade_type, since and until, paged by limit and
    /// offset. `summary` covers each asset of the account (or the one asked for) over all time: held quantity,
    /// open lots, remaining basis, realized short- and long-term gain or loss after wash-sale adjustments, and
    /// the losses disallowed as wash sales.
    #[oai(
        path = "/trades",
        method = "get",
        operation_id = "listTrades",
        code_sample(lang = "json", label = "example", source = "Self::LIST_TRADES_EXAMPLE")
    )]
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
        let owner = s.authenticate(&auth).await?;
        // Each parameter checked against its documented schema; every problem told at once.
        let mut errors = vec![];
        let symbol = asset_symbol.0.and_then(|p| p.check_into("asset_symbol", &mut errors)).map(|x| x.to_ascii_uppercase());
        let trade_type = trade_type.0.and_then(|p| p.check_into("trade_type", &mut errors));
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
        let since_ms = bound("since", text(since).0, false);
        let until_ms = bound("until", text(until).0, true);
        let limit = limit.0.and_then(|p| p.check_into("limit", &mut errors)).and_then(|t| t.trim().parse::<i64>().ok()).unwrap_or(100);
        let offset = offset.0.and_then(|p| p.check_into("offset", &mut errors)).and_then(|t| t.trim().parse::<i64>().ok()).unwrap_or(0);
        ApiError::check(errors)?;
        let filter =
            TradeFilter { asset_symbol: symbol.clone(), trade_type, since_ms, until_ms, limit: limit as u64, offset: offset as u64 };
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

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const EXPORT1099_DA_EXAMPLE: &'static str = r#"{
        "query": "year=2026",
        "status": 200,
        "expect": {"/entries": []}
    }"#;

    /// Draft Form 1099-DA for a tax year
    ///
    /// One entry per disposition sold in the year, its values under the box names of the final Form 1099-DA
    /// (box_1b name, box_1c units, box_1d date acquired, box_1e date sold, box_1f proceeds, box_1g cost or other
    /// basis, box_1i wash sale loss disallowed, box_6 term), payer and recipient blocks from the account, and
    /// totals by term (sums of the entries' rounded figures). Marked `draft: true`: it is compiled from the
    /// account's own ledger to prepare a return, not an information return filed with the IRS.
    #[oai(
        path = "/export/1099-da",
        method = "get",
        operation_id = "export1099Da",
        code_sample(lang = "json", label = "example", source = "Self::EXPORT1099_DA_EXAMPLE")
    )]
    async fn export(
        &self,
        auth: KeyAuth,
        /// Tax year, 2020 to 2030; default the current year.
        year: Query<Option<Param<TaxYear>>>,
    ) -> Result<ExportResponse, ExportErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let now = s.clock.now();
        let year = year.0.map_or(Ok(now.year()), |y| y.checked_whole::<i32>("year"))?;
        let rows = s.store.dispositions_for_year(&owner.entity.id, year).await.map_err(ApiError::from)?;
        let text = render_1099da(s, &owner.entity, year, &iso(now.timestamp_millis()), &rows);
        Ok(ExportResponse::Ok(JsonText::new(text)))
    }
}

pub struct RatesApi(pub Arc<AppState>);

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Gains")]
impl RatesApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const CAPITAL_GAINS_RATES_EXAMPLE: &'static str = r#"{
        "query": "state=TX&format=compact",
        "status": 200,
        "expect": {"/TX/t": "none", "/TX/st": 0}
    }"#;

    /// State capital-gains rates
    ///
    /// How each of the 51 jurisdictions taxes a resident individual's capital gains today, from rules/gains/states:
    /// the top rate on short-term and on long-term gain (after exclusions and caps), the kind of tax, deductions,
    /// surtaxes and the citation. `format=compact` gives {state: {st, lt, t}} where st and lt are those rates and
    /// t the treatment: none (no tax on gains), exempt, ordinary (taxed like wages), preferential (long-term
    /// taxed lower) or excise (WA's excise on long-term gains). `explain=true` with a state adds a plain-language
    /// explanation. No key needed; ETag and Cache-Control are sent, and If-None-Match gives 304.
    #[oai(
        path = "/rates/capital-gains",
        method = "get",
        operation_id = "capitalGainsRates",
        code_sample(lang = "json", label = "example", source = "Self::CAPITAL_GAINS_RATES_EXAMPLE")
    )]
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
        ApiError::check(errors)?;
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
        Ok(unless_current(if_none_match.0.as_deref(), &s.registry.version, "/api/v1/rates/capital-gains", &body)
            .map_or(RatesResponse::NotModified, RatesResponse::Ok))
    }
}
