//! Refunds and voids of recorded rows. A refund is a row of its own, linked to the row it refunds, negative in
//! sales and tax and dated by the refund's date, so that it lands in that filing period; a void takes a row (and
//! its refunds) out of every total while its period is open. Each runs in one database transaction that first
//! writes the row it corrects, so corrections of one row queue one after another: sixteen refunds at once never
//! give back more than the sale.
//!
//! The running totals follow them as the law counts them (docs/decisions.md, "Refunds and voids"): a void takes
//! the sale out of the state's nexus revenue and transaction count and out of the counterparty's 1099 total; a
//! refund leaves nexus revenue alone (thresholds count gross sales) and takes the refunded amount out of the
//! counterparty's total for the year of the payment when it is refunded that same year.

use chrono::NaiveDate;
use rust_decimal::Decimal;
use sea_orm::{EntityTrait, TransactionTrait};

use super::batch::micros;
use super::liability::{Liability, Line, RefundProblem};
use super::report::{day_number, day_of};
use crate::engine::money::cents;
use crate::security::new_ordered_id;
use crate::store::entity::transaction;
use crate::store::ledger::{Payment, Sale};
use crate::store::{Store, StoreError};

/// A refund as asked.
pub struct RefundAsk<'a> {
    pub transaction_id: &'a str,
    /// The sale amount refunded; all that is left when `None`.
    pub amount: Option<Decimal>,
    /// The jurisdictions whose tax is refunded (ids of the row's lines); every one when `None`.
    pub tax_lines: Option<Vec<String>>,
    /// The day the refund is dated by.
    pub date: NaiveDate,
    /// The request as sent (kept with the refund's row).
    pub request: String,
}

/// A refund made.
pub struct Refunded {
    pub id: String,
    pub transaction_id: String,
    pub date: NaiveDate,
    pub created_at: i64,
    /// The refund's figures, negative.
    pub liability: Liability,
    /// What is left of each line of the original after it.
    pub remaining: Vec<super::liability::Line>,
}

impl Refunded {
    /// The sale amount given back (positive): the most any line gave back.
    pub fn amount(&self) -> Decimal {
        self.liability.lines.iter().map(|l| -l.gross).max().unwrap_or_default()
    }
}

/// A void made, or found made.
pub struct Voided {
    pub row: transaction::Model,
    /// When it was voided.
    pub voided_at: i64,
    /// False when the row was voided before (nothing changed).
    pub now: bool,
    /// The refunds of it voided with it.
    pub refunds: Vec<String>,
}

/// Why a correction was not made.
#[derive(Debug)]
pub enum Refused {
    NotFound(String),
    /// The row is voided, or is itself a refund: the message says which.
    Conflict(String),
    /// A filed period holds a day the correction would change.
    Filed {
        state: String,
        period: String,
    },
    Invalid(RefundProblem),
    Store(StoreError),
}

crate::store_failure!(Refused);

/// The liability kept with a row, or its totals for a row recorded before liabilities were kept.
pub fn liability_of(row: &transaction::Model) -> Liability {
    let mut l = Liability::kept(row.liability.as_deref(), &row.buyer_state, &row.amount, &row.total_tax);
    if row.liability.is_none() {
        // (The ledger counted every seller's sale toward nexus then.)
        l.nexus = row.role == "seller" && row.refund_of.is_none();
    }
    l
}

/// One of the account's rows as it stands now.
pub struct Standing {
    pub row: transaction::Model,
    /// Its refunds, oldest first (voided ones included).
    pub refunds: Vec<transaction::Model>,
    /// What is left to refund of each of its lines after the refunds that count; `None` for a refund or a voided
    /// row, neither of which can be refunded.
    pub remaining: Option<Vec<Line>>,
}

/// The account's row `id`, its refunds and what is left to refund of it.
pub async fn standing(store: &Store, entity_id: &str, id: &str) -> Result<Standing, Refused> {
    let row =
        Store::account_transaction(&store.db, entity_id, id).await?.ok_or_else(|| Refused::NotFound(format!("no transaction {id}")))?;
    let refunds = Store::refunds_of(&store.db, id).await?;
    let remaining = (row.voided_at.is_none() && row.refund_of.is_none()).then(|| liability_of(&row).remaining(&counted(&refunds)));
    Ok(Standing { row, refunds, remaining })
}

/// What the refunds that count (those not voided) gave back, each as its liability.
fn counted(refunds: &[transaction::Model]) -> Vec<Liability> {
    refunds.iter().filter(|r| r.voided_at.is_none()).map(liability_of).collect()
}

/// Whether a refund took its amount out of the counterparty's 1099 total: it gave back the sale itself (the
/// state's line) in the tax year of the payment.
fn took_from_vendor_total(refund: &transaction::Model, original_dated: i32) -> bool {
    refund.dated / 10_000 == original_dated / 10_000 && liability_of(refund).state().is_some()
}

/// Records a refund of the account's row. `answer` writes the refund's answer from what was refunded: it is kept
/// as the refund row's result and, with an Idempotency-Key, as the key's response, in the same transaction.
pub async fn refund(
    store: &Store,
    entity_id: &str,
    ask: &RefundAsk<'_>,
    today: NaiveDate,
    now_ms: i64,
    idempotency_key: Option<&str>,
    answer: impl FnOnce(&Refunded) -> String,
) -> Result<(Refunded, String), Refused> {
    let txn = store.writer.begin().await?;
    let id = ask.transaction_id;
    let row = Store::count_refund(&txn, entity_id, id).await?.ok_or_else(|| Refused::NotFound(format!("no transaction {id}")))?;
    if row.voided_at.is_some() {
        return Err(Refused::Conflict(format!("transaction {id} is voided: it counts in no total and has nothing to refund")));
    }
    if let Some(of) = &row.refund_of {
        return Err(Refused::Conflict(format!("{id} is a refund (of {of}); a mistaken refund is voided, not refunded")));
    }
    let sold = day_of(row.dated);
    if ask.date < sold {
        return Err(Refused::Invalid(RefundProblem {
            field: "refund_date",
            message: format!("{} is before the transaction's date, {sold}", ask.date),
        }));
    }
    if ask.date > today {
        return Err(Refused::Invalid(RefundProblem {
            field: "refund_date",
            message: format!("{} is after today ({today}); a refund is dated when it is made", ask.date),
        }));
    }
    let dated = day_number(ask.date);
    if let Some(f) = Store::filed_periods_holding(&txn, entity_id, &row.buyer_state, &[dated]).await?.into_iter().next() {
        return Err(Refused::Filed { state: f.state, period: f.period });
    }
    let original = liability_of(&row);
    let prior = counted(&Store::refunds_of(&txn, id).await?);
    let liability = original.refund(&prior, ask.amount, ask.tax_lines.as_deref()).map_err(Refused::Invalid)?;
    let mut after = prior;
    after.push(liability.clone());
    let refunded = Refunded {
        id: new_ordered_id("rfd", now_ms),
        transaction_id: id.to_string(),
        date: ask.date,
        created_at: now_ms,
        remaining: original.remaining(&after),
        liability,
    };
    let text = answer(&refunded);
    let amount = refunded.amount();
    let refund_row = transaction::Model {
        id: refunded.id.clone(),
        entity_id: entity_id.to_string(),
        created_at: now_ms,
        role: row.role.clone(),
        buyer_state: row.buyer_state.clone(),
        counterparty_id: row.counterparty_id.clone(),
        amount: (-amount).normalize().to_string(),
        amount_micros: -micros(amount),
        total_tax: cents(refunded.liability.tax()).to_string(),
        external_tx_id: None,
        source: "refund".into(),
        metadata: None,
        request: ask.request.clone(),
        result: text.clone(),
        dated,
        refund_of: Some(id.to_string()),
        voided_at: None,
        refunds: 0,
        liability: serde_json::to_string(&refunded.liability).ok(),
    };
    if took_from_vendor_total(&refund_row, row.dated) {
        let p =
            Payment { entity_id, counterparty_id: &row.counterparty_id, tax_year: row.dated / 10_000, micros: refund_row.amount_micros };
        Store::adjust_vendor_total(&txn, &p, 0).await?;
    }
    Store::insert(&txn, refund_row).await?;
    if let Some(k) = idempotency_key {
        Store::finish_idempotency_key(&txn, entity_id, k, 201, &text).await?;
    }
    txn.commit().await?;
    Ok((refunded, text))
}

/// Voids the account's row, and with it the refunds of it, unless a filed period holds the day of any of them.
/// A row voided before is returned as it is.
pub async fn void(store: &Store, entity_id: &str, id: &str, now_ms: i64) -> Result<Voided, Refused> {
    let txn = store.writer.begin().await?;
    let (row, now) =
        Store::void_row(&txn, entity_id, id, now_ms).await?.ok_or_else(|| Refused::NotFound(format!("no transaction {id}")))?;
    if !now {
        let voided_at = row.voided_at.unwrap_or(now_ms);
        return Ok(Voided { row, voided_at, now: false, refunds: Vec::new() });
    }
    let refunds: Vec<transaction::Model> = match row.refund_of {
        Some(_) => Vec::new(),
        None => Store::refunds_of(&txn, id).await?.into_iter().filter(|r| r.voided_at.is_none()).collect(),
    };
    let days: Vec<i32> = std::iter::once(row.dated).chain(refunds.iter().map(|r| r.dated)).collect();
    if let Some(f) = Store::filed_periods_holding(&txn, entity_id, &row.buyer_state, &days).await?.into_iter().next() {
        return Err(Refused::Filed { state: f.state, period: f.period });
    }
    let ids: Vec<String> = refunds.iter().map(|r| r.id.clone()).collect();
    Store::void_rows(&txn, &ids, now_ms).await?;
    let vendor = |tax_year: i32, micros: i64| Payment { entity_id, counterparty_id: &row.counterparty_id, tax_year, micros };
    match &row.refund_of {
        // A refund voided alone gives back to the 1099 total what it took.
        Some(of) => {
            let original = transaction::Entity::find_by_id(of.as_str()).one(&txn).await?;
            if let Some(o) = original.filter(|o| took_from_vendor_total(&row, o.dated)) {
                Store::adjust_vendor_total(&txn, &vendor(o.dated / 10_000, -row.amount_micros), 0).await?;
            }
        }
        None => {
            // The sale and its refunds leave every total: what the refunds took comes back, the sale goes.
            let taken: i64 = refunds.iter().filter(|r| took_from_vendor_total(r, row.dated)).map(|r| r.amount_micros).sum();
            Store::adjust_vendor_total(&txn, &vendor(row.dated / 10_000, -row.amount_micros - taken), -1).await?;
            if liability_of(&row).nexus {
                let sale = Sale { entity_id, state: &row.buyer_state, month: row.dated / 100, micros: -row.amount_micros };
                Store::adjust_state_revenue(&txn, &sale, -1).await?;
            }
        }
    }
    txn.commit().await?;
    Ok(Voided { row, voided_at: now_ms, now: true, refunds: ids })
}
