//! Request and response payloads that keep the raw JSON while the OpenAPI document shows a typed schema.
//!
//! `JsonBody<T>` accepts any body and leaves parsing to the handler, so that validation can report every
//! field at once in the spec's words (and so the demo limiter counts malformed requests too).
//! `JsonText<T>` sends a body already rendered (by the engine's renderer, or an idempotency replay, byte for byte).

use std::marker::PhantomData;

use poem::{FromRequest, IntoResponse, Request, RequestBody, Response};
use poem_openapi::payload::{ParsePayload, Payload};
use poem_openapi::registry::{MetaMediaType, MetaRequest, MetaResponse, MetaResponses, MetaSchemaRef, Registry};
use poem_openapi::types::Type;
use poem_openapi::{ApiExtractor, ApiExtractorType, ApiResponse, ExtractParamOptions};
use serde_json::Value;

use super::error::ApiError;

/// Bodies larger than this are refused (an ingest batch of 100 records is far smaller).
pub const MAX_BODY_BYTES: usize = 1 << 20;

pub struct JsonBody<T> {
    pub raw: Vec<u8>,
    pub parsed: Result<Value, String>,
    _schema: PhantomData<T>,
}

impl<T> JsonBody<T> {
    /// The parsed JSON, or the INVALID_JSON_BODY error.
    pub fn value(&self) -> Result<&Value, ApiError> {
        self.parsed.as_ref().map_err(ApiError::invalid_json)
    }
}

impl<T: Type> Payload for JsonBody<T> {
    const CONTENT_TYPE: &'static str = "application/json";

    fn check_content_type(_content_type: &str) -> bool {
        true
    }

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Type> ParsePayload for JsonBody<T> {
    const IS_REQUIRED: bool = true;

    async fn from_request(request: &Request, body: &mut RequestBody) -> poem::Result<Self> {
        let raw = <Vec<u8> as FromRequest>::from_request(request, body).await?;
        let parsed = if raw.len() > MAX_BODY_BYTES {
            Err(format!("the body is larger than {MAX_BODY_BYTES} bytes"))
        } else if raw.iter().all(u8::is_ascii_whitespace) {
            Err("the body is empty".to_string())
        } else {
            serde_json::from_slice::<Value>(&raw).map_err(|e| e.to_string())
        };
        Ok(JsonBody { raw, parsed, _schema: PhantomData })
    }
}

impl<'a, T: Type> ApiExtractor<'a> for JsonBody<T> {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::RequestObject];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        <Self as Payload>::register(registry);
    }

    fn request_meta() -> Option<MetaRequest> {
        Some(MetaRequest {
            description: None,
            content: vec![MetaMediaType { content_type: <Self as Payload>::CONTENT_TYPE, schema: <Self as Payload>::schema_ref() }],
            required: true,
        })
    }

    async fn from_request(request: &'a Request, body: &mut RequestBody, _opts: ExtractParamOptions<Self::ParamType>) -> poem::Result<Self> {
        <Self as ParsePayload>::from_request(request, body).await
    }
}

/// A JSON response body, already serialised, documented with the schema of `T`.
pub struct JsonText<T> {
    pub body: String,
    _schema: PhantomData<T>,
}

impl<T> JsonText<T> {
    pub fn new(body: String) -> Self {
        JsonText { body, _schema: PhantomData }
    }

    pub fn value(v: &Value) -> Self {
        JsonText::new(serde_json::to_string(v).unwrap_or_else(|_| "null".into()))
    }
}

impl<T: Type + Send> Payload for JsonText<T> {
    const CONTENT_TYPE: &'static str = "application/json";

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

impl<T: Send> IntoResponse for JsonText<T> {
    fn into_response(self) -> Response {
        Response::builder().content_type("application/json").body(self.body)
    }
}

impl<T: Type + Send> ApiResponse for JsonText<T> {
    fn meta() -> MetaResponses {
        MetaResponses {
            responses: vec![MetaResponse {
                description: "",
                status: Some(200),
                status_range: None,
                content: vec![MetaMediaType { content_type: <Self as Payload>::CONTENT_TYPE, schema: <Self as Payload>::schema_ref() }],
                headers: vec![],
            }],
        }
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}
