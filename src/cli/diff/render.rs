//! The diff rendered: text for a terminal (coloured only when stdout is one), markdown for a pull-request comment
//! (a summary table, then the details), JSON for tools, and the JSON Schema of that JSON, derived from model.rs.

use std::fmt::Write as _;

use poem_openapi::types::{ToJSON, Type};
use serde_json::{json, Value};

use super::model::{Change, ChangeOp, DiffReport, Impact};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Text,
    Markdown,
    Json,
}

impl Format {
    pub fn parse(text: Option<&str>) -> Result<Format, String> {
        match text {
            None | Some("text") => Ok(Format::Text),
            Some("markdown" | "md") => Ok(Format::Markdown),
            Some("json") => Ok(Format::Json),
            Some(other) => Err(format!("unknown format `{other}`: text, markdown or json")),
        }
    }
}

pub fn render(report: &DiffReport, format: Format, colour: bool) -> String {
    match format {
        Format::Text => text(report, colour),
        Format::Markdown => markdown(report),
        Format::Json => format!("{}\n", json(report)),
    }
}

pub fn json(report: &DiffReport) -> String {
    let value = report.to_json().unwrap_or(Value::Null);
    serde_json::to_string_pretty(&value).unwrap_or_default()
}

/// The JSON Schema (2020-12) of `--format json`: the OpenAPI schemas poem-openapi derives from model.rs, with
/// their references pointed at `$defs`.
pub fn json_schema() -> String {
    let mut registry = poem_openapi::registry::Registry::new();
    DiffReport::register(&mut registry);
    let mut defs = serde_json::Map::new();
    for (name, schema) in &registry.schemas {
        let mut v = serde_json::to_value(schema).unwrap_or(Value::Null);
        rewrite_refs(&mut v);
        // As in the API's documents, an object that lists its properties takes no others.
        if let Some(m) = v.as_object_mut().filter(|m| m.contains_key("properties")) {
            m.insert("additionalProperties".into(), Value::Bool(false));
        }
        defs.insert(name.clone(), v);
    }
    let doc = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://levy.tax/schemas/rules-diff.json",
        "title": "levy rules diff --format json",
        "$ref": format!("#/$defs/{}", DiffReport::name()),
        "$defs": defs,
    });
    serde_json::to_string_pretty(&doc).unwrap_or_default()
}

fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                *r = r.replace("#/components/schemas/", "#/$defs/");
            }
            m.values_mut().for_each(rewrite_refs);
        }
        Value::Array(a) => a.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

fn op_word(op: ChangeOp) -> &'static str {
    match op {
        ChangeOp::Added => "added",
        ChangeOp::Removed => "removed",
        ChangeOp::Changed => "changed",
    }
}

fn kind_word(c: &Change) -> String {
    format!("{:?}", c.kind).chars().enumerate().fold(String::new(), |mut s, (i, ch)| {
        if ch.is_uppercase() && i > 0 {
            s.push(' ');
        }
        s.push(ch.to_ascii_lowercase());
        s
    })
}

/// `field old → new`, `field value` (added), `field was value` (removed).
fn field_text(f: &super::model::FieldChange) -> String {
    match (&f.old, &f.new) {
        (Some(o), Some(n)) => format!("{} {o} → {n}", f.field),
        (None, Some(n)) => format!("{} {n}", f.field),
        (Some(o), None) => format!("{} was {o}", f.field),
        (None, None) => f.field.clone(),
    }
}

fn dates_text(i: &Impact) -> String {
    match (i.from, i.to) {
        (Some(f), Some(t)) => format!("{f} to {t}"),
        (Some(f), None) => format!("from {f}"),
        _ => String::new(),
    }
}

fn spans_text(i: &Impact) -> String {
    i.dimensions
        .iter()
        .map(|d| {
            let more = if d.count as usize > d.values.len() && d.field != "buyer_zip" { ", …" } else { "" };
            let n = if d.field == "buyer_zip" { format!("{} ZIP codes", d.count) } else { d.count.to_string() };
            format!("{} {n} ({}{more})", d.field, d.values.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

fn headline(r: &DiffReport) -> String {
    let s = &r.summary;
    format!(
        "{} added, {} removed, {} changed; {} request{} change ({} evaluations on {} date{})",
        s.added,
        s.removed,
        s.changed,
        s.inputs_changed,
        if s.inputs_changed == 1 { "" } else { "s" },
        s.evaluations,
        s.dates_compared.len(),
        if s.dates_compared.len() == 1 { "" } else { "s" }
    )
}

pub fn text(r: &DiffReport, colour: bool) -> String {
    let paint = |code: &str, s: &str| if colour { format!("\x1b[{code}m{s}\x1b[0m") } else { s.to_string() };
    let mut out = String::new();
    let _ = writeln!(out, "rules diff {} ({}) → {} ({})", r.old.version, r.old.source, r.new.version, r.new.source);
    let _ = writeln!(out, "{}", headline(r));
    if !r.changes.is_empty() {
        let _ = writeln!(out, "\nchanges:");
    }
    for c in &r.changes {
        let (mark, code) = match c.op {
            ChangeOp::Added => ("+", "32"),
            ChangeOp::Removed => ("-", "31"),
            ChangeOp::Changed => ("~", "33"),
        };
        let _ = writeln!(out, "  {} {} {} {}  {}", paint(code, mark), kind_word(c), c.id, op_word(c.op), c.location);
        for f in &c.fields {
            let _ = writeln!(out, "      {}", field_text(f));
        }
    }
    if !r.impacts.is_empty() {
        let _ = writeln!(out, "\nimpact (amount 1000 USD, nexus everywhere):");
    }
    for i in &r.impacts {
        let n = if i.inputs > 0 { format!(": {} request{}", i.inputs, if i.inputs == 1 { "" } else { "s" }) } else { String::new() };
        let _ = writeln!(out, "  {} {}: {} {}{n}", i.jurisdiction, i.rule, i.effect, dates_text(i));
        if !i.dimensions.is_empty() {
            let _ = writeln!(out, "      {}", spans_text(i));
        }
    }
    if !r.changelog_added.is_empty() {
        let _ = writeln!(out, "\nchange log entries added:");
        for c in &r.changelog_added {
            let _ = writeln!(out, "  {} ({}): {}", c.date, c.version, c.summary);
        }
    }
    if !r.problems.is_empty() {
        let _ = writeln!(out, "\n{}", paint("31", "check failed:"));
        for p in &r.problems {
            let _ = writeln!(out, "  {p}");
        }
    }
    out
}

/// A markdown cell: pipes escaped, no line breaks.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub fn markdown(r: &DiffReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### Rules diff {} → {}\n", r.old.version, r.new.version);
    let s = &r.summary;
    let _ = writeln!(out, "| added | removed | changed | requests changed | evaluations | dates compared |");
    let _ = writeln!(out, "|---:|---:|---:|---:|---:|---|");
    let dates: Vec<String> = s.dates_compared.iter().take(6).map(|d| d.to_string()).collect();
    let more = if s.dates_compared.len() > 6 { format!(" … ({} in all)", s.dates_compared.len()) } else { String::new() };
    let _ = writeln!(
        out,
        "| {} | {} | {} | {} | {} | {}{more} |",
        s.added,
        s.removed,
        s.changed,
        s.inputs_changed,
        s.evaluations,
        dates.join(", ")
    );
    if !r.problems.is_empty() {
        let _ = writeln!(out, "\n**Check failed**\n");
        for p in &r.problems {
            let _ = writeln!(out, "- {}", cell(p));
        }
    }
    if !r.changes.is_empty() {
        let _ = writeln!(out, "\n#### Changes\n");
    }
    for c in &r.changes {
        let fields: Vec<String> = c.fields.iter().map(|f| cell(&field_text(f))).collect();
        let _ = writeln!(out, "- **{}** {} `{}` (`{}`): {}", op_word(c.op), kind_word(c), c.id, c.location, fields.join("; "));
    }
    if !r.impacts.is_empty() {
        let _ = writeln!(out, "\n#### Impact (amount 1000 USD, nexus everywhere)\n");
        let _ = writeln!(out, "| where | rule | effect | requests | dates | spans |");
        let _ = writeln!(out, "|---|---|---|---:|---|---|");
    }
    for i in &r.impacts {
        let _ = writeln!(
            out,
            "| {} | `{}` | {} | {} | {} | {} |",
            i.jurisdiction,
            cell(&i.rule),
            cell(&i.effect),
            i.inputs,
            dates_text(i),
            cell(&spans_text(i))
        );
    }
    if !r.changelog_added.is_empty() {
        let _ = writeln!(out, "\n#### Change log\n");
        for c in &r.changelog_added {
            let _ = writeln!(out, "- {} ({}): {}", c.date, c.version, cell(&c.summary));
        }
    }
    out
}
