//! What the optimization report and the onboarding guide read about an account, and the report's monthly runs.

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, Statement};

use super::entity::{report_run, transaction, vendor_ytd};
use super::{Store, StoreError};

/// How far an account has come: counts read from its ledger.
pub struct LedgerProgress {
    pub calculations: u64,
    pub ingested: u64,
    pub seller_sales: u64,
}

impl Store {
    /// Counts one report run for the account in `month` (yyyymm) unless `allowance` runs are already counted:
    /// one upsert whose update applies only below the allowance, so concurrent runs on any instance never pass it.
    /// `Some(runs)` with the runs counted this month including this one; `None` when the allowance is used up.
    pub async fn take_report_run(&self, entity_id: &str, month: i32, allowance: i64, now_ms: i64) -> Result<Option<i64>, StoreError> {
        if allowance < 1 {
            return Ok(None);
        }
        let backend = self.writer.get_database_backend();
        let p = |i: usize| if backend == sea_orm::DbBackend::Postgres { format!("${i}") } else { "?".into() };
        let sql = format!(
            r#"INSERT INTO "report_runs" ("entity_id", "month", "runs", "last_run_at") VALUES ({}, {}, 1, {})
               ON CONFLICT ("entity_id", "month") DO UPDATE SET "runs" = "report_runs"."runs" + 1, "last_run_at" = excluded."last_run_at"
               WHERE "report_runs"."runs" < {} RETURNING "runs""#,
            p(1),
            p(2),
            p(3),
            p(4)
        );
        let stmt = Statement::from_sql_and_values(backend, sql, [entity_id.into(), month.into(), now_ms.into(), allowance.into()]);
        let row = self.writer.query_one(stmt).await?;
        Ok(match row {
            Some(r) => Some(r.try_get::<i64>("", "runs")?),
            None => None,
        })
    }

    /// The report runs counted for the account in `month` (yyyymm).
    pub async fn report_runs(&self, entity_id: &str, month: i32) -> Result<i64, StoreError> {
        Ok(report_run::Entity::find_by_id((entity_id.to_string(), month)).one(&self.db).await?.map_or(0, |r| r.runs))
    }

    /// The account's calculations (neither refunds nor voided rows) created at or after `since_ms`, newest first, at
    /// most `limit`.
    pub async fn ledger_since(&self, entity_id: &str, since_ms: i64, limit: u64) -> Result<Vec<transaction::Model>, StoreError> {
        use sea_orm::QuerySelect;
        Ok(transaction::Entity::find()
            .filter(transaction::Column::EntityId.eq(entity_id))
            .filter(transaction::Column::CreatedAt.gte(since_ms))
            .filter(transaction::Column::RefundOf.is_null())
            .filter(transaction::Column::VoidedAt.is_null())
            .order_by_desc(transaction::Column::CreatedAt)
            .order_by_desc(transaction::Column::Id)
            .limit(limit)
            .all(&self.db)
            .await?)
    }

    /// The account's 1099 totals per counterparty for a tax year, largest first.
    pub async fn vendor_totals(&self, entity_id: &str, tax_year: i32) -> Result<Vec<vendor_ytd::Model>, StoreError> {
        Ok(vendor_ytd::Entity::find()
            .filter(vendor_ytd::Column::EntityId.eq(entity_id))
            .filter(vendor_ytd::Column::TaxYear.eq(tax_year))
            .order_by_desc(vendor_ytd::Column::TotalMicros)
            .order_by_asc(vendor_ytd::Column::CounterpartyId)
            .all(&self.db)
            .await?)
    }

    /// How many calculations, ingested records and seller-role rows the account's ledger holds.
    pub async fn ledger_progress(&self, entity_id: &str) -> Result<LedgerProgress, StoreError> {
        let of = |source: Option<&str>, role: Option<&str>| {
            let mut q = transaction::Entity::find().filter(transaction::Column::EntityId.eq(entity_id));
            if let Some(s) = source {
                q = q.filter(transaction::Column::Source.eq(s));
            }
            if let Some(r) = role {
                q = q.filter(transaction::Column::Role.eq(r));
            }
            q
        };
        Ok(LedgerProgress {
            calculations: of(Some("calculate"), None).count(&self.db).await?,
            ingested: of(Some("ingest"), None).count(&self.db).await?,
            seller_sales: of(None, Some("seller")).count(&self.db).await?,
        })
    }
}
