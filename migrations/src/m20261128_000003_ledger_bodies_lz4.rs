//! On PostgreSQL, a ledger row's bodies (the request as sent, the answer, the kept liability: about 4.9 KB together,
//! the answer 4.3 KB of it) are compressed with lz4 rather than the server's default, pglz. Under keyed load a
//! batch's insert spent more time in `pglz_compress` than in anything else the database did (a system-wide profile,
//! benches/README.md, 2026-11-28); with lz4 the same batches took about a third less time. lz4 is in PostgreSQL
//! 14 and later when the server is built with it (Debian's packages are). A server without it
//! keeps pglz and says so in a notice: a row reads the same either way, and rows written before keep theirs.
//! SQLite stores text as it is: nothing changes there.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The columns' compression set to `method` where the server has it.
fn set_compression(method: &str) -> String {
    format!(
        r#"DO $$
BEGIN
    IF current_setting('server_version_num')::int >= 140000 THEN
        EXECUTE 'ALTER TABLE "transactions" ALTER COLUMN "request" SET COMPRESSION {method}, ALTER COLUMN "result" SET COMPRESSION {method}, ALTER COLUMN "liability" SET COMPRESSION {method}';
    ELSE
        RAISE NOTICE 'PostgreSQL before 14 compresses with pglz only: the ledger keeps it';
    END IF;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this server is built without lz4: the ledger keeps pglz';
END $$"#
    )
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        if m.get_database_backend() == DbBackend::Postgres {
            m.get_connection().execute_unprepared(&set_compression("lz4")).await?;
        }
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        if m.get_database_backend() == DbBackend::Postgres {
            m.get_connection().execute_unprepared(&set_compression("pglz")).await?;
        }
        Ok(())
    }
}
