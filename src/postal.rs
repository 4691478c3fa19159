//! Which state a ZIP Code is in, from its 3-digit prefix: the USPS prefix ranges in `data/zip-prefixes.txt`
//! (cited there), compiled into the binary and read once.

use std::sync::LazyLock;

use crate::rules::schema::state_index;

/// The prefix table as shipped.
const TABLE: &str = include_str!("../data/zip-prefixes.txt");

/// A range of 3-digit prefixes (inclusive) and the position of its state in `rules::schema::STATES`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PrefixRange {
    first: u16,
    last: u16,
    state: usize,
}

/// The table's ranges, or the first line that does not read (a defect of the shipped file, reported by the
/// unit test and answered as an internal error, never a panic).
static RANGES: LazyLock<Result<Vec<PrefixRange>, String>> = LazyLock::new(|| parse(TABLE));

fn parse(text: &str) -> Result<Vec<PrefixRange>, String> {
    let mut out: Vec<PrefixRange> = vec![];
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || format!("data/zip-prefixes.txt line {}: `{line}` is not `first-last STATE`", n + 1);
        let (range, state) = line.split_once(' ').ok_or_else(bad)?;
        let (first, last) = range.split_once('-').ok_or_else(bad)?;
        let prefix = |s: &str| if s.len() == 3 { s.parse::<u16>().ok() } else { None };
        let (first, last) = (prefix(first).ok_or_else(bad)?, prefix(last).ok_or_else(bad)?);
        let state = state_index(state.trim()).ok_or_else(bad)?;
        if last < first || out.last().is_some_and(|p| p.last >= first) {
            return Err(format!("data/zip-prefixes.txt line {}: ranges must ascend without overlap", n + 1));
        }
        out.push(PrefixRange { first, last, state });
    }
    Ok(out)
}

/// Whether `s` is a ZIP Code: five ASCII digits, or ZIP+4 (five digits, `-`, four).
pub fn is_zip(s: &str) -> bool {
    match s.split_once('-') {
        Some((five, four)) => crate::rules::geo::is_zip(five) && four.len() == 4 && four.bytes().all(|b| b.is_ascii_digit()),
        None => crate::rules::geo::is_zip(s),
    }
}

/// A ZIP Code's five digits and its ZIP+4 add-on, if it has one (`55401-1234` is `55401` and 1234).
pub fn zip_parts(zip: &str) -> (&str, Option<u16>) {
    match zip.split_once('-') {
        Some((five, four)) if four.len() == 4 && four.bytes().all(|b| b.is_ascii_digit()) => (five, four.parse().ok()),
        _ => (zip, None),
    }
}

/// The state (its position in `STATES`) whose prefix range holds the 5-digit `zip`; `Ok(None)` when the prefix
/// belongs to no state (a territory, the military, or unassigned). `Err` only for a defective shipped table.
pub fn state_of_zip(zip: &str) -> Result<Option<usize>, String> {
    let ranges = RANGES.as_ref().map_err(Clone::clone)?;
    let Some(prefix) = zip.get(..3).and_then(|p| p.parse::<u16>().ok()) else { return Ok(None) };
    Ok(ranges.iter().find(|r| r.first <= prefix && prefix <= r.last).map(|r| r.state))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::schema::STATES;

    #[test]
    fn the_shipped_table_reads_and_covers_every_state() {
        let ranges = parse(TABLE).expect("the shipped table reads");
        for (i, code) in STATES.iter().enumerate() {
            assert!(ranges.iter().any(|r| r.state == i), "{code} has no prefix range");
        }
    }

    #[test]
    fn prefixes_map_to_their_states() {
        let state = |z: &str| state_of_zip(z).expect("table reads").map(|i| STATES[i]);
        assert_eq!(state("78701"), Some("TX")); // Austin
        assert_eq!(state("73301"), Some("TX")); // Austin IRS, inside Oklahoma's 7xx block
        assert_eq!(state("73102"), Some("OK")); // Oklahoma City
        assert_eq!(state("88510"), Some("TX")); // El Paso post office boxes
        assert_eq!(state("05501"), Some("MA")); // Andover, inside Vermont's 05x block
        assert_eq!(state("20500"), Some("DC"));
        assert_eq!(state("99501"), Some("AK"));
        assert_eq!(state("00001"), None);
        assert_eq!(state("00901"), None); // San Juan, PR
        assert_eq!(state("09001"), None); // military AE
        assert_eq!(state("96201"), None); // military AP
    }

    #[test]
    fn a_defective_line_is_an_error_not_a_panic() {
        assert!(parse("010-027 MA\n005-009 NY\n").is_err());
        assert!(parse("01-027 MA\n").is_err());
        assert!(parse("010-027 XX\n").is_err());
    }
}
