//! Values in force between two dates, and the citations they rest on: the bottom of the registry's types.

use chrono::NaiveDate;

use super::diag::Span;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Citation {
    pub cite: String,
    pub url: Option<String>,
    /// The day the figure was last compared with the cited source (`checked:`), where the file records one.
    pub checked: Option<NaiveDate>,
}

/// A value in force from `from` through `to` (inclusive; open when `None`).
#[derive(Clone, Debug)]
pub struct Dated<T> {
    pub from: NaiveDate,
    pub to: Option<NaiveDate>,
    pub value: T,
    pub citation: Citation,
    pub span: Span,
}

impl<T> Dated<T> {
    pub fn covers(&self, day: NaiveDate) -> bool {
        self.from <= day && self.to.is_none_or(|t| day <= t)
    }
}

/// The entry of a dated list in force on `day`.
pub fn in_force<T>(list: &[Dated<T>], day: NaiveDate) -> Option<&Dated<T>> {
    list.iter().find(|d| d.covers(day))
}
