//! One check of a rules directory, as `levy rules check` runs it and as the service's build script runs it
//! over `rules/`: the rule files loaded, checked and compiled, and the scenario files (`tests/`) read.

use std::path::Path;

use super::cases::{load_cases, Case};
use super::diag::{Diagnostic, Severity, SourceMap};
use super::load::load_dir_with;
use super::registry::Registry;

/// What checking a rules directory found.
pub struct Checked {
    /// The compiled rules; `None` when any rule file has an error.
    pub registry: Option<Registry>,
    pub cases: Vec<Case>,
    /// The rule files' diagnostics, then the scenario files'.
    pub diagnostics: Vec<Diagnostic>,
    pub sources: SourceMap,
}

impl Checked {
    pub fn errors(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.severity == Severity::Error).count()
    }

    /// The rules compiled and every scenario file read without an error.
    pub fn passed(&self) -> bool {
        self.registry.is_some() && self.errors() == 0
    }

    /// Every diagnostic as the analysts read it (code, file:line:col, the line, a caret, help), each followed
    /// by a blank line, then how many errors there are when there are any.
    pub fn render(&self) -> String {
        let mut out: String = self.diagnostics.iter().map(|d| self.sources.render(d) + "\n").collect();
        let errors = self.errors();
        if errors > 0 {
            out += &format!("{errors} error{} found\n", if errors == 1 { "" } else { "s" });
        }
        out
    }
}

/// Loads, checks and compiles `dir` and reads its scenario files. With `partial`, a missing jurisdiction is a
/// warning (a directory still being written).
pub fn check_dir(dir: &Path, partial: bool) -> Checked {
    let (registry, mut diagnostics, mut sources) = load_dir_with(dir, partial);
    let (cases, case_diagnostics) = load_cases(dir, &mut sources);
    diagnostics.extend(case_diagnostics);
    Checked { registry, cases, diagnostics, sources }
}

/// The check a build script runs over the rules it compiles in: [`check_dir`] with every jurisdiction
/// required. Returns the lines to print for cargo, each diagnostic line as a `cargo:warning=` line so that cargo
/// shows it, and, when there is an error, the message the build stops with.
pub fn build_check(dir: &Path) -> (Vec<String>, Result<(), String>) {
    let checked = check_dir(dir, false);
    let lines = checked.render().lines().map(|l| format!("cargo:warning={l}")).collect();
    if checked.passed() {
        return (lines, Ok(()));
    }
    let errors = checked.errors().max(1);
    let failure = format!(
        "the rule files in {} have {errors} error{} (listed above); fix them and build again",
        dir.display(),
        if errors == 1 { "" } else { "s" }
    );
    (lines, Err(failure))
}
