//! The transaction ledger, per-counterparty 1099 totals, per-state monthly revenue and nexus settings.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Transactions {
    Table,
    Id,
    EntityId,
    CreatedAt,
    Role,
    BuyerState,
    CounterpartyId,
    Amount,
    AmountMicros,
    TotalTax,
    ExternalTxId,
    Source,
    Metadata,
    Request,
    Result,
}

#[derive(DeriveIden)]
enum VendorYtd {
    Table,
    EntityId,
    CounterpartyId,
    TaxYear,
    TotalMicros,
    Payments,
}

#[derive(DeriveIden)]
enum StateRevenue {
    Table,
    EntityId,
    State,
    Month,
    SalesMicros,
    TxCount,
}

#[derive(DeriveIden)]
enum NexusStates {
    Table,
    EntityId,
    State,
    HasNexus,
    Reason,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(Transactions::Table)
                .col(ColumnDef::new(Transactions::Id).string_len(40).not_null().primary_key())
                .col(ColumnDef::new(Transactions::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(Transactions::CreatedAt).big_integer().not_null())
                .col(ColumnDef::new(Transactions::Role).string_len(10).not_null())
                .col(ColumnDef::new(Transactions::BuyerState).string_len(2).not_null())
                .col(ColumnDef::new(Transactions::CounterpartyId).string_len(200).not_null())
                .col(ColumnDef::new(Transactions::Amount).string_len(64).not_null())
                .col(ColumnDef::new(Transactions::AmountMicros).big_integer().not_null())
                .col(ColumnDef::new(Transactions::TotalTax).string_len(64).not_null())
                .col(ColumnDef::new(Transactions::ExternalTxId).string_len(200).null())
                .col(ColumnDef::new(Transactions::Source).string_len(10).not_null())
                .col(ColumnDef::new(Transactions::Metadata).text().null())
                .col(ColumnDef::new(Transactions::Request).text().not_null())
                .col(ColumnDef::new(Transactions::Result).text().not_null())
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("transactions_entity_created")
                .table(Transactions::Table)
                .col(Transactions::EntityId)
                .col(Transactions::CreatedAt)
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("transactions_entity_external")
                .unique()
                .table(Transactions::Table)
                .col(Transactions::EntityId)
                .col(Transactions::ExternalTxId)
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(VendorYtd::Table)
                .col(ColumnDef::new(VendorYtd::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(VendorYtd::CounterpartyId).string_len(200).not_null())
                .col(ColumnDef::new(VendorYtd::TaxYear).integer().not_null())
                .col(ColumnDef::new(VendorYtd::TotalMicros).big_integer().not_null())
                .col(ColumnDef::new(VendorYtd::Payments).big_integer().not_null())
                .primary_key(Index::create().col(VendorYtd::EntityId).col(VendorYtd::CounterpartyId).col(VendorYtd::TaxYear))
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(StateRevenue::Table)
                .col(ColumnDef::new(StateRevenue::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(StateRevenue::State).string_len(2).not_null())
                .col(ColumnDef::new(StateRevenue::Month).integer().not_null())
                .col(ColumnDef::new(StateRevenue::SalesMicros).big_integer().not_null())
                .col(ColumnDef::new(StateRevenue::TxCount).big_integer().not_null())
                .primary_key(Index::create().col(StateRevenue::EntityId).col(StateRevenue::State).col(StateRevenue::Month))
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(NexusStates::Table)
                .col(ColumnDef::new(NexusStates::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(NexusStates::State).string_len(2).not_null())
                .col(ColumnDef::new(NexusStates::HasNexus).boolean().not_null())
                .col(ColumnDef::new(NexusStates::Reason).string_len(500).null())
                .col(ColumnDef::new(NexusStates::UpdatedAt).big_integer().not_null())
                .primary_key(Index::create().col(NexusStates::EntityId).col(NexusStates::State))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for t in
            [NexusStates::Table.into_iden(), StateRevenue::Table.into_iden(), VendorYtd::Table.into_iden(), Transactions::Table.into_iden()]
        {
            m.drop_table(Table::drop().table(t).to_owned()).await?;
        }
        Ok(())
    }
}
