//! The layering rules of ARCHITECTURE.md, read off the code: every `crate::<module>` path of each file of `src/` is
//! an edge from the file's top-level module to that module, and a forbidden edge fails the test with its file and
//! line.

use std::path::{Path, PathBuf};

/// (from, to, the rule): `from` must never name `to`.
const FORBIDDEN: &[(&str, &[&str], &str)] = &[
    (
        "store",
        &["rules", "engine", "billing", "payments", "api", "ledger", "gains", "trades", "cli", "partners", "accounts"],
        "1: the store stores and reads rows; it knows no tax law, no billing policy, no payment protocol",
    ),
    ("engine", &["store", "api", "ledger", "billing", "payments", "trades", "cli"], "2: the engine knows no HTTP and no database"),
    ("gains", &["store", "api", "ledger", "billing", "payments", "trades", "cli"], "2: gains accounting knows no HTTP and no database"),
    ("trades", &["api", "cli", "payments", "ledger"], "5: recording a trade knows no HTTP"),
    ("partners", &["api", "cli", "payments", "ledger"], "5: the partner program knows no HTTP"),
    ("accounts", &["api", "cli", "payments", "ledger"], "5: signing up and logging in know no HTTP"),
    ("ledger", &["api", "cli", "payments"], "5: the ledger's write path knows no HTTP (and a paid call records through it)"),
    ("payments", &["api", "cli"], "5: the payment protocols know no HTTP handler"),
    (
        "billing",
        &["api", "cli", "payments"],
        "5: billing policy knows no HTTP handler (and the processor's events are read into its changes)",
    ),
];

/// Edges that break a rule today, each with what removes it. The test fails when one goes away, so that the list
/// shrinks with the code. None today.
const KNOWN: &[(&str, &str, &str)] = &[];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Each `crate::<module>` a line names, outside comments and string literals.
fn named_modules(line: &str) -> Vec<String> {
    let code = line.trim_start();
    if code.starts_with("//") {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut in_string = false;
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' if i == 0 || bytes[i - 1] != b'\\' => in_string = !in_string,
            b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => break,
            _ if !in_string
                && bytes[i..].starts_with(b"crate::")
                && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')) =>
            {
                let rest = &bytes[i + "crate::".len()..];
                let name: Vec<u8> =
                    rest.iter().copied().take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_').collect();
                if !name.is_empty() {
                    out.push(String::from_utf8(name).unwrap());
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Every edge of `src/`: (from, to, file, line number).
fn edges() -> Vec<(String, String, String, usize)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut out = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        let from = rel.split('/').next().unwrap().trim_end_matches(".rs").to_string();
        for (n, line) in std::fs::read_to_string(&file).unwrap().lines().enumerate() {
            for to in named_modules(line) {
                if to != from {
                    out.push((from.clone(), to, format!("src/{rel}"), n + 1));
                }
            }
        }
    }
    out
}

#[test]
fn no_module_names_what_its_layer_must_not_know() {
    let edges = edges();
    let mut broken = Vec::new();
    for (from, to, file, line) in &edges {
        for (rule_from, never, rule) in FORBIDDEN {
            if from == rule_from && never.contains(&to.as_str()) && !KNOWN.iter().any(|(f, t, _)| f == from && t == to) {
                broken.push(format!("{file}:{line}: {from} → {to} breaks layering rule {rule} (ARCHITECTURE.md)"));
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    for (from, to, why) in KNOWN {
        assert!(
            edges.iter().any(|(f, t, _, _)| f == from && t == to),
            "{from} → {to} is gone: remove it from KNOWN in tests/layering.rs ({why})"
        );
    }
}

/// No two top-level modules depend on each other, directly or through others: each concern stands above or below
/// each other one. A loop is named with one edge of each of its modules.
#[test]
fn no_two_modules_depend_on_each_other() {
    use std::collections::{BTreeMap, BTreeSet};
    let edges = edges();
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (from, to, _, _) in &edges {
        next.entry(from).or_default().insert(to);
    }
    // Whether `to` is reachable from `from`.
    let reaches = |from: &str, to: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from];
        while let Some(m) = stack.pop() {
            if m == to {
                return true;
            }
            if seen.insert(m) {
                stack.extend(next.get(m).into_iter().flatten().copied());
            }
        }
        false
    };
    let looped: Vec<String> = edges
        .iter()
        .filter(|(from, to, _, _)| reaches(to, from))
        .map(|(from, to, file, line)| format!("{file}:{line}: {from} → {to}, and {to} leads back to {from}"))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert!(looped.is_empty(), "modules that depend on each other:\n{}", looped.join("\n"));
}

/// The rule language does not depend on the service: its manifest names no levy crate but itself.
#[test]
fn the_rule_language_knows_nothing_of_the_service() {
    let manifest = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("lang/Cargo.toml")).unwrap();
    let deps = manifest.split("[dependencies]").nth(1).unwrap_or_default();
    assert!(!deps.lines().any(|l| l.trim_start().starts_with("levy")), "lang/Cargo.toml depends on a levy crate:\n{deps}");
}

/// The reader finds paths in code and not in comments or strings, so that the rules see what compiles.
#[test]
fn edges_are_read_from_code_only() {
    assert_eq!(named_modules("use crate::store::Store;"), ["store"]);
    assert_eq!(named_modules("    let x = crate::billing::month_counts(&s, crate::ledger::m());"), ["billing", "ledger"]);
    assert!(named_modules("/// see crate::api for the handler").is_empty());
    assert!(named_modules(r#"let s = "crate::api";"#).is_empty());
    assert_eq!(named_modules("f(); // crate::api"), Vec::<String>::new());
    assert!(named_modules("levy_crate::api").is_empty());
}
