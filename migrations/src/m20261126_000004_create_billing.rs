//! Plans on accounts: the gains tracker's plan beside the tax plan (`plan`), whether the subscription is paid up,
//! the processor's subscription behind each paid plan, and the billing events already applied (each once).

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[derive(DeriveIden)]
enum Entities {
    Table,
    /// The gains tracker's plan (a tier id of `rules/plans.yaml`); `plan` is the tax plan.
    GainsPlan,
    /// `active`, or `past_due` from a failed payment until the processor reports one that succeeded.
    PlanStatus,
    /// When the account became past due (Unix ms); paid plans stop applying a grace period after it.
    PastDueSince,
    /// The processor's subscription that pays for the tax plan, and the one for the gains plan.
    TaxSubscription,
    GainsSubscription,
    /// The processor's customer id.
    BillingCustomer,
}

#[derive(DeriveIden)]
enum BillingEvents {
    Table,
    /// The processor's event id (`evt_...`): an event is applied once.
    Id,
    Kind,
    EntityId,
    /// The processor's subscription the event is about, if any: an event older than one already applied about the
    /// same subscription changes nothing (the processor does not deliver in order).
    Subscription,
    /// What applying it did, in words.
    Outcome,
    /// The event's own time, and when it arrived (Unix ms).
    CreatedAt,
    ReceivedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite's ALTER TABLE adds one at a time.
        let columns = [
            ColumnDef::new(Entities::GainsPlan).string_len(40).not_null().default("free").to_owned(),
            ColumnDef::new(Entities::PlanStatus).string_len(12).not_null().default("active").to_owned(),
            ColumnDef::new(Entities::PastDueSince).big_integer().null().to_owned(),
            ColumnDef::new(Entities::TaxSubscription).string_len(255).null().to_owned(),
            ColumnDef::new(Entities::GainsSubscription).string_len(255).null().to_owned(),
            ColumnDef::new(Entities::BillingCustomer).string_len(255).null().to_owned(),
        ];
        for mut c in columns {
            m.alter_table(Table::alter().table(Entities::Table).add_column(&mut c).to_owned()).await?;
        }
        m.create_table(
            Table::create()
                .table(BillingEvents::Table)
                .col(ColumnDef::new(BillingEvents::Id).string_len(255).not_null().primary_key())
                .col(ColumnDef::new(BillingEvents::Kind).string_len(100).not_null())
                .col(ColumnDef::new(BillingEvents::EntityId).string_len(40).null())
                .col(ColumnDef::new(BillingEvents::Subscription).string_len(255).null())
                .col(ColumnDef::new(BillingEvents::Outcome).text().not_null())
                .col(ColumnDef::new(BillingEvents::CreatedAt).big_integer().not_null())
                .col(ColumnDef::new(BillingEvents::ReceivedAt).big_integer().not_null())
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("billing_events_subscription")
                .table(BillingEvents::Table)
                .col(BillingEvents::Subscription)
                .col(BillingEvents::CreatedAt)
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(BillingEvents::Table).to_owned()).await?;
        for c in [
            Entities::BillingCustomer,
            Entities::GainsSubscription,
            Entities::TaxSubscription,
            Entities::PastDueSince,
            Entities::PlanStatus,
            Entities::GainsPlan,
        ] {
            m.alter_table(Table::alter().table(Entities::Table).drop_column(c).to_owned()).await?;
        }
        Ok(())
    }
}
