//! Reads the rules' plain CSV tables (boundary rows, geography) keeping each field's line and column, so that a
//! wrong value gets the same located diagnostic as a YAML one. The tables hold no quoted fields: a quote, a
//! missing header or a row with the wrong number of fields is an error (R608). A table keeps its text once and
//! each field as a range of it.

use std::path::Path;
use std::sync::Arc;

use super::diag::{display_path, Diagnostic, SourceMap, Span};
use super::read::Diags;

pub struct Table {
    pub file: Arc<str>,
    text: String,
    width: usize,
    /// For each row: its line, and where its line starts in `text`.
    rows: Vec<(u32, u32)>,
    /// Each field of each row, `width` a row: its start and end in `text`.
    fields: Vec<(u32, u32)>,
}

/// One data row of a table.
#[derive(Clone, Copy)]
pub struct Record<'a> {
    table: &'a Table,
    row: usize,
    pub line: u32,
}

impl<'a> Record<'a> {
    pub fn field(&self, i: usize) -> &'a str {
        let t = self.table;
        match t.fields.get(self.row * t.width + i) {
            Some(&(a, b)) if i < t.width => t.text.get(a as usize..b as usize).unwrap_or(""),
            _ => "",
        }
    }

    /// The span of field `i` (at least one character wide, so an empty field still gets a caret).
    pub fn span(&self, i: usize) -> Span {
        let t = self.table;
        let line_start = t.rows.get(self.row).map_or(0, |r| r.1 as usize);
        let start = t.fields.get(self.row * t.width + i).filter(|_| i < t.width).map_or(line_start, |f| f.0 as usize);
        let col = t.text.get(line_start..start).map_or(0, |s| s.chars().count()) as u32 + 1;
        Span::new(&t.file, self.line, col, self.field(i).chars().count() as u32)
    }

    /// The span of a part of field `i` that starts `offset` characters into it.
    pub fn span_in(&self, i: usize, offset: usize, len: usize) -> Span {
        self.span(i).inner(offset, len)
    }
}

impl Table {
    pub fn records(&self) -> impl Iterator<Item = Record<'_>> {
        self.rows.iter().enumerate().map(move |(row, &(line, _))| Record { table: self, row, line })
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// Reads `path`, whose first line must be exactly `header`. Lines that are empty or start with `#` are skipped.
pub fn read(path: &Path, header: &[&str], sources: &mut SourceMap, d: &mut Diags) -> Option<Table> {
    let file = display_path(path);
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            d.push(Diagnostic::error("R001", Some(&Span::new(&file, 1, 1, 1)), format!("cannot read the file: {e}")));
            return None;
        }
    };
    sources.add(&file, &text);
    parse(&file, text, header, d)
}

pub fn parse(file: &Arc<str>, text: String, header: &[&str], d: &mut Diags) -> Option<Table> {
    let expected = header.join(",");
    let mut table = Table { file: file.clone(), text: String::new(), width: header.len(), rows: vec![], fields: vec![] };
    let mut offset = 0usize;
    let mut seen_header = false;
    for (n, raw) in text.split('\n').enumerate() {
        let start = offset;
        offset += raw.len() + 1;
        let line = n as u32 + 1;
        let l = raw.trim_end_matches('\r');
        if l.trim().is_empty() || l.starts_with('#') {
            continue;
        }
        let span = |col: u32, len: usize| Span::new(file, line, col, len as u32);
        if !seen_header {
            if l != expected {
                d.push(
                    Diagnostic::error("R608", Some(&span(1, l.chars().count())), "the table's header is not as expected")
                        .with_help(format!("the first line must be `{expected}`")),
                );
                return None;
            }
            seen_header = true;
            continue;
        }
        if let Some(q) = l.find('"') {
            let col = l[..q].chars().count() as u32 + 1;
            d.push(
                Diagnostic::error("R608", Some(&span(col, 1)), "quoted fields are not read here")
                    .with_help("write the value without quotes and without commas"),
            );
            continue;
        }
        let count = l.split(',').count();
        if count != header.len() {
            d.push(
                Diagnostic::error(
                    "R608",
                    Some(&span(1, l.chars().count())),
                    format!("this row has {count} fields; the header has {}", header.len()),
                )
                .with_help(format!("the columns are `{expected}`")),
            );
            continue;
        }
        let mut at = start;
        for f in l.split(',') {
            table.fields.push((at as u32, (at + f.len()) as u32));
            at += f.len() + 1;
        }
        table.rows.push((line, start as u32));
    }
    if !seen_header {
        d.push(Diagnostic::error("R608", Some(&Span::new(file, 1, 1, 1)), format!("the table is empty; it needs the header `{expected}`")));
        return None;
    }
    table.text = text;
    Some(table)
}
