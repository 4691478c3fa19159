//! Checks a JSON request body against the OpenAPI schema its type registers, then parses it into that type.
//!
//! The schema is the one the document shows (`T::register`, cached once per type), so what the server refuses
//! is what the document states: every problem is collected with its field path (`records[2].amount`), in the
//! words the API has always used ("is required", "must be a string", "must be at most 128 characters",
//! "unknown field (did you mean `label`?)"). Two conventions of `api::document` hold here too: a property that
//! is not required may be `null` (read as absent), and an object that lists its properties takes no others.
//! A JSON number field also takes a decimal string ("100.50"), as every amount always has; it is rewritten
//! to the number before the typed parse.

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use poem_openapi::registry::{MetaSchema, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromJSON, Type};
use rust_decimal::prelude::FromPrimitive;
use rust_decimal::Decimal;
use serde_json::Value;

use super::error::ApiError;
use crate::engine::money::{exact, MAX_SCALE};
use crate::engine::FieldError;
use crate::rules::diag::did_you_mean;

/// A type's schema and the registry its references resolve in.
pub struct Contract {
    registry: Registry,
    root: MetaSchemaRef,
    /// Compiled patterns, by their text.
    patterns: HashMap<String, regex::Regex>,
}

/// The contract of `T`, built once per type.
pub fn contract<T: Type + 'static>() -> &'static Contract {
    static CONTRACTS: OnceLock<Mutex<HashMap<TypeId, &'static Contract>>> = OnceLock::new();
    let map = CONTRACTS.get_or_init(Default::default);
    let mut map = map.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    map.entry(TypeId::of::<T>()).or_insert_with(|| Box::leak(Box::new(Contract::of::<T>())))
}

/// `value` checked against `T`'s schema and parsed into `T`; every problem at once as INVALID_INPUT.
pub fn parse<T: Type + ParseFromJSON + 'static>(mut value: Value) -> Result<T, ApiError> {
    let errors = contract::<T>().check(&mut value);
    if !errors.is_empty() {
        return Err(ApiError::fields(&errors));
    }
    // The check states everything the typed parse checks; should they ever differ, it is still the caller's input.
    T::parse_from_json(Some(value)).map_err(|e| ApiError::field("body", e.into_message()))
}

/// The problems of a query or header parameter's text against `T`'s documented schema (its length, pattern,
/// format, enum or range; the text of an integer or number parameter is read as a JSON number), each naming `name`.
pub fn parameter<T: Type + 'static>(name: &str, text: &str) -> Vec<FieldError> {
    let contract = contract::<T>();
    let numeric = contract.resolve(&contract.root).is_some_and(|s| matches!(s.ty, "integer" | "number"));
    let mut value = match serde_json::from_str::<Value>(text) {
        Ok(n @ Value::Number(_)) if numeric => n,
        _ => Value::String(text.to_string()),
    };
    let mut out = Vec::new();
    contract.value(&contract.root, &mut value, name, &mut out);
    out
}

impl Contract {
    pub fn of<T: Type>() -> Contract {
        let mut registry = Registry::new();
        T::register(&mut registry);
        let mut patterns = HashMap::new();
        let mut collect = |s: &MetaSchema| {
            if let Some(p) = &s.pattern {
                if let Ok(re) = regex::Regex::new(p) {
                    patterns.insert(p.clone(), re);
                }
            }
        };
        let root = T::schema_ref();
        walk(&root, &mut collect);
        for s in registry.schemas.values() {
            walk(&MetaSchemaRef::Inline(Box::new(s.clone())), &mut collect);
        }
        Contract { registry, root, patterns }
    }

    /// Every problem of `value`, which is normalised in place (decimal strings of number fields become numbers).
    pub fn check(&self, value: &mut Value) -> Vec<FieldError> {
        let mut out = Vec::new();
        if !value.is_object() && self.resolve(&self.root).is_some_and(|s| s.ty == "object") {
            out.push(FieldError { field: "body".into(), message: "must be a JSON object".into() });
            return out;
        }
        self.value(&self.root, value, "", &mut out);
        out
    }

    fn resolve<'a>(&'a self, schema: &'a MetaSchemaRef) -> Option<&'a MetaSchema> {
        match schema {
            MetaSchemaRef::Inline(s) => Some(s),
            MetaSchemaRef::Reference(name) => self.registry.schemas.get(name),
        }
    }

    fn value(&self, schema: &MetaSchemaRef, v: &mut Value, path: &str, out: &mut Vec<FieldError>) {
        let Some(s) = self.resolve(schema) else { return };
        let before = out.len();
        for part in &s.all_of {
            self.value(part, v, path, out);
            if out.len() > before {
                return;
            }
        }
        if !s.one_of.is_empty() || !s.any_of.is_empty() {
            self.alternatives(s, v, path, out);
            return;
        }
        if v.is_null() && s.nullable {
            return;
        }
        match s.ty {
            "object" => self.object(s, v, path, out),
            "array" => self.array(s, v, path, out),
            "string" => self.string(s, v, path, out),
            "number" | "integer" => self.number(s, v, path, out),
            "boolean" if !v.is_boolean() => err(out, path, "must be true or false"),
            _ => self.listed(s, v, path, out),
        }
    }

    /// oneOf / anyOf: the value must match a branch. Branches that are closed objects are told apart by the
    /// fields sent: the one branch whose fields they are is checked (its problems told), fields of several or of
    /// none are a problem of the body's shape. Other branches: the problems of the closest.
    fn alternatives(&self, s: &MetaSchema, v: &mut Value, path: &str, out: &mut Vec<FieldError>) {
        let branches = if s.one_of.is_empty() { &s.any_of } else { &s.one_of };
        let shapes: Option<Vec<Vec<&str>>> = branches
            .iter()
            .map(|b| self.resolve(b).filter(|b| b.ty == "object" && !b.properties.is_empty() && b.additional_properties.is_none()))
            .map(|b| b.map(|b| b.properties.iter().map(|(n, _)| *n).collect()))
            .collect();
        if let (Some(shapes), Some(obj)) = (shapes, v.as_object()) {
            let forms = shapes.iter().map(|f| format!("{{{}}}", f.join(", "))).collect::<Vec<_>>().join(" or ");
            let sent: Vec<usize> = (0..shapes.len()).filter(|&i| obj.keys().any(|k| shapes[i].contains(&k.as_str()))).collect();
            match sent[..] {
                [i] => return self.value(&branches[i], v, path, out),
                [] if obj.is_empty() => return err(out, path, format!("expected {forms}")),
                [] => {}
                _ => return err(out, path, format!("send {forms}, not fields of several")),
            }
        }
        let mut closest: Option<Vec<FieldError>> = None;
        let mut matched: Option<Value> = None;
        let mut matches = 0;
        for b in branches {
            let (mut errors, mut tried) = (Vec::new(), v.clone());
            self.value(b, &mut tried, path, &mut errors);
            if errors.is_empty() {
                matches += 1;
                matched.get_or_insert(tried);
            } else if closest.as_ref().is_none_or(|c| errors.len() < c.len()) {
                closest = Some(errors);
            }
        }
        match (matched, closest) {
            (Some(m), _) if matches == 1 || s.one_of.is_empty() => *v = m,
            (Some(_), _) => err(out, path, "matches more than one of the documented forms"),
            (None, Some(errors)) => out.extend(errors),
            (None, None) => {}
        }
    }

    fn object(&self, s: &MetaSchema, v: &mut Value, path: &str, out: &mut Vec<FieldError>) {
        let Some(obj) = v.as_object_mut() else { return err(out, path, "must be an object") };
        let names: Vec<&str> = s.properties.iter().map(|(n, _)| *n).collect();
        if let Some(max) = s.max_properties.filter(|m| obj.len() > *m) {
            return err(out, path, format!("has {} entries; at most {max} are taken", obj.len()));
        }
        if s.additional_properties.is_none() && !names.is_empty() {
            for k in obj.keys() {
                if !names.contains(&k.as_str()) {
                    let message = match words(s.rust_typename) {
                        Some(w) if w.key.is_some() => {
                            // The listed keys in upper case (the states), the one form a suggestion names.
                            let upper = names.iter().copied().filter(|n| !n.chars().any(|c| c.is_ascii_lowercase()));
                            let hint = did_you_mean(&k.to_ascii_uppercase(), upper).map(|x| format!(" (did you mean `{x}`?)"));
                            format!("`{k}` {}{}", w.key.unwrap_or_default(), hint.unwrap_or_default())
                        }
                        _ => {
                            let hint = did_you_mean(k, names.iter().copied()).map(|x| format!(" (did you mean `{x}`?)"));
                            format!("unknown field{}", hint.unwrap_or_default())
                        }
                    };
                    err(out, &join(path, k), message);
                }
            }
        }
        for (name, prop) in &s.properties {
            let field = join(path, name);
            match obj.get_mut(*name) {
                None | Some(Value::Null) if s.required.contains(name) => err(out, &field, "is required"),
                None | Some(Value::Null) => {}
                Some(x) => self.value(prop, x, &field, out),
            }
        }
        if let Some(extra) = &s.additional_properties {
            for (k, x) in obj.iter_mut().filter(|(k, _)| !names.contains(&k.as_str())) {
                self.value(extra, x, &join(path, k), out);
            }
        }
    }

    fn array(&self, s: &MetaSchema, v: &mut Value, path: &str, out: &mut Vec<FieldError>) {
        let Some(items) = v.as_array_mut() else { return err(out, path, "must be an array") };
        if let Some(min) = s.min_items.filter(|m| items.len() < *m) {
            return err(out, path, if min == 1 { "must not be empty".to_string() } else { format!("must hold at least {min} items") });
        }
        if let Some(max) = s.max_items.filter(|m| items.len() > *m) {
            return err(out, path, format!("must hold at most {max} items"));
        }
        if let Some(item) = &s.items {
            for (i, x) in items.iter_mut().enumerate() {
                self.value(item, x, &format!("{path}[{i}]"), out);
            }
        }
    }

    fn string(&self, s: &MetaSchema, v: &Value, path: &str, out: &mut Vec<FieldError>) {
        let Some(text) = v.as_str() else { return err(out, path, "must be a string") };
        let len = text.chars().count();
        if let Some(min) = s.min_length.filter(|m| len < *m) {
            return err(out, path, if min == 1 { "must not be empty".to_string() } else { format!("must be at least {min} characters") });
        }
        if let Some(max) = s.max_length.filter(|m| len > *m) {
            return err(out, path, format!("must be at most {max} characters"));
        }
        if let Some(p) = &s.pattern {
            if self.patterns.get(p).is_some_and(|re| !re.is_match(text)) {
                let message = match super::schema::pattern::words(p) {
                    Some(w) => w.replace("{}", text),
                    None => format!("`{text}` does not match the pattern `{p}`"),
                };
                return err(out, path, message);
            }
        }
        match s.format {
            Some("date") if chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d").is_err() => {
                return err(out, path, format!("`{text}` is not a date (YYYY-MM-DD)"));
            }
            Some("date-time") if chrono::DateTime::parse_from_rfc3339(text).is_err() => {
                return err(out, path, format!("`{text}` is not a date-time (RFC 3339, e.g. 2026-01-31T12:00:00Z)"));
            }
            _ => {}
        }
        self.listed(s, v, path, out);
    }

    /// A value that must be one of the schema's `enum`.
    fn listed(&self, s: &MetaSchema, v: &Value, path: &str, out: &mut Vec<FieldError>) {
        if s.enum_items.is_empty() || s.enum_items.contains(v) {
            return;
        }
        let shown = v.as_str().map_or_else(|| v.to_string(), str::to_string);
        let words = words(s.rust_typename);
        if let Some(w) = words.as_ref().and_then(|w| w.value).filter(|_| words.as_ref().is_some_and(|w| !w.list)) {
            return err(out, path, format!("`{shown}` {w}"));
        }
        let values: Vec<&str> = s.enum_items.iter().filter_map(Value::as_str).collect();
        let hint = did_you_mean(&shown, values.iter().copied()).map(|x| format!("; did you mean `{x}`?")).unwrap_or_default();
        let phrase = words.and_then(|w| w.value).unwrap_or("is not one of");
        err(out, path, format!("`{shown}` {phrase}: {}{hint}", values.join(", ")))
    }

    fn number(&self, s: &MetaSchema, v: &mut Value, path: &str, out: &mut Vec<FieldError>) {
        let whole = s.ty == "integer";
        let text = match &*v {
            Value::Number(n) => n.to_string(),
            Value::String(t) if !whole => t.trim().to_string(),
            _ => return err(out, path, if whole { "must be a whole number" } else { "must be a number" }),
        };
        let Some(d) = exact(v) else {
            return err(
                out,
                path,
                if whole { "must be a whole number".to_string() } else { format!("`{text}` is not a finite decimal number") },
            );
        };
        if whole && (!d.fract().is_zero() || text.contains(['.', 'e', 'E'])) {
            return err(out, path, "must be a whole number");
        }
        let (low, high) = format_range(s.format);
        let min = s.minimum.and_then(Decimal::from_f64).map(|d| d.normalize()).or(low);
        let max = s.maximum.and_then(Decimal::from_f64).map(|d| d.normalize()).or(high);
        if let Some(m) = min {
            if s.exclusive_minimum == Some(true) && d <= m {
                return err(out, path, format!("must be greater than {m}"));
            }
            if d < m {
                // The smallest decimal kept as a minimum: nothing lies between it and 0 (an amount).
                if m == Decimal::new(1, MAX_SCALE) {
                    return err(out, path, "must be greater than 0");
                }
                return err(out, path, format!("must be at least {m}"));
            }
        }
        if let Some(m) = max {
            if s.exclusive_maximum == Some(true) && d >= m {
                return err(out, path, format!("must be less than {m}"));
            }
            if d > m {
                return err(out, path, format!("must be at most {m}"));
            }
        }
        if let Some(step) = s.multiple_of.and_then(Decimal::from_f64).map(|d| d.normalize()) {
            if !step.is_zero() && !(d % step).is_zero() {
                let places = step.scale();
                return err(
                    out,
                    path,
                    if step == Decimal::new(1, places) {
                        format!("`{text}` has more than {places} decimal places; it is kept exactly and never rounded")
                    } else {
                        format!("must be a multiple of {step}")
                    },
                );
            }
        }
        if v.is_string() {
            // The typed parse reads numbers: the decimal string as the number it names, every digit kept.
            if let Ok(n) = serde_json::from_str::<serde_json::Number>(&d.to_string()) {
                *v = Value::Number(n);
            }
        }
    }
}

/// The bounds an integer format implies (what the typed parse of that width accepts).
fn format_range(format: Option<&str>) -> (Option<Decimal>, Option<Decimal>) {
    let d = |x: i128| Decimal::from_i128(x);
    match format {
        Some("int8") => (d(i8::MIN.into()), d(i8::MAX.into())),
        Some("int16") => (d(i16::MIN.into()), d(i16::MAX.into())),
        Some("int32") => (d(i32::MIN.into()), d(i32::MAX.into())),
        Some("int64") => (d(i64::MIN.into()), d(i64::MAX.into())),
        Some("uint8") => (d(0), d(u8::MAX.into())),
        Some("uint16") => (d(0), d(u16::MAX.into())),
        Some("uint32") => (d(0), d(u32::MAX.into())),
        Some("uint64") => (d(0), d(u64::MAX.into())),
        _ => (None, None),
    }
}

fn err(out: &mut Vec<FieldError>, path: &str, message: impl Into<String>) {
    let field = if path.is_empty() { "body" } else { path };
    out.push(FieldError { field: field.to_string(), message: message.into() });
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// Every schema within `schema` (not through references), for `f`.
fn walk(schema: &MetaSchemaRef, f: &mut impl FnMut(&MetaSchema)) {
    let MetaSchemaRef::Inline(s) = schema else { return };
    f(s);
    for (_, p) in &s.properties {
        walk(p, f);
    }
    for x in s.items.iter().chain(s.additional_properties.iter()) {
        walk(x, f);
    }
    for x in s.all_of.iter().chain(&s.any_of).chain(&s.one_of) {
        walk(x, f);
    }
}

/// What a type's refusals say instead of the generic words: a value not in its enum, a key it does not list.
pub struct Words {
    /// After the value in backticks.
    pub value: Option<&'static str>,
    /// After the key in backticks (an object whose keys are a list: the states).
    pub key: Option<&'static str>,
    /// Whether the values follow the words (a short list).
    pub list: bool,
}

/// The words of the types whose lists are too long to repeat in a message.
fn words(rust_typename: Option<&str>) -> Option<Words> {
    let name = rust_typename?.rsplit("::").next()?;
    let name = name.split('<').next()?;
    match name {
        "StateCode" | "StateParam" => Some(Words { value: Some("is not a two-letter US state code or DC"), key: None, list: false }),
        "StateCodeOrEmpty" => Some(Words { value: Some("is not a two-letter state code (or empty)"), key: None, list: false }),
        "StateOrEmpty" => Some(Words { value: Some("is not a two-letter US state code or DC (or empty)"), key: None, list: false }),
        "StateMap" => Some(Words { value: None, key: Some("is not a two-letter US state code or DC"), list: false }),
        "PaidTier" => Some(Words { value: Some("is not a paid tier"), key: None, list: true }),
        _ => None,
    }
}

#[cfg(test)]
#[path = "conform_tests.rs"]
mod tests;
