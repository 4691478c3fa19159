//! Refunds, voids and filed periods. Each ledger row gets the day it is dated by (yyyymmdd, UTC: the filing period
//! it falls in), the row it refunds (a refund is a row of its own), when it was voided, how many refunds it has
//! had, and what it owes by jurisdiction (JSON text, read by the liability report). Rows recorded before have
//! their day from `created_at` and no liability text (the report reads their totals). `filed_periods` holds the
//! periods an account has marked filed, per state, as a span of days.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden, Clone, Copy)]
enum Transactions {
    Table,
    EntityId,
    Role,
    BuyerState,
    Amount,
    TotalTax,
    Dated,
    RefundOf,
    VoidedAt,
    Refunds,
    Liability,
}

#[derive(DeriveIden)]
enum FiledPeriods {
    Table,
    EntityId,
    State,
    Period,
    FirstDay,
    LastDay,
    FiledAt,
}

/// The five columns refunds and voids add.
fn new_columns() -> [ColumnDef; 5] {
    [
        ColumnDef::new(Transactions::Dated).integer().not_null().default(0).to_owned(),
        ColumnDef::new(Transactions::RefundOf).string_len(40).null().to_owned(),
        ColumnDef::new(Transactions::VoidedAt).big_integer().null().to_owned(),
        ColumnDef::new(Transactions::Refunds).integer().not_null().default(0).to_owned(),
        ColumnDef::new(Transactions::Liability).text().null().to_owned(),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // (One column per ALTER TABLE, as SQLite takes them.)
        for mut c in new_columns() {
            m.alter_table(Table::alter().table(Transactions::Table).add_column(&mut c).to_owned()).await?;
        }
        let db = m.get_connection();
        let sqlite = db.get_database_backend() == DbBackend::Sqlite;
        let day = if sqlite {
            r#"CAST(strftime('%Y%m%d', "created_at" / 1000, 'unixepoch') AS INTEGER)"#
        } else {
            r#"CAST(to_char(to_timestamp("created_at" / 1000.0) AT TIME ZONE 'UTC', 'YYYYMMDD') AS INTEGER)"#
        };
        db.execute_unprepared(&format!(r#"UPDATE "transactions" SET "dated" = {day}"#)).await?;
        // An account's rows by day. On SQLite the index also holds what the liability report reads, so that the report
        // never reads the rows themselves: SQLite keeps a row's columns in order and spills a long row onto overflow
        // pages, and every column added here comes after the bodies of a few kilobytes. Reading them from the rows
        // made the report over 100,000 rows about 0.4 s slower (benches/liability.rs). PostgreSQL keeps long values
        // apart (TOAST), and caps an index entry near 2.7 kB, which a liability of many local taxes could pass.
        let mut by_day = Index::create();
        by_day.name("transactions_entity_dated").table(Transactions::Table).col(Transactions::EntityId).col(Transactions::Dated);
        if sqlite {
            use Transactions as T;
            for c in [T::Role, T::BuyerState, T::RefundOf, T::VoidedAt, T::Amount, T::TotalTax, T::Liability] {
                by_day.col(c);
            }
        }
        m.create_index(by_day.to_owned()).await?;
        m.create_index(Index::create().name("transactions_refund_of").table(Transactions::Table).col(Transactions::RefundOf).to_owned())
            .await?;
        m.create_table(
            Table::create()
                .table(FiledPeriods::Table)
                .col(ColumnDef::new(FiledPeriods::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(FiledPeriods::State).string_len(2).not_null())
                .col(ColumnDef::new(FiledPeriods::Period).string_len(10).not_null())
                .col(ColumnDef::new(FiledPeriods::FirstDay).integer().not_null())
                .col(ColumnDef::new(FiledPeriods::LastDay).integer().not_null())
                .col(ColumnDef::new(FiledPeriods::FiledAt).big_integer().not_null())
                .primary_key(Index::create().col(FiledPeriods::EntityId).col(FiledPeriods::State).col(FiledPeriods::Period))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(FiledPeriods::Table).to_owned()).await?;
        m.drop_index(Index::drop().name("transactions_refund_of").table(Transactions::Table).to_owned()).await?;
        m.drop_index(Index::drop().name("transactions_entity_dated").table(Transactions::Table).to_owned()).await?;
        for c in [Transactions::Liability, Transactions::Refunds, Transactions::VoidedAt, Transactions::RefundOf, Transactions::Dated] {
            m.alter_table(Table::alter().table(Transactions::Table).drop_column(c).to_owned()).await?;
        }
        Ok(())
    }
}
