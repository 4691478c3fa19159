//! Holding periods (IRC §1222; counting starts the day after acquisition and includes the day of
//! sale). Long-term means held *more than* the rule's months: a lot acquired 2025-03-15 is
//! long-term when sold on 2026-03-16 or later. A lot acquired on the last day of a month is
//! measured to the last day of the later month (2024-02-29 → long-term from 2025-03-01).

use chrono::{Months, NaiveDate};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Term {
    ShortTerm,
    LongTerm,
}

impl Term {
    pub fn name(self) -> &'static str {
        match self {
            Term::ShortTerm => "short_term",
            Term::LongTerm => "long_term",
        }
    }
}

/// Days held and the term, for a holding period that starts on `start` (the acquisition date, or
/// an earlier date when a wash sale tacked on the sold lot's holding period) and ends on `sold`.
pub fn holding(start: NaiveDate, sold: NaiveDate, more_than_months: u32) -> (i64, Term) {
    let days = (sold - start).num_days();
    let anniversary = start.checked_add_months(Months::new(more_than_months)).unwrap_or(NaiveDate::MAX);
    let term = if sold > anniversary { Term::LongTerm } else { Term::ShortTerm };
    (days, term)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn one_year_boundary() {
        assert_eq!(holding(d("2025-03-15"), d("2026-03-15"), 12), (365, Term::ShortTerm));
        assert_eq!(holding(d("2025-03-15"), d("2026-03-16"), 12), (366, Term::LongTerm));
        assert_eq!(holding(d("2025-02-05"), d("2026-02-05"), 12).1, Term::ShortTerm);
        assert_eq!(holding(d("2025-02-05"), d("2026-02-06"), 12).1, Term::LongTerm);
    }

    #[test]
    fn month_end_and_leap_day() {
        assert_eq!(holding(d("2024-02-29"), d("2025-02-28"), 12).1, Term::ShortTerm);
        assert_eq!(holding(d("2024-02-29"), d("2025-03-01"), 12), (366, Term::LongTerm));
    }
}
