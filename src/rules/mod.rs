//! The rule language is its own crate, `levy-rules` (lang/), which build.rs also runs to check `rules/`. It is
//! re-exported here, so `crate::rules::load`, `crate::rules::Registry` and the rest name it, beside
//! [`embedded`]: the rule files compiled into this binary.

pub use levy_rules::*;

pub mod embedded;
