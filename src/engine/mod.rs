//! The calculate engine: typed facts + registry + as_of date in, a full determination out.
//! No HTTP and no database here.

pub mod determine;
pub mod facts;
pub mod missing;
pub mod money;
pub mod nexus;
pub mod render;
pub mod request;
pub mod table;

pub use determine::{determine, Determination, EngineError, Fault, FinalDetermination, Input, LegResult, Role};
pub use request::{FieldError, Request};
