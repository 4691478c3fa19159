//! Accounts (entities), their agents, API keys and dashboard sessions.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Entities {
    Table,
    Id,
    Email,
    PasswordHash,
    AgentName,
    AgentWorkType,
    AgentDescription,
    CompanyName,
    State,
    EinCiphertext,
    EstVolume,
    JoinNetwork,
    NetworkVisibility,
    Utm,
    Plan,
    NexusConfigured,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Agents {
    Table,
    Id,
    EntityId,
    Name,
    WorkType,
    Description,
    CreatedAt,
}

#[derive(DeriveIden)]
enum ApiKeys {
    Table,
    Id,
    EntityId,
    Name,
    Prefix,
    KeyHash,
    CreatedAt,
    RevokedAt,
}

#[derive(DeriveIden)]
enum Sessions {
    Table,
    TokenHash,
    EntityId,
    CreatedAt,
    ExpiresAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(Entities::Table)
                .col(ColumnDef::new(Entities::Id).string_len(40).not_null().primary_key())
                .col(ColumnDef::new(Entities::Email).string_len(320).not_null().unique_key())
                .col(ColumnDef::new(Entities::PasswordHash).string().not_null())
                .col(ColumnDef::new(Entities::AgentName).string_len(200).not_null())
                .col(ColumnDef::new(Entities::AgentWorkType).string_len(40).not_null())
                .col(ColumnDef::new(Entities::AgentDescription).text().not_null())
                .col(ColumnDef::new(Entities::CompanyName).string_len(200).not_null())
                .col(ColumnDef::new(Entities::State).string_len(2).not_null())
                .col(ColumnDef::new(Entities::EinCiphertext).text().null())
                .col(ColumnDef::new(Entities::EstVolume).string_len(100).not_null())
                .col(ColumnDef::new(Entities::JoinNetwork).boolean().not_null())
                .col(ColumnDef::new(Entities::NetworkVisibility).string_len(10).not_null())
                .col(ColumnDef::new(Entities::Utm).text().not_null())
                .col(ColumnDef::new(Entities::Plan).string_len(20).not_null())
                .col(ColumnDef::new(Entities::NexusConfigured).boolean().not_null())
                .col(ColumnDef::new(Entities::CreatedAt).big_integer().not_null())
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(Agents::Table)
                .col(ColumnDef::new(Agents::Id).string_len(40).not_null().primary_key())
                .col(ColumnDef::new(Agents::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(Agents::Name).string_len(200).not_null())
                .col(ColumnDef::new(Agents::WorkType).string_len(40).not_null())
                .col(ColumnDef::new(Agents::Description).text().not_null())
                .col(ColumnDef::new(Agents::CreatedAt).big_integer().not_null())
                .foreign_key(ForeignKey::create().from(Agents::Table, Agents::EntityId).to(Entities::Table, Entities::Id))
                .to_owned(),
        )
        .await?;
        m.create_index(Index::create().name("agents_entity").table(Agents::Table).col(Agents::EntityId).to_owned()).await?;
        m.create_table(
            Table::create()
                .table(ApiKeys::Table)
                .col(ColumnDef::new(ApiKeys::Id).string_len(40).not_null().primary_key())
                .col(ColumnDef::new(ApiKeys::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(ApiKeys::Name).string_len(200).not_null())
                .col(ColumnDef::new(ApiKeys::Prefix).string_len(16).not_null())
                .col(ColumnDef::new(ApiKeys::KeyHash).string_len(64).not_null().unique_key())
                .col(ColumnDef::new(ApiKeys::CreatedAt).big_integer().not_null())
                .col(ColumnDef::new(ApiKeys::RevokedAt).big_integer().null())
                .foreign_key(ForeignKey::create().from(ApiKeys::Table, ApiKeys::EntityId).to(Entities::Table, Entities::Id))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create().name("api_keys_entity_prefix").table(ApiKeys::Table).col(ApiKeys::EntityId).col(ApiKeys::Prefix).to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(Sessions::Table)
                .col(ColumnDef::new(Sessions::TokenHash).string_len(64).not_null().primary_key())
                .col(ColumnDef::new(Sessions::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(Sessions::CreatedAt).big_integer().not_null())
                .col(ColumnDef::new(Sessions::ExpiresAt).big_integer().not_null())
                .foreign_key(ForeignKey::create().from(Sessions::Table, Sessions::EntityId).to(Entities::Table, Entities::Id))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for t in [Sessions::Table.into_iden(), ApiKeys::Table.into_iden(), Agents::Table.into_iden(), Entities::Table.into_iden()] {
            m.drop_table(Table::drop().table(t).to_owned()).await?;
        }
        Ok(())
    }
}
