//! Wallets linked to accounts (x402 payments from a linked wallet are recorded to its account) and the x402
//! payments the service has taken, one row per EIP-3009 authorization (its nonce is single use).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Wallets {
    Table,
    /// Lowercase `0x` and 40 hex digits: addresses compare case-insensitively (EIP-55 only adds a checksum).
    Address,
    EntityId,
    Label,
    Chain,
    CreatedAt,
}

#[derive(DeriveIden)]
enum X402Payments {
    Table,
    /// SHA-256 of network, asset, payer and nonce: EIP-3009 nonces are unique per authorizer and token.
    Id,
    EntityId,
    Payer,
    /// `pending` while verified and settled, `settled` after.
    State,
    IdempotencyKey,
    /// The X-PAYMENT-RESPONSE value sent with the answer (base64 JSON), replayed with it.
    Receipt,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Entities {
    Table,
    Id,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(Wallets::Table)
                .col(ColumnDef::new(Wallets::Address).string_len(42).not_null().primary_key())
                .col(ColumnDef::new(Wallets::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(Wallets::Label).string_len(128).null())
                .col(ColumnDef::new(Wallets::Chain).string_len(40).not_null())
                .col(ColumnDef::new(Wallets::CreatedAt).big_integer().not_null())
                .foreign_key(ForeignKey::create().from(Wallets::Table, Wallets::EntityId).to(Entities::Table, Entities::Id))
                .to_owned(),
        )
        .await?;
        m.create_index(Index::create().name("wallets_entity").table(Wallets::Table).col(Wallets::EntityId).to_owned()).await?;
        m.create_table(
            Table::create()
                .table(X402Payments::Table)
                .col(ColumnDef::new(X402Payments::Id).string_len(64).not_null().primary_key())
                .col(ColumnDef::new(X402Payments::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(X402Payments::Payer).string_len(42).not_null())
                .col(ColumnDef::new(X402Payments::State).string_len(12).not_null())
                .col(ColumnDef::new(X402Payments::IdempotencyKey).string_len(255).null())
                .col(ColumnDef::new(X402Payments::Receipt).text().null())
                .col(ColumnDef::new(X402Payments::CreatedAt).big_integer().not_null())
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("x402_payments_idempotency")
                .table(X402Payments::Table)
                .col(X402Payments::EntityId)
                .col(X402Payments::IdempotencyKey)
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(X402Payments::Table).to_owned()).await?;
        m.drop_table(Table::drop().table(Wallets::Table).to_owned()).await
    }
}
