//! `data/zip-prefixes.txt` against an independent table: Avalara's ZIP-level rate table for March 2026
//! (`../shared/data/rates/rates_zip5_202603.csv`, columns State and ZipCode; read here, never copied into the
//! project). A ZIP Code can cross a state line, so single rows may disagree; what must hold is that every
//! 3-digit prefix is assigned to the state most of its ZIP Codes are in, and that the territories and unique
//! ZIP Codes outside the states' ranges are the only rows the table does not place.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use levy::postal::state_of_zip;
use levy::rules::schema::STATES;

const TABLE: &str = "../shared/data/rates/rates_zip5_202603.csv";

#[test]
fn every_prefix_is_assigned_to_the_state_most_of_its_zip_codes_are_in() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(TABLE);
    let Ok(text) = std::fs::read_to_string(&path) else {
        // The shared tables sit beside the repository on CI and on the team's machines; a checkout without
        // them has nothing to compare against.
        eprintln!("skipped: {} is not present", path.display());
        return;
    };
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("no column {name}"));
    let (state_col, zip_col) = (col("State"), col("ZipCode"));

    // prefix -> state -> ZIP Codes in the table
    let mut by_prefix: BTreeMap<String, HashMap<String, usize>> = BTreeMap::new();
    let mut rows = 0;
    let mut unplaced = Vec::new();
    for line in lines {
        let fields: Vec<&str> = line.split(',').collect();
        let (state, zip) = (fields[state_col], format!("{:0>5}", fields[zip_col]));
        rows += 1;
        *by_prefix.entry(zip[..3].to_string()).or_default().entry(state.to_string()).or_default() += 1;
        if state_of_zip(&zip).unwrap().is_none() && state != "PR" {
            unplaced.push(format!("{state} {zip}"));
        }
    }
    assert!(rows > 40_000, "{rows} rows: not the March 2026 table");

    let mut wrong = Vec::new();
    for (prefix, states) in &by_prefix {
        let (most, count) = states.iter().max_by_key(|(s, n)| (**n, std::cmp::Reverse((*s).clone()))).unwrap();
        let ours = state_of_zip(&format!("{prefix}00")).unwrap().map(|i| STATES[i]);
        match ours {
            Some(ours) if ours == most => {}
            // Puerto Rico (006, 007, 009) is no state: `rates/local` answers 404 there.
            None if most == "PR" => {}
            // Prefixes with a single row, a ZIP Code outside the ranges of the state the table lists it under:
            // 45999 (KY in the table, in Ohio's 450-459) and 88888 (DC in the table, a prefix of no state).
            _ if *count == 1 && states.len() == 1 && (prefix == "459" || prefix == "888") => {}
            _ => wrong.push(format!("{prefix}: ours {ours:?}, the table's ZIP Codes {states:?}")),
        }
    }
    assert!(wrong.is_empty(), "prefixes assigned to another state than most of their ZIP Codes:\n{}", wrong.join("\n"));
    assert_eq!(unplaced, ["DC 88888"], "rows of a state whose prefix the table assigns to no state");
}
