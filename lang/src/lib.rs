//! levy's rule language (the `levy-rules` crate): it knows nothing of the engine, the API or the store.
//! The service uses it as a library, and its build script runs [`report::check_dir`] over `rules/`, so a
//! broken rule file fails the build.
//!
//! The pipeline: load (YAML with marks) → parse (pest) → lower (AST) → check → compile.
//!
//! - load: [`yaml`] reads each file into marked nodes, [`read`] and [`load`] read their typed fields;
//! - parse and lower: [`parse`] turns condition and outcome text into the [`ast`];
//! - check: [`load`] and [`check`] report every error as a located [`diag::Diagnostic`];
//! - compile: [`compile`] indexes the checked parts into the immutable [`Registry`].
//!
//! `load_dir` runs the whole pipeline over a rules directory and returns either the registry or
//! every diagnostic found.

pub mod ast;
pub mod cases;
pub mod check;
pub mod compile;
pub mod csv;
pub mod dated;
pub mod diag;
pub mod gains;
pub mod geo;
pub mod load;
pub mod load_gains;
pub mod load_local;
pub mod parse;
pub mod places;
pub mod read;
pub mod registry;
pub mod report;
pub mod schema;
pub mod sst;
pub mod yaml;

pub use load::load_dir;
pub use registry::Registry;
