//! The transaction ledger and the running totals that move with it (1099 per counterparty, revenue per state).

use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set};

use super::entity::{state_revenue, transaction, vendor_ytd};
use super::{Store, StoreError};

#[derive(Default)]
pub struct TransactionFilter {
    pub role: Option<String>,
    pub state: Option<String>,
    pub since_ms: Option<i64>,
    pub limit: u64,
}

impl Store {
    /// Adds a payment to the counterparty's total for the tax year and returns the new total (micro-dollars).
    pub async fn add_vendor_payment<C: ConnectionTrait>(conn: &C, entity_id: &str, counterparty_id: &str, tax_year: i32, micros: i64) -> Result<i64, StoreError> {
        use vendor_ytd::Column as C_;
        let row = vendor_ytd::ActiveModel {
            entity_id: Set(entity_id.into()),
            counterparty_id: Set(counterparty_id.into()),
            tax_year: Set(tax_year),
            total_micros: Set(micros),
            payments: Set(1),
        };
        let model = vendor_ytd::Entity::insert(row)
            .on_conflict(
                OnConflict::columns([C_::EntityId, C_::CounterpartyId, C_::TaxYear])
                    .value(C_::TotalMicros, Expr::col((vendor_ytd::Entity, C_::TotalMicros)).add(micros))
                    .value(C_::Payments, Expr::col((vendor_ytd::Entity, C_::Payments)).add(1))
                    .to_owned(),
            )
            .exec_with_returning(conn)
            .await?;
        Ok(model.total_micros)
    }

    /// Adds a sale to the state's revenue for the month (yyyymm).
    pub async fn add_state_revenue<C: ConnectionTrait>(conn: &C, entity_id: &str, state: &str, month: i32, micros: i64) -> Result<(), StoreError> {
        use state_revenue::Column as C_;
        let row = state_revenue::ActiveModel {
            entity_id: Set(entity_id.into()),
            state: Set(state.into()),
            month: Set(month),
            sales_micros: Set(micros),
            tx_count: Set(1),
        };
        state_revenue::Entity::insert(row)
            .on_conflict(
                OnConflict::columns([C_::EntityId, C_::State, C_::Month])
                    .value(C_::SalesMicros, Expr::col((state_revenue::Entity, C_::SalesMicros)).add(micros))
                    .value(C_::TxCount, Expr::col((state_revenue::Entity, C_::TxCount)).add(1))
                    .to_owned(),
            )
            .exec_without_returning(conn)
            .await?;
        Ok(())
    }

    /// Monthly revenue buckets from `from_month` (yyyymm) on.
    pub async fn state_revenue_since<C: ConnectionTrait>(conn: &C, entity_id: &str, from_month: i32) -> Result<Vec<state_revenue::Model>, StoreError> {
        Ok(state_revenue::Entity::find()
            .filter(state_revenue::Column::EntityId.eq(entity_id))
            .filter(state_revenue::Column::Month.gte(from_month))
            .all(conn)
            .await?)
    }

    pub async fn insert_transaction<C: ConnectionTrait>(conn: &C, row: transaction::Model) -> Result<(), StoreError> {
        let am: transaction::ActiveModel = row.into();
        transaction::Entity::insert(am).exec_without_returning(conn).await?;
        Ok(())
    }

    pub async fn transaction_by_external_id<C: ConnectionTrait>(conn: &C, entity_id: &str, external_tx_id: &str) -> Result<Option<transaction::Model>, StoreError> {
        Ok(transaction::Entity::find()
            .filter(transaction::Column::EntityId.eq(entity_id))
            .filter(transaction::Column::ExternalTxId.eq(external_tx_id))
            .one(conn)
            .await?)
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
