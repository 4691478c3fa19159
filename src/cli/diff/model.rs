//! The reviewer's diff as data: what `levy rules diff --format json` prints. These types are the one source of
//! its JSON Schema (`levy rules diff --schema`, kept in `docs/diff.schema.json`); text and markdown render them.

use chrono::NaiveDate;
use poem_openapi::{Enum, Object};

/// Two rule sets compared: what changed in their text, what that does to determinations, and the check's
/// findings when `--check` asked for them.
#[derive(Object, Clone, Debug)]
pub struct DiffReport {
    pub old: RuleSetRef,
    pub new: RuleSetRef,
    pub summary: Summary,
    /// Every rule, rate, jurisdiction, local tax, boundary, threshold, advisory, plan and case added, removed or
    /// changed, by id and file:line.
    pub changes: Vec<Change>,
    /// The determinations (and gains estimates, and plan terms) that change, grouped by jurisdiction, rule and
    /// effect, each group with the dates it holds.
    pub impacts: Vec<Impact>,
    /// Entries of the change log (`registry.yaml`) the new rule set adds.
    pub changelog_added: Vec<ChangelogEntry>,
    /// What `--check` found wrong (empty when it passes, or when it was not asked).
    pub problems: Vec<String>,
}

/// One side of the comparison.
#[derive(Object, Clone, Debug)]
pub struct RuleSetRef {
    /// Where the rules were read: a directory, or `git:REV`.
    pub source: String,
    /// The rule-set version of `registry.yaml`.
    pub version: String,
}

#[derive(Object, Clone, Debug)]
pub struct Summary {
    pub added: u32,
    pub removed: u32,
    pub changed: u32,
    /// Requests evaluated under both rule sets (each on each of its dates), at an amount of 1000 USD with nexus
    /// everywhere.
    pub evaluations: u64,
    /// Distinct requests whose determination changes on some date.
    pub inputs_changed: u64,
    /// The days compared: where the changed rules take effect or end, and where anything else in their
    /// jurisdictions changes inside those periods.
    pub dates_compared: Vec<NaiveDate>,
}

#[derive(Enum, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[oai(rename_all = "snake_case")]
pub enum ChangeKind {
    Registry,
    Jurisdiction,
    Rate,
    Rule,
    Threshold,
    LocalTax,
    Boundary,
    SpecialTax,
    Classification,
    Advisory,
    Gains,
    Plan,
    Case,
}

#[derive(Enum, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[oai(rename_all = "snake_case")]
pub enum ChangeOp {
    Added,
    Removed,
    Changed,
}

/// A structural change: one item of the rule files, and its fields that differ.
#[derive(Object, Clone, Debug)]
pub struct Change {
    pub kind: ChangeKind,
    pub op: ChangeOp,
    /// The item: a rule's id (`tx.taxability.saas`), a dated entry (`TX state_rate from 2027-01-01`), a local
    /// tax's id, a plan's id, a case's name.
    pub id: String,
    /// The state it belongs to, where it belongs to one.
    #[oai(skip_serializing_if_is_none)]
    pub jurisdiction: Option<String>,
    /// `file:line` in the new rule set (in the old one for a removed item), the file relative to the rules
    /// directory.
    pub location: String,
    /// For an added or removed item, its fields; for a changed one, the fields that differ.
    pub fields: Vec<FieldChange>,
}

/// A field old → new; `old` is absent for an added item or field, `new` for a removed one.
#[derive(Object, Clone, Debug, PartialEq)]
pub struct FieldChange {
    pub field: String,
    #[oai(skip_serializing_if_is_none)]
    pub old: Option<String>,
    #[oai(skip_serializing_if_is_none)]
    pub new: Option<String>,
}

#[derive(Enum, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[oai(rename_all = "snake_case")]
pub enum ImpactKind {
    /// Sales-tax determinations (`POST /calculate`).
    Determination,
    /// The gains tracker's federal and state estimates.
    Gains,
    /// What a plan costs or allows.
    Plan,
}

/// A group of changed answers: one jurisdiction, one rule (or rule change), one effect, one stretch of dates.
#[derive(Object, Clone, Debug)]
pub struct Impact {
    pub kind: ImpactKind,
    /// A state code, `US` for federal gains figures, or `plans`.
    pub jurisdiction: String,
    /// The rule that decides the answers (`old → new` when it differs), or the plan's id.
    pub rule: String,
    /// The effect in words: `tax 50.00 → 52.00 on 1000; +0.25 points; state rate 6.25% → 6.5%`.
    pub effect: String,
    /// The tax on 1000 USD (or the figure) before and after.
    #[oai(skip_serializing_if_is_none)]
    pub old: Option<String>,
    #[oai(skip_serializing_if_is_none)]
    pub new: Option<String>,
    /// The change of the rate applied, in percentage points (`+0.25`), where it changes.
    #[oai(skip_serializing_if_is_none)]
    pub points: Option<String>,
    /// The first day the effect holds.
    #[oai(skip_serializing_if_is_none)]
    pub from: Option<NaiveDate>,
    /// The last day it holds; absent when it holds from `from` on.
    #[oai(skip_serializing_if_is_none)]
    pub to: Option<NaiveDate>,
    /// How many requests (or estimates) of the grid it changes.
    pub inputs: u64,
    /// The values the group spans, by request field: transaction types, roles, ZIP codes (as ranges).
    pub dimensions: Vec<Dimension>,
}

/// The values one request field takes across a group.
#[derive(Object, Clone, Debug)]
pub struct Dimension {
    pub field: String,
    /// How many distinct values.
    pub count: u64,
    /// The values, runs of ZIP codes as ranges (`75001–75012`); at most 8, the rest counted in `count`.
    pub values: Vec<String>,
}

#[derive(Object, Clone, Debug)]
pub struct ChangelogEntry {
    pub date: NaiveDate,
    pub version: String,
    pub summary: String,
}
