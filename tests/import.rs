//! `levy rules import-sst` on the real Streamlined Sales Tax files beside the project (`../shared/data/sst/`):
//! the generated rule data checks clean, and the rates at chosen zip codes and dates are those worked out by hand
//! from the files' rows (quoted in each comment).

mod common;

use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use levy::cli::import_sst;
use levy::rules::load_dir;
use levy::rules::places::Coverage;
use levy::rules::schema::state_index;
use levy::rules::Registry;
use rust_decimal::Decimal;

fn sst(name: &str) -> Option<PathBuf> {
    let p = common::rules_dir().join("../../shared/data/sst").join(name);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("skipped: {} is not here", p.display());
        None
    }
}

fn day(s: &str) -> NaiveDate {
    NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
}

fn pct(text: &str) -> Decimal {
    text.parse::<Decimal>().unwrap() / Decimal::from(100)
}

/// The local rate at `zip` (with a ZIP+4 add-on, where given) on `on`, and the taxes it holds.
fn local(reg: &Registry, state: &str, zip: &str, plus4: Option<u16>, on: &str) -> (Decimal, Vec<String>, Coverage) {
    let entry = reg.local.entry(zip, state_index(state).unwrap()).unwrap_or_else(|| panic!("{zip} is in no table"));
    let a = reg.local.answer(entry, plus4, day(on));
    (a.part.rate, a.part.layers.iter().map(|l| l.tax.id.clone()).collect(), a.coverage)
}

/// A copy of rules/ without the state's generated files (the state the rate file's name begins with), imported again
/// from `files`. With `alone`, the state's hand-written files go too, so that the files' data stands by itself.
fn imported(files: &[&Path], districts: Option<&Path>, alone: bool) -> (tempfile::TempDir, PathBuf, Registry) {
    let (tmp, dir) = common::rules_copy();
    let state = files[0].file_name().unwrap().to_string_lossy()[..2].to_lowercase();
    for ext in ["yaml", "csv"] {
        let _ = std::fs::remove_file(dir.join(format!("local/{state}.sst.{ext}")));
        if alone {
            let _ = std::fs::remove_file(dir.join(format!("local/{state}.{ext}")));
        }
    }
    let code = import_sst(files[0], files.get(1).copied(), &dir, districts);
    assert_eq!(code, 0, "the import writes rule data that checks clean");
    let reg = load_dir(&dir).0.expect("the imported rules load");
    (tmp, dir, reg)
}

#[test]
fn georgia_counties_and_their_dated_rates() {
    let Some(rates) = sst("GAR2026Q2FEB19.csv") else { return };
    let (_tmp, dir, reg) = imported(&[&rates], None, false);
    let text = std::fs::read_to_string(dir.join("local/ga.sst.yaml")).unwrap();
    assert!(text.starts_with("# Generated on"), "the file says it is generated");
    // Bibb County (13,00,021): 0.04 from 20220101 to 20250930, 0.03 from 20251001 to 20260331, 0.04 from 20260401.
    // 31204 (Macon) has no boundary row: Bibb County's tax applies there by county.
    assert_eq!(local(&reg, "GA", "31204", None, "2025-06-01").0, pct("4"));
    assert_eq!(local(&reg, "GA", "31204", None, "2026-03-15").0, pct("3"));
    assert_eq!(local(&reg, "GA", "31204", None, "2026-04-01").0, pct("4"));
    assert_eq!(local(&reg, "GA", "31204", None, "2026-03-15").1, ["ga.sst-county-021"]);
    // Atlanta (13,01,04000): 0.019 from 20221001; 30303 is Fulton County's (13,00,121: 0.03 from 20170401): 4.9%.
    assert_eq!(local(&reg, "GA", "30303", None, "2026-03-15").0, pct("4.9"));
    // Every rate entry cites the file and the jurisdiction's row.
    assert!(
        text.contains("Streamlined Sales Tax rate file GAR2026Q2FEB19, GA jurisdiction type 00 code 021: 3% from 2025-10-01 to 2026-03-31")
    );
}

#[test]
fn wisconsin_counties_milwaukee_and_a_row_that_runs_into_the_next() {
    let Some(rates) = sst("WIR2026Q2FEB18.csv") else { return };
    let (_tmp, dir, reg) = imported(&[&rates], None, false);
    // Dane County (55,00,025): 0.005. Milwaukee County (55,00,079): 0.009 from 20240101; the City of Milwaukee
    // (55,01,53000): 0.02 from 20240101. 53202 is Milwaukee's: 2.9%; 53703 is Madison's (no city tax): 0.5%.
    assert_eq!(local(&reg, "WI", "53703", None, "2026-03-15").0, pct("0.5"));
    assert_eq!(local(&reg, "WI", "53202", None, "2026-03-15").0, pct("2.9"));
    // Menominee County (55,00,078): 0.0 from 19800101 to 20200331, then 0.005 from 20200331: the first row ends the
    // day before the second begins.
    let text = std::fs::read_to_string(dir.join("local/wi.sst.yaml")).unwrap();
    assert!(text.contains("rate: 0%, from: 1980-01-01, to: 2020-03-30"), "{text}");
    assert!(text.contains("rate: 0.5%, from: 2020-03-31,"));
}

#[test]
fn minnesota_with_the_boundary_sample_answers_by_zip_plus_4() {
    let (Some(rates), Some(bounds)) = (sst("MNR2026Q2FEB18.csv"), sst("MNB2026Q2FEB18-sample.csv")) else { return };
    // The sample is the file's first 100 records (2016 to 2019): the analysts' rows for later years would leave a
    // gap between the two, so the sample is imported alone.
    let (_tmp, dir, reg) = imported(&[&rates, &bounds], None, true);
    let rows = std::fs::read_to_string(dir.join("local/mn.sst.csv")).unwrap();
    // The sample's "4" record: 55101-0002 to 55101-1609 is Ramsey County (27,00,123: 0.005 from 20171001) and the City
    // of St. Paul (27,01,58000: 0.005 from 20051001 to 20240331), 2018-01-01 to 2019-03-31: 1% local on 2018-06-01.
    assert!(rows.contains("55101,0002-1609,mn.sst-county-123 mn.sst-city-58000,2018-01-01,2019-03-31"), "{rows}");
    assert_eq!(local(&reg, "MN", "55101", Some(5), "2018-06-01").0, pct("1"));
    // 55101-1610 is Dakota County's (27,00,037: 0.0025 from 20171001): 0.25%.
    assert_eq!(local(&reg, "MN", "55101", Some(1610), "2018-06-01").0, pct("0.25"));
    // Without the add-on the zip code's parts differ: the highest (1%) is answered and the others are named.
    let entry = reg.local.entry("55101", state_index("MN").unwrap()).unwrap();
    let a = reg.local.answer(entry, None, day("2018-06-01"));
    assert_eq!(a.part.rate, pct("1"));
    assert!(a.straddles() && a.others.iter().any(|p| p.rate == pct("0.25")), "{:?}", a.split_text());
    // A "Z" record with a special district: 55401 to 55405 is Hennepin County (27,00,053: 0.0015 from 20070101), the
    // City of Minneapolis (27,01,43000: 0.005) and district 80004 (27,63,80004: 0.005 from 20171001): 1.15%.
    assert_eq!(local(&reg, "MN", "55401", None, "2018-06-01").0, pct("1.15"));
    assert_eq!(local(&reg, "MN", "55401", None, "2018-06-01").1, ["mn.sst-county-053", "mn.sst-city-43000", "mn.sst-district63-80004"]);
}

#[test]
fn the_importer_refuses_what_is_not_an_sst_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (_keep, dir) = common::rules_copy();
    let bad = tmp.path().join("XXR2026Q1JAN01.csv");
    std::fs::write(&bad, "27,01,39878,0.0050\n").unwrap();
    assert_eq!(import_sst(&bad, None, &dir, None), 2, "a row of 4 fields");
    std::fs::write(&bad, "99,01,39878,0.005,0.005,0,0,20240101,29991231\n").unwrap();
    assert_eq!(import_sst(&bad, None, &dir, None), 2, "FIPS 99 is no state");
    assert_eq!(import_sst(&tmp.path().join("missing.csv"), None, &dir, None), 2, "a missing file");
}
