//! Loads YAML into a tree whose every node keeps its file, line and column.
//!
//! A serde deserializer forgets where a value came from; analysts need a caret under the offending text, so
//! rule files are read through yaml-rust2's event parser into [`Node`]s instead. Duplicate keys,
//! anchors and aliases are rejected here (a rule file is plain data).

use std::sync::Arc;

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};

use super::diag::{Diagnostic, Span};

#[derive(Clone, Debug)]
pub enum NodeKind {
    /// A scalar's text; `quoted` is true for '…' and "…" (which are never null, bool or number).
    Scalar {
        text: String,
        quoted: bool,
    },
    Seq(Vec<Node>),
    Map(Vec<(Node, Node)>),
}

#[derive(Clone, Debug)]
pub struct Node {
    pub kind: NodeKind,
    pub span: Span,
}

impl Node {
    pub fn kind_name(&self) -> &'static str {
        match &self.kind {
            NodeKind::Scalar { .. } if self.is_null() => "null",
            NodeKind::Scalar { .. } => "a scalar",
            NodeKind::Seq(_) => "a list",
            NodeKind::Map(_) => "a mapping",
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(&self.kind, NodeKind::Scalar { text, quoted: false } if text.is_empty() || text == "~" || text == "null")
    }

    pub fn as_scalar(&self) -> Option<&str> {
        match &self.kind {
            NodeKind::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    /// The span of the text inside a scalar: past an opening quote.
    pub fn text_span(&self) -> Span {
        match &self.kind {
            NodeKind::Scalar { quoted: true, .. } => self.span.inner(1, self.span.len.saturating_sub(2) as usize),
            _ => self.span.clone(),
        }
    }
}

struct Builder {
    file: Arc<str>,
    stack: Vec<(Node, Option<Node>)>,
    root: Option<Node>,
    errors: Vec<Diagnostic>,
}

impl Builder {
    fn span(&self, m: &Marker, len: usize) -> Span {
        Span::new(&self.file, m.line() as u32, m.col() as u32 + 1, len as u32)
    }

    fn push_value(&mut self, node: Node) {
        match self.stack.last_mut() {
            None => self.root = Some(node),
            Some((parent, pending_key)) => match &mut parent.kind {
                NodeKind::Seq(items) => items.push(node),
                NodeKind::Map(entries) => match pending_key.take() {
                    None => {
                        if let Some(text) = node.as_scalar() {
                            if let Some((prev, _)) = entries.iter().find(|(k, _)| k.as_scalar() == Some(text)) {
                                self.errors.push(
                                    Diagnostic::error("R002", Some(&node.span), format!("duplicate key `{text}`"))
                                        .with_help(format!("the first `{text}` is at line {}", prev.span.line)),
                                );
                            }
                        }
                        *pending_key = Some(node);
                    }
                    Some(key) => entries.push((key, node)),
                },
                NodeKind::Scalar { .. } => {}
            },
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        match ev {
            Event::Scalar(text, style, anchor, _) => {
                let quoted = matches!(style, TScalarStyle::SingleQuoted | TScalarStyle::DoubleQuoted);
                let len = text.chars().count() + if quoted { 2 } else { 0 };
                let span = self.span(&mark, len);
                if anchor != 0 {
                    self.errors.push(Diagnostic::error("R003", Some(&span), "anchors and aliases are not allowed in rule files"));
                }
                self.push_value(Node { kind: NodeKind::Scalar { text, quoted }, span });
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                let span = self.span(&mark, 1);
                if anchor != 0 {
                    self.errors.push(Diagnostic::error("R003", Some(&span), "anchors and aliases are not allowed in rule files"));
                }
                let kind = if matches!(ev, Event::SequenceStart(..)) { NodeKind::Seq(vec![]) } else { NodeKind::Map(vec![]) };
                self.stack.push((Node { kind, span }, None));
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((node, _)) = self.stack.pop() {
                    self.push_value(node);
                }
            }
            Event::Alias(_) => {
                let span = self.span(&mark, 1);
                self.errors.push(Diagnostic::error("R003", Some(&span), "anchors and aliases are not allowed in rule files"));
                self.push_value(Node { kind: NodeKind::Scalar { text: String::new(), quoted: false }, span });
            }
            _ => {}
        }
    }
}

/// Parses one YAML document. A syntax error is one located diagnostic and no tree; duplicate keys
/// and anchors are diagnostics beside the tree, so the rest of the file is still checked.
pub fn parse(file: &Arc<str>, text: &str) -> Result<(Node, Vec<Diagnostic>), Vec<Diagnostic>> {
    let mut b = Builder { file: file.clone(), stack: vec![], root: None, errors: vec![] };
    let mut parser = Parser::new_from_str(text);
    if let Err(e) = parser.load(&mut b, false) {
        let m = e.marker();
        let span = Span::new(file, m.line() as u32, m.col() as u32 + 1, 1);
        return Err(vec![Diagnostic::error("R001", Some(&span), format!("invalid YAML: {}", e.info()))]);
    }
    match b.root {
        Some(root) => Ok((root, b.errors)),
        None => Err(vec![Diagnostic::error("R001", Some(&Span::new(file, 1, 1, 1)), "the file is empty")]),
    }
}
