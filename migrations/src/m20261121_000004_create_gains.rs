//! The gains tracker: trades, cost-basis lots, dispositions (one per lot a sell consumed) and a
//! position per account and asset. Quantities and money are exact decimal text (quantities keep
//! 8 places; money is never rounded in storage); `open` and `wash_open` flags let the indexes
//! find the lots a sell needs and the losses a later buy may wash without scanning.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Trades {
    Table,
    Id,
    EntityId,
    AssetSymbol,
    TradeType,
    Quantity,
    PricePerUnit,
    FeeAmount,
    TradeDate,
    CreatedAt,
    AccountingMethod,
    SpecificLotId,
    AssetClass,
    AssetName,
    Counterparty,
    Exchange,
    Notes,
    RealizedGain,
    Request,
    Result,
}

#[derive(DeriveIden)]
enum Lots {
    Table,
    Id,
    EntityId,
    AssetSymbol,
    TradeId,
    AcquiredAt,
    HoldingStart,
    Quantity,
    CostBasis,
    RemainingQuantity,
    RemainingBasis,
    Open,
    WashAdjustment,
    ReplacementFor,
    SplitFrom,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Dispositions {
    Table,
    Id,
    EntityId,
    TradeId,
    LotId,
    AssetSymbol,
    AssetName,
    AssetClass,
    Exchange,
    Quantity,
    AcquiredAt,
    HoldingStart,
    SoldAt,
    TaxYear,
    Proceeds,
    CostBasis,
    Term,
    HoldingDays,
    WashApplicable,
    WashDisallowed,
    WashOpen,
    WashOpenQuantity,
    WashOpenLoss,
    Replacements,
}

#[derive(DeriveIden)]
enum Positions {
    Table,
    EntityId,
    AssetSymbol,
    AssetClass,
    AssetName,
    HeldQuantity,
    OpenLots,
    RemainingBasis,
    RealizedShortTerm,
    RealizedLongTerm,
    WashDisallowed,
    Buys,
    Sells,
    LastSellAt,
    UpdatedAt,
    Version,
}

fn text(c: impl IntoIden) -> ColumnDef {
    ColumnDef::new(c).string_len(64).not_null().to_owned()
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(Trades::Table)
                .col(ColumnDef::new(Trades::Id).string_len(40).not_null().primary_key())
                .col(ColumnDef::new(Trades::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(Trades::AssetSymbol).string_len(50).not_null())
                .col(ColumnDef::new(Trades::TradeType).string_len(4).not_null())
                .col(text(Trades::Quantity))
                .col(text(Trades::PricePerUnit))
                .col(text(Trades::FeeAmount))
                .col(ColumnDef::new(Trades::TradeDate).big_integer().not_null())
                .col(ColumnDef::new(Trades::CreatedAt).big_integer().not_null())
                .col(ColumnDef::new(Trades::AccountingMethod).string_len(12).null())
                .col(ColumnDef::new(Trades::SpecificLotId).string_len(100).null())
                .col(ColumnDef::new(Trades::AssetClass).string_len(20).null())
                .col(ColumnDef::new(Trades::AssetName).string_len(200).null())
                .col(ColumnDef::new(Trades::Counterparty).string_len(200).null())
                .col(ColumnDef::new(Trades::Exchange).string_len(200).null())
                .col(ColumnDef::new(Trades::Notes).text().null())
                .col(ColumnDef::new(Trades::RealizedGain).string_len(64).null())
                .col(ColumnDef::new(Trades::Request).text().not_null())
                .col(ColumnDef::new(Trades::Result).text().not_null())
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create().name("trades_entity_date").table(Trades::Table).col(Trades::EntityId).col(Trades::TradeDate).to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("trades_entity_asset_date")
                .table(Trades::Table)
                .col(Trades::EntityId)
                .col(Trades::AssetSymbol)
                .col(Trades::TradeDate)
                .to_owned(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(Lots::Table)
                .col(ColumnDef::new(Lots::Id).string_len(40).not_null().primary_key())
                .col(ColumnDef::new(Lots::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(Lots::AssetSymbol).string_len(50).not_null())
                .col(ColumnDef::new(Lots::TradeId).string_len(40).not_null())
                .col(ColumnDef::new(Lots::AcquiredAt).big_integer().not_null())
                .col(ColumnDef::new(Lots::HoldingStart).string_len(10).not_null())
                .col(text(Lots::Quantity))
                .col(text(Lots::CostBasis))
                .col(text(Lots::RemainingQuantity))
                .col(text(Lots::RemainingBasis))
                .col(ColumnDef::new(Lots::Open).boolean().not_null())
                .col(text(Lots::WashAdjustment))
                .col(ColumnDef::new(Lots::ReplacementFor).string_len(40).null())
                .col(ColumnDef::new(Lots::SplitFrom).string_len(40).null())
                .col(ColumnDef::new(Lots::CreatedAt).big_integer().not_null())
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("lots_open_by_date")
                .table(Lots::Table)
                .col(Lots::EntityId)
                .col(Lots::AssetSymbol)
                .col(Lots::Open)
                .col(Lots::AcquiredAt)
                .col(Lots::Id)
                .to_owned(),
        )
        .await?;

        m.create_table(
            Table::create()
                .table(Dispositions::Table)
                .col(ColumnDef::new(Dispositions::Id).string_len(40).not_null().primary_key())
                .col(ColumnDef::new(Dispositions::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(Dispositions::TradeId).string_len(40).not_null())
                .col(ColumnDef::new(Dispositions::LotId).string_len(40).not_null())
                .col(ColumnDef::new(Dispositions::AssetSymbol).string_len(50).not_null())
                .col(ColumnDef::new(Dispositions::AssetName).string_len(200).null())
                .col(ColumnDef::new(Dispositions::AssetClass).string_len(20).null())
                .col(ColumnDef::new(Dispositions::Exchange).string_len(200).null())
                .col(text(Dispositions::Quantity))
                .col(ColumnDef::new(Dispositions::AcquiredAt).big_integer().not_null())
                .col(ColumnDef::new(Dispositions::HoldingStart).string_len(10).not_null())
                .col(ColumnDef::new(Dispositions::SoldAt).big_integer().not_null())
                .col(ColumnDef::new(Dispositions::TaxYear).integer().not_null())
                .col(text(Dispositions::Proceeds))
                .col(text(Dispositions::CostBasis))
                .col(ColumnDef::new(Dispositions::Term).string_len(10).not_null())
                .col(ColumnDef::new(Dispositions::HoldingDays).big_integer().not_null())
                .col(ColumnDef::new(Dispositions::WashApplicable).boolean().not_null())
                .col(text(Dispositions::WashDisallowed))
                .col(ColumnDef::new(Dispositions::WashOpen).boolean().not_null())
                .col(text(Dispositions::WashOpenQuantity))
                .col(text(Dispositions::WashOpenLoss))
                .col(ColumnDef::new(Dispositions::Replacements).text().not_null())
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("dispositions_entity_year")
                .table(Dispositions::Table)
                .col(Dispositions::EntityId)
                .col(Dispositions::TaxYear)
                .col(Dispositions::SoldAt)
                .col(Dispositions::Id)
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("dispositions_open_losses")
                .table(Dispositions::Table)
                .col(Dispositions::EntityId)
                .col(Dispositions::AssetSymbol)
                .col(Dispositions::WashOpen)
                .col(Dispositions::SoldAt)
                .to_owned(),
        )
        .await?;
        m.create_index(Index::create().name("dispositions_trade").table(Dispositions::Table).col(Dispositions::TradeId).to_owned()).await?;

        m.create_table(
            Table::create()
                .table(Positions::Table)
                .col(ColumnDef::new(Positions::EntityId).string_len(40).not_null())
                .col(ColumnDef::new(Positions::AssetSymbol).string_len(50).not_null())
                .col(ColumnDef::new(Positions::AssetClass).string_len(20).null())
                .col(ColumnDef::new(Positions::AssetName).string_len(200).null())
                .col(text(Positions::HeldQuantity))
                .col(ColumnDef::new(Positions::OpenLots).big_integer().not_null())
                .col(text(Positions::RemainingBasis))
                .col(text(Positions::RealizedShortTerm))
                .col(text(Positions::RealizedLongTerm))
                .col(text(Positions::WashDisallowed))
                .col(ColumnDef::new(Positions::Buys).big_integer().not_null())
                .col(ColumnDef::new(Positions::Sells).big_integer().not_null())
                .col(ColumnDef::new(Positions::LastSellAt).big_integer().null())
                .col(ColumnDef::new(Positions::UpdatedAt).big_integer().not_null())
                .col(ColumnDef::new(Positions::Version).big_integer().not_null())
                .primary_key(Index::create().col(Positions::EntityId).col(Positions::AssetSymbol))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for t in [Positions::Table.into_iden(), Dispositions::Table.into_iden(), Lots::Table.into_iden(), Trades::Table.into_iden()] {
            m.drop_table(Table::drop().table(t).to_owned()).await?;
        }
        Ok(())
    }
}
