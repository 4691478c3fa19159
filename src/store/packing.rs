//! Calculate bodies stored packed in the ledger: zstd-compressed against a dictionary of typical bodies
//! (`engine::samples`).
//!
//! A body is about 4.5 KB of JSON, most of it text every answer for its state and category repeats. Written as
//! text, each ledger row took an overflow page of its own on SQLite, and writing those pages (the log, then the
//! database file) was the largest part of a keyed call's share of the one-at-a-time ledger batch. PostgreSQL
//! parsed each body as a literal of the batch's script, compressed it again itself (TOAST) and logged it: keyed
//! calls went from about 3,600 to 5,100-5,700 per second once bodies were packed there too (benches/load.sh's
//! keyed run, 64 connections, 2 alternated pairs). Packed against the dictionary a body takes a few hundred
//! bytes, and several rows share a page.
//!
//! A packed row keeps `result` empty and names its dictionary in `result_dictionary`; the dictionaries live in
//! `ledger_dictionaries` under the hash of their content, so every instance with the same rules writes and finds
//! the same one, and a row stays readable after the rules (and so the dictionary new rows use) change. Rows
//! written before packing existed keep their text, and read as they are. The store's readers give every row its
//! text back ([`Store::unpack`]) before anything else sees it; in the database a packed body is a blob, which
//! SQL alone cannot read (every read through the store can).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use sea_orm::sea_query::OnConflict;
use sea_orm::{EntityTrait, Set};
use sha2::{Digest, Sha256};
use zstd::bulk::{Compressor, Decompressor};
use zstd::dict::{DecoderDictionary, EncoderDictionary};

use super::entity::{ledger_dictionary, transaction};
use super::{Store, StoreError};

/// zstd's first fast level: against the dictionary it packs a TX body to about 550 bytes (level 1: 455) and, on
/// the keyed load, left the one-at-a-time batch about 5% more calls per second (2 alternated runs; packing is
/// the largest share of the batch's own CPU time).
const LEVEL: i32 = -1;
/// The longest body unpacked (a body is a few kilobytes; anything longer is corrupt).
const MAX_BODY: usize = 16 << 20;

/// A dictionary, ready to pack and unpack with. Dictionaries are built once per process and kept for its life
/// ([`Dictionary::of`]): a process meets one per rule-set version, and its compressor, reused from batch to
/// batch, borrows it.
pub struct Dictionary {
    pub id: String,
    encoder: EncoderDictionary<'static>,
    decoder: DecoderDictionary<'static>,
    /// The batches' compressor (one batch packs at a time per instance; the lock only guards against more).
    compressor: OnceLock<Mutex<Compressor<'static>>>,
}

impl Dictionary {
    /// The dictionary with this content, built on first use.
    pub fn of(content: &[u8]) -> &'static Dictionary {
        let id = dictionary_id(content);
        let mut known = known().lock().unwrap_or_else(|e| e.into_inner());
        known.entry(id.clone()).or_insert_with(|| {
            let d = Dictionary { id, encoder: EncoderDictionary::copy(content, LEVEL), decoder: DecoderDictionary::copy(content), compressor: OnceLock::new() };
            Box::leak(Box::new(d))
        })
    }

    /// The dictionary with this id, if this process has built it.
    fn built(id: &str) -> Option<&'static Dictionary> {
        known().lock().unwrap_or_else(|e| e.into_inner()).get(id).copied()
    }

    fn compressor(&'static self) -> Result<&'static Mutex<Compressor<'static>>, StoreError> {
        if self.compressor.get().is_none() {
            let c = Compressor::with_prepared_dictionary(&self.encoder).map_err(packing_error)?;
            let _ = self.compressor.set(Mutex::new(c));
        }
        self.compressor.get().ok_or_else(|| StoreError::Other("no compressor".into()))
    }

    /// Moves each row's body into its packed columns (`result` left empty).
    pub fn pack(&'static self, rows: &mut [transaction::Model]) -> Result<(), StoreError> {
        let mut compressor = self.compressor()?.lock().unwrap_or_else(|e| e.into_inner());
        for row in rows {
            let mut packed = compressor.compress(row.result.as_bytes()).map_err(packing_error)?;
            packed.shrink_to_fit();
            row.result_zstd = Some(packed);
            row.result_dictionary = Some(self.id.clone());
            row.result = String::new();
        }
        Ok(())
    }

    fn decompressor(&'static self) -> Result<Decompressor<'static>, StoreError> {
        Decompressor::with_prepared_dictionary(&self.decoder).map_err(packing_error)
    }
}

fn unpacked(d: &mut Decompressor<'_>, packed: &[u8]) -> Result<String, StoreError> {
    // The frame records the body's length (a packer writes it); the buffer is that long, not the bound.
    let size = zstd::zstd_safe::get_frame_content_size(packed).ok().flatten().map_or(MAX_BODY, |n| usize::try_from(n).unwrap_or(MAX_BODY).min(MAX_BODY));
    let bytes = d.decompress(packed, size).map_err(packing_error)?;
    String::from_utf8(bytes).map_err(|e| StoreError::Other(format!("a packed calculation is not UTF-8: {e}")))
}

fn known() -> &'static Mutex<HashMap<String, &'static Dictionary>> {
    static KNOWN: OnceLock<Mutex<HashMap<String, &'static Dictionary>>> = OnceLock::new();
    KNOWN.get_or_init(Default::default)
}

fn dictionary_id(content: &[u8]) -> String {
    hex::encode(&Sha256::digest(content)[..16])
}

fn packing_error(e: std::io::Error) -> StoreError {
    StoreError::Other(format!("packing a calculation: {e}"))
}

impl Store {
    /// The dictionary with this content, recorded in the database if no instance has yet. Call it before
    /// holding a writer transaction (it writes).
    pub async fn dictionary(&self, content: &[u8], now_ms: i64) -> Result<&'static Dictionary, StoreError> {
        let d = Dictionary::of(content);
        let row = ledger_dictionary::ActiveModel { id: Set(d.id.clone()), created_at: Set(now_ms), content: Set(content.to_vec()) };
        let insert = ledger_dictionary::Entity::insert(row).on_conflict(OnConflict::column(ledger_dictionary::Column::Id).do_nothing().to_owned());
        insert.exec_without_returning(&self.writer).await?;
        Ok(d)
    }

    /// Gives every packed row its body back as text in `result`, reading the dictionaries it names from the
    /// database (once per process).
    pub async fn unpack(&self, rows: &mut [transaction::Model]) -> Result<(), StoreError> {
        // One decompressor per dictionary for all the rows.
        let mut decompressors: HashMap<String, Decompressor<'static>> = HashMap::new();
        for row in rows.iter_mut() {
            let (packed, id) = match (row.result_zstd.take(), row.result_dictionary.take()) {
                (None, _) => continue,
                (Some(packed), Some(id)) => (packed, id),
                (Some(_), None) => return Err(StoreError::Other(format!("ledger row {} is packed without a dictionary", row.id))),
            };
            if let Some(d) = decompressors.get_mut(&id) {
                row.result = unpacked(d, &packed)?;
                continue;
            }
            let d = match Dictionary::built(&id) {
                Some(d) => d,
                None => {
                    let stored = ledger_dictionary::Entity::find_by_id(id.clone()).one(&self.db).await?;
                    let content = stored.ok_or_else(|| StoreError::Other(format!("ledger dictionary {id} not found")))?.content;
                    if dictionary_id(&content) != id {
                        return Err(StoreError::Other(format!("ledger dictionary {id} does not match its content")));
                    }
                    Dictionary::of(&content)
                }
            };
            let mut decompressor = d.decompressor()?;
            row.result = unpacked(&mut decompressor, &packed)?;
            decompressors.insert(id, decompressor);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(result: &str) -> transaction::Model {
        transaction::Model {
            id: "tx_1".into(),
            entity_id: "ent_1".into(),
            created_at: 0,
            role: "seller".into(),
            buyer_state: "TX".into(),
            counterparty_id: "c".into(),
            amount: "1".into(),
            amount_micros: 1_000_000,
            total_tax: "0".into(),
            external_tx_id: None,
            source: "calculate".into(),
            metadata: None,
            request: "{}".into(),
            result: result.into(),
            result_dictionary: None,
            result_zstd: None,
        }
    }

    #[tokio::test]
    async fn bodies_pack_against_the_dictionary_and_read_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/levy.db?mode=rwc", dir.path().display());
        let store = Store::connect(&url).await.unwrap();
        store.migrate().await.unwrap();
        let content = br#"{"success":true,"jurisdiction":"Austin, TX","source":"Tex. Tax Code \u00a7151.051(b)"}"#.repeat(4);
        let d = store.dictionary(&content, 1).await.unwrap();
        // The id is the content's hash: SHA-256 of it, first 16 bytes in hex.
        assert_eq!(d.id, hex::encode(&Sha256::digest(&content)[..16]));
        let body = r#"{"success":true,"jurisdiction":"Austin, TX","source":"Tex. Tax Code \u00a7151.051(b)","total_tax":6.63,"note":"é ✓"}"#;
        let mut rows = vec![row(body), row("plain text, as rows before packing")];
        d.pack(&mut rows[..1]).unwrap();
        assert_eq!((rows[0].result.as_str(), rows[0].result_dictionary.as_deref()), ("", Some(d.id.as_str())));
        let packed = rows[0].result_zstd.clone().unwrap();
        assert!(packed.len() < body.len() / 2, "{} bytes packed", packed.len());
        store.unpack(&mut rows).await.unwrap();
        assert_eq!(rows[0].result, body);
        assert_eq!((rows[0].result_dictionary.as_ref(), rows[0].result_zstd.as_ref()), (None, None));
        assert_eq!(rows[1].result, "plain text, as rows before packing");
        // The same content again is the same dictionary, recorded once.
        assert_eq!(store.dictionary(&content, 2).await.unwrap().id, d.id);
        assert_eq!(ledger_dictionary::Entity::find().all(&store.db).await.unwrap().len(), 1);

        // A row packed by another process, with a dictionary this one never built: read from the database.
        let theirs = b"a dictionary another instance recorded: Wash. Rev. Code 82.04.050 digital automated services".repeat(3);
        let encoder = EncoderDictionary::copy(&theirs, LEVEL);
        let text = "Wash. Rev. Code 82.04.050 digital automated services, taxed";
        let packed = Compressor::with_prepared_dictionary(&encoder).unwrap().compress(text.as_bytes()).unwrap();
        let id = dictionary_id(&theirs);
        assert!(Dictionary::built(&id).is_none());
        let stored = ledger_dictionary::ActiveModel { id: Set(id.clone()), created_at: Set(3), content: Set(theirs.clone()) };
        ledger_dictionary::Entity::insert(stored).exec_without_returning(&store.db).await.unwrap();
        let mut rows = vec![transaction::Model { result_dictionary: Some(id.clone()), result_zstd: Some(packed.clone()), ..row("") }];
        store.unpack(&mut rows).await.unwrap();
        assert_eq!(rows[0].result, text);

        // A row naming a dictionary the database does not hold, or one whose content does not hash to its id, is
        // an error, not a wrong body.
        let mut lost = vec![transaction::Model { result_dictionary: Some("0".repeat(32)), result_zstd: Some(packed.clone()), ..row("") }];
        assert!(store.unpack(&mut lost).await.is_err());
        let forged = ledger_dictionary::ActiveModel { id: Set("f".repeat(32)), created_at: Set(4), content: Set(theirs) };
        ledger_dictionary::Entity::insert(forged).exec_without_returning(&store.db).await.unwrap();
        let mut forged = vec![transaction::Model { result_dictionary: Some("f".repeat(32)), result_zstd: Some(packed.clone()), ..row("") }];
        assert!(store.unpack(&mut forged).await.is_err());
        let mut unnamed = vec![transaction::Model { result_zstd: Some(packed), ..row("") }];
        assert!(store.unpack(&mut unnamed).await.is_err());
    }
}
