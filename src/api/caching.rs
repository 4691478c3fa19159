//! Conditional GETs for the public reads (/rates, /rates/local, /rates/capital-gains): an `ETag` naming the rule
//! set's version and a hash of the representation, `Cache-Control`, and 304 Not Modified when `If-None-Match`
//! names the current tag.

use poem_openapi::types::ToJSON;
use sha2::{Digest, Sha256};

use super::context::set_header;
use super::payload::JsonText;

/// Public, shared caches may keep an answer for an hour: the figures change only with the rules (a new version,
/// so a new tag) or at midnight UTC when a dated entry takes effect, and `as_of` pins a date.
pub const CACHE_CONTROL: &str = "public, max-age=3600";

/// Declares a conditional GET's answer: the body with its `ETag` and `Cache-Control` ([`CACHE_CONTROL`], which the
/// header's description repeats: an attribute takes no constant), or 304 Not Modified.
#[macro_export]
macro_rules! cached_response {
    ($name:ident, $body:ty, $doc:literal) => {
        #[derive(poem_openapi::ApiResponse)]
        #[oai(
            header(name = "X-Request-Id", ty = "String", description = "The request id."),
            header(
                name = "ETag",
                ty = "String",
                description = "The rule set's version and a hash of this representation; send it in If-None-Match to get 304 while it is current."
            ),
            header(name = "Cache-Control", ty = "String", description = "public, max-age=3600.")
        )]
        pub enum $name {
            #[doc = $doc]
            #[oai(status = 200)]
            Ok($crate::api::payload::JsonText<$body>),
            /// If-None-Match names the current ETag: no body.
            #[oai(status = 304)]
            NotModified,
        }
    };
}

/// The strong tag of `body` served at `path` under the rule set `rules_version`.
pub fn etag(rules_version: &str, path: &str, body: &str) -> String {
    let mut h = Sha256::new();
    h.update(path.as_bytes());
    h.update([0]);
    h.update(body.as_bytes());
    let digest = h.finalize();
    let hex: String = digest.iter().take(12).map(|b| format!("{b:02x}")).collect();
    format!("\"{rules_version}-{hex}\"")
}

/// Whether an `If-None-Match` value names `tag` (a list of tags, weak ones compared weakly, or `*`).
pub fn matches(if_none_match: Option<&str>, tag: &str) -> bool {
    let Some(header) = if_none_match else { return false };
    header.split(',').map(str::trim).any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == tag)
}

/// Sets `ETag` and `Cache-Control` for `body`, and says whether the caller's copy is current (answer 304).
pub fn not_modified(if_none_match: Option<&str>, rules_version: &str, path: &str, body: &str) -> bool {
    let tag = etag(rules_version, path, body);
    let current = matches(if_none_match, &tag);
    set_header("ETag", &tag);
    set_header("Cache-Control", CACHE_CONTROL);
    current
}

/// [`not_modified`] for a typed body, written once: its text to send, or `None` when the caller's copy is
/// current (answer 304).
pub fn unless_current<T: ToJSON>(if_none_match: Option<&str>, rules_version: &str, path: &str, body: &T) -> Option<JsonText<T>> {
    let text = JsonText::typed(body);
    (!not_modified(if_none_match, rules_version, path, &text.body)).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_name_the_version_and_differ_by_body_and_path() {
        let a = etag("1.5.0", "/api/v1/rates", "{}");
        assert!(a.starts_with("\"1.5.0-") && a.ends_with('"'));
        assert_ne!(a, etag("1.5.0", "/api/v1/rates", "{\"x\":1}"));
        assert_ne!(a, etag("1.5.0", "/api/v1/rates/local", "{}"));
        assert_ne!(a, etag("1.5.1", "/api/v1/rates", "{}"));
    }

    #[test]
    fn if_none_match_lists_weak_tags_and_star() {
        let t = "\"1.5.0-abc\"";
        assert!(matches(Some(t), t));
        assert!(matches(Some("\"x\", W/\"1.5.0-abc\""), t));
        assert!(matches(Some("*"), t));
        assert!(!matches(Some("\"1.5.0-abd\""), t));
        assert!(!matches(None, t));
    }
}
