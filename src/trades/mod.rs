//! Recording a trade in an account's book: a buy adds a lot (`buy`), a sell matches open lots by FIFO, LIFO or a
//! named lot (`sell`), and either applies the wash-sale rule both ways. Each trade is one database transaction with
//! the position it changes, the trade row, the gains plan's monthly count and the Idempotency-Key's answer.
//!
//! The accounting itself is `crate::gains` (pure functions); this module reads and writes the rows it works on.
//! What a trade did is told as [`Recorded`]; the caller writes its answer from it (inside the transaction, so that
//! the trade row and an idempotent replay keep the same text).
//!
//! Backdated trades: trades of one asset take effect in trade-date order. A trade may be dated before other buys,
//! but not before the latest sell already recorded for the same asset ([`Refused::Field`] naming trade_date): every
//! recorded figure then equals what replaying the trades in trade-date order gives, and no recorded sale is ever
//! rematched. A sell consumes only lots acquired at or before its trade date. The one thing a later trade changes
//! in an earlier one is the wash-sale rule's look-ahead: a buy within the window after a loss sale disallows that
//! loss (IRC §1091), adjusting the earlier disposition and the new lot.

mod buy;
mod sell;

pub use sell::disposition_of;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sea_orm::TransactionTrait;
use serde_json::Value;

use crate::billing::{self, Product};
use crate::clock::{iso, Clock};
use crate::gains::estimate::{Estimates, Gains};
use crate::gains::form1099da::Totals;
use crate::gains::TradeRequest;
use crate::idempotency::{self, body_hash, Begin};
use crate::plans::Plans;
use crate::rules::gains::{GainsRules, WashSaleRule};
use crate::rules::registry::Dated;
use crate::security::new_ordered_id;
use crate::store::entity::{disposition, entity, lot, trade};
use crate::store::{Store, StoreError};

/// Where a trade is recorded and by which rules.
pub struct Book<'a> {
    pub store: &'a Store,
    pub gains: &'a GainsRules,
    pub plans: &'a Plans,
    pub clock: &'a Clock,
}

/// Why a trade was not recorded; nothing of it was written.
#[derive(Debug)]
pub enum Refused {
    /// The trade cannot be recorded as sent: the field at fault and why.
    Field(&'static str, String),
    /// The account's gains plan allows no more trades this month; the message says which plan and how many.
    AllowanceUsedUp(String),
    Idempotency(idempotency::Refused),
    Store(StoreError),
}

crate::store_failure!(Refused);

impl From<idempotency::Refused> for Refused {
    fn from(e: idempotency::Refused) -> Self {
        Refused::Idempotency(e)
    }
}

/// How a trade call ended.
pub enum Outcome {
    /// The answer of the trade just recorded.
    New(String),
    /// The stored answer of an earlier call with the same Idempotency-Key; nothing was written.
    Replay(String),
}

/// What a recorded trade did.
pub struct Recorded<'r> {
    pub trade: Trade<'r>,
    pub kind: Kind,
}

/// The trade as recorded, whether buy or sell.
pub struct Trade<'r> {
    pub account: &'r entity::Model,
    pub req: &'r TradeRequest,
    pub trade_id: String,
    /// The asset class the trade was judged under: the trade's own, else the position's.
    pub class: Option<String>,
    /// The wash-sale rule in force on the trade date, and whether it reaches the asset's class.
    pub wash_rule: Option<&'r Dated<WashSaleRule>>,
    pub wash_applies: bool,
    pub now_ms: i64,
}

pub enum Kind {
    Buy(Bought),
    Sell(Box<Sold>),
}

/// A buy: its cost basis, the lots it made (one, or one per earlier loss it replaces and one for the rest) and the
/// earlier losses it disallowed.
pub struct Bought {
    pub cost: Decimal,
    pub lots: Vec<lot::Model>,
    pub replaced: Vec<ReplacedLoss>,
}

/// An earlier loss sale a buy replaced, in part or whole.
pub struct ReplacedLoss {
    pub disposition_id: String,
    pub sell_trade_id: String,
    pub sold_ms: i64,
    pub quantity: Decimal,
    pub disallowed: Decimal,
    pub lot_id: String,
    pub holding_start: NaiveDate,
}

/// A sell: each disposition, the totals of the figures shown, the allowed gain by term and the estimates.
pub struct Sold {
    pub dispositions: Vec<SoldLot>,
    pub shown: Totals,
    pub gains: Gains,
    /// short_term, long_term or mixed.
    pub holding: &'static str,
    pub estimates: Estimates,
}

/// A lot consumed by a sell: its disposition row, the figures reported for it (`form1099da::reported`) and the
/// replacement lots that took its disallowed loss.
pub struct SoldLot {
    pub row: disposition::Model,
    pub figures: (Decimal, Decimal, Decimal, Decimal),
    pub replacements: Vec<Replacement>,
}

/// A replacement lot that took part of a sale's disallowed loss.
pub struct Replacement {
    pub lot_id: String,
    pub quantity: Decimal,
    pub disallowed: Decimal,
    /// On a sell: the replacement lot's holding period start, the sold lot's carried over.
    pub holding_start: Option<NaiveDate>,
    /// On a buy after the sale: the buy.
    pub trade_id: Option<String>,
}

impl Replacement {
    /// As a disposition row keeps it (`replacements`, a JSON array): quantity exact, the loss in cents.
    fn stored(&self) -> Value {
        use crate::engine::render::{money, num};
        let mut o = serde_json::Map::new();
        o.insert("lot_id".into(), self.lot_id.clone().into());
        o.insert("quantity".into(), num(self.quantity.normalize()));
        o.insert("disallowed_loss".into(), money(self.disallowed));
        if let Some(s) = self.holding_start {
            o.insert("holding_period_start".into(), s.to_string().into());
        }
        if let Some(t) = &self.trade_id {
            o.insert("trade_id".into(), t.clone().into());
        }
        Value::Object(o)
    }
}

/// A decimal as a row keeps it.
fn text(x: Decimal) -> String {
    x.normalize().to_string()
}

use crate::store::decimal as number;

/// Adds `x` to a decimal kept as text.
fn add(field: &mut String, x: Decimal) {
    *field = text(number(field) + x);
}

fn date_of(text: &str) -> NaiveDate {
    NaiveDate::parse_from_str(text, "%Y-%m-%d").unwrap_or_default()
}

impl Book<'_> {
    /// Records `req` for `account`: the body `raw` as sent is what an Idempotency-Key `idem` compares and what the
    /// trade row keeps; `answer` writes the answer from what the trade did. A refused trade gives its key back.
    pub async fn record(
        &self,
        account: &entity::Model,
        req: &TradeRequest,
        raw: &Value,
        idem: Option<&str>,
        answer: impl FnOnce(&Recorded) -> String,
    ) -> Result<Outcome, Refused> {
        if let Some(k) = idem {
            if let Begin::Replay { body, .. } =
                idempotency::begin(self.store, self.clock, &account.id, k, &body_hash("trades", raw)).await?
            {
                return Ok(Outcome::Replay(body));
            }
        }
        let result = self.write(account, req, raw, idem, answer).await;
        if let (Err(_), Some(k)) = (&result, idem) {
            idempotency::release(self.store, &account.id, k).await;
        }
        result.map(Outcome::New)
    }

    async fn write(
        &self,
        account: &entity::Model,
        req: &TradeRequest,
        raw: &Value,
        idem: Option<&str>,
        answer: impl FnOnce(&Recorded) -> String,
    ) -> Result<String, Refused> {
        let now_ms = self.clock.now_ms();
        let txn = self.store.writer.begin().await?;
        let mut pos = Store::lock_position(&txn, &account.id, &req.asset_symbol, now_ms).await?;
        let trade_ms = req.trade_date.timestamp_millis();
        if let Some(last) = pos.last_sell_at.filter(|last| trade_ms < *last) {
            return Err(Refused::Field(
                "trade_date",
                format!(
                    "{} is before the latest recorded sell of {} ({}); trades of an asset take effect in trade-date order and a recorded sale is never rematched, so a trade may not be dated before it",
                    iso(trade_ms),
                    req.asset_symbol,
                    iso(last)
                ),
            ));
        }
        if req.asset_class.is_some() {
            pos.asset_class = req.asset_class.clone();
        }
        if req.asset_name.is_some() {
            pos.asset_name = req.asset_name.clone();
        }
        let trade_id = new_ordered_id("trd", now_ms);
        let day = req.day();
        let class = req.asset_class.clone().or_else(|| pos.asset_class.clone());
        let wash_rule = self.gains.wash_sale_rule(day);
        let wash_applies = wash_rule.is_some_and(|r| crate::gains::wash::applies(&r.value, class.as_deref()));
        let trade = Trade { account, req, trade_id, class, wash_rule, wash_applies, now_ms };
        let kind = if req.is_sell {
            Kind::Sell(Box::new(self.sell(&txn, &mut pos, &trade).await?))
        } else {
            Kind::Buy(self.buy(&txn, &mut pos, &trade).await?)
        };
        let recorded = Recorded { trade, kind };
        // Kept as text: the trade row and an idempotent replay send these bytes again.
        let body = answer(&recorded);
        pos.updated_at = now_ms;
        Store::save(&txn, pos).await?;
        let realized = match &recorded.kind {
            Kind::Sell(s) => Some(text(s.gains.short_term + s.gains.long_term)),
            Kind::Buy(_) => None,
        };
        let row = trade::Model {
            id: recorded.trade.trade_id.clone(),
            entity_id: account.id.clone(),
            asset_symbol: req.asset_symbol.clone(),
            trade_type: req.trade_type().into(),
            quantity: text(req.quantity),
            price_per_unit: text(req.price_per_unit),
            fee_amount: text(req.fee_amount),
            trade_date: trade_ms,
            created_at: now_ms,
            accounting_method: req.is_sell.then(|| req.accounting_method.name().to_string()),
            specific_lot_id: req.specific_lot_id.clone(),
            asset_class: req.asset_class.clone(),
            asset_name: req.asset_name.clone(),
            counterparty: req.counterparty.clone(),
            exchange: req.exchange.clone(),
            notes: req.notes.clone(),
            realized_gain: realized,
            request: raw.to_string(),
            result: body.clone(),
        };
        Store::insert(&txn, row).await?;
        // The trade counts against the gains plan's monthly allowance, in the trade's own transaction: a refused or
        // failed trade counts nothing.
        let usage = Product::Gains.usage_hit(&account.id, now_ms);
        let calls = Store::hit_counters(&txn, std::slice::from_ref(&usage)).await?.first().copied().unwrap_or(0);
        if let Some(overage) = billing::allowance(self.plans, account, Product::Gains, now_ms, calls).map_err(Refused::AllowanceUsedUp)? {
            Store::hit_counters(&txn, &[overage]).await?;
        }
        if let Some(k) = idem {
            Store::finish_idempotency_key(&txn, &account.id, k, 201, &body).await?;
        }
        txn.commit().await?;
        Ok(body)
    }
}
