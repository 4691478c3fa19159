//! The facts of one request, by schema position: what the caller declared and what
//! classification derived. Evaluates rule conditions against them.

use crate::rules::ast::Cond;
use crate::rules::schema::{Fact, FactKind, FACT_COUNT};

/// One value per schema fact; `None` means the caller did not declare it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FactSet {
    values: [Option<u16>; FACT_COUNT],
}

impl Default for FactSet {
    fn default() -> Self {
        FactSet { values: [None; FACT_COUNT] }
    }
}

impl FactSet {
    pub fn set(&mut self, fact: Fact, value: u16) {
        self.values[fact as usize] = Some(value);
    }

    pub fn set_bool(&mut self, fact: Fact, value: bool) {
        self.set(fact, value as u16);
    }

    pub fn clear(&mut self, fact: Fact) {
        self.values[fact as usize] = None;
    }

    /// The declared value, if any.
    pub fn declared(&self, fact: Fact) -> Option<u16> {
        self.values[fact as usize]
    }

    /// The declared value, or the contract's default for an absent fact.
    pub fn get(&self, fact: Fact) -> Option<u16> {
        self.values[fact as usize].or(fact.def().default)
    }

    pub fn flag(&self, fact: Fact) -> bool {
        self.get(fact) == Some(1)
    }

    /// The value's name (`"saas"`, `"true"`), for echoes and traces.
    pub fn name_of(&self, fact: Fact) -> Option<&'static str> {
        let v = self.get(fact)?;
        match fact.def().kind {
            // (A boolean's values are listed true first, for messages; its index is false = 0, true = 1.)
            FactKind::Bool => Some(if v == 1 { "true" } else { "false" }),
            FactKind::Enum(values) => values.get(v as usize).copied(),
        }
    }

    /// Evaluates a condition. An absent fact is never equal to or in anything.
    pub fn holds(&self, cond: &Cond) -> bool {
        match cond {
            Cond::And(parts) => parts.iter().all(|c| self.holds(c)),
            Cond::Or(parts) => parts.iter().any(|c| self.holds(c)),
            Cond::Not(c) => !self.holds(c),
            Cond::In { fact, values, negated, .. } => self.get(*fact).is_some_and(|v| values.contains(&v)) != *negated,
            Cond::Eq { fact, value, negated, .. } => (self.get(*fact) == Some(*value)) != *negated,
            Cond::Set { fact, negated, .. } => self.declared(*fact).is_some() != *negated,
            Cond::Flag { fact, .. } => self.flag(*fact),
        }
    }
}
