//! No query parameter is silently dropped: a request naming one its operation does not document is a 400
//! INVALID_INPUT naming it (with the closest documented name when one is close). The names each operation
//! takes are read from the OpenAPI document the server serves, so the document is the one list.

use std::collections::BTreeSet;

use percent_encoding::percent_decode_str;
use serde_json::Value;

use super::error::ApiError;
use crate::rules::diag::did_you_mean;

const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/// One documented operation: its method, its path split into segments (`None` for a `{parameter}`), the
/// query parameters it names, and its operationId (else its path template), which names it in the metrics and logs.
pub struct Operation {
    method: String,
    segments: Vec<Option<String>>,
    names: BTreeSet<String>,
    id: String,
}

impl Operation {
    /// The operationId, else the path template: never the request's own path.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Whether its template matches a path's segments (a `{parameter}` matches any non-empty one).
    fn answers(&self, parts: &[&str]) -> bool {
        self.segments.len() == parts.len() && self.segments.iter().zip(parts).all(|(s, p)| s.as_deref().map_or(!p.is_empty(), |s| s == *p))
    }
}

/// The query parameters of every operation of a document.
pub struct QueryParameters {
    operations: Vec<Operation>,
}

impl QueryParameters {
    /// From the OpenAPI document's text (as the server serves it).
    pub fn from_spec(spec: &str) -> QueryParameters {
        let doc: Value = serde_json::from_str(spec).unwrap_or_default();
        let mut operations = Vec::new();
        for (path, item) in doc.get("paths").and_then(Value::as_object).into_iter().flatten() {
            let segments = path.split('/').map(|s| (!(s.starts_with('{') && s.ends_with('}'))).then(|| s.to_string())).collect();
            for (method, op) in item.as_object().into_iter().flatten().filter(|(m, _)| METHODS.contains(&m.as_str())) {
                let names = op
                    .get("parameters")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter(|p| p.get("in").and_then(Value::as_str) == Some("query"))
                    .filter_map(|p| p.get("name").and_then(Value::as_str).map(str::to_string))
                    .collect();
                let id = op.get("operationId").and_then(Value::as_str).unwrap_or(path).to_string();
                operations.push(Operation { method: method.to_ascii_uppercase(), segments: Vec::clone(&segments), names, id });
            }
        }
        QueryParameters { operations }
    }

    /// The query parameters an operation takes; `None` when no documented operation answers the method and path
    /// (the router's 404 or 405 will).
    pub fn of(&self, method: &str, path: &str) -> Option<&BTreeSet<String>> {
        self.find(method, path).map(|op| &op.names)
    }

    /// The documented operation that answers the method and path: of those whose template matches, the one with
    /// the most fixed segments (`/keys/current` before `/keys/{id}`), as the router chooses.
    pub fn find(&self, method: &str, path: &str) -> Option<&Operation> {
        let parts: Vec<&str> = path.split('/').collect();
        self.operations
            .iter()
            .filter(|op| op.method.eq_ignore_ascii_case(method) && op.answers(&parts))
            .max_by_key(|op| op.segments.iter().filter(|s| s.is_some()).count())
    }

    /// The methods the documented operations at this path answer, sorted (a 405's Allow header); empty when none
    /// does.
    pub fn methods_at(&self, path: &str) -> Vec<&str> {
        let parts: Vec<&str> = path.split('/').collect();
        let mut methods: Vec<&str> = self.operations.iter().filter(|op| op.answers(&parts)).map(|op| op.method.as_str()).collect();
        methods.sort_unstable();
        methods.dedup();
        methods
    }

    /// `Err` naming every query parameter of the request that its operation does not document.
    pub fn check(&self, method: &str, path: &str, query: Option<&str>) -> Result<(), ApiError> {
        QueryParameters::check_operation(self.find(method, path), query)
    }

    /// [`QueryParameters::check`] for the operation already found.
    pub fn check_operation(operation: Option<&Operation>, query: Option<&str>) -> Result<(), ApiError> {
        let (Some(query), Some(known)) = (query, operation.map(|op| &op.names)) else { return Ok(()) };
        let mut errors: Vec<String> = Vec::new();
        let mut seen = BTreeSet::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let raw = pair.split('=').next().unwrap_or_default().replace('+', " ");
            let name = percent_decode_str(&raw).decode_utf8_lossy().to_string();
            if known.contains(&name) || !seen.insert(name.clone()) {
                continue;
            }
            let hint = match did_you_mean(&name, known.iter().map(String::as_str)) {
                Some(close) => format!("; did you mean `{close}`?"),
                None if known.is_empty() => "; this operation takes no query parameters".to_string(),
                None => format!("; this operation takes: {}", known.iter().map(String::as_str).collect::<Vec<_>>().join(", ")),
            };
            errors.push(format!("{name}: unknown query parameter `{name}`{hint}"));
        }
        ApiError::check(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> QueryParameters {
        QueryParameters::from_spec(
            r#"{"paths": {
                "/a": {"get": {"parameters": [{"name": "limit", "in": "query"}, {"name": "X-Key", "in": "header"}]}, "post": {}},
                "/a/{id}/b": {"parameters": [], "delete": {"parameters": [{"name": "force", "in": "query"}]}}
            }}"#,
        )
    }

    #[test]
    fn names_come_from_the_document() {
        let d = doc();
        assert_eq!(d.of("GET", "/a").map(|n| n.iter().cloned().collect::<Vec<_>>()), Some(vec!["limit".to_string()]));
        assert_eq!(d.of("DELETE", "/a/42/b").map(|n| n.len()), Some(1));
        assert!(d.of("DELETE", "/a//b").is_none());
        assert!(d.of("PUT", "/a").is_none());
        assert!(d.of("GET", "/elsewhere").is_none());
    }

    #[test]
    fn unknown_names_are_refused_with_a_suggestion() {
        let d = doc();
        assert!(d.check("GET", "/a", Some("limit=5&")).is_ok());
        assert!(d.check("GET", "/elsewhere", Some("anything=1")).is_ok());
        let e = d.check("GET", "/a", Some("limt=5&X-Key=1&limt=6&q%20r=1")).unwrap_err();
        assert_eq!(e.status.as_u16(), 400);
        assert_eq!(
            e.errors,
            vec![
                "limt: unknown query parameter `limt`; did you mean `limit`?".to_string(),
                "X-Key: unknown query parameter `X-Key`; this operation takes: limit".to_string(),
                "q r: unknown query parameter `q r`; this operation takes: limit".to_string(),
            ]
        );
        let e = d.check("POST", "/a", Some("dry_run")).unwrap_err();
        assert_eq!(e.errors, vec!["dry_run: unknown query parameter `dry_run`; this operation takes no query parameters".to_string()]);
    }
}
