//! Ledger bodies as JSON text again, readable by SQL (`json_extract(result, '$.total_tax')` on SQLite,
//! `result::jsonb ->> 'total_tax'` on PostgreSQL, which compresses long values itself). Rows packed by
//! m20261121_000005 (zstd frames against a dictionary in `ledger_dictionaries`) are unpacked into `result`; then
//! the two packing columns and the dictionaries go.

use sea_orm_migration::prelude::*;
use sea_orm_migration::sea_orm::{ConnectionTrait, Statement, Value};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Rows unpacked per round.
const ROUND: u64 = 200;
/// The longest body unpacked (a body is a few kilobytes; anything longer is corrupt).
const MAX_BODY: usize = 16 << 20;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        let db = m.get_connection();
        let backend = db.get_database_backend();
        let dictionaries: std::collections::HashMap<String, Vec<u8>> = db
            .query_all(Statement::from_string(backend, r#"SELECT "id", "content" FROM "ledger_dictionaries""#))
            .await?
            .iter()
            .map(|r| Ok((r.try_get::<String>("", "id")?, r.try_get::<Vec<u8>>("", "content")?)))
            .collect::<Result<_, DbErr>>()?;
        let select =
            format!(r#"SELECT "id", "result_dictionary", "result_zstd" FROM "transactions" WHERE "result_zstd" IS NOT NULL LIMIT {ROUND}"#);
        let update = match backend {
            sea_orm_migration::sea_orm::DbBackend::Postgres => {
                r#"UPDATE "transactions" SET "result" = $1, "result_zstd" = NULL, "result_dictionary" = NULL WHERE "id" = $2"#
            }
            _ => r#"UPDATE "transactions" SET "result" = ?, "result_zstd" = NULL, "result_dictionary" = NULL WHERE "id" = ?"#,
        };
        loop {
            let rows = db.query_all(Statement::from_string(backend, select.clone())).await?;
            if rows.is_empty() {
                break;
            }
            for r in rows {
                let id: String = r.try_get("", "id")?;
                let dictionary: Option<String> = r.try_get("", "result_dictionary")?;
                let packed: Vec<u8> = r.try_get("", "result_zstd")?;
                let content = dictionary
                    .as_ref()
                    .and_then(|d| dictionaries.get(d))
                    .ok_or_else(|| DbErr::Migration(format!("ledger row {id}: its dictionary is missing")))?;
                let body = unpacked(content, &packed).map_err(|e| DbErr::Migration(format!("ledger row {id}: {e}")))?;
                db.execute(Statement::from_sql_and_values(backend, update, [Value::from(body), Value::from(id)])).await?;
            }
        }
        // (One column per ALTER TABLE, as SQLite takes them.)
        db.execute_unprepared(
            r#"ALTER TABLE "transactions" DROP COLUMN "result_zstd"; ALTER TABLE "transactions" DROP COLUMN "result_dictionary"; DROP TABLE "ledger_dictionaries""#,
        )
        .await?;
        Ok(())
    }

    async fn down(&self, _m: &SchemaManager) -> Result<(), DbErr> {
        // Rows stay as text: m20261121_000005's code read text rows as they are, so its columns come back empty.
        Err(DbErr::Migration("the ledger is not packed again; restore a backup taken before this migration".into()))
    }
}

/// A packed body: a run of zstd frames, each recording its content's size, against the dictionary.
fn unpacked(dictionary: &[u8], packed: &[u8]) -> Result<String, String> {
    let mut size = 0usize;
    let mut rest = packed;
    while !rest.is_empty() {
        let content = zstd::zstd_safe::get_frame_content_size(rest).ok().flatten();
        let frame = zstd::zstd_safe::find_frame_compressed_size(rest).ok().filter(|&f| f > 0 && f <= rest.len());
        let (Some(content), Some(frame)) = (content, frame) else { return Err("a frame without its size".into()) };
        size = size.saturating_add(usize::try_from(content).unwrap_or(usize::MAX));
        if size > MAX_BODY {
            return Err("longer than any body".into());
        }
        rest = &rest[frame..];
    }
    let mut d = zstd::bulk::Decompressor::with_dictionary(dictionary).map_err(|e| e.to_string())?;
    let bytes = d.decompress(packed, size).map_err(|e| e.to_string())?;
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))
}
