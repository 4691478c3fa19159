//! The transaction ledger and the running totals that move with it (1099 per counterparty, revenue per state).

use std::collections::HashMap;

use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DbBackend, EntityTrait, FromQueryResult, IntoActiveModel, QueryFilter, QueryOrder, QuerySelect,
};

use super::entity::{filed_period, state_revenue, transaction, vendor_ytd};
use super::prepared::{STATE_REVENUE, STATE_REVENUE_FROM, VENDOR_YTD};
use super::script::{Arg, Execute, Script, ScriptConn, Sql};
use super::{adding_upserts, inserts, Store, StoreError};

/// The ledger's columns as its inserts write them, each with its PostgreSQL type as an array's element.
const LEDGER_COLUMNS: [(&str, &str); 16] = [
    ("id", "text"),
    ("entity_id", "text"),
    ("created_at", "int8"),
    ("role", "text"),
    ("buyer_state", "text"),
    ("counterparty_id", "text"),
    ("amount", "text"),
    ("amount_micros", "int8"),
    ("total_tax", "text"),
    ("external_tx_id", "text"),
    ("source", "text"),
    ("metadata", "text"),
    ("request", "text"),
    ("result", "text"),
    ("dated", "int4"),
    ("liability", "text"),
];

#[derive(Default)]
pub struct TransactionFilter {
    pub role: Option<String>,
    pub state: Option<String>,
    /// The request's transaction_type; a stored request that sent none has `default_transaction_type`.
    pub transaction_type: Option<String>,
    /// The contract's default transaction_type (rules/schema), for the stored requests that sent none.
    pub default_transaction_type: &'static str,
    pub since_ms: Option<i64>,
    pub limit: u64,
    /// Rows to skip, newest first.
    pub offset: u64,
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
        for stmt in Store::add_vendor_payments_sql(conn.get_database_backend(), payments) {
            rows.extend(vendor_ytd::Model::find_by_statement(stmt.statement()).all(conn).await?);
        }
        Ok(Store::totals_before(payments, rows))
    }

    /// The upserts that add payments to their counterparties' totals for the tax year (read-modify-write in the
    /// database, so concurrent writers cannot lose a payment; rows in key order, so they lock in one order),
    /// returning the totals.
    pub fn add_vendor_payments_sql<'a>(backend: DbBackend, payments: &[Payment<'a>]) -> Vec<Sql<'a>> {
        let sums = super::sums_per_key(payments.iter().map(|p| ((p.entity_id, p.counterparty_id, p.tax_year), p.micros)));
        let rows = sums
            .into_iter()
            .map(|((entity_id, counterparty_id, tax_year), (micros, n))| {
                [entity_id.into(), counterparty_id.into(), tax_year.into(), micros.into(), n.into()]
            })
            .collect();
        adding_upserts(backend, &VENDOR_YTD, rows)
    }

    /// For each payment in the order given, the counterparty's total before it (micro-dollars), from the totals
    /// the upserts returned.
    pub fn totals_before(payments: &[Payment<'_>], totals: Vec<vendor_ytd::Model>) -> Vec<i64> {
        let finals: HashMap<(String, String, i32), i64> =
            totals.into_iter().map(|m| ((m.entity_id, m.counterparty_id, m.tax_year), m.total_micros)).collect();
        let additions: Vec<((String, String, i32), i64)> =
            payments.iter().map(|p| ((p.entity_id.to_string(), p.counterparty_id.to_string(), p.tax_year), p.micros)).collect();
        let after = super::running_totals(&additions, &finals);
        after.iter().zip(payments).map(|(total, p)| total - p.micros).collect()
    }

    /// The upserts that add sales to the states' monthly revenue (rows in key order).
    pub fn add_state_revenues_sql<'a>(backend: DbBackend, sales: &[Sale<'a>]) -> Vec<Sql<'a>> {
        let sums = super::sums_per_key(sales.iter().map(|s| ((s.entity_id, s.state, s.month), s.micros)));
        let rows = sums
            .into_iter()
            .map(|((entity_id, state, month), (micros, n))| [entity_id.into(), state.into(), month.into(), micros.into(), n.into()])
            .collect();
        adding_upserts(backend, &STATE_REVENUE, rows)
    }

    /// Monthly revenue buckets of these accounts from `from_month` (yyyymm) on.
    pub async fn state_revenue_of<C: ConnectionTrait>(
        conn: &C,
        entity_ids: &[&str],
        from_month: i32,
    ) -> Result<Vec<state_revenue::Model>, StoreError> {
        Ok(state_revenue::Model::find_by_statement(
            Store::state_revenue_sql(conn.get_database_backend(), entity_ids, from_month).statement(),
        )
        .all(conn)
        .await?)
    }

    pub fn state_revenue_sql<'a>(backend: DbBackend, entity_ids: &[&'a str], from_month: i32) -> Sql<'a> {
        let mut sql = Sql::new(backend);
        sql.push(r#"SELECT * FROM "state_revenue" WHERE "entity_id""#)
            .in_list(entity_ids.iter().copied())
            .push(r#" AND "month" >= "#)
            .arg(from_month);
        sql.prepared(|| Execute::new(STATE_REVENUE_FROM.name).array(entity_ids.iter().copied(), "text").arg(from_month));
        sql
    }

    /// Writes ledger rows in the transaction `conn` holds: on SQLite as statements added to `script`, which the
    /// caller runs; on PostgreSQL at once, as one statement whose values are arrays, one per column, bound in
    /// binary. Its text is the same whatever the number of rows, so the connection prepares it once (sqlx caches
    /// prepared statements by text), and the bodies travel as bound values rather than as literals in a
    /// script's text for PostgreSQL to parse.
    pub async fn write_transactions<'a>(
        conn: &mut ScriptConn,
        script: &mut Script<'a>,
        rows: &'a [transaction::Model],
    ) -> Result<(), StoreError> {
        let Some(pg) = conn.postgres() else {
            script.add_all(Store::insert_transactions_sql(script.backend(), rows));
            return Ok(());
        };
        if rows.is_empty() {
            return Ok(());
        }
        static INSERT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
            let arrays: Vec<String> = LEDGER_COLUMNS.iter().enumerate().map(|(i, (_, t))| format!("${}::{t}[]", i + 1)).collect();
            format!(
                r#"INSERT INTO "transactions" ({}) SELECT * FROM unnest({})"#,
                super::quoted(&LEDGER_COLUMNS.map(|(c, _)| c)),
                arrays.join(", ")
            )
        });
        let text = |f: fn(&transaction::Model) -> &str| rows.iter().map(f).collect::<Vec<&str>>();
        let maybe = |f: fn(&transaction::Model) -> Option<&str>| rows.iter().map(f).collect::<Vec<Option<&str>>>();
        // (The values in the order of `LEDGER_COLUMNS`, as `insert_transactions_sql` writes them.)
        sea_orm::sqlx::query(INSERT.as_str())
            .bind(text(|r| &r.id))
            .bind(text(|r| &r.entity_id))
            .bind(rows.iter().map(|r| r.created_at).collect::<Vec<i64>>())
            .bind(text(|r| &r.role))
            .bind(text(|r| &r.buyer_state))
            .bind(text(|r| &r.counterparty_id))
            .bind(text(|r| &r.amount))
            .bind(rows.iter().map(|r| r.amount_micros).collect::<Vec<i64>>())
            .bind(text(|r| &r.total_tax))
            .bind(maybe(|r| r.external_tx_id.as_deref()))
            .bind(text(|r| &r.source))
            .bind(maybe(|r| r.metadata.as_deref()))
            .bind(text(|r| &r.request))
            .bind(text(|r| &r.result))
            .bind(rows.iter().map(|r| r.dated).collect::<Vec<i32>>())
            .bind(maybe(|r| r.liability.as_deref()))
            .execute(pg)
            .await
            .map_err(super::script::sqlx_err)?;
        Ok(())
    }

    /// The inserts of ledger rows, one per `ROWS_PER_STATEMENT`.
    pub fn insert_transactions_sql(backend: DbBackend, rows: &[transaction::Model]) -> Vec<Sql<'_>> {
        let columns = LEDGER_COLUMNS.map(|(c, _)| c);
        let values = rows
            .iter()
            .map(|r| -> [Arg; 16] {
                [
                    (&r.id).into(),
                    (&r.entity_id).into(),
                    r.created_at.into(),
                    (&r.role).into(),
                    (&r.buyer_state).into(),
                    (&r.counterparty_id).into(),
                    (&r.amount).into(),
                    r.amount_micros.into(),
                    (&r.total_tax).into(),
                    r.external_tx_id.as_ref().into(),
                    (&r.source).into(),
                    r.metadata.as_ref().into(),
                    (&r.request).into(),
                    (&r.result).into(),
                    r.dated.into(),
                    r.liability.as_ref().into(),
                ]
            })
            .collect();
        inserts(backend, "transactions", columns, values, "")
    }

    /// The ledger rows of an account with any of these external ids.
    pub fn transactions_by_external_ids_sql<'a>(backend: DbBackend, entity_id: &'a str, external_tx_ids: &[&'a str]) -> Sql<'a> {
        let mut sql = Sql::new(backend);
        sql.push(r#"SELECT * FROM "transactions" WHERE "entity_id" = "#)
            .arg(entity_id)
            .push(r#" AND "external_tx_id""#)
            .in_list(external_tx_ids.iter().copied());
        sql
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
        if let Some(tt) = &f.transaction_type {
            // No column of its own: read from the stored request (JSON text), with the contract's
            // default for a request that sent none.
            let default = f.default_transaction_type;
            q = q.filter(match self.db.get_database_backend() {
                DbBackend::Postgres => {
                    Expr::cust_with_values(r#"COALESCE(CAST("request" AS jsonb) ->> 'transaction_type', $1) = $2"#, [default, tt.as_str()])
                }
                _ => Expr::cust_with_values(r#"COALESCE(json_extract("request", ?), ?) = ?"#, ["$.transaction_type", default, tt.as_str()]),
            });
        }
        Ok(q.order_by_desc(transaction::Column::CreatedAt)
            .order_by_desc(transaction::Column::Id)
            .offset(f.offset)
            .limit(f.limit)
            .all(&self.db)
            .await?)
    }
}

/// What the liability report reads of a ledger row.
#[derive(Clone, Debug, FromQueryResult)]
pub struct LedgerFigures {
    pub role: String,
    pub buyer_state: String,
    pub dated: i32,
    pub amount: String,
    pub total_tax: String,
    pub refund_of: Option<String>,
    pub voided_at: Option<i64>,
    pub liability: Option<String>,
}

impl Store {
    /// Counts a refund on the account's row and returns the row, inside `conn`'s transaction: the write takes the
    /// row's lock (PostgreSQL) or the database's (SQLite) first, so refunds and voids of one row queue one after
    /// another. `None` when the account has no such row.
    pub async fn count_refund<C: ConnectionTrait>(conn: &C, entity_id: &str, id: &str) -> Result<Option<transaction::Model>, StoreError> {
        let updated = transaction::Entity::update_many()
            .col_expr(transaction::Column::Refunds, Expr::col(transaction::Column::Refunds).add(1))
            .filter(transaction::Column::Id.eq(id))
            .filter(transaction::Column::EntityId.eq(entity_id))
            .exec(conn)
            .await?;
        if updated.rows_affected == 0 {
            return Ok(None);
        }
        Ok(transaction::Entity::find_by_id(id).one(conn).await?)
    }

    /// Marks the account's row voided at `now_ms` unless it is already, inside `conn`'s transaction (the write takes
    /// the lock as [`Store::count_refund`]'s does), and returns it with whether this call voided it. `None` when the
    /// account has no such row.
    pub async fn void_row<C: ConnectionTrait>(
        conn: &C,
        entity_id: &str,
        id: &str,
        now_ms: i64,
    ) -> Result<Option<(transaction::Model, bool)>, StoreError> {
        let updated = transaction::Entity::update_many()
            .col_expr(transaction::Column::VoidedAt, Expr::value(now_ms))
            .filter(transaction::Column::Id.eq(id))
            .filter(transaction::Column::EntityId.eq(entity_id))
            .filter(transaction::Column::VoidedAt.is_null())
            .exec(conn)
            .await?;
        let row = Store::account_transaction(conn, entity_id, id).await?;
        Ok(row.map(|r| (r, updated.rows_affected == 1)))
    }

    /// The account's row `id`; `None` when the account has no such row.
    pub async fn account_transaction<C: ConnectionTrait>(
        conn: &C,
        entity_id: &str,
        id: &str,
    ) -> Result<Option<transaction::Model>, StoreError> {
        Ok(transaction::Entity::find_by_id(id).filter(transaction::Column::EntityId.eq(entity_id)).one(conn).await?)
    }

    /// The refunds recorded of a row, oldest first (voided ones included).
    pub async fn refunds_of<C: ConnectionTrait>(conn: &C, id: &str) -> Result<Vec<transaction::Model>, StoreError> {
        Ok(transaction::Entity::find()
            .filter(transaction::Column::RefundOf.eq(id))
            .order_by_asc(transaction::Column::CreatedAt)
            .order_by_asc(transaction::Column::Id)
            .all(conn)
            .await?)
    }

    /// Marks rows voided at `now_ms` (those not already).
    pub async fn void_rows<C: ConnectionTrait>(conn: &C, ids: &[String], now_ms: i64) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        transaction::Entity::update_many()
            .col_expr(transaction::Column::VoidedAt, Expr::value(now_ms))
            .filter(transaction::Column::Id.is_in(ids.iter().map(String::as_str)))
            .filter(transaction::Column::VoidedAt.is_null())
            .exec(conn)
            .await?;
        Ok(())
    }

    /// Adds to a counterparty's total for a tax year (negative to take away), where the total exists.
    pub async fn adjust_vendor_total<C: ConnectionTrait>(conn: &C, p: &Payment<'_>, payments: i64) -> Result<(), StoreError> {
        vendor_ytd::Entity::update_many()
            .col_expr(vendor_ytd::Column::TotalMicros, Expr::col(vendor_ytd::Column::TotalMicros).add(p.micros))
            .col_expr(vendor_ytd::Column::Payments, Expr::col(vendor_ytd::Column::Payments).add(payments))
            .filter(vendor_ytd::Column::EntityId.eq(p.entity_id))
            .filter(vendor_ytd::Column::CounterpartyId.eq(p.counterparty_id))
            .filter(vendor_ytd::Column::TaxYear.eq(p.tax_year))
            .exec(conn)
            .await?;
        Ok(())
    }

    /// Adds to a state's monthly revenue (negative to take away), where the bucket exists.
    pub async fn adjust_state_revenue<C: ConnectionTrait>(conn: &C, s: &Sale<'_>, count: i64) -> Result<(), StoreError> {
        state_revenue::Entity::update_many()
            .col_expr(state_revenue::Column::SalesMicros, Expr::col(state_revenue::Column::SalesMicros).add(s.micros))
            .col_expr(state_revenue::Column::TxCount, Expr::col(state_revenue::Column::TxCount).add(count))
            .filter(state_revenue::Column::EntityId.eq(s.entity_id))
            .filter(state_revenue::Column::State.eq(s.state))
            .filter(state_revenue::Column::Month.eq(s.month))
            .exec(conn)
            .await?;
        Ok(())
    }

    /// The account's filed periods of a state that hold any of these days (yyyymmdd).
    pub async fn filed_periods_holding<C: ConnectionTrait>(
        conn: &C,
        entity_id: &str,
        state: &str,
        days: &[i32],
    ) -> Result<Vec<filed_period::Model>, StoreError> {
        let mut any = Condition::any();
        for &d in days {
            any = any.add(filed_period::Column::FirstDay.lte(d).and(filed_period::Column::LastDay.gte(d)));
        }
        Ok(filed_period::Entity::find()
            .filter(filed_period::Column::EntityId.eq(entity_id))
            .filter(filed_period::Column::State.eq(state))
            .filter(any)
            .order_by_asc(filed_period::Column::FirstDay)
            .all(conn)
            .await?)
    }

    /// The account's filed periods that overlap the days `from..=to` (yyyymmdd).
    pub async fn filed_periods_between(&self, entity_id: &str, from: i32, to: i32) -> Result<Vec<filed_period::Model>, StoreError> {
        Ok(filed_period::Entity::find()
            .filter(filed_period::Column::EntityId.eq(entity_id))
            .filter(filed_period::Column::FirstDay.lte(to))
            .filter(filed_period::Column::LastDay.gte(from))
            .all(&self.db)
            .await?)
    }

    /// Records a filed period; the one already recorded when it was (then nothing changes).
    pub async fn mark_filed(&self, row: filed_period::Model) -> Result<(filed_period::Model, bool), StoreError> {
        let key = (row.entity_id.clone(), row.state.clone(), row.period.clone());
        let insert = filed_period::Entity::insert(row.into_active_model())
            .on_conflict(
                sea_orm::sea_query::OnConflict::columns([
                    filed_period::Column::EntityId,
                    filed_period::Column::State,
                    filed_period::Column::Period,
                ])
                .do_nothing()
                .to_owned(),
            )
            .exec_without_returning(&self.writer)
            .await?;
        let stored = filed_period::Entity::find_by_id(key).one(&self.writer).await?;
        let stored = stored.ok_or_else(|| StoreError::Other("a filed period vanished as it was recorded".into()))?;
        Ok((stored, insert == 0))
    }

    /// What the liability report reads of the account's rows dated `from..=to` (yyyymmdd), voided ones included.
    pub async fn ledger_figures(&self, entity_id: &str, from: i32, to: i32, state: Option<&str>) -> Result<Vec<LedgerFigures>, StoreError> {
        use transaction::Column as C;
        let mut q = transaction::Entity::find()
            .select_only()
            .columns([C::Role, C::BuyerState, C::Dated, C::Amount, C::TotalTax, C::RefundOf, C::VoidedAt, C::Liability])
            .filter(C::EntityId.eq(entity_id))
            .filter(C::Dated.between(from, to));
        if let Some(st) = state {
            q = q.filter(C::BuyerState.eq(st));
        }
        Ok(q.into_model::<LedgerFigures>().all(&self.db).await?)
    }
}
