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

use std::cell::RefCell;
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
/// the keyed load, left the one-at-a-time batch about 5% more calls per second (2 alternated runs, when the batch
/// still packed the bodies itself).
const LEVEL: i32 = -1;
/// The longest body unpacked (a body is a few kilobytes; anything longer is corrupt).
const MAX_BODY: usize = 16 << 20;

/// A dictionary, ready to pack and unpack with. Dictionaries are built once per process and kept for its life
/// ([`Dictionary::of`]): a process meets one per rule-set version.
pub struct Dictionary {
    pub id: String,
    encoder: EncoderDictionary<'static>,
    decoder: DecoderDictionary<'static>,
}

/// A body stored packed is a run of zstd frames, one per piece of its text (`engine::render::FullText`): the three
/// pieces a determination fixes, compressed against the dictionary in the caller's task before the ledger batch
/// ([`Dictionary::pack_fixed`]), and between them the two the batch settles, small enough to store as they are,
/// in raw frames ([`packed_body`]). So the one-at-a-time batch compresses nothing. A run of frames decompresses
/// to their contents one after another, as one frame would; rows packed whole, as one frame, read the same way.
pub type PackedFixed = [Vec<u8>; 3];

impl Dictionary {
    /// The dictionary with this content, built on first use.
    pub fn of(content: &[u8]) -> &'static Dictionary {
        let id = dictionary_id(content);
        let mut known = known().lock().unwrap_or_else(|e| e.into_inner());
        known.entry(id.clone()).or_insert_with(|| {
            let d = Dictionary { id, encoder: EncoderDictionary::copy(content, LEVEL), decoder: DecoderDictionary::copy(content) };
            Box::leak(Box::new(d))
        })
    }

    /// The dictionary with this id, if this process has built it.
    fn built(id: &str) -> Option<&'static Dictionary> {
        known().lock().unwrap_or_else(|e| e.into_inner()).get(id).copied()
    }

    /// The three fixed pieces of a body, each compressed against the dictionary as a frame of its own. Each
    /// thread keeps a compressor per dictionary, reused from call to call.
    pub fn pack_fixed(&'static self, fixed: [&str; 3]) -> Result<PackedFixed, StoreError> {
        thread_local! {
            static COMPRESSORS: RefCell<Vec<(&'static str, Compressor<'static>)>> = const { RefCell::new(Vec::new()) };
        }
        COMPRESSORS.with_borrow_mut(|compressors| {
            let at = match compressors.iter().position(|(id, _)| *id == self.id) {
                Some(at) => at,
                None => {
                    compressors.push((self.id.as_str(), Compressor::with_prepared_dictionary(&self.encoder).map_err(packing_error)?));
                    compressors.len() - 1
                }
            };
            let compressor = &mut compressors[at].1;
            let mut frame = |text: &str| compressor.compress(text.as_bytes()).map_err(packing_error);
            Ok([frame(fixed[0])?, frame(fixed[1])?, frame(fixed[2])?])
        })
    }

    fn decompressor(&'static self) -> Result<Decompressor<'static>, StoreError> {
        Decompressor::with_prepared_dictionary(&self.decoder).map_err(packing_error)
    }
}

/// A packed body: the fixed pieces' frames with the settled pieces between them, each in a raw frame.
pub fn packed_body(fixed: &PackedFixed, settled: &[String; 2]) -> Vec<u8> {
    let mut out = Vec::with_capacity(fixed.iter().map(Vec::len).sum::<usize>() + settled[0].len() + settled[1].len() + 32);
    for (i, frame) in fixed.iter().enumerate() {
        out.extend_from_slice(frame);
        if let Some(between) = settled.get(i) {
            raw_frame(&mut out, between.as_bytes());
        }
    }
    out
}

/// Appends `content` as a zstd frame of raw blocks (RFC 8878, section 3.1.1): the magic number; a header of one
/// segment that records the content's size, with no dictionary id and no checksum; then blocks of at most 128
/// KiB, the last one marked (an empty content is one empty block).
fn raw_frame(out: &mut Vec<u8>, content: &[u8]) {
    const MAGIC: u32 = 0xFD2F_B528;
    const MAX_BLOCK: usize = 128 << 10;
    out.extend_from_slice(&MAGIC.to_le_bytes());
    // Frame_Header_Descriptor: Frame_Content_Size_Flag (bits 7-6) sizes the field that follows; Single_Segment_Flag
    // (bit 5) set, so no window descriptor; no checksum, no dictionary id.
    let n = content.len() as u64;
    match n {
        0..=255 => out.extend_from_slice(&[0b0010_0000, n as u8]),
        256..=65_791 => {
            out.push(0b0110_0000);
            out.extend_from_slice(&((n - 256) as u16).to_le_bytes());
        }
        _ if n <= u64::from(u32::MAX) => {
            out.push(0b1010_0000);
            out.extend_from_slice(&(n as u32).to_le_bytes());
        }
        _ => {
            out.push(0b1110_0000);
            out.extend_from_slice(&n.to_le_bytes());
        }
    }
    let mut blocks = content.chunks(MAX_BLOCK).peekable();
    if blocks.peek().is_none() {
        out.extend_from_slice(&[1, 0, 0]); // the last block, raw, empty
    }
    while let Some(block) = blocks.next() {
        // Block_Header, 3 bytes little-endian: Last_Block (bit 0), Block_Type 0 = raw (bits 1-2), Block_Size.
        let header = (block.len() as u32) << 3 | u32::from(blocks.peek().is_none());
        out.extend_from_slice(&header.to_le_bytes()[..3]);
        out.extend_from_slice(block);
    }
}

fn unpacked(d: &mut Decompressor<'_>, packed: &[u8]) -> Result<String, StoreError> {
    // Each frame records its content's length (a packer writes it); the buffer is their sum, not the bound.
    let mut size = 0usize;
    let mut rest = packed;
    while !rest.is_empty() && size <= MAX_BODY {
        let content = zstd::zstd_safe::get_frame_content_size(rest).ok().flatten();
        let frame = zstd::zstd_safe::find_frame_compressed_size(rest).ok().filter(|&f| f > 0 && f <= rest.len());
        let (Some(content), Some(frame)) = (content, frame) else {
            return Err(StoreError::Other("a packed calculation has a frame without its size".into()));
        };
        size = size.saturating_add(usize::try_from(content).unwrap_or(usize::MAX));
        rest = &rest[frame..];
    }
    let bytes = d.decompress(packed, size.min(MAX_BODY)).map_err(packing_error)?;
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
        // A body in its five pieces: the fixed ones packed ahead, the settled ones (one empty) between them raw.
        let fixed = [r#"{"success":true,"jurisdiction":"Austin, TX""#, r#""source":"Tex. Tax Code \u00a7151.051(b)","#, r#""total_tax":6.63,"note":"é ✓"}"#];
        let settled = [r#","tracking_1099":null,"#.to_string(), String::new()];
        let body = fixed[0].to_string() + &settled[0] + fixed[1] + &settled[1] + fixed[2];
        let packed = packed_body(&d.pack_fixed(fixed).unwrap(), &settled);
        assert!(packed.len() < body.len(), "{} bytes packed", packed.len());
        let mut rows = vec![transaction::Model { result_dictionary: Some(d.id.clone()), result_zstd: Some(packed), ..row("") }, row("plain text, as rows before packing")];
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

    #[test]
    fn raw_frames_decompress_to_their_content_at_every_size_field_and_block_boundary() {
        // zstd itself reads them: one frame at a time, and a run of them (with a compressed one) as the concatenation.
        for n in [0usize, 1, 255, 256, 65_791, 65_792, 128 << 10, (128 << 10) + 1, 300_000] {
            let content: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
            let mut frame = Vec::new();
            raw_frame(&mut frame, &content);
            assert_eq!(zstd::zstd_safe::get_frame_content_size(&frame).unwrap(), Some(n as u64), "size {n}");
            assert_eq!(zstd::zstd_safe::find_frame_compressed_size(&frame).unwrap(), frame.len(), "size {n}");
            assert_eq!(zstd::stream::decode_all(&frame[..]).unwrap(), content, "size {n}");
        }
        let mut run = zstd::bulk::compress(b"{\"a\":1", 3).unwrap();
        raw_frame(&mut run, b",\"b\":2");
        run.extend(zstd::bulk::compress(b"}", 3).unwrap());
        let mut d = Decompressor::new().unwrap();
        assert_eq!(unpacked(&mut d, &run).unwrap(), r#"{"a":1,"b":2}"#);
        // A frame cut short is an error, not a shorter body.
        assert!(unpacked(&mut d, &run[..run.len() - 2]).is_err());
    }
}
