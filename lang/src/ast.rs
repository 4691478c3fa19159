//! The AST of conditions and outcomes. Every node keeps the span of its source text; equality
//! ignores spans (two rules that say the same thing are equal wherever they are written).

use rust_decimal::Decimal;

use super::diag::Span;
use super::schema::Fact;

/// A condition after name resolution: facts are schema entries, values are indices into the
/// fact's value list (booleans: 0 false, 1 true).
#[derive(Clone, Debug)]
pub enum Cond {
    And(Vec<Cond>),
    Or(Vec<Cond>),
    Not(Box<Cond>),
    /// `fact in {..}` (negated: `not in`).
    In {
        fact: Fact,
        values: Vec<u16>,
        negated: bool,
        span: Span,
    },
    /// `fact == v` (negated: `!=`).
    Eq {
        fact: Fact,
        value: u16,
        negated: bool,
        span: Span,
    },
    /// `fact is set` (negated: `is not set`).
    Set {
        fact: Fact,
        negated: bool,
        span: Span,
    },
    /// A boolean fact on its own.
    Flag {
        fact: Fact,
        span: Span,
    },
}

impl PartialEq for Cond {
    fn eq(&self, other: &Cond) -> bool {
        use Cond::*;
        match (self, other) {
            (And(a), And(b)) | (Or(a), Or(b)) => a == b,
            (Not(a), Not(b)) => a == b,
            (In { fact: f1, values: v1, negated: n1, .. }, In { fact: f2, values: v2, negated: n2, .. }) => {
                f1 == f2 && v1 == v2 && n1 == n2
            }
            (Eq { fact: f1, value: v1, negated: n1, .. }, Eq { fact: f2, value: v2, negated: n2, .. }) => f1 == f2 && v1 == v2 && n1 == n2,
            (Set { fact: f1, negated: n1, .. }, Set { fact: f2, negated: n2, .. }) => f1 == f2 && n1 == n2,
            (Flag { fact: f1, .. }, Flag { fact: f2, .. }) => f1 == f2,
            _ => false,
        }
    }
}

impl Cond {
    /// Calls `f` on every fact the condition names, with the values it names.
    pub fn visit_facts(&self, f: &mut impl FnMut(Fact, &[u16])) {
        match self {
            Cond::And(v) | Cond::Or(v) => v.iter().for_each(|c| c.visit_facts(f)),
            Cond::Not(c) => c.visit_facts(f),
            Cond::In { fact, values, .. } => f(*fact, values),
            Cond::Eq { fact, value, .. } => f(*fact, std::slice::from_ref(value)),
            Cond::Set { fact, .. } | Cond::Flag { fact, .. } => f(*fact, &[]),
        }
    }

    /// The conjuncts at the top level (a condition that is not an `and` is its own single conjunct).
    pub fn conjuncts(&self) -> &[Cond] {
        match self {
            Cond::And(v) => v,
            other => std::slice::from_ref(other),
        }
    }

    /// The categories a top-level `category == x` / `category in {..}` conjunct allows, if there is one.
    pub fn category_test(&self) -> Option<Vec<u16>> {
        self.conjuncts().iter().find_map(|c| match c {
            Cond::In { fact: Fact::category, values, negated: false, .. } => Some(values.clone()),
            Cond::Eq { fact: Fact::category, value, negated: false, .. } => Some(vec![*value]),
            _ => None,
        })
    }

    /// True when the condition is nothing but a category test: such a rule is a category's default.
    pub fn is_pure_category_test(&self) -> bool {
        matches!(self, Cond::In { fact: Fact::category, negated: false, .. } | Cond::Eq { fact: Fact::category, negated: false, .. })
    }
}

/// What a taxability rule concludes.
#[derive(Clone, Debug, PartialEq)]
pub enum TaxOutcome {
    Taxable {
        /// The state leg's rate in place of the state rate (a fraction: 3% is 0.03).
        state_rate: Option<Decimal>,
        /// The share of the amount that is taxed (a fraction: 80% is 0.8); 1 when absent.
        base_share: Decimal,
        /// Whether the zip's local layers apply.
        with_local: bool,
    },
    Exempt {
        /// The exemption type reported as final_determination (`not_taxable` when none is given).
        kind: String,
        reason: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sourcing {
    Origin,
    Destination,
}

impl Sourcing {
    pub fn as_str(self) -> &'static str {
        match self {
            Sourcing::Origin => "origin",
            Sourcing::Destination => "destination",
        }
    }
}
