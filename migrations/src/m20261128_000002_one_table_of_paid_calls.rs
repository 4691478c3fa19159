//! The calls paid per call, of both protocols, in one table: `paid_calls` takes the rows of `x402_payments` and
//! `mpp_payments`, which go. A row is one payment's single-use claim: its id is the protocol and the protocol's own
//! id (`x402:` and the SHA-256 of network, asset, payer and nonce; `mpp:` and the challenge id), so that a nonce or
//! a challenge pays for one call on any instance. An x402 row keeps the paying wallet; an MPP row the SHA-256 of its
//! Shared Payment Token, unique, so that a token pays once.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::ConnectionTrait;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum PaidCalls {
    Table,
    /// `x402:` or `mpp:` and the protocol's id of the payment.
    Id,
    /// `x402` or `mpp`.
    Protocol,
    /// x402: the paying wallet (lowercase); MPP: none.
    Payer,
    /// MPP: SHA-256 hex of the Shared Payment Token (the token itself is not kept); x402: none.
    TokenHash,
    EntityId,
    /// `pending` while taken, `settled` once taken, `unrecorded` when taken but its call not written.
    State,
    IdempotencyKey,
    /// The receipt header's value sent with the answer, replayed with it.
    Receipt,
    CreatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(PaidCalls::Table)
                .col(ColumnDef::new(PaidCalls::Id).string_len(72).not_null().primary_key())
                .col(ColumnDef::new(PaidCalls::Protocol).string_len(8).not_null())
                .col(ColumnDef::new(PaidCalls::Payer).string_len(42).null())
                .col(ColumnDef::new(PaidCalls::TokenHash).string_len(64).null())
                .col(ColumnDef::new(PaidCalls::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(PaidCalls::State).string_len(12).not_null())
                .col(ColumnDef::new(PaidCalls::IdempotencyKey).string_len(255).null())
                .col(ColumnDef::new(PaidCalls::Receipt).text().null())
                .col(ColumnDef::new(PaidCalls::CreatedAt).big_integer().not_null())
                .to_owned(),
        )
        .await?;
        m.create_index(Index::create().name("paid_calls_token").table(PaidCalls::Table).col(PaidCalls::TokenHash).unique().to_owned())
            .await?;
        m.create_index(
            Index::create()
                .name("paid_calls_idempotency")
                .table(PaidCalls::Table)
                .col(PaidCalls::EntityId)
                .col(PaidCalls::IdempotencyKey)
                .to_owned(),
        )
        .await?;
        let db = m.get_connection();
        db.execute_unprepared(
            "INSERT INTO paid_calls (id, protocol, payer, token_hash, entity_id, state, idempotency_key, receipt, created_at) \
             SELECT 'x402:' || id, 'x402', payer, NULL, entity_id, state, idempotency_key, receipt, created_at FROM x402_payments",
        )
        .await?;
        db.execute_unprepared(
            "INSERT INTO paid_calls (id, protocol, payer, token_hash, entity_id, state, idempotency_key, receipt, created_at) \
             SELECT 'mpp:' || id, 'mpp', NULL, spt_hash, entity_id, state, idempotency_key, receipt, created_at FROM mpp_payments",
        )
        .await?;
        m.drop_table(Table::drop().table(Alias::new("x402_payments")).to_owned()).await?;
        m.drop_table(Table::drop().table(Alias::new("mpp_payments")).to_owned()).await
    }

    async fn down(&self, _m: &SchemaManager) -> Result<(), DbErr> {
        Err(DbErr::Migration("paid_calls is not split back into x402_payments and mpp_payments".into()))
    }
}
