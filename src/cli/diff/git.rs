//! `--git BASE[..HEAD]`: the rules/ directory of the repository around the current directory, at two revisions,
//! written out with `git archive` into a temporary directory (the working tree's own rules/ for a missing HEAD).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The temporary copies, removed when dropped.
pub struct Checkout {
    pub base: String,
    pub head: Option<String>,
    root: PathBuf,
}

impl Drop for Checkout {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The old and new rules directories for `BASE` or `BASE..HEAD`.
pub fn load(spec: &str) -> Result<(PathBuf, PathBuf, Option<Checkout>), String> {
    let (base, head) = match spec.split_once("..") {
        Some((b, h)) => (b, Some(h).filter(|h| !h.is_empty())),
        None => (spec, None),
    };
    if base.is_empty() {
        return Err(format!("`{spec}` names no base revision: write BASE or BASE..HEAD"));
    }
    let top = git(None, &["rev-parse", "--show-toplevel"])?;
    let top = PathBuf::from(top.trim());
    let root =
        std::env::temp_dir().join(format!("levy-diff-{}-{}", std::process::id(), chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)));
    std::fs::create_dir_all(&root).map_err(|e| format!("cannot make {}: {e}", root.display()))?;
    let checkout = Checkout { base: base.to_string(), head: head.map(str::to_string), root: root.clone() };
    let old = extract(&top, base, &root.join("base"))?;
    let new = match head {
        Some(h) => extract(&top, h, &root.join("head"))?,
        None => top.join("rules"),
    };
    Ok((old, new, Some(checkout)))
}

/// Writes `rules/` at `rev` under `into`; returns the rules directory.
fn extract(top: &Path, rev: &str, into: &Path) -> Result<PathBuf, String> {
    let commit = git(Some(top), &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")])
        .map_err(|_| format!("`{rev}` is not a revision of the repository at {}", top.display()))?;
    let commit = commit.trim();
    std::fs::create_dir_all(into).map_err(|e| format!("cannot make {}: {e}", into.display()))?;
    let tar = into.join("rules.tar");
    let tar_text = tar.to_string_lossy().to_string();
    git(Some(top), &["archive", "--format=tar", "-o", &tar_text, commit, "rules"])
        .map_err(|e| format!("revision `{rev}` has no rules/ directory ({e})"))?;
    let out = Command::new("tar").arg("-xf").arg(&tar).arg("-C").arg(into).output().map_err(|e| format!("cannot run tar: {e}"))?;
    if !out.status.success() {
        return Err(format!("tar could not unpack rules/ of `{rev}`: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let _ = std::fs::remove_file(&tar);
    Ok(into.join("rules"))
}

fn git(dir: Option<&Path>, args: &[&str]) -> Result<String, String> {
    let mut cmd = Command::new("git");
    if let Some(d) = dir {
        cmd.arg("-C").arg(d);
    }
    let out = cmd.args(args).output().map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        return Err(format!("git {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
