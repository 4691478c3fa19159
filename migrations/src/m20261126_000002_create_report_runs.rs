//! Optimization-report runs per account and calendar month (yyyymm, UTC), counted against the plan's monthly
//! allowance. One row per account and month, raised by an atomic upsert that refuses past the allowance.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum ReportRuns {
    Table,
    EntityId,
    Month,
    Runs,
    LastRunAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(ReportRuns::Table)
                .col(ColumnDef::new(ReportRuns::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(ReportRuns::Month).integer().not_null())
                .col(ColumnDef::new(ReportRuns::Runs).big_integer().not_null())
                .col(ColumnDef::new(ReportRuns::LastRunAt).big_integer().not_null())
                .primary_key(Index::create().col(ReportRuns::EntityId).col(ReportRuns::Month))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(ReportRuns::Table).to_owned()).await
    }
}
