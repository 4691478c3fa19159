//! The agent network: profiles (one per agent id, owned by an account, public or private) and the events of the
//! public feed (a profile joined, a profile changed).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum NetworkProfiles {
    Table,
    /// The agent's id on the network: what a calculate call names as `counterparty_id`.
    AgentId,
    EntityId,
    EntityName,
    /// Two letters, or empty for a profile made at signup without a state.
    EntityState,
    /// `public` or `private`.
    Visibility,
    Description,
    WorkType,
    PrincipalLegalName,
    PrincipalEntityType,
    PrincipalState,
    /// The last four digits of the principal's EIN, never more.
    PrincipalEinLast4,
    PrincipalContactEmail,
    PrincipalIsBusiness,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum NetworkEvents {
    Table,
    /// Time-ordered id.
    Id,
    AgentId,
    /// `joined` or `updated`.
    Kind,
    At,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(NetworkProfiles::Table)
                .col(ColumnDef::new(NetworkProfiles::AgentId).string_len(200).not_null().primary_key())
                .col(ColumnDef::new(NetworkProfiles::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(NetworkProfiles::EntityName).string_len(200).not_null())
                .col(ColumnDef::new(NetworkProfiles::EntityState).string_len(2).not_null())
                .col(ColumnDef::new(NetworkProfiles::Visibility).string_len(12).not_null())
                .col(ColumnDef::new(NetworkProfiles::Description).text().not_null())
                .col(ColumnDef::new(NetworkProfiles::WorkType).string_len(40).null())
                .col(ColumnDef::new(NetworkProfiles::PrincipalLegalName).string_len(200).null())
                .col(ColumnDef::new(NetworkProfiles::PrincipalEntityType).string_len(20).null())
                .col(ColumnDef::new(NetworkProfiles::PrincipalState).string_len(2).null())
                .col(ColumnDef::new(NetworkProfiles::PrincipalEinLast4).string_len(4).null())
                .col(ColumnDef::new(NetworkProfiles::PrincipalContactEmail).string_len(200).null())
                .col(ColumnDef::new(NetworkProfiles::PrincipalIsBusiness).boolean().null())
                .col(ColumnDef::new(NetworkProfiles::CreatedAt).big_integer().not_null())
                .col(ColumnDef::new(NetworkProfiles::UpdatedAt).big_integer().not_null())
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("network_profiles_entity")
                .table(NetworkProfiles::Table)
                .col(NetworkProfiles::EntityId)
                .col(NetworkProfiles::CreatedAt)
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("network_profiles_directory")
                .table(NetworkProfiles::Table)
                .col(NetworkProfiles::Visibility)
                .col(NetworkProfiles::CreatedAt)
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(NetworkEvents::Table)
                .col(ColumnDef::new(NetworkEvents::Id).string_len(40).not_null().primary_key())
                .col(ColumnDef::new(NetworkEvents::AgentId).string_len(200).not_null())
                .col(ColumnDef::new(NetworkEvents::Kind).string_len(12).not_null())
                .col(ColumnDef::new(NetworkEvents::At).big_integer().not_null())
                .to_owned(),
        )
        .await?;
        m.create_index(Index::create().name("network_events_at").table(NetworkEvents::Table).col(NetworkEvents::At).to_owned()).await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(NetworkEvents::Table).to_owned()).await?;
        m.drop_table(Table::drop().table(NetworkProfiles::Table).to_owned()).await
    }
}
