//! Reads the geography the local taxes are placed by (`rules/geo/`): which counties each ZIP code overlaps
//! (U.S. Census Bureau, 2020 ZCTA–county relationship) and each ZIP code's post-office place and county
//! (GeoNames). Both are plain CSV; a malformed row is a located diagnostic (R620).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use super::csv::{self, Record};
use super::diag::{Diagnostic, SourceMap};
use super::read::Diags;
use super::schema::{state_index, STATES};

/// Where one ZIP code lies in one state.
#[derive(Clone, Debug, Default)]
pub struct ZipPlace {
    /// The 3-digit FIPS codes of the counties the ZIP's ZCTA overlaps (Census), the GeoNames county first when
    /// it is one of them; for a ZIP without a ZCTA, the GeoNames county alone.
    pub counties: Vec<u16>,
    /// The USPS post-office place names (GeoNames): usually one; a ZIP served by two post offices has both, the
    /// first as GeoNames lists it first.
    pub places: Vec<Arc<str>>,
    /// Whether the Census table knows the ZIP (a ZCTA); PO-box-only and single-organisation ZIPs have none.
    pub zcta: bool,
}

/// The geography of every ZIP code of the 51 jurisdictions.
///
/// The tables are read in file order: a ZIP's rows of `zip_place.csv` keep GeoNames' own order.
#[derive(Debug, Default)]
pub struct Geo {
    /// By ZIP code (as a number), then by state (a ZIP can cross a state line).
    pub zips: HashMap<u32, Vec<(usize, ZipPlace)>>,
    /// County names by (state, FIPS).
    pub county_names: HashMap<(usize, u16), Arc<str>>,
    /// Every post-office place name of each state, lowercased, with its ZIP count.
    pub places: HashMap<(usize, String), u32>,
}

impl Geo {
    pub fn get(&self, zip: &str, state: usize) -> Option<&ZipPlace> {
        self.zips.get(&zip_number(zip)?)?.iter().find(|(s, _)| *s == state).map(|(_, p)| p)
    }

    /// The states the tables place `zip` in.
    pub fn states(&self, zip: &str) -> Vec<usize> {
        zip_number(zip).and_then(|z| self.zips.get(&z)).map(|l| l.iter().map(|(s, _)| *s).collect()).unwrap_or_default()
    }

    fn entry(&mut self, zip: &str, state: usize) -> &mut ZipPlace {
        let list = self.zips.entry(zip_number(zip).unwrap_or_default()).or_default();
        let pos = match list.iter().position(|(s, _)| *s == state) {
            Some(p) => p,
            None => {
                list.push((state, ZipPlace::default()));
                list.len() - 1
            }
        };
        &mut list[pos].1
    }

    /// The first state `zip` is in when `state` is not one of them (a ZIP code entered under the wrong state).
    pub fn other_state(&self, zip: &str, state: usize) -> Option<usize> {
        let states = self.states(zip);
        states.first().copied().filter(|_| !states.contains(&state))
    }

    pub fn has_county(&self, state: usize, fips: u16) -> bool {
        self.county_names.contains_key(&(state, fips))
    }
}

/// A 5-digit ZIP code.
pub fn is_zip(text: &str) -> bool {
    text.len() == 5 && text.bytes().all(|b| b.is_ascii_digit())
}

/// A 5-digit ZIP code as a number (`"02108"` → 2108).
pub fn zip_number(text: &str) -> Option<u32> {
    is_zip(text).then(|| text.parse().ok()).flatten()
}

/// A 3-digit county FIPS code.
pub fn county_fips(text: &str) -> Option<u16> {
    (text.len() == 3 && text.bytes().all(|b| b.is_ascii_digit())).then(|| text.parse().ok()).flatten()
}

/// Reads `rules/geo/zip_county.csv` and `rules/geo/zip_place.csv`.
pub fn load(dir: &Path, sources: &mut SourceMap, d: &mut Diags) -> Geo {
    let mut geo = Geo::default();
    let mut geonames_county: HashMap<(u32, usize), u16> = HashMap::new();
    // One string a place name, however many ZIP codes its post office serves.
    let mut names: std::collections::HashSet<Arc<str>> = std::collections::HashSet::new();
    if let Some(table) = csv::read(&dir.join("zip_county.csv"), &["zip", "state", "county", "county_name"], sources, d) {
        for r in table.records() {
            let Some((zip, state)) = zip_and_state(&r, d) else { continue };
            let Some(county) = county_of(&r, 2, d) else { continue };
            geo.county_names.entry((state, county)).or_insert_with(|| Arc::from(r.field(3)));
            let p = geo.entry(zip, state);
            p.zcta = true;
            if !p.counties.contains(&county) {
                p.counties.push(county);
            }
        }
    }
    if let Some(table) = csv::read(&dir.join("zip_place.csv"), &["zip", "state", "place", "county", "county_name"], sources, d) {
        for r in table.records() {
            let Some((zip, state)) = zip_and_state(&r, d) else { continue };
            let place = r.field(2).trim();
            if place.is_empty() {
                d.push(Diagnostic::error("R620", Some(&r.span(2)), format!("zip `{zip}` has no place name")));
                continue;
            }
            *geo.places.entry((state, place.to_lowercase())).or_default() += 1;
            let county = if r.field(3).is_empty() { None } else { county_of(&r, 3, d) };
            if let Some(c) = county {
                geo.county_names.entry((state, c)).or_insert_with(|| Arc::from(format!("{} County", r.field(4)).as_str()));
                geonames_county.insert((zip_number(zip).unwrap_or_default(), state), c);
            }
            let name = match names.get(place) {
                Some(n) => n.clone(),
                None => {
                    let n: Arc<str> = Arc::from(place);
                    names.insert(n.clone());
                    n
                }
            };
            let p = geo.entry(zip, state);
            if !p.places.iter().any(|x| **x == *place) {
                p.places.push(name);
            }
            if let Some(c) = county {
                if p.counties.is_empty() {
                    p.counties.push(c);
                }
            }
        }
    }
    // The GeoNames county first: it names the county of the post office, the ZIP's main part.
    for ((zip, state), c) in geonames_county {
        if let Some(p) = geo.zips.get_mut(&zip).and_then(|l| l.iter_mut().find(|(s, _)| *s == state)) {
            if let Some(pos) = p.1.counties.iter().position(|x| *x == c) {
                p.1.counties[..=pos].rotate_right(1);
            }
        }
    }
    geo
}

fn zip_and_state<'a>(r: &Record<'a>, d: &mut Diags) -> Option<(&'a str, usize)> {
    let zip = r.field(0);
    if !is_zip(zip) {
        d.push(Diagnostic::error("R620", Some(&r.span(0)), format!("`{zip}` is not a 5-digit zip code")));
        return None;
    }
    let st = r.field(1);
    match state_index(st) {
        Some(s) => Some((zip, s)),
        None => {
            d.push(
                Diagnostic::error("R620", Some(&r.span(1)), format!("`{st}` is not one of the 51 jurisdictions"))
                    .suggest(st, STATES.iter().copied()),
            );
            None
        }
    }
}

fn county_of(r: &Record, col: usize, d: &mut Diags) -> Option<u16> {
    let text = r.field(col);
    let c = county_fips(text);
    if c.is_none() {
        d.push(Diagnostic::error("R620", Some(&r.span(col)), format!("`{text}` is not a 3-digit county FIPS code")));
    }
    c
}
