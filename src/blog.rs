//! Reads and checks the blog's articles (`content/blog/*.md`, compiled into the binary so that it runs from any
//! directory): YAML front matter (slug, title, category, date, summary) between `---` lines, then the Markdown
//! body. Checked once, at start-up: a malformed article stops the service with its file and line.

use std::sync::LazyLock;

use chrono::NaiveDate;
use yaml_rust2::{Yaml, YamlLoader};

/// The articles compiled in, by path. A test checks that every file of content/blog is listed here.
macro_rules! articles {
    ($($name:literal),+ $(,)?) => {
        &[$((concat!("content/blog/", $name), include_str!(concat!("../content/blog/", $name)))),+]
    };
}
pub static FILES: &[(&str, &str)] =
    articles!["form-1099-threshold-2026.md", "how-levy-decides-saas-taxability.md", "texas-80-percent-rule-for-data-processing.md",];

/// The front-matter keys, each required, none other allowed.
pub const KEYS: [&str; 5] = ["slug", "title", "category", "date", "summary"];
/// Longest slug, title, category and summary (characters).
pub const MAX_SLUG: usize = 100;
pub const MAX_TITLE: usize = 200;
pub const MAX_CATEGORY: usize = 100;
pub const MAX_SUMMARY: usize = 500;
/// A slug: lowercase letters and digits in words joined by single hyphens.
pub const SLUG_PATTERN: &str = "^[a-z0-9]+(-[a-z0-9]+)*$";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Article {
    pub slug: String,
    pub title: String,
    pub category: String,
    pub date: NaiveDate,
    pub summary: String,
    /// The Markdown after the front matter.
    pub body: String,
}

/// A problem in an article file, at a line (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlogError {
    pub file: String,
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for BlogError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// Whether `s` is a well-formed slug (what [`SLUG_PATTERN`] says, at most [`MAX_SLUG`] characters).
pub fn is_slug(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_SLUG
        && s.split('-').all(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()))
}

/// The compiled-in articles, newest first (then by slug), or every problem found in them.
pub fn articles() -> Result<&'static [Article], &'static [BlogError]> {
    static ARTICLES: LazyLock<Result<Vec<Article>, Vec<BlogError>>> = LazyLock::new(|| parse_all(FILES));
    match &*ARTICLES {
        Ok(a) => Ok(a),
        Err(e) => Err(e),
    }
}

/// Parses and checks articles given as (path, text); slugs must be unique.
pub fn parse_all(files: &[(&str, &str)]) -> Result<Vec<Article>, Vec<BlogError>> {
    let mut out: Vec<Article> = Vec::new();
    let mut errors = Vec::new();
    for (path, text) in files {
        match parse(path, text) {
            Ok(a) => {
                if out.iter().any(|o| o.slug == a.slug) {
                    errors.push(BlogError {
                        file: path.to_string(),
                        line: 2,
                        message: format!("slug `{}` is used by another article", a.slug),
                    });
                } else {
                    out.push(a);
                }
            }
            Err(e) => errors.extend(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    out.sort_by(|a, b| b.date.cmp(&a.date).then_with(|| a.slug.cmp(&b.slug)));
    Ok(out)
}

/// Parses one article file.
pub fn parse(path: &str, text: &str) -> Result<Article, Vec<BlogError>> {
    let err = |line: usize, message: String| BlogError { file: path.to_string(), line, message };
    let lines: Vec<&str> = text.lines().collect();
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return Err(vec![err(1, "an article starts with a `---` line, then its front matter".into())]);
    }
    let Some(end) = lines.iter().skip(1).position(|l| l.trim_end() == "---").map(|i| i + 1) else {
        return Err(vec![err(1, "the front matter is not closed by a `---` line".into())]);
    };
    let front = lines[1..end].join("\n");
    let body = lines[end + 1..].join("\n").trim().to_string();
    // Front matter starts on line 2.
    let line_of = |key: &str| lines[1..end].iter().position(|l| l.starts_with(&format!("{key}:"))).map_or(2, |i| i + 2);
    let docs = YamlLoader::load_from_str(&front)
        .map_err(|e| vec![err(e.marker().line() + 1, format!("the front matter is not YAML: {}", e.info()))])?;
    let Some(Yaml::Hash(map)) = docs.first() else {
        return Err(vec![err(2, "the front matter must be a mapping of slug, title, category, date and summary".into())]);
    };
    let mut errors = Vec::new();
    for k in map.keys() {
        match k.as_str() {
            Some(name) if KEYS.contains(&name) => {}
            Some(name) => errors.push(err(line_of(name), format!("unknown key `{name}` (expected: {})", KEYS.join(", ")))),
            None => errors.push(err(2, "a front-matter key must be text".into())),
        }
    }
    let mut field = |key: &str, max: usize| -> String {
        match map.get(&Yaml::String(key.into())) {
            None => {
                errors.push(err(2, format!("`{key}` is missing")));
                String::new()
            }
            Some(Yaml::String(s)) if !s.trim().is_empty() && s.chars().count() <= max => s.trim().to_string(),
            Some(Yaml::String(_)) => {
                errors.push(err(line_of(key), format!("`{key}` must be 1 to {max} characters")));
                String::new()
            }
            Some(_) => {
                errors.push(err(line_of(key), format!("`{key}` must be text")));
                String::new()
            }
        }
    };
    let slug = field("slug", MAX_SLUG);
    let title = field("title", MAX_TITLE);
    let category = field("category", MAX_CATEGORY);
    let date_text = field("date", 10);
    let summary = field("summary", MAX_SUMMARY);
    let stem = path.rsplit('/').next().unwrap_or(path).trim_end_matches(".md");
    if !slug.is_empty() && !is_slug(&slug) {
        errors.push(err(line_of("slug"), format!("slug `{slug}` must match {SLUG_PATTERN}")));
    } else if !slug.is_empty() && slug != stem {
        errors.push(err(line_of("slug"), format!("slug `{slug}` must equal the file name `{stem}`")));
    }
    let date = NaiveDate::parse_from_str(&date_text, "%Y-%m-%d");
    if date.is_err() && !date_text.is_empty() {
        errors.push(err(line_of("date"), format!("date `{date_text}` is not a date (YYYY-MM-DD)")));
    }
    if body.is_empty() {
        errors.push(err(end + 1, "the article has no body".into()));
    }
    match date {
        Ok(date) if errors.is_empty() => Ok(Article { slug, title, category, date, summary, body }),
        _ => Err(errors),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_article_file_is_compiled_in() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("content/blog");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter(|n| n.ends_with(".md"))
            .map(|n| format!("content/blog/{n}"))
            .collect();
        on_disk.sort();
        let listed: Vec<&str> = FILES.iter().map(|f| f.0).collect();
        assert_eq!(on_disk, listed, "list each article of content/blog in blog::FILES");
    }

    #[test]
    fn shipped_articles_parse() {
        let a = articles().unwrap_or_else(|e| panic!("{}", e.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("\n")));
        assert!(a.len() >= 3);
    }

    #[test]
    fn malformed_articles_name_file_and_line() {
        let bad = "---\nslug: a-b\ntitle: T\ncategory: c\ndate: 2026-02-30\nsummary: s\n---\nbody\n";
        let e = parse("content/blog/a-b.md", bad).unwrap_err();
        assert_eq!(e[0].to_string(), "content/blog/a-b.md:5: date `2026-02-30` is not a date (YYYY-MM-DD)");
        let e = parse("content/blog/x.md", "---\nslug: Bad Slug\ntitle: T\ncategory: c\ndate: 2026-01-01\nsummary: s\nextra: 1\n---\nb")
            .unwrap_err();
        let text: Vec<String> = e.iter().map(|e| e.to_string()).collect();
        assert_eq!(
            text,
            [
                "content/blog/x.md:7: unknown key `extra` (expected: slug, title, category, date, summary)",
                "content/blog/x.md:2: slug `Bad Slug` must match ^[a-z0-9]+(-[a-z0-9]+)*$"
            ]
        );
        let e = parse("content/blog/y.md", "---\nslug: y\ntitle: [unclosed\n---\nb").unwrap_err();
        assert!(e[0].to_string().starts_with("content/blog/y.md:"), "{}", e[0]);
        assert!(parse("content/blog/z.md", "no front matter").is_err());
        let two = [("content/blog/y.md", "---\nslug: y\ntitle: T\ncategory: c\ndate: 2026-01-01\nsummary: s\n---\nb"); 2];
        assert_eq!(parse_all(&two).unwrap_err()[0].message, "slug `y` is used by another article");
    }

    #[test]
    fn slugs() {
        assert!(is_slug("texas-80-percent-rule"));
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", &"a".repeat(101)] {
            assert!(!is_slug(bad), "{bad}");
        }
    }
}
