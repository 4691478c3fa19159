//! The rule files compiled into the binary (see build.rs): the service's rules when no directory is given, so
//! the binary runs from anywhere.

use std::path::Path;

mod files {
    include!(concat!(env!("OUT_DIR"), "/embedded_rules.rs"));
}

pub use files::FILES;

/// Writes the compiled-in files under `dir` (created), as the loader reads a directory.
pub fn write_to(dir: &Path) -> std::io::Result<()> {
    for (rel, bytes) in FILES {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, bytes)?;
    }
    Ok(())
}
