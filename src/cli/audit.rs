//! `levy rules audit-rates`: our combined sales-tax rate at each zip code of an independent rate table, compared
//! with the table's figure.
//!
//! Three formats are read, told apart by the header: Avalara's `TAXRATES_ZIP5` CSV (`EstimatedCombinedRate`, a
//! fraction), the OpenSalesTax grid of rates that state revenue departments publish
//! (`expected_combined_rate_pct` with `tolerance_pct`, both percentages) and a plain `state,zip,rate` CSV (a
//! fraction, or a percentage when written with `%`). Each row is compared with the combined rate a seller with
//! nexus in the row's state charges into the zip on the row's date, from the same determination calculate and
//! `GET /rates/local` make ([`table::probe`]). A row agrees within its tolerance; else it is a recorded divergence
//! when the zip's rule file records that table's figure with a reason and a primary source (`divergences:`),
//! else a disagreement. Rows whose zip our local tables do not hold, in a state with local taxes, are counted
//! apart as coverage.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde_json::{json, Value};

use crate::engine::determine::pct;
use crate::engine::determine::LocalCoverage;
use crate::engine::table;
use crate::rules::places::Placed;
use crate::rules::registry::{Divergence, Registry};
use crate::rules::schema::state_index;

/// The tolerance of a table that states none, 0.00001: a thousandth of a percentage point, enough for a table's
/// six-decimal rounding (Avalara's Utah 4.8499%) and nothing more.
const DEFAULT_TOLERANCE: Decimal = Decimal::from_parts(1, 0, 0, false, 5);

/// The day the state-rate table was checked against the states' own sources, and the date Paddle's SaaS summary is
/// "up to date as of" (the shared tables' README).
const STATE_RATES_AS_OF: (i32, u32, u32) = (2026, 7, 1);
const SAAS_AS_OF: (i32, u32, u32) = (2025, 10, 1);

/// The date the OpenSalesTax grid's file last changed (the shared tables' README): rows whose heading names no
/// date or quarter of their own are compared as of it.
const DOR_GRID_AS_OF: (i32, u32, u32) = (2026, 7, 19);

/// A table's format, found from its header; its id is what a zip's `divergences:` names as `table`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Avalara,
    DorGrid,
    Plain,
    /// The statewide table (`code,name,state_rate_pct,…,local_varies,…`): each state's rate and local-tax flag.
    StateRates,
    /// The SaaS summary (`state,…,saas_paddle_2025_10,digital_goods_paddle_2025_10,…`): taxable, exempt or local_only.
    SaasTaxability,
}

impl Format {
    pub fn id(self) -> &'static str {
        match self {
            Format::Avalara => "avalara_zip5",
            Format::DorGrid => "dor_grid",
            Format::Plain => "state_zip_rate",
            Format::StateRates => "state_rates",
            Format::SaasTaxability => "saas_taxability",
        }
    }
}

/// One row of a table.
#[derive(Clone, Debug)]
pub struct Row {
    /// The line in the file (the header is line 1).
    pub line: usize,
    pub state: String,
    pub zip: String,
    /// The table's combined rate, a fraction.
    pub rate: Decimal,
    pub tolerance: Decimal,
    /// The row's own words: Avalara's region name, the grid's city and source note, a plain table's note.
    pub note: String,
    /// The date the row states for itself (the Avalara file's month, the grid heading's date or quarter).
    pub own_date: Option<NaiveDate>,
    /// For a state-level table: the figure compared (`state_rate`, `local_taxes`, `saas`, `digital_goods`) and, for
    /// all but the rate, the table's value (`true`, `taxable`, …; empty when the table states nothing).
    pub field: Option<&'static str>,
    pub value: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Table {
    pub path: String,
    pub format: Format,
    pub rows: Vec<Row>,
}

/// Splits one CSV line into fields: commas separate, double quotes enclose, `""` inside quotes is a quote.
fn split_csv(line: &str) -> Result<Vec<String>, String> {
    let mut fields = vec![];
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            ('"', true) => quoted = false,
            ('"', false) if field.is_empty() => quoted = true,
            (',', false) => fields.push(std::mem::take(&mut field)),
            (c, _) => field.push(c),
        }
    }
    if quoted {
        return Err("a quoted field is not closed".into());
    }
    fields.push(field);
    Ok(fields)
}

fn decimal(text: &str, what: &str) -> Result<Decimal, String> {
    let t = text.trim();
    let (number, percent) = match t.strip_suffix('%') {
        Some(n) => (n.trim(), true),
        None => (t, false),
    };
    let v: Decimal = number.parse().map_err(|_| format!("{what} `{text}` is not a number"))?;
    if v < Decimal::ZERO {
        return Err(format!("{what} `{text}` is negative"));
    }
    Ok(if percent { v / Decimal::from(100) } else { v })
}

fn zip5(text: &str) -> Result<String, String> {
    let t = text.trim();
    crate::rules::geo::is_zip(t).then(|| t.to_string()).ok_or_else(|| format!("zip `{text}` is not a 5-digit zip code"))
}

/// The first day of the month named by the six digits `YYYYMM` that end `text` before `.csv` (Avalara's
/// `TAXRATES_ZIP5_TN202603.csv`, or a file named `rates_zip5_202603.csv`).
fn month_of_name(text: &str) -> Option<NaiveDate> {
    let stem = text.rsplit('/').next()?.trim_end_matches(".csv");
    let digits: String = stem.chars().rev().take_while(|c| c.is_ascii_digit()).collect::<Vec<_>>().into_iter().rev().collect();
    if digits.len() < 6 {
        return None;
    }
    let ym = &digits[digits.len() - 6..];
    NaiveDate::from_ymd_opt(ym[..4].parse().ok()?, ym[4..].parse().ok()?, 1)
}

const MONTHS: [&str; 12] =
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];

/// The date a grid heading states: an ISO date, "Month D, YYYY", or a quarter "YYYY-QN" (its first day).
fn heading_date(text: &str) -> Option<NaiveDate> {
    let b = text.as_bytes();
    for i in 0..b.len() {
        if let Some(s) = text.get(i..i + 10) {
            if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
                return Some(d);
            }
        }
    }
    let lower = text.to_lowercase();
    for (m, name) in MONTHS.iter().enumerate() {
        if let Some(pos) = lower.find(name) {
            let rest: String = lower[pos + name.len()..].chars().take(10).collect();
            let parts: Vec<&str> = rest.split(|c: char| c == ',' || c.is_whitespace()).filter(|p| !p.is_empty()).collect();
            if let [day, year, ..] = parts.as_slice() {
                if let (Ok(day), Ok(year)) = (day.parse::<u32>(), year.parse::<i32>()) {
                    if let Some(d) = NaiveDate::from_ymd_opt(year, m as u32 + 1, day) {
                        return Some(d);
                    }
                }
            }
        }
    }
    for i in 0..b.len() {
        if let Some(s) = text.get(i..i + 7) {
            let (year, q) = (s.get(..4)?, s.get(4..6)?);
            if q == "-Q" && year.chars().all(|c| c.is_ascii_digit()) {
                if let (Ok(y), Some(n)) = (year.parse::<i32>(), s[6..].chars().next().and_then(|c| c.to_digit(10))) {
                    if (1..=4).contains(&n) {
                        return NaiveDate::from_ymd_opt(y, (n - 1) * 3 + 1, 1);
                    }
                }
            }
        }
    }
    None
}

/// Reads a table, finding its format from the header; every malformed row is an error naming its line.
pub fn read_table(path: &Path) -> Result<Table, String> {
    let name = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| format!("{name}: cannot read the file: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{name}: the file is not UTF-8 text"))?;
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim_end_matches('\r')));
    let Some((_, header)) = lines.next() else { return Err(format!("{name}: the file is empty")) };
    let header: Vec<String> = split_csv(header.trim_start_matches('\u{feff}'))
        .map_err(|e| format!("{name}:1: {e}"))?
        .into_iter()
        .map(|h| h.trim().to_string())
        .collect();
    let col = |n: &str| header.iter().position(|h| h == n);
    let lower: Vec<String> = header.iter().map(|h| h.to_lowercase()).collect();
    let (format, cols) = if let (Some(s), Some(z), Some(r)) = (col("State"), col("ZipCode"), col("EstimatedCombinedRate")) {
        (Format::Avalara, [Some(s), Some(z), Some(r), None, col("TaxRegionName"), col("source_file"), None])
    } else if let (Some(s), Some(z), Some(r), Some(t)) =
        (col("state"), col("zip5"), col("expected_combined_rate_pct"), col("tolerance_pct"))
    {
        (Format::DorGrid, [Some(s), Some(z), Some(r), Some(t), col("city"), col("source_note"), col("section_comment")])
    } else if let (Some(s), Some(r), Some(l)) = (col("code"), col("state_rate_pct"), col("local_varies")) {
        return state_rows(&name, &mut lines, &header, Format::StateRates, [s, r, l], col("source"));
    } else if let (Some(s), Some(a), Some(b)) = (col("state"), col("saas_paddle_2025_10"), col("digital_goods_paddle_2025_10")) {
        return state_rows(&name, &mut lines, &header, Format::SaasTaxability, [s, a, b], col("saas_paddle_raw"));
    } else if lower.len() >= 3 && lower[..3] == ["state", "zip", "rate"] {
        (Format::Plain, [Some(0), Some(1), Some(2), None, lower.iter().position(|h| h == "note"), None, None])
    } else {
        return Err(format!(
            "{name}:1: the header `{}` is not a rate table levy reads: Avalara's TAXRATES_ZIP5 columns \
             (State,ZipCode,…,EstimatedCombinedRate,…), the DOR grid's (state,city,zip5,zip4,expected_combined_rate_pct,\
             tolerance_pct,…) state,zip,rate, the state-rate table (code,name,state_rate_pct,…,local_varies,…) or the SaaS summary \
             (state,…,saas_paddle_2025_10,digital_goods_paddle_2025_10,…)",
            header.join(",")
        ));
    };
    let [state_c, zip_c, rate_c, tol_c, note_c, extra_c, heading_c] = cols;
    let file_month = month_of_name(&name);
    let grid_date = NaiveDate::from_ymd_opt(DOR_GRID_AS_OF.0, DOR_GRID_AS_OF.1, DOR_GRID_AS_OF.2);
    let mut rows = vec![];
    for (line, raw) in lines {
        if raw.trim().is_empty() {
            continue;
        }
        let at = |e: String| format!("{name}:{line}: {e}");
        let fields = split_csv(raw).map_err(at)?;
        if fields.len() != header.len() {
            return Err(at(format!("{} fields where the header has {}", fields.len(), header.len())));
        }
        let get = |c: Option<usize>| c.and_then(|i| fields.get(i)).map(|s| s.trim().to_string()).unwrap_or_default();
        let state = get(state_c).to_uppercase();
        if state.len() != 2 || !state.chars().all(|c| c.is_ascii_alphabetic()) {
            return Err(at(format!("state `{state}` is not a two-letter code")));
        }
        let zip = zip5(&get(zip_c)).map_err(at)?;
        let (rate, tolerance) = match format {
            Format::DorGrid => (
                decimal(&get(rate_c), "the rate").map_err(at)? / Decimal::from(100),
                decimal(&get(tol_c), "the tolerance").map_err(at)? / Decimal::from(100),
            ),
            _ => (decimal(&get(rate_c), "the rate").map_err(at)?, DEFAULT_TOLERANCE),
        };
        if rate > Decimal::ONE {
            return Err(at(format!("the rate {} is over 100%", pct(rate))));
        }
        let (note, own_date) = match format {
            Format::Avalara => (get(note_c), month_of_name(&get(extra_c)).or(file_month)),
            Format::DorGrid => {
                let heading = get(heading_c);
                let note = [get(note_c), get(extra_c)].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>().join(": ");
                (note, heading_date(&heading).or(grid_date))
            }
            Format::Plain | Format::StateRates | Format::SaasTaxability => (get(note_c), None),
        };
        rows.push(Row { line, state, zip, rate, tolerance, note, own_date, field: None, value: None });
    }
    Ok(Table { path: name, format, rows })
}

/// The rows of a state-level table: two comparisons per state (the rate and the local-tax flag, or SaaS and
/// digital goods), `cols` naming the state column and the two figures' columns.
fn state_rows<'a>(
    name: &str,
    lines: &mut impl Iterator<Item = (usize, &'a str)>,
    header: &[String],
    format: Format,
    cols: [usize; 3],
    note_c: Option<usize>,
) -> Result<Table, String> {
    let (fields, date) = match format {
        Format::StateRates => (["state_rate", "local_taxes"], STATE_RATES_AS_OF),
        _ => (["saas", "digital_goods"], SAAS_AS_OF),
    };
    let own_date = NaiveDate::from_ymd_opt(date.0, date.1, date.2);
    let mut rows = vec![];
    for (line, raw) in lines {
        if raw.trim().is_empty() {
            continue;
        }
        let at = |e: String| format!("{name}:{line}: {e}");
        let f = split_csv(raw).map_err(at)?;
        if f.len() != header.len() {
            return Err(at(format!("{} fields where the header has {}", f.len(), header.len())));
        }
        let get = |i: usize| f.get(i).map(|s| s.trim().to_string()).unwrap_or_default();
        let state = get(cols[0]).to_uppercase();
        if state.len() != 2 || !state.chars().all(|c| c.is_ascii_alphabetic()) {
            return Err(at(format!("state `{state}` is not a two-letter code")));
        }
        let note = note_c.map(get).unwrap_or_default();
        for (k, field) in fields.into_iter().enumerate() {
            let text = get(cols[k + 1]);
            let (rate, value) = match field {
                "state_rate" => (decimal(&text, "the rate").map_err(at)? / Decimal::from(100), None),
                "local_taxes" => match text.as_str() {
                    "true" | "false" => (Decimal::ZERO, Some(text)),
                    other => return Err(at(format!("local_varies `{other}` is not true or false"))),
                },
                _ => match text.as_str() {
                    "" | "taxable" | "exempt" | "local_only" => (Decimal::ZERO, Some(text)),
                    other => return Err(at(format!("`{other}` is not taxable, exempt or local_only"))),
                },
            };
            rows.push(Row {
                line,
                state: state.clone(),
                zip: String::new(),
                rate,
                tolerance: DEFAULT_TOLERANCE,
                note: note.clone(),
                own_date,
                field: Some(field),
                value,
            });
        }
    }
    Ok(Table { path: name.to_string(), format, rows })
}

/// How one row came out.
#[derive(Clone, Debug)]
pub enum Outcome {
    Agrees,
    Disagrees {
        ours: Ours,
    },
    Recorded {
        ours: Ours,
        record: Record,
    },
    /// The zip code straddles jurisdictions and the table's figure is that of another of its parts: our answer is
    /// the highest part's, and says what else the zip reaches into.
    Split {
        ours: Ours,
        split: String,
    },
    /// A PO-box-only or single-organisation zip code (no Census ZCTA), placed by its post office alone.
    PostOffice {
        ours: Ours,
    },
    /// The table names another place for the zip code than the one our answer is for (its post office's): by the
    /// table's own account the zip reaches into another jurisdiction, or the table places it by another convention.
    Elsewhere {
        ours: Ours,
        theirs: String,
    },
    Uncovered {
        reason: String,
    },
}

impl Outcome {
    /// A row that differs but is explained: a recorded divergence, a straddling zip, a post-office zip.
    pub fn explained(&self) -> bool {
        matches!(self, Outcome::Recorded { .. } | Outcome::Split { .. } | Outcome::PostOffice { .. } | Outcome::Elsewhere { .. })
    }
}

/// The record that explains a divergence: the other table, the reason, the primary source.
#[derive(Clone, Debug)]
pub struct Record {
    pub table: String,
    pub reason: String,
    pub citation: crate::rules::registry::Citation,
}

impl From<&Divergence> for Record {
    fn from(d: &Divergence) -> Self {
        Record { table: d.table.clone(), reason: d.reason.clone(), citation: d.citation.clone() }
    }
}

/// Our figure at a zip, with what it is made of.
#[derive(Clone, Debug)]
pub struct Ours {
    pub rate: Decimal,
    /// Our value of a state-level figure other than a rate (`true`, `taxable`, …).
    pub value: Option<String>,
    pub locality: Option<String>,
    /// Each layer as "level rate name [cite]", the state's first.
    pub layers: Vec<String>,
    /// The rules that decided the figure: the sourcing rule and the local file's zip entry.
    pub rules: Vec<String>,
}

pub struct Checked<'a> {
    pub row: &'a Row,
    pub as_of: NaiveDate,
    pub outcome: Outcome,
}

/// One table's audit.
pub struct Audit<'a> {
    pub table: &'a Table,
    pub checked: Vec<Checked<'a>>,
}

impl Audit<'_> {
    pub fn count(&self, f: impl Fn(&Outcome) -> bool) -> usize {
        self.checked.iter().filter(|c| f(&c.outcome)).count()
    }
    pub fn agree(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Agrees))
    }
    pub fn disagree(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Disagrees { .. }))
    }
    pub fn recorded(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Recorded { .. }))
    }
    pub fn split(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Split { .. }))
    }
    pub fn post_office(&self) -> usize {
        self.count(|o| matches!(o, Outcome::PostOffice { .. }))
    }
    pub fn elsewhere(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Elsewhere { .. }))
    }
    pub fn uncovered(&self) -> usize {
        self.count(|o| matches!(o, Outcome::Uncovered { .. }))
    }
    /// The uncovered rows in one of the 51 jurisdictions (a territory's rows are outside levy, not a gap).
    pub fn coverage_gaps(&self) -> Vec<&Checked<'_>> {
        self.checked.iter().filter(|c| matches!(c.outcome, Outcome::Uncovered { .. }) && state_index(&c.row.state).is_some()).collect()
    }
}

/// Compares one row of a state-level table with the state's figures as of `as_of` (the rate and local-tax flag in
/// force; whether the probe sales of SaaS and of a digital good that `GET /rates` reports are taxable).
fn check_state_row(reg: &Registry, format: Format, row: &Row, field: &str, as_of: NaiveDate) -> Outcome {
    let Some(state) = state_index(&row.state) else {
        return Outcome::Uncovered { reason: format!("{} is not one of the 51 jurisdictions", row.state) };
    };
    if row.value.as_deref() == Some("") {
        return Outcome::Uncovered { reason: format!("the table states no {field} for {}", row.state) };
    }
    let r = match table::state_rates(reg, state, as_of) {
        Ok(r) => r,
        Err(e) => return Outcome::Uncovered { reason: format!("not determined as of {as_of}: {e:?}") },
    };
    let taxed = |d: &crate::engine::Determination| if table::taxable(d) { "taxable" } else { "exempt" };
    let (agrees, ours) = match field {
        "state_rate" => {
            let c = &r.state_rate.citation;
            let ours = Ours {
                rate: r.rate(),
                value: None,
                locality: None,
                layers: vec![format!("state {} [{}]", pct(r.rate()), c.cite)],
                rules: vec![format!("states/{}.yaml state_rate", row.state.to_lowercase())],
            };
            ((r.rate() - row.rate).abs() <= row.tolerance, ours)
        }
        "local_taxes" => {
            let v = r.has_local_taxes().to_string();
            let cite = r.local_taxes.map(|d| d.citation.cite.clone()).unwrap_or_default();
            let ours = Ours {
                rate: Decimal::ZERO,
                value: Some(v.clone()),
                locality: None,
                layers: vec![format!("local taxes {v} [{cite}]")],
                rules: vec![format!("states/{}.yaml local_taxes", row.state.to_lowercase())],
            };
            (row.value.as_deref() == Some(v.as_str()), ours)
        }
        _ => {
            let d = if field == "saas" { &r.saas } else { &r.digital_good };
            let v = taxed(d).to_string();
            let layers = d.legs.iter().map(|l| format!("{} {} [{}]", l.rule_id, l.result, l.citation.cite)).collect();
            let rules = d.legs.iter().map(|l| l.rule_id.clone()).collect();
            let ours = Ours { rate: Decimal::ZERO, value: Some(v.clone()), locality: None, layers, rules };
            (row.value.as_deref() == Some(v.as_str()), ours)
        }
    };
    if agrees {
        return Outcome::Agrees;
    }
    let theirs = match field {
        "state_rate" => row.rate.normalize().to_string(),
        _ => row.value.clone().unwrap_or_default(),
    };
    let recorded = r.jurisdiction.divergences.iter().find(|d| d.table == format.id() && d.field == field && d.value == theirs);
    match recorded {
        Some(d) => {
            Outcome::Recorded { ours, record: Record { table: d.table.clone(), reason: d.reason.clone(), citation: d.citation.clone() } }
        }
        None => Outcome::Disagrees { ours },
    }
}

/// Compares one row with our determination as of `as_of`.
pub fn check_row(reg: &Registry, format: Format, row: &Row, as_of: NaiveDate) -> Outcome {
    if let Some(field) = row.field {
        return check_state_row(reg, format, row, field, as_of);
    }
    let Some(state) = state_index(&row.state) else {
        return Outcome::Uncovered { reason: format!("{} is not one of the 51 jurisdictions", row.state) };
    };
    if reg.jurisdiction(state).is_none() {
        return Outcome::Uncovered { reason: format!("{} has no rules", row.state) };
    }
    let entry = reg.local.entry(&row.zip, state);
    if entry.is_none() {
        if let Some(&other) = reg.local.states_of(&row.zip).first() {
            return Outcome::Uncovered { reason: format!("our tables place {} in {}", row.zip, crate::rules::schema::STATES[other]) };
        }
    }
    let det = match table::probe(reg, state, table::SAAS, Some(&row.zip), as_of) {
        Ok(d) => d,
        Err(e) => return Outcome::Uncovered { reason: format!("not determined as of {as_of}: {e:?}") },
    };
    let within = |rate: Decimal| (rate - row.rate).abs() <= row.tolerance;
    if within(det.combined_rate) {
        return Outcome::Agrees;
    }
    let lower = row.state.to_lowercase();
    match det.local_coverage {
        LocalCoverage::Whole | LocalCoverage::NoLocalTax => {}
        LocalCoverage::Partial => {
            return Outcome::Uncovered {
                reason: format!("not every local tax of {} is in our tables (local/{lower}.yaml has no `complete`)", row.state),
            }
        }
        LocalCoverage::NotOnDate => {
            return Outcome::Uncovered { reason: format!("our local tables hold {} only from a date after {as_of}", row.zip) }
        }
        LocalCoverage::Unknown | LocalCoverage::NoZip => {
            return Outcome::Uncovered { reason: format!("{} has local taxes and our local tables do not hold {}", row.state, row.zip) }
        }
    }
    let mut layers = vec![format!("state {} [{}]", pct(det.state_rate), det.state_rate_citation.cite)];
    layers.extend(det.layers.iter().map(|l| format!("{} {} {} [{}]", l.level, pct(l.rate), l.name, l.citation.cite)));
    let mut rules = vec![det.sourcing_rule.clone()];
    rules.extend(det.layers.iter().map(|l| l.id.clone()));
    if let Some(file) = entry.and_then(|e| e.file()) {
        // The file under the rules directory: `local/tx.csv`.
        let short = file.rfind("local/").map_or(file, |i| &file[i..]);
        rules.push(format!("{short} zip {}", row.zip));
    }
    let ours = Ours { rate: det.combined_rate, value: None, locality: det.locality.clone(), layers, rules };
    let recorded = entry
        .into_iter()
        .flat_map(|e| e.divergences().iter())
        .find(|d| d.table == format.id() && (d.rate - row.rate).abs() <= row.tolerance.max(Decimal::new(1, 5)));
    if let Some(d) = recorded {
        return Outcome::Recorded { ours, record: d.into() };
    }
    if let (Some(split), true) = (&det.split, det.local_alternatives.iter().any(|r| within(*r))) {
        return Outcome::Split { split: split.clone(), ours };
    }
    if entry.is_some_and(|e| !e.zcta && e.placed == Placed::Derived) {
        return Outcome::PostOffice { ours };
    }
    if let Some(theirs) = elsewhere(row, det.locality.as_deref()).filter(|_| format == Format::Avalara) {
        return Outcome::Elsewhere { ours, theirs };
    }
    Outcome::Disagrees { ours }
}

/// The place a row of Avalara's table names for the zip (its region), when that is another place than `ours`: the
/// two names differ once case, punctuation, single letters and the words the table adds (COUNTY, CITY, VILLAGE, CO,
/// SPECIAL TAX DIST …) are set aside.
fn elsewhere(row: &Row, ours: Option<&str>) -> Option<String> {
    const ADDED: &[&str] = &["COUNTY", "CO", "CITY", "VILLAGE", "TOWN", "TOWNSHIP", "SPECIAL", "TAX", "DIST", "DISTRICT", "OF"];
    let words = |s: &str| -> String {
        s.to_uppercase()
            .split(|c: char| !c.is_ascii_alphabetic())
            .filter(|w| w.len() > 1 && !ADDED.contains(w))
            .collect::<Vec<_>>()
            .join(" ")
    };
    if row.field.is_some() || row.note.is_empty() {
        return None;
    }
    let (theirs, mine) = (words(&row.note), words(ours?));
    (!theirs.is_empty() && !mine.is_empty() && theirs != mine).then(|| row.note.clone())
}

/// Audits one table: each row as of `as_of` when given, else as of the row's own date, else `today`.
pub fn audit_table<'a>(reg: &Registry, table: &'a Table, as_of: Option<NaiveDate>, today: NaiveDate) -> Audit<'a> {
    let checked = table
        .rows
        .iter()
        .map(|row| {
            let day = as_of.or(row.own_date).unwrap_or(today);
            let outcome = if day < reg.coverage_from {
                Outcome::Uncovered { reason: format!("{day} is before the first date the rules cover ({})", reg.coverage_from) }
            } else {
                check_row(reg, table.format, row, day)
            };
            Checked { row, as_of: day, outcome }
        })
        .collect();
    Audit { table, checked }
}

fn dates(a: &Audit) -> String {
    let mut ds: Vec<NaiveDate> = a.checked.iter().map(|c| c.as_of).collect();
    ds.sort_unstable();
    ds.dedup();
    match ds.as_slice() {
        [] => "-".into(),
        [d] => d.to_string(),
        [first, .., last] => format!("{} dates from {first} to {last}", ds.len()),
    }
}

fn by_state<'a, 'b>(a: &'b Audit<'a>, f: impl Fn(&Outcome) -> bool) -> BTreeMap<&'b str, Vec<&'b Checked<'a>>> {
    let mut m: BTreeMap<&str, Vec<&Checked>> = BTreeMap::new();
    for c in a.checked.iter().filter(|c| f(&c.outcome)) {
        m.entry(c.row.state.as_str()).or_default().push(c);
    }
    m
}

/// A figure as shown, the table's or ours: the value of a state-level field, else the rate.
fn shown(field: Option<&str>, value: Option<&str>, rate: Decimal) -> String {
    match (field, value) {
        (Some(f), Some(v)) => format!("{f} {v}"),
        (Some(f), None) => format!("{f} {}", pct(rate)),
        _ => pct(rate),
    }
}

fn place(row: &Row, ours: &Ours) -> String {
    if row.zip.is_empty() {
        row.state.clone()
    } else {
        format!("{} {}", row.zip, ours.locality.as_deref().unwrap_or("-"))
    }
}

fn ours_text(s: &mut String, ours: &Ours) {
    let _ = writeln!(s, "      ours:  {}", ours.layers.join("; "));
    let _ = writeln!(s, "      rules: {}", ours.rules.join(", "));
}

/// The report a person reads.
pub fn render_text(audits: &[Audit]) -> String {
    let mut s = String::new();
    for a in audits {
        let _ = writeln!(s, "{} ({}; as of {}): {} rows", a.table.path, a.table.format.id(), dates(a), a.table.rows.len());
        let _ = writeln!(s, "  agree      {}", a.agree());
        let _ = writeln!(s, "  disagree   {}", a.disagree());
        let _ = writeln!(s, "  recorded   {}", a.recorded());
        let per_state = |f: fn(&Outcome) -> bool| {
            let per: Vec<String> = by_state(a, f).iter().map(|(st, v)| format!("{st} {}", v.len())).collect();
            if per.is_empty() {
                String::new()
            } else {
                format!(" ({})", per.join(", "))
            }
        };
        let _ = writeln!(s, "  split      {}{}", a.split(), per_state(|o| matches!(o, Outcome::Split { .. })));
        let _ = writeln!(s, "  post office {}{}", a.post_office(), per_state(|o| matches!(o, Outcome::PostOffice { .. })));
        let _ = writeln!(s, "  elsewhere  {}{}", a.elsewhere(), per_state(|o| matches!(o, Outcome::Elsewhere { .. })));
        let _ = writeln!(s, "  uncovered  {}{}", a.uncovered(), per_state(|o| matches!(o, Outcome::Uncovered { .. })));
        let dis = by_state(a, |o| matches!(o, Outcome::Disagrees { .. }));
        if !dis.is_empty() {
            let _ = writeln!(s, "\n  disagreements");
            for (st, rows) in &dis {
                let _ = writeln!(s, "  {st}");
                for c in rows {
                    let Outcome::Disagrees { ours } = &c.outcome else { continue };
                    let _ = writeln!(
                        s,
                        "    {} (line {}, as of {}): theirs {}, ours {}{}",
                        place(c.row, ours),
                        c.row.line,
                        c.as_of,
                        shown(c.row.field, c.row.value.as_deref(), c.row.rate),
                        shown(c.row.field, ours.value.as_deref(), ours.rate),
                        if c.row.value.is_some() { String::new() } else { format!(" (tolerance {})", pct(c.row.tolerance)) }
                    );
                    ours_text(&mut s, ours);
                    if !c.row.note.is_empty() {
                        let _ = writeln!(s, "      their note: {}", c.row.note);
                    }
                }
            }
        }
        let rec = by_state(a, |o| matches!(o, Outcome::Recorded { .. }));
        if !rec.is_empty() {
            let _ = writeln!(s, "\n  recorded divergences (not failures)");
            for (st, rows) in &rec {
                let _ = writeln!(s, "  {st}");
                for c in rows {
                    let Outcome::Recorded { ours, record } = &c.outcome else { continue };
                    let _ = writeln!(
                        s,
                        "    {} (line {}, as of {}): theirs {}, ours {}",
                        place(c.row, ours),
                        c.row.line,
                        c.as_of,
                        shown(c.row.field, c.row.value.as_deref(), c.row.rate),
                        shown(c.row.field, ours.value.as_deref(), ours.rate)
                    );
                    let _ = writeln!(s, "      reason: {} [{}]", record.reason, record.citation.cite);
                }
            }
        }
        s.push('\n');
    }
    let failing: usize = audits.iter().map(Audit::disagree).sum();
    let _ = writeln!(
        s,
        "{}",
        if failing == 0 { "ok: no undocumented disagreement".to_string() } else { format!("{failing} undocumented disagreements") }
    );
    s
}

fn checked_json(c: &Checked) -> Value {
    let mut v = json!({
        "state": c.row.state, "zip": c.row.zip, "line": c.row.line, "as_of": c.as_of.to_string(),
        "theirs": c.row.value.clone().unwrap_or_else(|| c.row.rate.normalize().to_string()),
        "tolerance": c.row.tolerance.normalize().to_string(), "note": c.row.note,
    });
    if let Some(f) = c.row.field {
        v["field"] = json!(f);
    }
    match &c.outcome {
        Outcome::Disagrees { ours }
        | Outcome::Recorded { ours, .. }
        | Outcome::Split { ours, .. }
        | Outcome::PostOffice { ours }
        | Outcome::Elsewhere { ours, .. } => {
            v["ours"] = json!(ours.value.clone().unwrap_or_else(|| ours.rate.normalize().to_string()));
            v["locality"] = json!(ours.locality);
            v["layers"] = json!(ours.layers);
            v["rules"] = json!(ours.rules);
        }
        Outcome::Uncovered { reason } => v["reason"] = json!(reason),
        Outcome::Agrees => {}
    }
    if let Outcome::Split { split, .. } = &c.outcome {
        v["split"] = json!(split);
    }
    if let Outcome::Recorded { record: d, .. } = &c.outcome {
        v["divergence"] = json!({"table": d.table, "reason": d.reason, "cite": d.citation.cite, "url": d.citation.url});
    }
    v
}

/// The same report as JSON.
pub fn render_json(audits: &[Audit]) -> Value {
    let tables: Vec<Value> = audits
        .iter()
        .map(|a| {
            let list = |f: fn(&Outcome) -> bool| a.checked.iter().filter(|c| f(&c.outcome)).map(checked_json).collect::<Vec<_>>();
            json!({
                "path": a.table.path,
                "format": a.table.format.id(),
                "rows": a.table.rows.len(),
                "agree": a.agree(),
                "disagree": a.disagree(),
                "recorded": a.recorded(),
                "split": a.split(),
                "post_office": a.post_office(),
                "elsewhere": a.elsewhere(),
                "uncovered": a.uncovered(),
                "disagreements": list(|o| matches!(o, Outcome::Disagrees { .. })),
                "recorded_divergences": list(|o| matches!(o, Outcome::Recorded { .. })),
                "split_rows": list(|o| matches!(o, Outcome::Split { .. })),
                "post_office_rows": list(|o| matches!(o, Outcome::PostOffice { .. })),
                "elsewhere_rows": list(|o| matches!(o, Outcome::Elsewhere { .. })),
                "uncovered_rows": list(|o| matches!(o, Outcome::Uncovered { .. })),
            })
        })
        .collect();
    let failing: usize = audits.iter().map(Audit::disagree).sum();
    json!({"ok": failing == 0, "disagreements": failing, "tables": tables})
}

/// The command: exit 0 when every row agrees, is recorded or is uncovered; 1 on any undocumented disagreement
/// (or rules that do not load); 2 on a bad argument or a table that cannot be read.
pub fn audit_rates(rules: &Path, tables: &[std::path::PathBuf], as_of: Option<&str>, tolerance: Option<&str>, json: bool) -> u8 {
    let as_of = match as_of.map(|t| NaiveDate::parse_from_str(t, "%Y-%m-%d").map_err(|_| format!("`{t}` is not a date (YYYY-MM-DD)"))) {
        None => None,
        Some(Ok(d)) => Some(d),
        Some(Err(e)) => {
            eprintln!("error: --as-of: {e}");
            return 2;
        }
    };
    if tables.is_empty() {
        eprintln!("error: name at least one rate table");
        return 2;
    }
    let tolerance = match tolerance.map(|t| t.parse::<Decimal>().ok().filter(|d| *d >= Decimal::ZERO).ok_or(t)) {
        None => None,
        Some(Ok(points)) => Some(points / Decimal::from(100)),
        Some(Err(t)) => {
            eprintln!("error: --tolerance: `{t}` is not a number of percentage points");
            return 2;
        }
    };
    let mut read = vec![];
    for p in tables {
        match read_table(p) {
            Ok(mut t) => {
                if let Some(tol) = tolerance {
                    t.rows.iter_mut().filter(|r| r.field.is_none()).for_each(|r| r.tolerance = tol);
                }
                read.push(t)
            }
            Err(e) => {
                eprintln!("error: {e}");
                return 2;
            }
        }
    }
    let Some((reg, _)) = super::load_or_report(rules) else { return 1 };
    let today = chrono::Utc::now().date_naive();
    let audits: Vec<Audit> = read.iter().map(|t| audit_table(&reg, t, as_of, today)).collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&render_json(&audits)).unwrap_or_default());
    } else {
        print!("{}", render_text(&audits));
    }
    u8::from(audits.iter().any(|a| a.disagree() > 0))
}
