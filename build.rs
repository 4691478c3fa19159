//! Checks the rule files and compiles them into the binary.
//!
//! - The check is the one `levy rules check` runs (`levy_rules::report`, lang/): on any error, each diagnostic
//!   is printed as the analysts read it (file:line:col, the line, a caret, help) and the build fails.
//! - `$OUT_DIR/embedded_rules.rs` lists each YAML and CSV file under `rules/` (not its scenario tests) with its bytes.
//!   They are the service's rules unless `--rules` / `LEVY_RULES` names a directory (`src/rules/embedded.rs`,
//!   `src/server.rs`).

use std::path::{Path, PathBuf};

fn collect(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display())).path();
        let rel = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().replace('\\', "/");
        if path.is_dir() {
            if rel != "tests" {
                collect(root, &path, out);
            }
        } else if rel.ends_with(".yaml") || rel.ends_with(".csv") {
            out.push((rel, path));
        }
    }
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let root = manifest.join("rules");
    println!("cargo:rerun-if-changed=rules");
    let (lines, verdict) = levy_rules::report::build_check(&root);
    for line in lines {
        println!("{line}");
    }
    if let Err(failure) = verdict {
        eprintln!("error: {failure}");
        std::process::exit(1);
    }
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut text = String::from("/// The rule files, by path under rules/.\npub static FILES: &[(&str, &[u8])] = &[\n");
    for (rel, path) in &files {
        text += &format!("    ({rel:?}, include_bytes!({:?})),\n", path.to_string_lossy());
    }
    text += "];\n";
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("embedded_rules.rs");
    std::fs::write(&out, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}
