//! Reads `rules/local/`: each state's local taxes written once (`<xx>.yaml`, and `<xx>.sst.yaml` generated from
//! Streamlined Sales Tax files), its boundary rows (`<xx>.csv`, `<xx>.sst.csv`) and notes on single ZIP codes,
//! checks them against the geography (`rules/geo/`), and builds the [`LocalTables`]: every ZIP code's areas.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::check;
use super::csv;
use super::diag::{did_you_mean, display_path, Diagnostic, SourceMap, Span};
use super::geo::{self, Geo};
use super::places::*;
use super::read::{self, dated_list, enum_value, read_yaml, register_id, seq, Diags, Fields};
use super::schema::{state_index, LOCAL_LEVELS, STATES, ZIP_TABLES};
use super::yaml::Node;

/// The columns of a boundary table.
pub const BOUNDARY_HEADER: &[&str] = &["zip", "plus4", "taxes", "from", "to"];

/// A tax as read, with the places it is written to apply.
struct TaxDraft {
    tax: LocalTax,
    counties: Vec<u16>,
    places: Vec<String>,
    within: Vec<u16>,
    zips: Vec<String>,
    except_zips: HashSet<String>,
    except_places: HashSet<String>,
}

impl TaxDraft {
    fn placed(&self) -> bool {
        !self.counties.is_empty() || !self.places.is_empty() || !self.zips.is_empty()
    }
}

/// A boundary row: the whole set of taxes of one part of a ZIP code.
struct Row {
    zip: String,
    state: usize,
    plus4: Option<(u16, u16)>,
    taxes: Vec<u32>,
    from: Option<NaiveDate>,
    to: Option<NaiveDate>,
    span: Span,
}

/// A note on one ZIP code (`zips:`).
struct ZipNote {
    locality: Option<String>,
    split: Option<String>,
    note: Option<String>,
    divergences: Vec<Divergence>,
    span: Span,
}

/// The state a local file's name says it holds: `tx.yaml`, `tx.sst.csv` → TX.
fn state_of_file(path: &Path) -> Option<usize> {
    let name = path.file_name()?.to_string_lossy().to_string();
    let first = name.split('.').next()?.to_uppercase();
    state_index(&first)
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == ext)).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// Reads `rules/local/` (but `special.yaml`) and `rules/geo/` into the local tables.
pub fn load(dir: &Path, ids: &mut HashMap<String, Span>, sources: &mut SourceMap, d: &mut Diags) -> LocalTables {
    let geo = geo::load(&dir.join("geo"), sources, d);
    let local = dir.join("local");
    let mut taxes: Vec<TaxDraft> = vec![];
    let mut notes: BTreeMap<(String, usize), ZipNote> = BTreeMap::new();
    let mut complete: Vec<Option<(Completeness, Span)>> = vec![None; STATES.len()];
    for path in files(&local, "yaml") {
        if path.file_stem().is_some_and(|s| s == "special") {
            continue;
        }
        let Some(node) = read_yaml(&path, sources, d) else { continue };
        file(&node, &path, &geo, ids, &mut taxes, &mut notes, &mut complete, d);
    }
    let by_id: HashMap<&str, u32> = taxes.iter().enumerate().map(|(i, t)| (t.tax.id.as_str(), i as u32)).collect();
    let mut rows: Vec<Row> = vec![];
    let mut used: HashSet<u32> = HashSet::new();
    for path in files(&local, "csv") {
        boundary_rows(&path, &geo, &taxes, &by_id, &mut rows, &mut used, sources, d);
    }
    check_rows(&mut rows, d);
    for (i, t) in taxes.iter().enumerate() {
        if !t.placed() && !used.contains(&(i as u32)) {
            d.push(
                Diagnostic::error("R607", Some(&t.tax.span), format!("local tax `{}` applies nowhere", t.tax.id))
                    .with_help("give it `counties`, `places` or `zips`, or name it in a boundary row"),
            );
        }
    }
    for ((zip, state), n) in &notes {
        if geo.get(zip, *state).is_none() && !rows.iter().any(|r| &r.zip == zip && r.state == *state) {
            d.push(
                Diagnostic::error("R610", Some(&n.span), format!("zip `{zip}` is in no table of {}", STATES[*state]))
                    .with_help("a note needs a zip the geography or a boundary row places in the state"),
            );
        }
    }
    build(geo, taxes, rows, notes, complete)
}

#[allow(clippy::too_many_arguments)]
fn file(
    node: &Node,
    path: &Path,
    geo: &Geo,
    ids: &mut HashMap<String, Span>,
    taxes: &mut Vec<TaxDraft>,
    notes: &mut BTreeMap<(String, usize), ZipNote>,
    complete: &mut [Option<(Completeness, Span)>],
    d: &mut Diags,
) {
    let what = "a local tax file";
    let Some(f) = Fields::of(node, what, &["jurisdiction", "complete", "taxes", "zips"], d) else { return };
    let Some(code_node) = f.req("jurisdiction", what, d) else { return };
    let code_text = code_node.as_scalar().unwrap_or("");
    let Some(state) = state_index(code_text) else {
        d.push(
            Diagnostic::error("R303", Some(&code_node.span), format!("`{code_text}` is not one of the 51 jurisdictions"))
                .suggest(code_text, STATES.iter().copied()),
        );
        return;
    };
    if state_of_file(path) != Some(state) {
        d.push(Diagnostic::error(
            "R304",
            Some(&code_node.span),
            format!("local taxes of `{}` must be in local/{}.yaml (or local/{0}.<name>.yaml)", STATES[state], STATES[state].to_lowercase()),
        ));
    }
    if let Some(c) = f.get("complete") {
        if let Some(e) = Fields::of(c, "`complete`", &["from", "cite", "url", "checked"], d) {
            let from = e.req_date("from", "`complete`", d);
            let citation = e.citation("`complete`", d);
            if let (Some(from), Some(citation)) = (from, citation) {
                match &complete[state] {
                    Some((_, first)) => d.push(
                        Diagnostic::error("R609", Some(&c.span), format!("`complete` is given twice for {}", STATES[state]))
                            .with_help(format!("the first is at {first}")),
                    ),
                    None => complete[state] = Some((Completeness { from, citation }, c.span.clone())),
                }
            }
        }
    }
    if let Some(list) = f.get("taxes") {
        for item in seq(list, "taxes", d) {
            if let Some(t) = tax(item, state, geo, ids, d) {
                taxes.push(t);
            }
        }
    }
    if let Some(map) = f.get("zips") {
        let Some(m) = Fields::of(map, "zips", &[], &mut vec![]) else {
            d.push(Diagnostic::error("R101", Some(&map.span), "`zips` must be a mapping of zip code to its notes"));
            return;
        };
        for (k, v) in m.entries() {
            let zip = k.as_scalar().unwrap_or("").to_string();
            if !geo::is_zip(&zip) {
                d.push(
                    Diagnostic::error("R601", Some(&k.span), format!("`{zip}` is not a 5-digit zip code"))
                        .with_help("quote zip codes: \"02108\""),
                );
                continue;
            }
            if let Some(n) = zip_note(&zip, v, state, geo, &k.span, d) {
                if notes.contains_key(&(zip.clone(), state)) {
                    d.push(Diagnostic::error("R602", Some(&k.span), format!("zip `{zip}` has notes twice")));
                    continue;
                }
                notes.insert((zip, state), n);
            }
        }
    }
}

fn tax(item: &Node, state: usize, geo: &Geo, ids: &mut HashMap<String, Span>, d: &mut Diags) -> Option<TaxDraft> {
    let what = "a local tax";
    let keys = ["id", "code", "name", "level", "counties", "places", "within", "zips", "except_zips", "except_places", "rates", "note"];
    let f = Fields::of(item, what, &keys, d)?;
    let id = f.req_str("id", what, d);
    if let Some(id) = &id {
        register_id(id, &item.span, ids, d);
        let prefix = format!("{}.", STATES[state].to_lowercase());
        if !id.starts_with(&prefix) {
            d.push(Diagnostic::error("R112", Some(&f.get("id")?.span), format!("local tax id `{id}` must start with `{prefix}`")));
        }
    }
    let code = f.opt_str("code", d);
    let name = f.req_str("name", what, d);
    let level = f.req("level", what, d).and_then(|n| enum_value(n, LOCAL_LEVELS, "local level", d));
    let counties = county_list(&f, "counties", state, geo, d);
    let within = county_list(&f, "within", state, geo, d);
    let written_places = f.get("places").is_some();
    let places = place_list(&f, "places", state, geo, d);
    let except_places = place_list(&f, "except_places", state, geo, d);
    let zips = zip_list(&f, "zips", d);
    let except_zips = zip_list(&f, "except_zips", d);
    if !within.is_empty() && !written_places {
        d.push(Diagnostic::error("R102", Some(&item.span), "`within` narrows `places`, and this tax has none"));
    }
    let rates = dated_list(&f, "rates", what, &["rate"], &mut |e, d| e.req("rate", "a local rate", d).and_then(|n| read::percent(n, d)), d);
    if let (Some(r), Some(id)) = (&rates, &id) {
        let mut ranges: Vec<check::Range> = r.iter().map(|x| check::Range { from: x.from, to: x.to, span: &x.span }).collect();
        check::dated_ranges(&format!("local tax `{id}` rates"), &mut ranges, None, false, d);
    }
    let note = f.opt_str("note", d);
    let tax =
        LocalTax { id: id?, code, name: name?, level: LOCAL_LEVELS[level? as usize], state, rates: rates?, note, span: item.span.clone() };
    Some(TaxDraft {
        tax,
        counties,
        places: places.into_iter().map(|p| p.to_lowercase()).collect(),
        within,
        zips,
        except_zips: except_zips.into_iter().collect(),
        except_places: except_places.into_iter().map(|p| p.to_lowercase()).collect(),
    })
}

fn items<'a>(f: &Fields<'a>, key: &str, d: &mut Diags) -> Vec<(String, &'a Node)> {
    let Some(n) = f.get(key) else { return vec![] };
    seq(n, key, d).iter().filter_map(|i| read::string(i, key, d).map(|s| (s, i))).collect()
}

fn county_list(f: &Fields, key: &str, state: usize, geo: &Geo, d: &mut Diags) -> Vec<u16> {
    let mut out = vec![];
    for (text, n) in items(f, key, d) {
        match geo::county_fips(&text) {
            Some(c) if geo.has_county(state, c) => out.push(c),
            Some(_) => d.push(
                Diagnostic::error("R605", Some(&n.span), format!("{} has no county with FIPS code `{text}`", STATES[state]))
                    .with_help("county codes are the 3-digit FIPS codes of rules/geo/zip_county.csv"),
            ),
            None => d.push(
                Diagnostic::error("R605", Some(&n.span), format!("`{text}` is not a 3-digit county FIPS code"))
                    .with_help("quote county codes: \"001\""),
            ),
        }
    }
    out
}

fn place_list(f: &Fields, key: &str, state: usize, geo: &Geo, d: &mut Diags) -> Vec<String> {
    let mut out = vec![];
    for (text, n) in items(f, key, d) {
        if geo.places.contains_key(&(state, text.to_lowercase())) {
            out.push(text);
            continue;
        }
        let names: Vec<&str> = geo.places.keys().filter(|(s, _)| *s == state).map(|(_, p)| p.as_str()).collect();
        let diag = Diagnostic::error("R606", Some(&n.text_span()), format!("no post office of {} is named `{text}`", STATES[state]));
        d.push(match did_you_mean(&text, names.iter().copied()) {
            Some(best) => {
                diag.with_help(format!("did you mean `{best}`? (the post offices of rules/geo/zip_place.csv, matched in any letter case)"))
            }
            None => diag.with_help("place names are the post offices of rules/geo/zip_place.csv"),
        });
    }
    out
}

fn zip_list(f: &Fields, key: &str, d: &mut Diags) -> Vec<String> {
    let mut out = vec![];
    for (text, n) in items(f, key, d) {
        if geo::is_zip(&text) {
            out.push(text);
        } else {
            d.push(
                Diagnostic::error("R601", Some(&n.span), format!("`{text}` is not a 5-digit zip code"))
                    .with_help("quote zip codes: \"02108\""),
            );
        }
    }
    out
}

fn zip_note(zip: &str, v: &Node, state: usize, geo: &Geo, key_span: &Span, d: &mut Diags) -> Option<ZipNote> {
    let z = Fields::of(v, "a zip's notes", &["locality", "split", "note", "divergences"], d)?;
    let split = z.opt_str("split", d);
    if split.as_deref().is_some_and(|s| s.trim().is_empty()) {
        d.push(Diagnostic::error("R102", Some(&v.span), format!("zip `{zip}` has an empty `split`")));
        return None;
    }
    if let Some(other) = geo.other_state(zip, state) {
        d.push(Diagnostic::error("R602", Some(key_span), format!("zip `{zip}` is in {}, not {}", STATES[other], STATES[state])));
        return None;
    }
    Some(ZipNote {
        locality: z.opt_str("locality", d),
        split,
        note: z.opt_str("note", d),
        divergences: z.get("divergences").map(|list| divergences(list, d)).unwrap_or_default(),
        span: key_span.clone(),
    })
}

/// A zip's `divergences:`: each names the other table, its figure, the reason and the primary source; a table
/// and figure recorded twice is an error (R603).
fn divergences(list: &Node, d: &mut Diags) -> Vec<Divergence> {
    let what = "a divergence";
    let mut out: Vec<Divergence> = vec![];
    for item in seq(list, "divergences", d) {
        let Some(f) = Fields::of(item, what, &["table", "rate", "reason", "cite", "url", "checked"], d) else { continue };
        let table = f.req("table", what, d).and_then(|n| enum_value(n, ZIP_TABLES, "zip-level rate table", d));
        let rate = f.req("rate", what, d).and_then(|n| read::percent(n, d));
        let reason = f.req_str("reason", what, d);
        if reason.as_deref().is_some_and(|r| r.trim().is_empty()) {
            d.push(Diagnostic::error("R102", Some(&item.span), "a divergence has an empty `reason`"));
            continue;
        }
        let citation = f.citation(what, d);
        let (Some(table), Some(rate), Some(reason), Some(citation)) = (table, rate, reason, citation) else { continue };
        let table = ZIP_TABLES[table as usize].to_string();
        if out.iter().any(|o| o.table == table && o.rate == rate) {
            d.push(Diagnostic::error(
                "R603",
                Some(&item.span),
                format!("a divergence from `{table}` at {}% is recorded twice", (rate * Decimal::from(100)).normalize()),
            ));
            continue;
        }
        out.push(Divergence { table, rate, reason, citation });
    }
    out
}

/// `1000-1999` → (1000, 1999).
fn plus4_range(text: &str) -> Option<(u16, u16)> {
    let (lo, hi) = text.split_once('-')?;
    let ok = |s: &str| s.len() == 4 && s.bytes().all(|b| b.is_ascii_digit());
    if !ok(lo) || !ok(hi) {
        return None;
    }
    let (lo, hi) = (lo.parse().ok()?, hi.parse().ok()?);
    (lo <= hi).then_some((lo, hi))
}

#[allow(clippy::too_many_arguments)]
fn boundary_rows(
    path: &Path,
    geo: &Geo,
    taxes: &[TaxDraft],
    by_id: &HashMap<&str, u32>,
    rows: &mut Vec<Row>,
    used: &mut HashSet<u32>,
    sources: &mut SourceMap,
    d: &mut Diags,
) {
    let Some(table) = csv::read(path, BOUNDARY_HEADER, sources, d) else { return };
    let Some(state) = state_of_file(path) else {
        let name = display_path(path);
        d.push(
            Diagnostic::error("R304", Some(&Span::new(&name, 1, 1, 1)), "a boundary table's name must begin with its state code")
                .with_help("name it local/<xx>.csv or local/<xx>.<name>.csv"),
        );
        return;
    };
    for r in table.records() {
        let zip = r.field(0);
        if !geo::is_zip(zip) {
            d.push(Diagnostic::error("R601", Some(&r.span(0)), format!("`{zip}` is not a 5-digit zip code")));
            continue;
        }
        if let Some(other) = geo.other_state(zip, state) {
            d.push(Diagnostic::error("R602", Some(&r.span(0)), format!("zip `{zip}` is in {}, not {}", STATES[other], STATES[state])));
            continue;
        }
        let plus4 = match r.field(1) {
            "" => None,
            text => match plus4_range(text) {
                Some(range) => Some(range),
                None => {
                    d.push(
                        Diagnostic::error("R608", Some(&r.span(1)), format!("`{text}` is not a range of ZIP+4 add-ons"))
                            .with_help("write the first and last add-on with a dash: 0001-0999"),
                    );
                    continue;
                }
            },
        };
        let mut ids = vec![];
        let mut ok = true;
        let field = r.field(2);
        let mut offset = 0;
        for word in field.split(' ') {
            let here = offset;
            offset += word.chars().count() + 1;
            if word.is_empty() {
                continue;
            }
            let span = r.span_in(2, here, word.chars().count());
            match by_id.get(word) {
                Some(&i) if taxes[i as usize].tax.state == state => {
                    if ids.contains(&i) {
                        d.push(Diagnostic::error("R604", Some(&span), format!("local tax `{word}` is named twice in this row")));
                        ok = false;
                    }
                    ids.push(i);
                }
                Some(_) => {
                    d.push(Diagnostic::error("R604", Some(&span), format!("local tax `{word}` is not a tax of {}", STATES[state])));
                    ok = false;
                }
                None => {
                    let prefix = format!("{}.", STATES[state].to_lowercase());
                    let known = by_id.keys().copied().filter(|k| k.starts_with(&prefix));
                    d.push(Diagnostic::error("R604", Some(&span), format!("unknown local tax `{word}`")).suggest(word, known));
                    ok = false;
                }
            }
        }
        let date = |i: usize, d: &mut Diags| -> Option<Option<NaiveDate>> {
            let text = r.field(i);
            if text.is_empty() {
                return Some(None);
            }
            match NaiveDate::parse_from_str(text, "%Y-%m-%d") {
                Ok(day) if text.len() == 10 => Some(Some(day)),
                _ => {
                    d.push(
                        Diagnostic::error("R105", Some(&r.span(i)), format!("`{text}` is not a date"))
                            .with_help("write dates as YYYY-MM-DD"),
                    );
                    None
                }
            }
        };
        let (Some(from), Some(to)) = (date(3, d), date(4, d)) else { continue };
        if let (Some(f), Some(t)) = (from, to) {
            if t < f {
                d.push(Diagnostic::error("R404", Some(&r.span(4)), format!("`to` {t} is before `from` {f}")));
                continue;
            }
        }
        if !ok {
            continue;
        }
        used.extend(ids.iter().copied());
        let line_span = Span::new(&r.span(0).file, r.line, 1, 5);
        rows.push(Row { zip: zip.to_string(), state, plus4, taxes: ids, from, to, span: line_span });
    }
}

/// Rows of one ZIP code: ZIP+4 ranges may not overlap on the same days, the same whole-ZIP row may not be written
/// twice, and a ZIP's rows may not leave a gap between their dates.
fn check_rows(rows: &mut [Row], d: &mut Diags) {
    rows.sort_by(|a, b| (&a.zip, a.state).cmp(&(&b.zip, b.state)));
    let overlaps =
        |a: &Row, b: &Row| a.from.is_none_or(|f| b.to.is_none_or(|t| f <= t)) && b.from.is_none_or(|f| a.to.is_none_or(|t| f <= t));
    let mut start = 0;
    while start < rows.len() {
        let end = start + rows[start..].iter().take_while(|r| r.zip == rows[start].zip && r.state == rows[start].state).count();
        let group = &rows[start..end];
        for (i, a) in group.iter().enumerate() {
            for b in &group[i + 1..] {
                if !overlaps(a, b) {
                    continue;
                }
                let clash = match (a.plus4, b.plus4) {
                    (Some((alo, ahi)), Some((blo, bhi))) => alo <= bhi && blo <= ahi,
                    (None, None) => a.taxes == b.taxes,
                    _ => false,
                };
                if clash {
                    d.push(
                        Diagnostic::error("R401", Some(&b.span), format!("zip `{}`: this row overlaps the row at {}", b.zip, a.span))
                            .with_help("ZIP+4 ranges of a zip may not overlap on the same days, nor a whole-zip row repeat"),
                    );
                }
            }
        }
        // No gap between the days the rows hold.
        let mut spans: Vec<(Option<NaiveDate>, Option<NaiveDate>, &Span)> = group.iter().map(|r| (r.from, r.to, &r.span)).collect();
        spans.sort_by_key(|s| s.0);
        let mut reach: Option<Option<NaiveDate>> = None;
        for (from, to, span) in spans {
            if let (Some(Some(end)), Some(f)) = (reach, from) {
                let next = end.succ_opt().unwrap_or(end);
                if f > next {
                    d.push(Diagnostic::error(
                        "R402",
                        Some(span),
                        format!("zip `{}`: no row holds it from {next} to the day before {f}", group[0].zip),
                    ));
                }
            }
            reach = match (reach, to) {
                (Some(None), _) | (_, None) => Some(None),
                (Some(Some(a)), Some(b)) => Some(Some(a.max(b))),
                (None, Some(b)) => Some(Some(b)),
            };
        }
        start = end;
    }
}

/// Every ZIP code's areas: from its boundary rows, or derived from the counties it overlaps and its post office.
fn build(
    geo: Geo,
    drafts: Vec<TaxDraft>,
    rows: Vec<Row>,
    mut notes: BTreeMap<(String, usize), ZipNote>,
    complete: Vec<Option<(Completeness, Span)>>,
) -> LocalTables {
    let level_order = |t: &LocalTax| LOCAL_LEVELS.iter().position(|l| *l == t.level).unwrap_or(0);
    // Indexes of the derivation: by (state, county), (state, place), (state, zip).
    let mut by_county: HashMap<(usize, u16), Vec<u32>> = HashMap::new();
    let mut by_place: HashMap<(usize, &str), Vec<u32>> = HashMap::new();
    let mut by_zip: HashMap<(usize, &str), Vec<u32>> = HashMap::new();
    for (i, t) in drafts.iter().enumerate() {
        let (i, s) = (i as u32, t.tax.state);
        t.counties.iter().for_each(|c| by_county.entry((s, *c)).or_default().push(i));
        t.places.iter().for_each(|p| by_place.entry((s, p.as_str())).or_default().push(i));
        t.zips.iter().for_each(|z| by_zip.entry((s, z.as_str())).or_default().push(i));
    }
    let derive =
        |zip: &str, state: usize, county: Option<u16>, place: Option<&str>| -> Vec<u32> {
            let lower = place.map(str::to_lowercase);
            let mut ids: Vec<u32> = vec![];
            if let Some(c) = county {
                ids.extend(by_county.get(&(state, c)).into_iter().flatten());
            }
            if let Some(p) = lower.as_deref() {
                ids.extend(
                    by_place.get(&(state, p)).into_iter().flatten().filter(|&&i| {
                        drafts[i as usize].within.is_empty() || county.is_some_and(|c| drafts[i as usize].within.contains(&c))
                    }),
                );
            }
            ids.extend(by_zip.get(&(state, zip)).into_iter().flatten());
            ids.retain(|&i| {
                let t = &drafts[i as usize];
                !t.except_zips.contains(zip) && lower.as_deref().is_none_or(|p| !t.except_places.contains(p))
            });
            ids.sort_by_key(|&i| (level_order(&drafts[i as usize].tax), i));
            ids.dedup();
            ids
        };
    let states_with_taxes: HashSet<usize> = drafts.iter().map(|t| t.tax.state).collect();
    let mut rows_by_zip: HashMap<(String, usize), Vec<Row>> = HashMap::new();
    for r in rows {
        rows_by_zip.entry((r.zip.clone(), r.state)).or_default().push(r);
    }
    let mut keys: Vec<(String, usize)> = geo.zips.iter().flat_map(|(z, l)| l.iter().map(move |(s, _)| (format!("{z:05}"), *s))).collect();
    keys.extend(rows_by_zip.keys().cloned());
    keys.extend(notes.keys().cloned());
    keys.sort();
    keys.dedup();
    let mut t = LocalTables { entries: Vec::with_capacity(keys.len()), ..Default::default() };
    let push_area = |t: &mut LocalTables, plus4, from, to, taxes: &[u32], county| {
        let start = t.area_taxes.len() as u32;
        t.area_taxes.extend_from_slice(taxes);
        t.areas.push(Area { plus4, from, to, taxes: (start, t.area_taxes.len() as u32), county });
    };
    for (zip, state) in keys {
        let g = geo.get(&zip, state);
        let note = notes.remove(&(zip.clone(), state));
        let first_area = t.areas.len() as u32;
        let (placed, file) = match rows_by_zip.remove(&(zip.clone(), state)) {
            Some(rs) => {
                let file = rs.first().map(|r| r.span.file.clone());
                for r in rs {
                    push_area(&mut t, r.plus4, r.from, r.to, &r.taxes, None);
                }
                (Placed::Rows, file)
            }
            None if states_with_taxes.contains(&state) => {
                // One area for each county the ZIP overlaps and each post office that serves it.
                let places: Vec<Option<&str>> = match g {
                    Some(g) if !g.places.is_empty() => g.places.iter().map(|p| Some(&**p)).collect(),
                    _ => vec![None],
                };
                let counties: Vec<Option<u16>> = match g {
                    Some(g) if !g.counties.is_empty() => g.counties.iter().map(|c| Some(*c)).collect(),
                    _ => vec![None],
                };
                let mut seen: Vec<Vec<u32>> = vec![];
                for c in &counties {
                    for p in &places {
                        let taxes = derive(&zip, state, *c, *p);
                        if !seen.contains(&taxes) {
                            push_area(&mut t, None, None, None, &taxes, *c);
                            seen.push(taxes);
                        }
                    }
                }
                (Placed::Derived, note.as_ref().map(|n| n.span.file.clone()))
            }
            None => (Placed::Derived, note.as_ref().map(|n| n.span.file.clone())),
        };
        let locality =
            note.as_ref().and_then(|n| n.locality.as_deref().map(Arc::from)).or_else(|| g.and_then(|g| g.places.first().cloned()));
        let notes = match note {
            Some(n) => Some(Box::new(ZipNotes { split: n.split, note: n.note, divergences: n.divergences, file })),
            None => file.map(|file| Box::new(ZipNotes { file: Some(file), ..Default::default() })),
        };
        t.entries.push(ZipEntry {
            code: geo::zip_number(&zip).unwrap_or_default(),
            state: state as u8,
            placed,
            zcta: g.is_some_and(|g| g.zcta),
            locality,
            areas: (first_area, t.areas.len() as u32),
            notes,
        });
    }
    t.taxes = drafts.into_iter().map(|d| d.tax).collect();
    t.complete = complete.into_iter().map(|c| c.map(|(c, _)| c)).collect();
    t.county_names = geo.county_names;
    t.entries.shrink_to_fit();
    t.areas.shrink_to_fit();
    t.area_taxes.shrink_to_fit();
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plus4_ranges_read_both_ends() {
        assert_eq!(plus4_range("0001-0999"), Some((1, 999)));
        assert_eq!(plus4_range("1000-0999"), None);
        assert_eq!(plus4_range("100-0999"), None);
        assert_eq!(plus4_range("1000"), None);
    }

    #[test]
    fn the_state_of_a_file_is_its_first_name() {
        assert_eq!(state_of_file(Path::new("rules/local/tx.yaml")), state_index("TX"));
        assert_eq!(state_of_file(Path::new("rules/local/mn.sst.csv")), state_index("MN"));
        assert_eq!(state_of_file(Path::new("rules/local/xx.csv")), None);
    }
}
