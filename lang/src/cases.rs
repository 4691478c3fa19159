//! Scenario cases (`rules/tests/*.yaml`): request facts, as_of and nexus in; the expected
//! determination's fields out. Loaded with locations so a failing case points at its file.

use std::path::Path;

use chrono::NaiveDate;
use rust_decimal::Decimal;
use serde_json::Value;

use super::diag::{Diagnostic, SourceMap, Span};
use super::read::read_yaml;
use super::read::{self, seq, Diags, Fields};
use super::schema::state_index;
use super::yaml::{Node, NodeKind};

#[derive(Clone, Debug)]
pub struct Case {
    pub name: String,
    pub as_of: NaiveDate,
    /// States with nexus; `None` when the case leaves nexus unconfigured.
    pub nexus: Option<Vec<usize>>,
    pub vendor_ytd: Option<Decimal>,
    pub request: Value,
    pub expect: Vec<(String, Value, Span)>,
    pub span: Span,
}

pub const EXPECT_KEYS: &[&str] = &[
    "total_tax",
    "combined_rate",
    "state_rate",
    "local_rate",
    "applied_rate",
    "taxable_amount",
    "final_determination",
    "rule",
    "sourcing_rule",
    "jurisdiction",
    "advisories",
    "no_advisories",
    "collected_by_marketplace",
    "marketplace_remitted_tax",
    "counts_toward_nexus_threshold",
    "tax_if_nexus",
    "special_tax",
    "threshold_1099",
    "threshold_exceeded",
    "confidence_level",
    "error",
    "sales_tax",
    "use_tax",
    "category",
    "work_type",
    "classification_basis",
];

/// YAML node → JSON value: plain scalars become numbers, booleans or null where they read as such.
pub fn to_json(node: &Node) -> Value {
    match &node.kind {
        NodeKind::Scalar { text, quoted: true } => Value::String(text.clone()),
        NodeKind::Scalar { .. } if node.is_null() => Value::Null,
        NodeKind::Scalar { text, .. } => match text.as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            t => serde_json::from_str::<serde_json::Number>(t).map(Value::Number).unwrap_or_else(|_| Value::String(t.to_string())),
        },
        NodeKind::Seq(items) => Value::Array(items.iter().map(to_json).collect()),
        NodeKind::Map(entries) => {
            Value::Object(entries.iter().map(|(k, v)| (k.as_scalar().unwrap_or("").to_string(), to_json(v))).collect())
        }
    }
}

pub fn load_cases(dir: &Path, sources: &mut SourceMap) -> (Vec<Case>, Diags) {
    let mut d = vec![];
    let mut out = vec![];
    let mut files: Vec<_> = std::fs::read_dir(dir.join("tests"))
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|x| x == "yaml")).collect())
        .unwrap_or_default();
    files.sort();
    for path in files {
        let Some(node) = read_yaml(&path, sources, &mut d) else { continue };
        let Some(f) = Fields::of(&node, "a test file", &["cases"], &mut d) else { continue };
        let Some(list) = f.req("cases", "a test file", &mut d) else { continue };
        for item in seq(list, "cases", &mut d) {
            let what = "a test case";
            let Some(c) = Fields::of(item, what, &["name", "as_of", "nexus", "vendor_ytd", "request", "expect", "note"], &mut d) else {
                continue;
            };
            let name = c.req_str("name", what, &mut d);
            let as_of = c.req_date("as_of", what, &mut d);
            let nexus = match c.get("nexus") {
                None if c.has("nexus") => Some(vec![]),
                None => None,
                Some(n) => Some(
                    seq(n, "nexus", &mut d)
                        .iter()
                        .filter_map(|s| {
                            let code = s.as_scalar().unwrap_or("");
                            let idx = state_index(code);
                            if idx.is_none() {
                                d.push(Diagnostic::error("R303", Some(&s.span), format!("`{code}` is not a state code")));
                            }
                            idx
                        })
                        .collect(),
                ),
            };
            let vendor_ytd = c.get("vendor_ytd").and_then(|n| read::money(n, &mut d));
            let request = c.req("request", what, &mut d).map(to_json);
            let mut expect = vec![];
            if let Some(e) = c.req("expect", what, &mut d) {
                if let Some(ef) = Fields::of(e, "`expect`", EXPECT_KEYS, &mut d) {
                    for (k, v) in ef.entries() {
                        expect.push((k.as_scalar().unwrap_or("").to_string(), to_json(v), v.span.clone()));
                    }
                }
            }
            if let (Some(name), Some(as_of), Some(request)) = (name, as_of, request) {
                out.push(Case { name, as_of, nexus, vendor_ytd, request, expect, span: item.span.clone() });
            }
        }
    }
    (out, d)
}
