//! Reads the rules' plain CSV tables (boundary rows, geography) keeping each field's line and column, so that a
//! wrong value gets the same located diagnostic as a YAML one. The tables hold no quoted fields: a quote, a
//! missing header or a row with the wrong number of fields is an error (R608).

use std::path::Path;
use std::sync::Arc;

use super::diag::{display_path, Diagnostic, SourceMap, Span};
use super::read::Diags;

/// One data row: its fields and where each starts.
pub struct Record {
    fields: Vec<(String, u32)>,
    pub line: u32,
    file: Arc<str>,
}

impl Record {
    pub fn field(&self, i: usize) -> &str {
        self.fields.get(i).map_or("", |(f, _)| f.as_str())
    }

    /// The span of field `i` (at least one character wide, so an empty field still gets a caret).
    pub fn span(&self, i: usize) -> Span {
        let (text, col) = self.fields.get(i).map_or(("", 1), |(f, c)| (f.as_str(), *c));
        Span::new(&self.file, self.line, col, text.chars().count() as u32)
    }

    /// The span of a part of field `i` that starts `offset` characters into it.
    pub fn span_in(&self, i: usize, offset: usize, len: usize) -> Span {
        self.span(i).inner(offset, len)
    }
}

pub struct Table {
    pub file: Arc<str>,
    pub records: Vec<Record>,
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
    parse(&file, &text, header, d)
}

pub fn parse(file: &Arc<str>, text: &str, header: &[&str], d: &mut Diags) -> Option<Table> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    let expected = header.join(",");
    match lines.next() {
        Some((_, l)) if l.trim_end_matches('\r') == expected => {}
        Some((n, l)) => {
            d.push(
                Diagnostic::error(
                    "R608",
                    Some(&Span::new(file, n as u32 + 1, 1, l.chars().count() as u32)),
                    "the table's header is not as expected",
                )
                .with_help(format!("the first line must be `{expected}`")),
            );
            return None;
        }
        None => {
            d.push(Diagnostic::error(
                "R608",
                Some(&Span::new(file, 1, 1, 1)),
                format!("the table is empty; it needs the header `{expected}`"),
            ));
            return None;
        }
    }
    let mut records = vec![];
    for (n, l) in lines {
        let line = n as u32 + 1;
        let l = l.trim_end_matches('\r');
        if let Some(q) = l.find('"') {
            let col = l[..q].chars().count() as u32 + 1;
            d.push(
                Diagnostic::error("R608", Some(&Span::new(file, line, col, 1)), "quoted fields are not read here")
                    .with_help("write the value without quotes and without commas"),
            );
            continue;
        }
        let mut fields = vec![];
        let mut col = 1u32;
        for f in l.split(',') {
            fields.push((f.to_string(), col));
            col += f.chars().count() as u32 + 1;
        }
        if fields.len() != header.len() {
            d.push(
                Diagnostic::error(
                    "R608",
                    Some(&Span::new(file, line, 1, l.chars().count() as u32)),
                    format!("this row has {} fields; the header has {}", fields.len(), header.len()),
                )
                .with_help(format!("the columns are `{expected}`")),
            );
            continue;
        }
        records.push(Record { fields, line, file: file.clone() });
    }
    Some(Table { file: file.clone(), records })
}
