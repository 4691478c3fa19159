//! The MPP payments the service has taken, one row per challenge (a challenge pays for one call) and per Shared
//! Payment Token (a token pays once); and `unrecorded`, a payment taken whose call could not be written.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum MppPayments {
    Table,
    /// The challenge id (base64url of its HMAC-SHA256, 43 characters).
    Id,
    /// SHA-256 hex of the Shared Payment Token (the token itself is not kept).
    SptHash,
    EntityId,
    /// `pending` while charged, `settled` once charged, `unrecorded` when charged but its call not written.
    State,
    IdempotencyKey,
    /// The Payment-Receipt value sent with the answer, replayed with it.
    Receipt,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(MppPayments::Table)
                .col(ColumnDef::new(MppPayments::Id).string_len(64).not_null().primary_key())
                .col(ColumnDef::new(MppPayments::SptHash).string_len(64).not_null())
                .col(ColumnDef::new(MppPayments::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(MppPayments::State).string_len(12).not_null())
                .col(ColumnDef::new(MppPayments::IdempotencyKey).string_len(255).null())
                .col(ColumnDef::new(MppPayments::Receipt).text().null())
                .col(ColumnDef::new(MppPayments::CreatedAt).big_integer().not_null())
                .to_owned(),
        )
        .await?;
        m.create_index(Index::create().name("mpp_payments_spt").table(MppPayments::Table).col(MppPayments::SptHash).unique().to_owned())
            .await?;
        m.create_index(
            Index::create()
                .name("mpp_payments_idempotency")
                .table(MppPayments::Table)
                .col(MppPayments::EntityId)
                .col(MppPayments::IdempotencyKey)
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(MppPayments::Table).to_owned()).await
    }
}
