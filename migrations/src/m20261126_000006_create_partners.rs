//! The partner program: partners (key hash, webhook signing secrets, terms), the accounts they provision (with
//! claim links and the first upgrade that locks the revenue share), and the webhook nonces already used.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Partners {
    Table,
    /// `ptn_…`.
    Id,
    /// Unique; names the partner in `X-Service-Partner`.
    Slug,
    Name,
    /// SHA-256 of the partner key (`partner_live_` + 32 hex); the key itself is never stored.
    KeyHash,
    /// The key's first 16 characters, for listings.
    KeyPrefix,
    /// The webhook signing secret (kept as given: an HMAC needs it), and the one it replaced with when that stops
    /// verifying (Unix ms).
    Secret,
    PreviousSecret,
    PreviousSecretUntil,
    /// Terms: the revenue share (percent, decimal text), the wholesale price of a billable call (USD, decimal
    /// text), the calls per user per period that are free, and partner-route calls allowed per minute.
    RevsharePct,
    WholesalePerCall,
    FreeCallsPerUser,
    RateLimitPerMinute,
    Active,
    CreatedAt,
}

#[derive(DeriveIden)]
enum PartnerUsers {
    Table,
    /// `pu_…`: the spec's `partner_user_id`.
    Id,
    PartnerId,
    /// The partner's id for its user: unique per partner (the idempotency key of provisioning).
    ExternalId,
    /// The account provisioned (`entities.id`), one per partner user.
    EntityId,
    Email,
    DisplayName,
    /// SHA-256 of the single-use claim token, until it is used; when it expires; when the account was claimed.
    ClaimTokenHash,
    ClaimExpiresAt,
    ClaimedAt,
    /// When the partner reported the user deleted (its keys revoked, its ledger kept).
    DeletedAt,
    /// When the account's tax plan first became a paid one, and the partner's revenue share locked then.
    FirstUpgradeAt,
    LockedRevsharePct,
    CreatedAt,
}

#[derive(DeriveIden)]
enum PartnerNonces {
    Table,
    PartnerId,
    Nonce,
    /// When it was used (Unix ms); rows older than the signature's tolerance are removed.
    UsedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(Partners::Table)
                .col(ColumnDef::new(Partners::Id).string_len(40).not_null().primary_key())
                .col(ColumnDef::new(Partners::Slug).string_len(64).not_null().unique_key())
                .col(ColumnDef::new(Partners::Name).string_len(200).not_null())
                .col(ColumnDef::new(Partners::KeyHash).string_len(64).not_null().unique_key())
                .col(ColumnDef::new(Partners::KeyPrefix).string_len(16).not_null())
                .col(ColumnDef::new(Partners::Secret).string_len(128).not_null())
                .col(ColumnDef::new(Partners::PreviousSecret).string_len(128).null())
                .col(ColumnDef::new(Partners::PreviousSecretUntil).big_integer().null())
                .col(ColumnDef::new(Partners::RevsharePct).string_len(20).not_null())
                .col(ColumnDef::new(Partners::WholesalePerCall).string_len(20).not_null())
                .col(ColumnDef::new(Partners::FreeCallsPerUser).big_integer().not_null())
                .col(ColumnDef::new(Partners::RateLimitPerMinute).big_integer().not_null())
                .col(ColumnDef::new(Partners::Active).boolean().not_null())
                .col(ColumnDef::new(Partners::CreatedAt).big_integer().not_null())
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(PartnerUsers::Table)
                .col(ColumnDef::new(PartnerUsers::Id).string_len(40).not_null().primary_key())
                .col(ColumnDef::new(PartnerUsers::PartnerId).string_len(40).not_null())
                .col(ColumnDef::new(PartnerUsers::ExternalId).string_len(256).not_null())
                .col(ColumnDef::new(PartnerUsers::EntityId).string_len(40).not_null().unique_key())
                .col(ColumnDef::new(PartnerUsers::Email).string_len(320).null())
                .col(ColumnDef::new(PartnerUsers::DisplayName).string_len(200).null())
                .col(ColumnDef::new(PartnerUsers::ClaimTokenHash).string_len(64).null().unique_key())
                .col(ColumnDef::new(PartnerUsers::ClaimExpiresAt).big_integer().not_null())
                .col(ColumnDef::new(PartnerUsers::ClaimedAt).big_integer().null())
                .col(ColumnDef::new(PartnerUsers::DeletedAt).big_integer().null())
                .col(ColumnDef::new(PartnerUsers::FirstUpgradeAt).big_integer().null())
                .col(ColumnDef::new(PartnerUsers::LockedRevsharePct).string_len(20).null())
                .col(ColumnDef::new(PartnerUsers::CreatedAt).big_integer().not_null())
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("partner_users_partner_external")
                .table(PartnerUsers::Table)
                .col(PartnerUsers::PartnerId)
                .col(PartnerUsers::ExternalId)
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(PartnerNonces::Table)
                .col(ColumnDef::new(PartnerNonces::PartnerId).string_len(40).not_null())
                .col(ColumnDef::new(PartnerNonces::Nonce).string_len(128).not_null())
                .col(ColumnDef::new(PartnerNonces::UsedAt).big_integer().not_null())
                .primary_key(Index::create().col(PartnerNonces::PartnerId).col(PartnerNonces::Nonce))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(PartnerNonces::Table).to_owned()).await?;
        m.drop_table(Table::drop().table(PartnerUsers::Table).to_owned()).await?;
        m.drop_table(Table::drop().table(Partners::Table).to_owned()).await
    }
}
