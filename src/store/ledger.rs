//! The transaction ledger and the running totals that move with it (1099 per counterparty, revenue per state).

use std::collections::HashMap;

use sea_orm::sea_query::{InsertStatement, SelectStatement};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, FromQueryResult, QueryFilter, QueryOrder, QuerySelect, QueryTrait, Set};

use super::entity::{state_revenue, transaction, vendor_ytd};
use super::{adding_upserts, Store, StoreError};

#[derive(Default)]
pub struct TransactionFilter {
    pub role: Option<String>,
    pub state: Option<String>,
    pub since_ms: Option<i64>,
    pub limit: u64,
}

/// A payment to a counterparty in a tax year (micro-dollars).
pub struct Payment<'a> {
    pub entity_id: &'a str,
    pub counterparty_id: &'a str,
    pub tax_year: i32,
    pub micros: i64,
}

/// A seller's sale into a state in a month (yyyymm).
pub struct Sale<'a> {
    pub entity_id: &'a str,
    pub state: &'a str,
    pub month: i32,
    pub micros: i64,
}

impl Store {
    /// Adds payments to their counterparties' totals inside `conn`'s transaction (see
    /// [`Store::add_vendor_payments_sql`]) and returns, for each payment in the order given, the total before it.
    pub async fn add_vendor_payments<C: ConnectionTrait>(conn: &C, payments: &[Payment<'_>]) -> Result<Vec<i64>, StoreError> {
        let mut rows = Vec::new();
        for stmt in Store::add_vendor_payments_sql(payments) {
            rows.extend(vendor_ytd::Model::find_by_statement(conn.get_database_backend().build(&stmt)).all(conn).await?);
        }
        Ok(Store::totals_before(payments, rows))
    }

    /// The upserts that add payments to their counterparties' totals for the tax year (read-modify-write in the
    /// database, so concurrent writers cannot lose a payment; rows in key order, so they lock in one order),
    /// returning the totals.
    pub fn add_vendor_payments_sql(payments: &[Payment<'_>]) -> Vec<InsertStatement> {
        use vendor_ytd::Column as C_;
        let sums = super::sums_per_key(payments.iter().map(|p| ((p.entity_id, p.counterparty_id, p.tax_year), p.micros)));
        let rows: Vec<_> = sums
            .into_iter()
            .map(|((entity_id, counterparty_id, tax_year), (micros, n))| vendor_ytd::ActiveModel {
                entity_id: Set(entity_id.to_string()),
                counterparty_id: Set(counterparty_id.to_string()),
                tax_year: Set(tax_year),
                total_micros: Set(micros),
                payments: Set(n),
            })
            .collect();
        let mut stmts = adding_upserts(&rows, &[C_::EntityId, C_::CounterpartyId, C_::TaxYear], &[C_::TotalMicros, C_::Payments]);
        for s in &mut stmts {
            s.returning_all();
        }
        stmts
    }

    /// For each payment in the order given, the counterparty's total before it (micro-dollars), from the totals
    /// the upserts returned.
    pub fn totals_before(payments: &[Payment<'_>], totals: Vec<vendor_ytd::Model>) -> Vec<i64> {
        let finals: HashMap<(String, String, i32), i64> = totals.into_iter().map(|m| ((m.entity_id, m.counterparty_id, m.tax_year), m.total_micros)).collect();
        let additions: Vec<((String, String, i32), i64)> = payments.iter().map(|p| ((p.entity_id.to_string(), p.counterparty_id.to_string(), p.tax_year), p.micros)).collect();
        let after = super::running_totals(&additions, &finals);
        after.iter().zip(payments).map(|(total, p)| total - p.micros).collect()
    }

    /// The upserts that add sales to the states' monthly revenue (rows in key order).
    pub fn add_state_revenues_sql(sales: &[Sale<'_>]) -> Vec<InsertStatement> {
        use state_revenue::Column as C_;
        let sums = super::sums_per_key(sales.iter().map(|s| ((s.entity_id, s.state, s.month), s.micros)));
        let rows: Vec<_> = sums
            .into_iter()
            .map(|((entity_id, state, month), (micros, n))| state_revenue::ActiveModel {
                entity_id: Set(entity_id.to_string()),
                state: Set(state.to_string()),
                month: Set(month),
                sales_micros: Set(micros),
                tx_count: Set(n),
            })
            .collect();
        adding_upserts(&rows, &[C_::EntityId, C_::State, C_::Month], &[C_::SalesMicros, C_::TxCount])
    }

    /// Monthly revenue buckets of these accounts from `from_month` (yyyymm) on.
    pub async fn state_revenue_of<C: ConnectionTrait>(conn: &C, entity_ids: &[&str], from_month: i32) -> Result<Vec<state_revenue::Model>, StoreError> {
        Ok(state_revenue::Model::find_by_statement(conn.get_database_backend().build(&Store::state_revenue_sql(entity_ids, from_month))).all(conn).await?)
    }

    pub fn state_revenue_sql(entity_ids: &[&str], from_month: i32) -> SelectStatement {
        state_revenue::Entity::find()
            .filter(state_revenue::Column::EntityId.is_in(entity_ids.iter().copied()))
            .filter(state_revenue::Column::Month.gte(from_month))
            .into_query()
    }

    /// The inserts of ledger rows, one per `ROWS_PER_STATEMENT`.
    pub fn insert_transactions_sql(rows: &[transaction::Model]) -> Vec<InsertStatement> {
        rows.chunks(super::ROWS_PER_STATEMENT).map(|chunk| transaction::Entity::insert_many(chunk.iter().cloned().map(transaction::ActiveModel::from)).into_query()).collect()
    }

    /// The ledger rows of an account with any of these external ids.
    pub fn transactions_by_external_ids_sql(entity_id: &str, external_tx_ids: &[&str]) -> SelectStatement {
        transaction::Entity::find()
            .filter(transaction::Column::EntityId.eq(entity_id))
            .filter(transaction::Column::ExternalTxId.is_in(external_tx_ids.iter().copied()))
            .into_query()
    }

    /// The account's transactions, newest first.
    pub async fn list_transactions(&self, entity_id: &str, f: &TransactionFilter) -> Result<Vec<transaction::Model>, StoreError> {
        let mut q = transaction::Entity::find().filter(transaction::Column::EntityId.eq(entity_id));
        if let Some(role) = &f.role {
            q = q.filter(transaction::Column::Role.eq(role.as_str()));
        }
        if let Some(state) = &f.state {
            q = q.filter(transaction::Column::BuyerState.eq(state.as_str()));
        }
        if let Some(since) = f.since_ms {
            q = q.filter(transaction::Column::CreatedAt.gte(since));
        }
        Ok(q.order_by_desc(transaction::Column::CreatedAt).order_by_desc(transaction::Column::Id).limit(f.limit).all(&self.db).await?)
    }
}
