//! Typed reading of marked YAML nodes: mappings with a closed set of keys, dates, percentages,
//! money and citations, each failure a located diagnostic.

use std::collections::HashMap;
use std::path::Path;

use chrono::NaiveDate;
use rust_decimal::Decimal;

use super::ast::Cond;
use super::dated::{Citation, Dated};
use super::diag::{display_path, Diagnostic, SourceMap, Span};
use super::parse::{self, ExprSource};
use super::yaml::{self, Node, NodeKind};

pub type Diags = Vec<Diagnostic>;

/// A mapping whose keys were checked against the allowed set.
pub struct Fields<'a> {
    pub node: &'a Node,
    entries: &'a [(Node, Node)],
}

impl<'a> Fields<'a> {
    /// Reads `node` as a mapping with keys from `allowed`; reports every unknown key.
    pub fn of(node: &'a Node, what: &str, allowed: &[&str], d: &mut Diags) -> Option<Fields<'a>> {
        let NodeKind::Map(entries) = &node.kind else {
            d.push(Diagnostic::error("R101", Some(&node.span), format!("{what} must be a mapping, found {}", node.kind_name())));
            return None;
        };
        for (k, v) in entries {
            let key = k.as_scalar().unwrap_or("");
            if !allowed.contains(&key) {
                let diag = Diagnostic::error("R103", Some(&k.span), format!("unknown key `{key}` in {what}"));
                // `{ name: A (B, C) }` splits at the comma: `C)` becomes a key with no value.
                let diag = if v.is_null() && !key.is_empty() && k.span.line == node.span.line {
                    diag.with_help("a comma inside an unquoted value in `{ … }` starts a new key; put the value in quotes")
                } else {
                    diag.suggest(key, allowed.iter().copied()).or_help(format!("allowed keys: {}", allowed.join(", ")))
                };
                d.push(diag);
            }
        }
        Some(Fields { node, entries })
    }

    pub fn get(&self, key: &str) -> Option<&'a Node> {
        self.entries.iter().find(|(k, _)| k.as_scalar() == Some(key)).map(|(_, v)| v).filter(|v| !v.is_null())
    }

    pub fn has(&self, key: &str) -> bool {
        self.entries.iter().any(|(k, _)| k.as_scalar() == Some(key))
    }

    pub fn req(&self, key: &str, what: &str, d: &mut Diags) -> Option<&'a Node> {
        let v = self.get(key);
        if v.is_none() {
            d.push(Diagnostic::error("R102", Some(&self.node.span), format!("{what} is missing `{key}`")));
        }
        v
    }

    pub fn entries(&self) -> &'a [(Node, Node)] {
        self.entries
    }

    pub fn opt_str(&self, key: &str, d: &mut Diags) -> Option<String> {
        self.get(key).and_then(|n| string(n, key, d))
    }

    pub fn req_str(&self, key: &str, what: &str, d: &mut Diags) -> Option<String> {
        self.req(key, what, d).and_then(|n| string(n, key, d))
    }

    pub fn req_date(&self, key: &str, what: &str, d: &mut Diags) -> Option<NaiveDate> {
        self.req(key, what, d).and_then(|n| date(n, d))
    }

    pub fn opt_date(&self, key: &str, d: &mut Diags) -> Option<Option<NaiveDate>> {
        match self.get(key) {
            None => Some(None),
            Some(n) => date(n, d).map(Some),
        }
    }

    /// `cite:` (required), `url:` and `checked:` (optional; the day the figure was last compared with the source).
    pub fn citation(&self, what: &str, d: &mut Diags) -> Option<Citation> {
        let cite = match self.get("cite") {
            Some(n) => string(n, "cite", d)?,
            None => {
                d.push(
                    Diagnostic::error("R502", Some(&self.node.span), format!("{what} has no citation"))
                        .with_help("add `cite:` naming the statute, regulation or ruling it rests on"),
                );
                return None;
            }
        };
        if cite.trim().is_empty() {
            d.push(Diagnostic::error("R502", Some(&self.node.span), format!("{what} has an empty citation")));
            return None;
        }
        let checked = self.opt_date("checked", d)?;
        Some(Citation { cite, url: self.opt_str("url", d), checked })
    }

    /// `when:` parsed as a condition, when present.
    pub fn condition(&self, d: &mut Diags) -> Option<Option<Cond>> {
        match self.get("when") {
            None => Some(None),
            Some(n) => expr(n, d, parse::condition).map(Some),
        }
    }

    /// A list of strings (`advisories: [A, B]`).
    pub fn str_list(&self, key: &str, d: &mut Diags) -> Vec<(String, Span)> {
        match self.get(key) {
            None => vec![],
            Some(n) => match &n.kind {
                NodeKind::Seq(items) => items.iter().filter_map(|i| string(i, key, d).map(|s| (s, i.span.clone()))).collect(),
                _ => {
                    d.push(Diagnostic::error("R101", Some(&n.span), format!("`{key}` must be a list")));
                    vec![]
                }
            },
        }
    }
}

trait OrHelp {
    fn or_help(self, help: String) -> Self;
}

impl OrHelp for Diagnostic {
    fn or_help(self, help: String) -> Self {
        if self.help.is_some() {
            self
        } else {
            self.with_help(help)
        }
    }
}

pub fn seq<'a>(node: &'a Node, what: &str, d: &mut Diags) -> &'a [Node] {
    match &node.kind {
        NodeKind::Seq(items) => items,
        _ => {
            d.push(Diagnostic::error("R101", Some(&node.span), format!("{what} must be a list, found {}", node.kind_name())));
            &[]
        }
    }
}

pub fn string(node: &Node, key: &str, d: &mut Diags) -> Option<String> {
    match &node.kind {
        NodeKind::Scalar { text, .. } if !node.is_null() => Some(text.clone()),
        _ => {
            d.push(Diagnostic::error("R104", Some(&node.span), format!("`{key}` must be text, found {}", node.kind_name())));
            None
        }
    }
}

pub fn date(node: &Node, d: &mut Diags) -> Option<NaiveDate> {
    let text = node.as_scalar().unwrap_or("");
    match NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        Ok(day) if text.len() == 10 => Some(day),
        _ => {
            d.push(
                Diagnostic::error("R105", Some(&node.span), format!("`{text}` is not a date"))
                    .with_help("write dates as YYYY-MM-DD, e.g. 2026-01-01"),
            );
            None
        }
    }
}

/// `6.25%` → 0.0625.
pub fn percent(node: &Node, d: &mut Diags) -> Option<Decimal> {
    let text = node.as_scalar().unwrap_or("");
    let parsed = text.strip_suffix('%').and_then(|n| parse::parse_percent_number(n.trim()));
    if parsed.is_none() {
        d.push(
            Diagnostic::error("R106", Some(&node.span), format!("`{text}` is not a percentage"))
                .with_help("write a rate with a percent sign, e.g. `6.25%`"),
        );
    }
    parsed
}

pub fn money(node: &Node, d: &mut Diags) -> Option<Decimal> {
    let text = node.as_scalar().unwrap_or("");
    match text.parse::<Decimal>() {
        Ok(v) if v >= Decimal::ZERO => Some(v),
        _ => {
            d.push(
                Diagnostic::error("R107", Some(&node.span), format!("`{text}` is not an amount of money"))
                    .with_help("write a plain non-negative number, e.g. 100000"),
            );
            None
        }
    }
}

pub fn boolean(node: &Node, d: &mut Diags) -> Option<bool> {
    match node.as_scalar() {
        Some("true") => Some(true),
        Some("false") => Some(false),
        other => {
            d.push(Diagnostic::error("R108", Some(&node.span), format!("`{}` is not true or false", other.unwrap_or("?"))));
            None
        }
    }
}

/// Parses a scalar holding an expression with `f`, mapping offsets to the file.
pub fn expr<T>(node: &Node, d: &mut Diags, f: impl Fn(&ExprSource) -> Result<T, Diags>) -> Option<T> {
    let NodeKind::Scalar { text, .. } = &node.kind else {
        d.push(Diagnostic::error("R104", Some(&node.span), format!("an expression must be text, found {}", node.kind_name())));
        return None;
    };
    let src = ExprSource { text, span: node.text_span() };
    match f(&src) {
        Ok(v) => Some(v),
        Err(mut e) => {
            d.append(&mut e);
            None
        }
    }
}

/// Reads and parses one YAML file, recording its text for diagnostics.
pub fn read_yaml(path: &Path, sources: &mut SourceMap, d: &mut Diags) -> Option<Node> {
    let name = display_path(path);
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            d.push(Diagnostic::error("R001", Some(&Span::new(&name, 1, 1, 1)), format!("cannot read the file: {e}")));
            return None;
        }
    };
    sources.add(&name, &text);
    match yaml::parse(&name, &text) {
        Ok((n, mut warnings)) => {
            d.append(&mut warnings);
            Some(n)
        }
        Err(mut e) => {
            d.append(&mut e);
            None
        }
    }
}

pub(crate) fn yaml_files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml")).collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

pub(crate) trait HelpIfNone {
    fn with_help_if_none(self, help: &str) -> Self;
}
impl HelpIfNone for Diagnostic {
    fn with_help_if_none(self, help: &str) -> Self {
        if self.help.is_some() {
            self
        } else {
            self.with_help(help)
        }
    }
}

pub(crate) fn register_id(id: &str, span: &Span, ids: &mut HashMap<String, Span>, d: &mut Diags) {
    if !id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-' | '_')) || id.is_empty() {
        d.push(Diagnostic::error("R112", Some(span), format!("rule id `{id}` must be lowercase letters, digits, dots and dashes")));
    }
    if let Some(prev) = ids.get(id) {
        d.push(Diagnostic::error("R501", Some(span), format!("duplicate rule id `{id}`")).with_help(format!("the first is at {prev}")));
    } else {
        ids.insert(id.to_string(), span.clone());
    }
}

pub(crate) fn enum_value(node: &Node, kind: &'static [&'static str], what: &str, d: &mut Diags) -> Option<u16> {
    let text = node.as_scalar().unwrap_or("");
    match kind.iter().position(|k| *k == text) {
        Some(i) => Some(i as u16),
        None => {
            d.push(
                Diagnostic::error("R205", Some(&node.span), format!("`{text}` is not a {what}"))
                    .suggest(text, kind.iter().copied())
                    .with_help_if_none(&format!("{what}s: {}", kind.join(", "))),
            );
            None
        }
    }
}

pub(crate) fn dated_list<T>(
    f: &Fields,
    key: &str,
    what: &str,
    extra: &[&str],
    value: &mut dyn FnMut(&Fields, &mut Diags) -> Option<T>,
    d: &mut Diags,
) -> Option<Vec<Dated<T>>> {
    let list = f.req(key, what, d)?;
    let mut out = vec![];
    let mut ok = true;
    let mut keys = vec!["from", "to", "cite", "url", "checked", "note"];
    keys.extend_from_slice(extra);
    for item in seq(list, key, d) {
        let Some(e) = Fields::of(item, &format!("an entry of `{key}`"), &keys, d) else {
            ok = false;
            continue;
        };
        let from = e.req_date("from", &format!("an entry of `{key}`"), d);
        let to = e.opt_date("to", d);
        let v = value(&e, d);
        let citation = e.citation(&format!("an entry of `{key}`"), d);
        match (from, to, v, citation) {
            (Some(from), Some(to), Some(value), Some(citation)) => out.push(Dated { from, to, value, citation, span: item.span.clone() }),
            _ => ok = false,
        }
    }
    if out.is_empty() && ok {
        d.push(Diagnostic::error("R102", Some(&list.span), format!("`{key}` needs at least one dated entry")));
        return None;
    }
    ok.then_some(out)
}
