pub mod cli;
pub mod engine;
pub mod rules;
pub mod scenarios;
