//! Shared limiter counters (burst, demo, monthly usage) and idempotency records.
//! Both live in the database so that every server instance sees the same windows.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Counters {
    Table,
    Name,
    WindowStart,
    Count,
    ExpiresAt,
}

#[derive(DeriveIden)]
enum IdempotencyKeys {
    Table,
    EntityId,
    Key,
    RequestHash,
    State,
    Status,
    Body,
    CreatedAt,
    ExpiresAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(Counters::Table)
                .col(ColumnDef::new(Counters::Name).string_len(200).not_null())
                .col(ColumnDef::new(Counters::WindowStart).big_integer().not_null())
                .col(ColumnDef::new(Counters::Count).big_integer().not_null())
                .col(ColumnDef::new(Counters::ExpiresAt).big_integer().not_null())
                .primary_key(Index::create().col(Counters::Name).col(Counters::WindowStart))
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(IdempotencyKeys::Table)
                .col(ColumnDef::new(IdempotencyKeys::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(IdempotencyKeys::Key).string_len(255).not_null())
                .col(ColumnDef::new(IdempotencyKeys::RequestHash).string_len(64).not_null())
                .col(ColumnDef::new(IdempotencyKeys::State).string_len(12).not_null())
                .col(ColumnDef::new(IdempotencyKeys::Status).integer().null())
                .col(ColumnDef::new(IdempotencyKeys::Body).text().null())
                .col(ColumnDef::new(IdempotencyKeys::CreatedAt).big_integer().not_null())
                .col(ColumnDef::new(IdempotencyKeys::ExpiresAt).big_integer().not_null())
                .primary_key(Index::create().col(IdempotencyKeys::EntityId).col(IdempotencyKeys::Key))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(IdempotencyKeys::Table).to_owned()).await?;
        m.drop_table(Table::drop().table(Counters::Table).to_owned()).await
    }
}
