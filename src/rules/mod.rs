//! The rule language: load (YAML with marks) → parse (pest) → lower (AST) → check → compile.
//!
//! `load_dir` runs the whole pipeline over a rules directory and returns either a compiled,
//! immutable [`Registry`] or every diagnostic found.

pub mod ast;
pub mod diag;
pub mod parse;
pub mod schema;
pub mod yaml;
pub mod cases;
pub mod check;
pub mod load;
pub mod read;
pub mod registry;
pub mod gains;
pub mod embedded;

pub use load::load_dir;
pub use registry::Registry;
