//! Calculate bodies kept packed (zstd against a dictionary of typical bodies) on SQLite: the dictionaries, and
//! the two columns a packed ledger row uses. Rows written before keep their body as text in `result`.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Transactions {
    Table,
    ResultDictionary,
    ResultZstd,
}

#[derive(DeriveIden)]
enum LedgerDictionaries {
    Table,
    Id,
    CreatedAt,
    Content,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(LedgerDictionaries::Table)
                .col(ColumnDef::new(LedgerDictionaries::Id).string_len(64).not_null().primary_key())
                .col(ColumnDef::new(LedgerDictionaries::CreatedAt).big_integer().not_null())
                .col(ColumnDef::new(LedgerDictionaries::Content).binary().not_null())
                .to_owned(),
        )
        .await?;
        // (SQLite adds one column per statement.)
        m.alter_table(
            Table::alter()
                .table(Transactions::Table)
                .add_column(ColumnDef::new(Transactions::ResultDictionary).string_len(64).null())
                .to_owned(),
        )
        .await?;
        m.alter_table(
            Table::alter().table(Transactions::Table).add_column(ColumnDef::new(Transactions::ResultZstd).binary().null()).to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(Table::alter().table(Transactions::Table).drop_column(Transactions::ResultZstd).to_owned()).await?;
        m.alter_table(Table::alter().table(Transactions::Table).drop_column(Transactions::ResultDictionary).to_owned()).await?;
        m.drop_table(Table::drop().table(LedgerDictionaries::Table).to_owned()).await
    }
}
