//! The request and response types. They generate the OpenAPI document; request bodies are checked against
//! these schemas and parsed into them (`api::conform`, every field error at once), and responses are built as
//! them. Calculate and ingest bodies are read the same way into the engine's request (`calculate::read_request`)
//! and answered by the engine's renderer (`crate::engine::render`), the hot path; `api::calculate_contract` proves
//! the renderer writes what `FullCalculation`, `DemoCalculation` and `NexusAlert` write, byte for byte.

pub mod accounts;
pub mod billing;
pub mod calculate;
pub mod filing;
pub mod gains;
pub mod guides;
pub mod ledger;
pub mod network;
pub mod number;
pub mod param;
pub mod partners;
pub mod pattern;
pub mod pricing;
pub mod rates;
pub mod wallets;

/// Inside an `impl poem_openapi::types::Type`: a required value that is its own raw value (what the validators and
/// the parameter machinery see), as poem-openapi's own scalar types are.
#[macro_export]
macro_rules! raw_is_self {
    () => {
        const IS_REQUIRED: bool = true;
        type RawValueType = Self;
        type RawElementValueType = Self;

        fn as_raw_value(&self) -> Option<&Self> {
            Some(self)
        }

        fn raw_element_iter<'a>(&'a self) -> Box<dyn Iterator<Item = &'a Self> + 'a> {
            Box::new(std::iter::once(self))
        }
    };
}

/// Declares a documented enum whose values are a list the service itself validates against (the engine's in
/// `crate::rules::schema`, the gains tracker's in `crate::gains`), so the document cannot drift from what the
/// service accepts: one list, no hand copy. As a body field it is checked by `api::conform` against the list and
/// read as its string. Its doc comment, which
/// becomes the schema's description, is one line.
#[macro_export]
macro_rules! listed_enum {
    ($(#[doc = $doc:literal])* $name:ident = $list:expr) => {
        $(#[doc = $doc])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $name(pub String);

        impl $name {
            /// The values, as the service validates them.
            pub const VALUES: &'static [&'static str] = &$list;
        }

        impl poem_openapi::types::Type for $name {
            $crate::raw_is_self!();

            fn name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn schema_ref() -> poem_openapi::registry::MetaSchemaRef {
                poem_openapi::registry::MetaSchemaRef::Reference(stringify!($name).to_string())
            }

            fn register(registry: &mut poem_openapi::registry::Registry) {
                registry.create_schema::<Self, _>(stringify!($name).to_string(), |_| poem_openapi::registry::MetaSchema {
                    description: {
                        let doc: &'static str = concat!($($doc, "\n"),*).trim();
                        (!doc.is_empty()).then_some(doc)
                    },
                    enum_items: Self::VALUES.iter().map(|v| serde_json::Value::String(v.to_string())).collect(),
                    ..poem_openapi::registry::MetaSchema::new("string")
                });
            }
        }

        impl poem_openapi::types::ParseFromJSON for $name {
            fn parse_from_json(value: Option<serde_json::Value>) -> poem_openapi::types::ParseResult<Self> {
                match value.unwrap_or_default() {
                    serde_json::Value::String(s) if Self::VALUES.contains(&s.as_str()) => Ok($name(s)),
                    other => Err(poem_openapi::types::ParseError::expected_type(other)),
                }
            }
        }

        impl poem_openapi::types::ToJSON for $name {
            fn to_json(&self) -> Option<serde_json::Value> {
                Some(serde_json::Value::String(self.0.clone()))
            }
        }
    };
}

/// The component schemas `schema` refers to, directly or through others.
pub fn collect_refs(doc: &serde_json::Value, schema: &serde_json::Value, out: &mut Vec<String>) {
    match schema {
        serde_json::Value::Object(map) => {
            if let Some(name) = map.get("$ref").and_then(|r| r.as_str()).and_then(|r| r.strip_prefix("#/components/schemas/")) {
                if !out.iter().any(|n| n == name) {
                    out.push(name.to_string());
                    collect_refs(doc, &doc["components"]["schemas"][name], out);
                }
            }
            map.values().for_each(|v| collect_refs(doc, v, out));
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| collect_refs(doc, v, out)),
        _ => {}
    }
}
