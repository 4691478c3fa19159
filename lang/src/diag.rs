//! Diagnostics: located, coded messages for analysts, rendered with the source line and a caret.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

/// A place in a rule file. Lines and columns count from 1.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Span {
    pub file: Arc<str>,
    pub line: u32,
    pub col: u32,
    /// How many characters the caret underlines (at least 1).
    pub len: u32,
}

impl Span {
    pub fn new(file: &Arc<str>, line: u32, col: u32, len: u32) -> Span {
        Span { file: file.clone(), line, col, len: len.max(1) }
    }

    /// A span `offset` characters into this one (used for text inside a scalar), `len` long.
    pub fn inner(&self, offset: usize, len: usize) -> Span {
        Span { file: self.file.clone(), line: self.line, col: self.col + offset as u32, len: (len as u32).max(1) }
    }
}

impl std::fmt::Display for Span {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

/// One finding. `code` is stable (analysts and tests branch on it); `message` is lowercase without a
/// final period and quotes the analyst's input in backticks; advice goes in `help`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    pub span: Option<Span>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(code: &'static str, span: Option<&Span>, message: impl Into<String>) -> Diagnostic {
        Diagnostic { severity: Severity::Error, code, message: message.into(), span: span.cloned(), help: None }
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }

    /// Adds "did you mean `x`?" when one of `candidates` is close to `wrong`.
    pub fn suggest<'a>(self, wrong: &str, candidates: impl IntoIterator<Item = &'a str>) -> Diagnostic {
        match did_you_mean(wrong, candidates) {
            Some(best) => self.with_help(format!("did you mean `{best}`?")),
            None => self,
        }
    }
}

/// The closest candidate to `wrong`, if it is close enough to be a likely misspelling.
pub fn did_you_mean<'a>(wrong: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(&wrong.to_ascii_lowercase(), &c.to_ascii_lowercase());
        if score > 0.8 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}

/// The text of every file read, so diagnostics can quote the offending line.
#[derive(Default, Debug)]
pub struct SourceMap {
    files: HashMap<Arc<str>, Arc<str>>,
}

impl SourceMap {
    pub fn add(&mut self, name: &Arc<str>, text: &str) {
        self.files.insert(name.clone(), Arc::from(text));
    }

    fn line(&self, file: &str, line: u32) -> Option<&str> {
        self.files.get(file).and_then(|t| t.lines().nth(line.saturating_sub(1) as usize))
    }

    /// Renders one diagnostic the way an analyst reads it:
    ///
    /// ```text
    /// error[R204]: unknown fact `is_btob`
    ///   --> rules/states/tx.yaml:45:30
    ///    |
    /// 45 |     when: category == saas and is_btob
    ///    |                                ^^^^^^^
    ///    = help: did you mean `is_b2b`?
    /// ```
    pub fn render(&self, d: &Diagnostic) -> String {
        let mut out = String::new();
        let sev = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let _ = writeln!(out, "{sev}[{}]: {}", d.code, d.message);
        if let Some(span) = &d.span {
            let gutter = span.line.to_string().len();
            let pad = " ".repeat(gutter);
            let _ = writeln!(out, "{pad}--> {span}");
            if let Some(text) = self.line(&span.file, span.line) {
                let _ = writeln!(out, "{pad} |");
                let _ = writeln!(out, "{} | {}", span.line, text);
                let lead: String =
                    text.chars().take(span.col.saturating_sub(1) as usize).map(|c| if c == '\t' { '\t' } else { ' ' }).collect();
                let avail = text.chars().count().saturating_sub(span.col.saturating_sub(1) as usize).max(1);
                let width = (span.len as usize).min(avail).max(1);
                let _ = writeln!(out, "{pad} | {lead}{}", "^".repeat(width));
            }
        }
        if let Some(help) = &d.help {
            let pad = d.span.as_ref().map_or(0, |s| s.line.to_string().len());
            let _ = writeln!(out, "{} = help: {help}", " ".repeat(pad));
        }
        out
    }
}

/// A path shown in diagnostics: relative to the current directory when possible.
pub fn display_path(p: &std::path::Path) -> Arc<str> {
    let shown: PathBuf =
        std::env::current_dir().ok().and_then(|cwd| p.strip_prefix(&cwd).ok().map(|r| r.to_path_buf())).unwrap_or_else(|| p.to_path_buf());
    Arc::from(shown.to_string_lossy().as_ref())
}
