//! The compiled local tables: each local tax written once with its dated rates, each ZIP code's areas (the sets
//! of taxes that apply in its parts), and the answer for a ZIP code on a day. Built by [`super::local`].

use std::collections::HashMap;
use std::sync::Arc;

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::dated::{in_force, Citation, Dated};
use super::diag::Span;

/// A local taxing jurisdiction (a county, city or special district) and its dated rates.
#[derive(Debug)]
pub struct LocalTax {
    /// Unique in the registry: `tx.austin`.
    pub id: String,
    /// Its FIPS code or the revenue department's own code, where the file gives one.
    pub code: Option<String>,
    pub name: String,
    /// One of [`super::schema::LOCAL_LEVELS`].
    pub level: &'static str,
    pub state: usize,
    pub rates: Vec<Dated<Decimal>>,
    pub note: Option<String>,
    pub span: Span,
}

/// Where one set of local taxes applies inside a ZIP code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Area {
    /// A range of ZIP+4 add-ons (inclusive), or the whole ZIP code.
    pub plus4: Option<(u16, u16)>,
    pub from: Option<NaiveDate>,
    pub to: Option<NaiveDate>,
    /// Where its taxes sit in [`LocalTables::area_taxes`]: positions in [`LocalTables::taxes`], in the order answers
    /// list them.
    pub taxes: (u32, u32),
    /// The county this part of the ZIP lies in, where the area was derived from the county tables.
    pub county: Option<u16>,
}

impl Area {
    fn in_force(&self, day: NaiveDate) -> bool {
        self.from.is_none_or(|f| f <= day) && self.to.is_none_or(|t| day <= t)
    }
}

/// How the areas of a ZIP code were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placed {
    /// Boundary rows name the ZIP's taxes (an analyst's table or an official boundary file).
    Rows,
    /// From the county tables and the post-office place: whole only where the state's taxes are all entered.
    Derived,
}

/// A recorded, explained disagreement between our combined rate at a zip code and another table's figure
/// there: `levy rules audit-rates` lists a row that matches one apart and does not fail on it.
#[derive(Clone, Debug)]
pub struct Divergence {
    /// The other table, one of [`super::schema::ZIP_TABLES`].
    pub table: String,
    /// The other table's combined rate (a fraction: 0.0925 for 9.25%).
    pub rate: Decimal,
    /// Why the other figure is not ours (a zip spanning jurisdictions, the table's own caveat, ...).
    pub reason: String,
    /// The primary source our figure rests on.
    pub citation: Citation,
}

/// What an analyst wrote of one ZIP code, and the file that describes it.
#[derive(Debug, Default)]
pub struct ZipNotes {
    /// An analyst's statement that the ZIP straddles jurisdictions (`split:`).
    pub split: Option<String>,
    pub note: Option<String>,
    pub divergences: Vec<Divergence>,
    /// The file whose rows or notes describe the ZIP.
    pub file: Option<Arc<str>>,
}

/// One ZIP code in one state.
#[derive(Debug)]
pub struct ZipEntry {
    /// The five digits as a number (2108 for 02108): [`ZipEntry::zip`] writes them.
    pub code: u32,
    pub state: u8,
    pub placed: Placed,
    /// Whether the Census places the ZIP (a ZCTA); a PO-box-only or single-organisation ZIP is placed by its post
    /// office alone.
    pub zcta: bool,
    /// The name answers use: the file's `locality`, else the post office's place name.
    pub locality: Option<Arc<str>>,
    /// Where its areas sit in [`LocalTables::areas`].
    pub areas: (u32, u32),
    pub notes: Option<Box<ZipNotes>>,
}

impl ZipEntry {
    /// The ZIP code's five digits.
    pub fn zip(&self) -> String {
        format!("{:05}", self.code)
    }

    pub fn state(&self) -> usize {
        self.state as usize
    }

    pub fn split(&self) -> Option<&str> {
        self.notes.as_ref().and_then(|n| n.split.as_deref())
    }

    pub fn divergences(&self) -> &[Divergence] {
        self.notes.as_ref().map_or(&[], |n| &n.divergences)
    }

    pub fn file(&self) -> Option<&str> {
        self.notes.as_ref().and_then(|n| n.file.as_deref())
    }
}

/// Whether the state's local taxes are all entered from some day (`complete:` in its local file).
#[derive(Clone, Debug)]
pub struct Completeness {
    pub from: NaiveDate,
    pub citation: Citation,
}

/// The local tables, each kind in one list (a few allocations for forty thousand ZIP codes).
#[derive(Debug, Default)]
pub struct LocalTables {
    pub taxes: Vec<LocalTax>,
    /// Every ZIP code of every state, by ZIP code then state: a ZIP code that crosses a state line has an entry for
    /// each state.
    pub entries: Vec<ZipEntry>,
    pub areas: Vec<Area>,
    pub area_taxes: Vec<u32>,
    /// By state position.
    pub complete: Vec<Option<Completeness>>,
    /// County names by (state, FIPS), for naming the parts of a ZIP code.
    pub county_names: HashMap<(usize, u16), Arc<str>>,
}

/// A local tax with the rate in force on the day asked.
#[derive(Clone, Copy, Debug)]
pub struct Layer<'a> {
    pub tax: &'a LocalTax,
    pub rate: &'a Dated<Decimal>,
}

/// One part of a ZIP code: the taxes in force there and their sum.
#[derive(Clone, Debug)]
pub struct Part<'a> {
    pub layers: Vec<Layer<'a>>,
    pub rate: Decimal,
    pub county: Option<&'a str>,
}

/// Whether an answer holds every local tax of the place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// Every local tax at the ZIP is known on the day.
    Whole,
    /// Some of the state's local taxes are not entered: the known ones apply, and a city or district tax may be
    /// missing.
    Partial,
    /// The ZIP's boundary rows start later (the tables hold the ZIP from that day).
    From(NaiveDate),
}

/// The local taxes of a ZIP code on a day.
#[derive(Clone, Debug)]
pub struct LocalAnswer<'a> {
    pub entry: &'a ZipEntry,
    /// The part answered: the highest local rate where the ZIP's parts differ.
    pub part: Part<'a>,
    /// The other parts whose taxes differ from it.
    pub others: Vec<Part<'a>>,
    pub coverage: Coverage,
    /// Whether a ZIP+4 chose the rows answered (it resolves the analyst's `split:`).
    pub by_plus4: bool,
}

impl LocalAnswer<'_> {
    /// Whether the ZIP code straddles jurisdictions: parts that differ, or an analyst's `split:` that no ZIP+4
    /// resolved.
    pub fn straddles(&self) -> bool {
        !self.others.is_empty() || (self.entry.split().is_some() && !self.by_plus4)
    }

    /// What else the ZIP reaches into, in words: the analyst's text, else each other part's taxes and rate.
    pub fn split_text(&self) -> Option<String> {
        if let Some(s) = self.entry.split().filter(|_| !self.by_plus4) {
            return Some(s.to_string());
        }
        if self.others.is_empty() {
            return None;
        }
        let describe = |p: &Part| {
            let names: Vec<&str> = p.layers.iter().map(|l| l.tax.name.as_str()).collect();
            let taxes = if names.is_empty() { "no local tax".to_string() } else { names.join(" + ") };
            let place = p.county.map(|c| format!("the part in {c}: ")).unwrap_or_default();
            format!("{place}{taxes}, {}%", (p.rate * Decimal::from(100)).normalize())
        };
        let mine = describe(&self.part);
        let others: Vec<String> = self.others.iter().map(describe).collect();
        Some(format!("{}; answered for {mine}", others.join("; ")))
    }
}

impl LocalTables {
    /// The entries of a ZIP code, one for each state it lies in.
    pub fn entries_of(&self, zip: &str) -> &[ZipEntry] {
        let Some(code) = super::geo::zip_number(zip) else { return &[] };
        let start = self.entries.partition_point(|e| e.code < code);
        let end = start + self.entries[start..].iter().take_while(|e| e.code == code).count();
        &self.entries[start..end]
    }

    /// The entry of `zip` in `state`.
    pub fn entry(&self, zip: &str, state: usize) -> Option<&ZipEntry> {
        self.entries_of(zip).iter().find(|e| e.state() == state)
    }

    /// The states a ZIP code lies in.
    pub fn states_of(&self, zip: &str) -> Vec<usize> {
        self.entries_of(zip).iter().map(ZipEntry::state).collect()
    }

    pub fn complete_on(&self, state: usize, day: NaiveDate) -> bool {
        self.complete.get(state).and_then(Option::as_ref).is_some_and(|c| c.from <= day)
    }

    /// The areas of an entry.
    pub fn areas(&self, entry: &ZipEntry) -> &[Area] {
        self.areas.get(entry.areas.0 as usize..entry.areas.1 as usize).unwrap_or(&[])
    }

    /// The taxes of an area, as positions in [`LocalTables::taxes`].
    pub fn taxes_of(&self, area: &Area) -> &[u32] {
        self.area_taxes.get(area.taxes.0 as usize..area.taxes.1 as usize).unwrap_or(&[])
    }

    fn part<'a>(&'a self, area: &Area, entry: &ZipEntry, day: NaiveDate) -> Part<'a> {
        let layers: Vec<Layer> = self
            .taxes_of(area)
            .iter()
            .filter_map(|&i| self.taxes.get(i as usize))
            .filter_map(|tax| in_force(&tax.rates, day).map(|rate| Layer { tax, rate }))
            .collect();
        let rate = layers.iter().map(|l| l.rate.value).sum();
        let county = area.county.and_then(|c| self.county_names.get(&(entry.state(), c))).map(|n| &**n);
        Part { layers, rate, county }
    }

    /// The local taxes of `entry` on `day`; with a ZIP+4 add-on, of the part that holds it where the boundary rows
    /// say. Parts whose taxes in force differ are kept apart; the part answered is the one with the highest rate
    /// (the law is ambiguous at a ZIP code that straddles: the higher tax).
    pub fn answer<'a>(&'a self, entry: &'a ZipEntry, plus4: Option<u16>, day: NaiveDate) -> LocalAnswer<'a> {
        let areas = self.areas(entry);
        let holds = |a: &Area, p: u16| a.plus4.is_some_and(|(lo, hi)| lo <= p && p <= hi);
        let in_force: Vec<&Area> = areas.iter().filter(|a| a.in_force(day)).collect();
        let by_plus4 = plus4.is_some_and(|p| in_force.iter().any(|a| holds(a, p)));
        let chosen: Vec<&Area> = match plus4 {
            Some(p) if by_plus4 => in_force.iter().copied().filter(|a| holds(a, p)).collect(),
            _ => in_force,
        };
        let coverage = match entry.placed {
            Placed::Rows if chosen.is_empty() => {
                Coverage::From(areas.iter().filter_map(|a| a.from).filter(|f| *f > day).min().unwrap_or(day))
            }
            Placed::Rows => Coverage::Whole,
            Placed::Derived if self.complete_on(entry.state(), day) => Coverage::Whole,
            Placed::Derived => Coverage::Partial,
        };
        let mut parts: Vec<Part> = vec![];
        for a in chosen {
            let p = self.part(a, entry, day);
            let same =
                |q: &Part| q.layers.len() == p.layers.len() && q.layers.iter().zip(&p.layers).all(|(x, y)| std::ptr::eq(x.tax, y.tax));
            if !parts.iter().any(same) {
                parts.push(p);
            }
        }
        // The highest rate; on a tie the first (the post office's county, or the first row).
        let best = parts.iter().enumerate().fold(None::<(usize, Decimal)>, |acc, (i, p)| match acc {
            Some((_, r)) if r >= p.rate => acc,
            _ => Some((i, p.rate)),
        });
        let part = match best {
            Some((i, _)) => parts.remove(i),
            None => Part { layers: vec![], rate: Decimal::ZERO, county: None },
        };
        LocalAnswer { entry, part, others: parts, coverage, by_plus4 }
    }
}
