//! Schema migrations for levy's store, applied on start-up and by `levy migrate`.
//!
//! Timestamps are Unix milliseconds (BIGINT) and money kept for summing is integer
//! micro-dollars, so the same SQL runs and sorts identically on SQLite and PostgreSQL.
//! Exact decimal amounts are also kept as text beside them for display.

pub use sea_orm_migration::prelude::*;

mod m20261121_000001_create_accounts;
mod m20261121_000002_create_ledger;
mod m20261121_000003_create_limits;
mod m20261121_000004_create_gains;
mod m20261121_000005_pack_ledger;
mod m20261126_000001_unpack_ledger;
mod m20261126_000002_create_report_runs;
mod m20261126_000002_create_wallets;
mod m20261126_000003_create_mpp_payments;
mod m20261126_000004_create_billing;
mod m20261126_000005_create_network;
mod m20261126_000006_create_partners;
mod m20261128_000001_create_refunds_and_filings;
mod m20261128_000002_one_table_of_paid_calls;
mod m20261128_000003_ledger_bodies_lz4;

pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261121_000001_create_accounts::Migration),
            Box::new(m20261121_000002_create_ledger::Migration),
            Box::new(m20261121_000003_create_limits::Migration),
            Box::new(m20261121_000004_create_gains::Migration),
            Box::new(m20261121_000005_pack_ledger::Migration),
            Box::new(m20261126_000001_unpack_ledger::Migration),
            Box::new(m20261126_000002_create_report_runs::Migration),
            Box::new(m20261126_000002_create_wallets::Migration),
            Box::new(m20261126_000003_create_mpp_payments::Migration),
            Box::new(m20261126_000004_create_billing::Migration),
            Box::new(m20261126_000005_create_network::Migration),
            Box::new(m20261126_000006_create_partners::Migration),
            Box::new(m20261128_000001_create_refunds_and_filings::Migration),
            Box::new(m20261128_000002_one_table_of_paid_calls::Migration),
            Box::new(m20261128_000003_ledger_bodies_lz4::Migration),
        ]
    }
}
