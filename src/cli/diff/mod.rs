//! `levy rules diff`: the reviewer's diff of two rule sets. First what changed in the rule files (structural.rs),
//! then what that does to determinations, grouped (impact.rs), rendered for a terminal, a pull request or a tool
//! (render.rs, model.rs); the rule sets come from directories or from two git revisions (git.rs), and `--check`
//! holds a change to the project's rules for versioning, citations and cases (check.rs).

mod check;
mod git;
mod impact;
pub mod model;
mod render;
mod structural;

use std::path::{Path, PathBuf};

use chrono::NaiveDate;

use crate::rules::cases::{self, Case};
use crate::rules::diag::display_path;
use crate::rules::Registry;

pub use model::DiffReport;
pub use render::{json_schema, render, Format};

/// One side of the comparison, loaded: the registry, the plans and the scenario cases of a rules directory.
pub struct RuleSet {
    /// What the reader is told: the directory, or `git:REV`.
    pub source: String,
    pub dir: PathBuf,
    pub reg: Registry,
    pub plans: Option<crate::plans::Plans>,
    pub cases: Vec<Case>,
}

impl RuleSet {
    /// Loads a rules directory, printing its diagnostics; `None` when it does not load.
    pub fn load(dir: &Path, source: String) -> Option<RuleSet> {
        let (reg, mut sources) = super::load_or_report(dir)?;
        let (cases, _) = cases::load_cases(dir, &mut sources);
        let plans = crate::plans::Plans::load(dir, &crate::config::X402::default(), &mut sources).ok();
        Some(RuleSet { source, dir: dir.to_path_buf(), reg, plans, cases })
    }

    /// A file of this rule set as the diff names it: relative to the rules directory.
    pub fn relative(&self, file: &str) -> String {
        let root = display_path(&self.dir);
        file.strip_prefix(&*root).map(|f| f.trim_start_matches('/')).unwrap_or(file).to_string()
    }
}

/// What `levy rules diff` was asked.
#[derive(clap::Args)]
pub struct DiffArgs {
    /// The old rules directory (or give --git).
    pub old: Option<PathBuf>,
    /// The new rules directory.
    pub new: Option<PathBuf>,
    /// Compare rules/ of this repository at BASE and HEAD (BASE..HEAD), or at BASE and the working tree (BASE).
    #[arg(long, value_name = "BASE[..HEAD]")]
    pub git: Option<String>,
    /// Compare on this day only (YYYY-MM-DD) instead of the days the changes start and end.
    #[arg(long)]
    pub as_of: Option<String>,
    /// text (the default; coloured on a terminal), markdown (for a pull request) or json (docs/diff.schema.json).
    #[arg(long)]
    pub format: Option<String>,
    /// Exit 1 when the rules changed without a higher registry version and a change-log entry for it, a changed
    /// rate does not cite its new figure's source, or a case's expectation changed without its rules changing.
    #[arg(long)]
    pub check: bool,
    /// Print the JSON Schema of --format json and exit.
    #[arg(long)]
    pub schema: bool,
}

/// Runs the command: 0; 1 when `--check` finds a problem; 2 when there is nothing to compare (a bad argument, a
/// revision that does not exist, a rule set that does not load).
pub fn diff(args: &DiffArgs) -> u8 {
    if args.schema {
        println!("{}", render::json_schema());
        return 0;
    }
    let format = match Format::parse(args.format.as_deref()) {
        Ok(f) => f,
        Err(e) => return usage(&e),
    };
    let as_of = match args.as_of.as_deref().map(|t| super::as_of_or_today(Some(t))).transpose() {
        Ok(d) => d,
        Err(e) => return usage(&e),
    };
    let loaded = match (&args.git, &args.old, &args.new) {
        (Some(spec), None, None) => git::load(spec),
        (None, Some(old), Some(new)) => Ok((old.clone(), new.clone(), None)),
        _ => return usage("give two rules directories (OLD NEW), or --git BASE[..HEAD]"),
    };
    let (old_dir, new_dir, guard) = match loaded {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let label = |dir: &Path, rev: Option<&str>| rev.map_or_else(|| dir.display().to_string(), |r| format!("git:{r}"));
    let (old_label, new_label) = match &guard {
        Some(g) => (label(&old_dir, Some(&g.base)), label(&new_dir, g.head.as_deref())),
        None => (label(&old_dir, None), label(&new_dir, None)),
    };
    let Some(old) = RuleSet::load(&old_dir, old_label.clone()) else { return cannot_load(&old_label) };
    let Some(new) = RuleSet::load(&new_dir, new_label.clone()) else { return cannot_load(&new_label) };
    let report = compare(&old, &new, as_of, args.check);
    drop(guard);
    let colour = format == Format::Text && std::io::IsTerminal::is_terminal(&std::io::stdout());
    print!("{}", render::render(&report, format, colour));
    if args.check {
        for p in &report.problems {
            eprintln!("check: {p}");
        }
        if !report.problems.is_empty() {
            return 1;
        }
        eprintln!("check: ok");
    }
    0
}

fn cannot_load(source: &str) -> u8 {
    eprintln!("error: the rules of {source} do not load (diagnostics above): nothing to compare");
    2
}

fn usage(e: &str) -> u8 {
    eprintln!("error: {e}");
    2
}

/// The whole diff of two loaded rule sets; `as_of` compares on that day only; `check` adds what `--check` finds.
pub fn compare(old: &RuleSet, new: &RuleSet, as_of: Option<NaiveDate>, check: bool) -> DiffReport {
    let found = structural::changes(old, new);
    let problems = if check { check::problems(old, new, &found) } else { vec![] };
    let impacts = impact::impacts(old, new, &found, as_of);
    let count = |op| found.iter().filter(|f| f.change.op == op).count() as u32;
    let known: std::collections::BTreeSet<(NaiveDate, &str)> = old.reg.changelog.iter().map(|c| (c.date, c.summary.as_str())).collect();
    let changelog_added = new
        .reg
        .changelog
        .iter()
        .filter(|c| !known.contains(&(c.date, c.summary.as_str())))
        .map(|c| model::ChangelogEntry { date: c.date, version: c.version.clone(), summary: c.summary.clone() })
        .collect();
    DiffReport {
        old: model::RuleSetRef { source: old.source.clone(), version: old.reg.version.clone() },
        new: model::RuleSetRef { source: new.source.clone(), version: new.reg.version.clone() },
        summary: model::Summary {
            added: count(model::ChangeOp::Added),
            removed: count(model::ChangeOp::Removed),
            changed: count(model::ChangeOp::Changed),
            evaluations: impacts.evaluations,
            inputs_changed: impacts.inputs_changed,
            dates_compared: impacts.dates,
        },
        changes: found.into_iter().map(|f| f.change).collect(),
        impacts: impacts.groups,
        changelog_added,
        problems,
    }
}
