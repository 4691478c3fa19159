//! Turns a state's Streamlined Sales Tax rate file (and boundary file, when given) into that state's local tax
//! data: `local/<xx>.sst.yaml` (each jurisdiction once, its rates dated by the file) and `local/<xx>.sst.csv` (the
//! boundary rows). The format is the SST Governing Board's (see `rules/README.md`, "Importing SST files").
//!
//! - Rate file: headerless CSV of 9 fields: state FIPS, jurisdiction type, jurisdiction code, general rate
//!   intrastate, general rate interstate, food/drug rates (2), begin and end dates (YYYYMMDD; an end of 2999 or
//!   9999 is open). Type 45 is the state; 00 a county; 01 a city; any other type a special district.
//! - Boundary file: headerless CSV; field 1 is the record type (`Z` a range of 5-digit ZIPs, `4` a range of ZIP+4,
//!   `A` an address range, not read here), 2–3 the dates, 18–21 the low ZIP, low +4, high ZIP, high +4, 25 the
//!   county FIPS, 26 the city code, and from 30 on triplets of (class, code, type) naming special districts.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::geo::Geo;
use super::schema::{STATES, STATE_FIPS};

/// The SST code of a jurisdiction type that is a county, a city or the state; any other is a special district.
const COUNTY: &str = "00";
const CITY: &str = "01";
const STATE: &str = "45";

/// One row of a rate file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RateRow {
    pub kind: String,
    pub code: String,
    pub rate: Decimal,
    pub from: NaiveDate,
    pub to: Option<NaiveDate>,
}

/// One record of a boundary file, for one ZIP code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundaryRow {
    pub zip: String,
    pub plus4: Option<(u16, u16)>,
    pub from: NaiveDate,
    pub to: Option<NaiveDate>,
    pub county: String,
    pub city: String,
    /// (type, code) of each special district named.
    pub districts: Vec<(String, String)>,
}

/// A file's name without its folders and extension: `MNR2026Q2FEB18`.
pub fn file_label(path: &std::path::Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default()
}

fn fields(line: &str) -> Vec<&str> {
    line.trim_start_matches('\u{feff}').trim_end_matches('\r').split(',').map(str::trim).collect()
}

fn date(text: &str, what: &str, line: usize) -> Result<NaiveDate, String> {
    NaiveDate::parse_from_str(text, "%Y%m%d").map_err(|_| format!("line {line}: `{text}` is not a date (YYYYMMDD) in {what}"))
}

/// An end date: `None` for the files' "no end" dates (2999-12-31, 9999-12-31).
fn end_date(text: &str, what: &str, line: usize) -> Result<Option<NaiveDate>, String> {
    let d = date(text, what, line)?;
    Ok((d.format("%Y").to_string().as_str() < "2999").then_some(d))
}

/// Reads a rate file: the state, and its rows.
pub fn read_rates(text: &str) -> Result<(usize, Vec<RateRow>), String> {
    let mut state = None;
    let mut rows = vec![];
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let n = i + 1;
        let f = fields(line);
        if f.len() < 9 {
            return Err(format!("line {n}: a rate row has 9 fields, this one {}", f.len()));
        }
        let fips: u8 = f[0].parse().map_err(|_| format!("line {n}: `{}` is not a state FIPS code", f[0]))?;
        let s = STATE_FIPS.iter().position(|x| *x == fips).ok_or(format!("line {n}: FIPS `{fips}` is not one of the 51 jurisdictions"))?;
        if *state.get_or_insert(s) != s {
            return Err(format!("line {n}: the file mixes states ({} and {})", STATES[state.unwrap_or(s)], STATES[s]));
        }
        let rate: Decimal = f[3].parse().map_err(|_| format!("line {n}: `{}` is not a rate", f[3]))?;
        if rate < Decimal::ZERO || rate >= Decimal::ONE {
            return Err(format!("line {n}: `{}` is not a rate between 0 and 1", f[3]));
        }
        let from = date(f[7], "the begin date", n)?;
        let to = end_date(f[8], "the end date", n)?;
        if to.is_some_and(|t| t < from) {
            return Err(format!("line {n}: the rate ends before it begins"));
        }
        rows.push(RateRow { kind: f[1].to_string(), code: f[2].to_string(), rate, from, to });
    }
    let state = state.ok_or("the rate file has no rows")?;
    Ok((state, rows))
}

/// Reads a boundary file's ZIP and ZIP+4 records for `state`, one row per ZIP code of a range that `known` holds.
/// Address records are counted, not read.
pub fn read_boundaries(text: &str, state: usize, known: &dyn Fn(&str) -> bool) -> Result<(Vec<BoundaryRow>, usize), String> {
    let mut rows = vec![];
    let mut addresses = 0;
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let n = i + 1;
        let f = fields(line);
        let kind = f.first().map(|k| k.to_ascii_lowercase()).unwrap_or_default();
        if kind == "a" {
            addresses += 1;
            continue;
        }
        if kind != "z" && kind != "4" {
            return Err(format!("line {n}: `{kind}` is not a record type (Z, 4 or A)"));
        }
        if f.len() < 29 {
            return Err(format!("line {n}: a boundary record has at least 29 fields, this one {}", f.len()));
        }
        let fips: u8 = f[22].parse().map_err(|_| format!("line {n}: `{}` is not a state FIPS code", f[22]))?;
        if STATE_FIPS.get(state) != Some(&fips) {
            return Err(format!("line {n}: the record is for FIPS {fips}, not {}", STATES[state]));
        }
        let from = date(f[1], "the begin date", n)?;
        let to = end_date(f[2], "the end date", n)?;
        let zip_of = |t: &str| -> Result<u32, String> {
            (t.len() == 5).then(|| t.parse().ok()).flatten().ok_or(format!("line {n}: `{t}` is not a 5-digit zip code"))
        };
        let plus4_of = |t: &str| -> Result<u16, String> {
            (1..=4).contains(&t.len()).then(|| t.parse().ok()).flatten().ok_or(format!("line {n}: `{t}` is not a ZIP+4 add-on"))
        };
        let (lo, hi) = (zip_of(f[17])?, zip_of(f[19])?);
        if hi < lo {
            return Err(format!("line {n}: the zip range ends before it begins"));
        }
        let plus4 = if kind == "4" { Some((plus4_of(f[18])?, plus4_of(f[20])?)) } else { None };
        let mut districts = vec![];
        for t in f[29..].chunks(3) {
            if let [_, code, kind, ..] = t {
                if !code.is_empty() && *kind != STATE {
                    districts.push((kind.to_string(), code.to_string()));
                }
            }
        }
        for z in lo..=hi {
            let zip = format!("{z:05}");
            if z != lo && z != hi && !known(&zip) {
                continue;
            }
            // A ZIP+4 range that runs over several ZIP codes holds all of those between its two ends.
            let range = plus4.map(|(a, b)| (if z == lo { a } else { 0 }, if z == hi { b } else { 9999 }));
            rows.push(BoundaryRow {
                zip,
                plus4: range,
                from,
                to,
                county: f[24].to_string(),
                city: f[25].to_string(),
                districts: districts.clone(),
            });
        }
    }
    Ok((rows, addresses))
}

/// What an import wrote, for the analyst.
#[derive(Debug, Default)]
pub struct Imported {
    pub state: usize,
    pub yaml: String,
    /// The boundary rows, when a boundary file was given.
    pub csv: Option<String>,
    /// Taxes written, by level.
    pub counties: usize,
    pub cities: usize,
    pub districts: usize,
    pub rows: usize,
    /// Jurisdictions left out, with the reason.
    pub skipped: Vec<String>,
}

/// A jurisdiction of the rate file.
struct Jurisdiction {
    kind: String,
    code: String,
    periods: Vec<RateRow>,
}

impl Jurisdiction {
    fn level(&self) -> &'static str {
        match self.kind.as_str() {
            COUNTY => "county",
            CITY => "city",
            _ => "special_district",
        }
    }

    fn id(&self, state: usize) -> String {
        let kind = match self.kind.as_str() {
            COUNTY => "county".to_string(),
            CITY => "city".to_string(),
            other => format!("district{other}"),
        };
        format!("{}.sst-{kind}-{}", STATES[state].to_lowercase(), self.code.to_lowercase())
    }
}

/// "Atlanta city" → "City of Atlanta"; other names as the Census writes them.
fn city_name(census: &str) -> String {
    for (suffix, prefix) in [(" city", "City of "), (" town", "Town of "), (" village", "Village of ")] {
        if let Some(stem) = census.strip_suffix(suffix) {
            return format!("{prefix}{stem}");
        }
    }
    census.to_string()
}

/// The post-office name of a Census place, where one of the state's post offices bears it: "St. Paul city" →
/// "St. Paul" (or "Saint Paul").
fn post_office(census: &str, state: usize, geo: &Geo) -> Option<String> {
    let stem = [" city", " town", " village", " borough"].iter().find_map(|s| census.strip_suffix(s)).unwrap_or(census);
    let candidates = [stem.to_string(), stem.replace("St. ", "Saint "), stem.replace("Saint ", "St. ")];
    candidates.into_iter().find(|c| geo.places.contains_key(&(state, c.to_lowercase())))
}

fn pct(rate: Decimal) -> String {
    format!("{}%", (rate * Decimal::from(100)).normalize())
}

/// A special district the state's files leave unnamed: its name, the counties it covers and the source that says so.
#[derive(Clone, Debug, Default)]
pub struct District {
    pub name: String,
    pub counties: Vec<String>,
    pub cite: String,
}

/// Builds the generated files from a rate file and, optionally, a boundary file. `places` maps (state, place FIPS)
/// to the Census name; `districts` names special districts (and the counties they cover, 3-digit FIPS) where the
/// state's files do not; `label` names the files cited.
pub struct Source<'a> {
    pub rates: &'a str,
    pub rate_label: &'a str,
    pub boundaries: Option<(&'a str, &'a str)>,
    pub geo: &'a Geo,
    pub places: &'a HashMap<(usize, String), String>,
    pub districts: &'a HashMap<String, District>,
    pub today: NaiveDate,
}

pub fn import(src: &Source) -> Result<Imported, String> {
    let (state, rows) = read_rates(src.rates)?;
    let mut by_code: BTreeMap<(String, String), Jurisdiction> = BTreeMap::new();
    for r in rows.into_iter().filter(|r| r.kind != STATE) {
        by_code
            .entry((r.kind.clone(), r.code.clone()))
            .or_insert_with(|| Jurisdiction { kind: r.kind.clone(), code: r.code.clone(), periods: vec![] })
            .periods
            .push(r);
    }
    let mut out = Imported { state, ..Default::default() };
    // Which taxes the boundary rows name, and the rows themselves.
    let known = |z: &str| src.geo.get(z, state).is_some();
    let boundary = match src.boundaries {
        Some((text, _)) => Some(read_boundaries(text, state, &known)?),
        None => None,
    };
    let taxed = |j: &Jurisdiction| j.periods.iter().any(|p| !p.rate.is_zero());
    // With a boundary file, the cities and districts it names (the others apply nowhere it says).
    let named: std::collections::HashSet<(String, String)> = boundary
        .iter()
        .flat_map(|(rows, _)| rows.iter())
        .flat_map(|r| std::iter::once((CITY.to_string(), r.city.clone())).chain(r.districts.iter().cloned()))
        .collect();
    let mut ids: HashMap<(String, String), String> = HashMap::new();
    let mut yaml = String::new();
    let _ = writeln!(
        yaml,
        "# Generated on {} by `levy rules import-sst {}{}` from the Streamlined Sales Tax files of {}: do not edit.\n\
         # Refresh it with the next quarter's files and review the change with `levy rules diff`.",
        src.today,
        src.rate_label,
        src.boundaries.map(|(_, l)| format!(" {l}")).unwrap_or_default(),
        STATES[state]
    );
    let _ = writeln!(yaml, "jurisdiction: {}", STATES[state]);
    let mut taxes = String::new();
    for j in by_code.values_mut() {
        j.periods.sort_by_key(|p| p.from);
        if !taxed(j) {
            out.skipped.push(format!("{} {} {}: no rate above 0% in the file", j.level(), j.kind, j.code));
            continue;
        }
        // A row that runs into the next one's first days ends the day before it (files repeat the day of a change).
        for i in 1..j.periods.len() {
            let next = j.periods[i].from;
            let prev = &mut j.periods[i - 1];
            if prev.to.is_none_or(|t| t >= next) {
                if prev.from >= next {
                    return Err(format!("jurisdiction type {} code {}: two rate rows begin on {next}", j.kind, j.code));
                }
                out.skipped.push(format!(
                    "{} {}: the row from {} runs into the next; it ends {}",
                    j.kind,
                    j.code,
                    prev.from,
                    next.pred_opt().unwrap_or(next)
                ));
                prev.to = next.pred_opt();
            }
        }
        let county_fips = (j.kind == COUNTY).then(|| j.code.trim_start_matches('0').parse::<u16>().ok()).flatten();
        let (name, placement) = match j.kind.as_str() {
            COUNTY => {
                let Some(name) = county_fips.and_then(|c| src.geo.county_names.get(&(state, c))) else {
                    out.skipped.push(format!("county {}: no such county in the Census tables", j.code));
                    continue;
                };
                (name.to_string(), format!("    counties: [\"{:03}\"]\n", county_fips.unwrap_or(0)))
            }
            CITY => {
                let census = src.places.get(&(state, j.code.clone()));
                let name = census.map(|c| city_name(c)).unwrap_or_else(|| format!("{} place {}", STATES[state], j.code));
                let placement = match (boundary.is_some(), census.and_then(|c| post_office(c, state, src.geo))) {
                    (true, _) if !named.contains(&(j.kind.clone(), j.code.clone())) => {
                        out.skipped.push(format!("city {} ({name}): no record of the boundary file names it", j.code));
                        continue;
                    }
                    (true, _) => String::new(),
                    (false, Some(p)) => format!("    places: [\"{p}\"]\n"),
                    (false, None) => {
                        out.skipped.push(format!("city {} ({name}): no boundary file, and no post office bears its name", j.code));
                        continue;
                    }
                };
                (name, placement)
            }
            _ => match src.districts.get(&j.code) {
                Some(d) if boundary.is_none() && !d.counties.is_empty() => {
                    let list = d.counties.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(", ");
                    (d.name.clone(), format!("    counties: [{list}]\n    note: {:?}\n", format!("placed in its counties: {}", d.cite)))
                }
                _ if boundary.is_some() && !named.contains(&(j.kind.clone(), j.code.clone())) => {
                    out.skipped.push(format!("special district {} {}: no record of the boundary file names it", j.kind, j.code));
                    continue;
                }
                Some(d) if boundary.is_some() => (d.name.clone(), String::new()),
                None if boundary.is_some() => (format!("{} special district {}", STATES[state], j.code), String::new()),
                _ => {
                    out.skipped.push(format!("special district {} {}: no boundary file, and no counties are given for it", j.kind, j.code));
                    continue;
                }
            },
        };
        let id = j.id(state);
        ids.insert((j.kind.clone(), j.code.clone()), id.clone());
        match j.level() {
            "county" => out.counties += 1,
            "city" => out.cities += 1,
            _ => out.districts += 1,
        }
        let _ = writeln!(taxes, "  - id: {id}\n    code: \"{}\"\n    name: {:?}\n    level: {}", j.code, name, j.level());
        taxes.push_str(&placement);
        taxes.push_str("    rates:\n");
        let cite = |p: &RateRow| {
            format!(
                "Streamlined Sales Tax rate file {}, {} jurisdiction type {} code {}: {} from {}{}",
                src.rate_label,
                STATES[state],
                j.kind,
                j.code,
                pct(p.rate),
                p.from,
                p.to.map(|t| format!(" to {t}")).unwrap_or_default()
            )
        };
        let mut prev_end: Option<NaiveDate> = None;
        for p in &j.periods {
            // A day the file gives no rate for is a day the jurisdiction levied none.
            if let Some(end) = prev_end {
                let next = end.succ_opt().unwrap_or(end);
                if next < p.from {
                    let last = p.from.pred_opt().unwrap_or(p.from);
                    let _ = writeln!(
                        taxes,
                        "      - {{ rate: 0%, from: {next}, to: {last}, cite: \"Streamlined Sales Tax rate file {}: no rate for type {} code {} on these days\" }}",
                        src.rate_label, j.kind, j.code
                    );
                }
            }
            let to = p.to.map(|t| format!(", to: {t}")).unwrap_or_default();
            let _ = writeln!(
                taxes,
                "      - {{ rate: {}, from: {}{to}, cite: {:?}, url: \"https://www.streamlinedsalestax.org/ratesandboundry/Rates/\" }}",
                pct(p.rate),
                p.from,
                cite(p)
            );
            prev_end = p.to;
        }
    }
    if let Some((rows, addresses)) = &boundary {
        let mut csv = String::from("zip,plus4,taxes,from,to\n");
        let mut lines: Vec<String> = vec![];
        for r in rows {
            let mut names = vec![];
            if let Some(id) = ids.get(&(COUNTY.to_string(), r.county.clone())).filter(|_| !r.county.is_empty()) {
                names.push(id.as_str());
            }
            if let Some(id) = ids.get(&(CITY.to_string(), r.city.clone())).filter(|_| !r.city.is_empty()) {
                names.push(id.as_str());
            }
            for d in &r.districts {
                if let Some(id) = ids.get(d) {
                    if !names.contains(&id.as_str()) {
                        names.push(id.as_str());
                    }
                }
            }
            let plus4 = r.plus4.map(|(a, b)| format!("{a:04}-{b:04}")).unwrap_or_default();
            let to = r.to.map(|t| t.to_string()).unwrap_or_default();
            lines.push(format!("{},{plus4},{},{},{to}", r.zip, names.join(" "), r.from));
        }
        lines.sort();
        lines.dedup();
        out.rows = lines.len();
        for l in lines {
            csv.push_str(&l);
            csv.push('\n');
        }
        if *addresses > 0 {
            out.skipped.push(format!("{addresses} address records (not read: boundary rows hold ZIP and ZIP+4 ranges)"));
        }
        out.csv = Some(csv);
    }
    if !taxes.is_empty() {
        yaml.push_str("taxes:\n");
        yaml.push_str(&taxes);
    }
    out.yaml = yaml;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_rows_read_dates_and_open_ends() {
        let (state, rows) =
            read_rates("27,01,39878,0.0050,0.0050,0.0050,0.0050,20051001,29991231\n27,00,053,0.0015,0.0015,0,0,20240101,99991231\n")
                .unwrap();
        assert_eq!(STATES[state], "MN");
        assert_eq!(rows[0].rate, Decimal::new(5, 3));
        assert_eq!((rows[0].from, rows[0].to), (NaiveDate::from_ymd_opt(2005, 10, 1).unwrap(), None));
        assert_eq!(rows[1].to, None);
        assert!(read_rates("27,01,39878,0.0050\n").unwrap_err().contains("9 fields"));
        assert!(read_rates("27,01,1,0.5,0.5,0,0,20240101,20230101\n").unwrap_err().contains("ends before"));
        assert!(read_rates("27,01,1,0.05,0.05,0,0,20240101,29991231\n13,01,1,0.05,0.05,0,0,20240101,29991231\n")
            .unwrap_err()
            .contains("mixes"));
    }

    #[test]
    fn city_names_read_as_the_department_writes_them() {
        assert_eq!(city_name("Atlanta city"), "City of Atlanta");
        assert_eq!(city_name("Kohler village"), "Village of Kohler");
        assert_eq!(
            city_name("Nashville-Davidson metropolitan government (balance)"),
            "Nashville-Davidson metropolitan government (balance)"
        );
    }
}
