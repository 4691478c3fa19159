//! Request and response payloads.
//!
//! `Body<T>` is a request body parsed into `T`, the type that documents it: read within bounds, checked against
//! `T`'s own schema (`api::conform`, every problem at once), then parsed. The outcome waits in the extractor for
//! the handler to take (`body.parse()?`) once it has checked credentials and limits, so a caller without a key
//! hears 401 before any word about its body, and nothing is written before a body is known to be good.
//! `Json<T>` sends a typed response rendered from `T`.
//! `JsonBody<T>` accepts any body and leaves parsing to the handler: calculate and ingest, read against their types
//! into the engine's request once the key or the demo limiter has counted the call (malformed ones too), and kept as
//! sent for the ledger row; and the Stripe webhook, signed over the bytes.
//! `JsonText<T>` sends a body already rendered (by the engine's renderer, or an idempotency replay, byte for byte).
//!
//! Bodies are read within the request's [`Bounds`]: one whose Content-Length exceeds the size limit is refused
//! unread, and any other is read no further than the chunk that passes the limit and no longer than the body timeout,
//! so an oversized or dripping body costs at most the limit in memory.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use futures::StreamExt;
use poem::http::header::CONTENT_LENGTH;
use poem::{IntoResponse, Request, RequestBody, Response};
use poem_openapi::payload::{ParsePayload, Payload};
use poem_openapi::registry::{MetaMediaType, MetaRequest, MetaResponse, MetaResponses, MetaSchemaRef, Registry};
use poem_openapi::types::{ParseFromJSON, ToJSON, Type};
use poem_openapi::{ApiExtractor, ApiExtractorType, ApiResponse, ExtractParamOptions};
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::ApiError;
use crate::config::Bounds;

pub struct JsonBody<T> {
    pub raw: Vec<u8>,
    pub parsed: Result<Value, String>,
    /// The body's share of the body budget, held as long as `raw` is.
    _held: Held,
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
        Ok(JsonBody::read(request, body).await)
    }
}

impl<T> JsonBody<T> {
    async fn read(request: &Request, body: &mut RequestBody) -> Self {
        let (raw, parsed, held) = match read_bounded(request, body).await {
            Ok((raw, held)) if raw.is_empty() => (raw, Err("the body is empty".to_string()), held),
            Ok((raw, held)) if raw.iter().all(u8::is_ascii_whitespace) => {
                (raw, Err("the body holds only whitespace, no JSON value".to_string()), held)
            }
            Ok((raw, held)) => {
                let parsed = serde_json::from_slice::<Value>(&raw).map_err(|e| e.to_string());
                (raw, parsed, held)
            }
            Err(reason) => (Vec::new(), Err(reason), Held::default()),
        };
        JsonBody { raw, parsed, _held: held, _schema: PhantomData }
    }
}

/// Body bytes a request may hold without drawing on the [`BodyBudget`]: the bodies of ordinary calls.
const UNBUDGETED: usize = 16 << 10;
/// The budget's unit.
const KIB: usize = 1 << 10;

/// The bytes of request bodies held at once across all requests, past each body's first 16 KiB
/// (`Bounds::body_budget_bytes`): a large body waits for room (within its body timeout) instead of adding to
/// memory without bound when many arrive together.
#[derive(Clone)]
pub struct BodyBudget(Arc<Semaphore>);

impl BodyBudget {
    pub fn new(bounds: &Bounds) -> Self {
        // Never smaller than one body of the largest size, which would otherwise wait for ever.
        let kib = bounds.body_budget_bytes.max(bounds.max_body_bytes).div_ceil(KIB);
        BodyBudget(Arc::new(Semaphore::new(kib.min(Semaphore::MAX_PERMITS))))
    }
}

/// A body's share of the budget, given back when the body is dropped.
#[derive(Default)]
pub struct Held {
    budget: Option<BodyBudget>,
    permit: Option<OwnedSemaphorePermit>,
}

impl Held {
    /// Holds the budget for a body of up to `bytes`, waiting for it if need be; once per body, so that no body
    /// waits while holding a part (bodies each holding part and waiting for more would wait for one another).
    async fn reserve(&mut self, bytes: usize) {
        let Some(budget) = &self.budget else { return };
        if self.permit.is_none() {
            let kib = u32::try_from(bytes.saturating_sub(UNBUDGETED).div_ceil(KIB)).unwrap_or(u32::MAX);
            self.permit = budget.0.clone().acquire_many_owned(kib).await.ok();
        }
    }
}

/// The request's body, read within the request's [`Bounds`] and [`BodyBudget`] (from its data; the defaults and
/// no budget when absent); `Err` says why it was not read whole.
pub async fn read_bounded(request: &Request, body: &mut RequestBody) -> Result<(Vec<u8>, Held), String> {
    let bounds = request.data::<Bounds>().copied().unwrap_or_default();
    let max = bounds.max_body_bytes;
    let too_large = || format!("the body is larger than {max} bytes");
    let declared = request.headers().get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return Err(too_large());
    }
    let mut held = Held { budget: request.data::<BodyBudget>().cloned(), permit: None };
    let Ok(body) = body.take() else { return Ok((Vec::new(), held)) };
    let mut chunks = body.into_bytes_stream();
    let waiting_for_budget = AtomicBool::new(false);
    let read = async {
        // The chunks as they come, joined once at the end: no buffer regrown (and left to the allocator) on the way.
        let (mut chunks_held, mut len) = (Vec::new(), 0usize);
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|e| format!("the body could not be read: {e}"))?;
            len += chunk.len();
            if len > max {
                return Err(too_large());
            }
            if len > UNBUDGETED {
                // A large body: the budget for all it may grow to (its declared length, else the limit).
                waiting_for_budget.store(true, Ordering::Relaxed);
                held.reserve(declared.map_or(max, |n| n as usize)).await;
                waiting_for_budget.store(false, Ordering::Relaxed);
            }
            chunks_held.push(chunk);
        }
        Ok(chunks_held.concat())
    };
    match tokio::time::timeout(bounds.body_timeout, read).await {
        Err(_) if waiting_for_budget.load(Ordering::Relaxed) => Err(format!(
            "the body was not read within {} s: the server is reading other large bodies; retry shortly",
            bounds.body_timeout.as_secs()
        )),
        Err(_) => Err(format!("the body was not received within {} s", bounds.body_timeout.as_secs())),
        Ok(Err(reason)) => Err(reason),
        Ok(Ok(raw)) => Ok((raw, held)),
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

/// A request body parsed into `T` (see the module's words), with its raw bytes. `OPTIONAL`: the body may also be left out
/// (documented `required: false`), and an empty one is read as `{}`.
pub struct Body<T, const OPTIONAL: bool = false> {
    pub raw: Vec<u8>,
    parsed: Result<T, ApiError>,
    _held: Held,
}

impl<T, const OPTIONAL: bool> Body<T, OPTIONAL> {
    /// The typed body, or the INVALID_JSON_BODY / INVALID_INPUT error naming every problem.
    pub fn parse(self) -> Result<T, ApiError> {
        self.parsed
    }
}

/// A typed body that may be left out.
pub type OptionalBody<T> = Body<T, true>;

impl<T: Type + ParseFromJSON + 'static, const OPTIONAL: bool> Body<T, OPTIONAL> {
    async fn read(request: &Request, body: &mut RequestBody) -> Self {
        let read = JsonBody::<T>::read(request, body).await;
        // Absent is no bytes at all: whitespace alone is a body, and not JSON.
        let parsed = match (read.parsed, OPTIONAL && read.raw.is_empty()) {
            (_, true) => super::conform::parse::<T>(Value::Object(Default::default())),
            (Ok(value), false) => super::conform::parse::<T>(value),
            (Err(e), false) => Err(ApiError::invalid_json(e)),
        };
        Body { raw: read.raw, parsed, _held: read._held }
    }
}

impl<'a, T: Type + ParseFromJSON + 'static, const OPTIONAL: bool> ApiExtractor<'a> for Body<T, OPTIONAL> {
    const TYPES: &'static [ApiExtractorType] = &[ApiExtractorType::RequestObject];
    type ParamType = ();
    type ParamRawType = ();

    fn register(registry: &mut Registry) {
        T::register(registry);
    }

    fn request_meta() -> Option<MetaRequest> {
        JsonBody::<T>::request_meta().map(|m| MetaRequest { required: !OPTIONAL, ..m })
    }

    async fn from_request(request: &'a Request, body: &mut RequestBody, _opts: ExtractParamOptions<Self::ParamType>) -> poem::Result<Self> {
        Ok(Body::read(request, body).await)
    }
}

/// A JSON response body rendered from `T`, the type that documents it.
pub struct Json<T>(pub T);

impl<T: Type + ToJSON + Send> Payload for Json<T> {
    const CONTENT_TYPE: &'static str = "application/json";

    fn schema_ref() -> MetaSchemaRef {
        T::schema_ref()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
    }
}

/// `v` as the JSON text a typed response sends (`Json<T>`, `JsonText::typed`).
pub fn text_of<T: ToJSON>(v: &T) -> String {
    v.to_json().map(|v| serde_json::to_string(&v).unwrap_or_else(|_| "null".into())).unwrap_or_else(|| "null".into())
}

impl<T: ToJSON + Send> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        Response::builder().content_type("application/json").body(text_of(&self.0))
    }
}

impl<T: Type + ToJSON + Send> ApiResponse for Json<T> {
    fn meta() -> MetaResponses {
        JsonText::<T>::meta()
    }

    fn register(registry: &mut Registry) {
        T::register(registry);
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
}

impl<T: ToJSON> JsonText<T> {
    /// A typed body written once, for a caller that needs its text too (an ETag, a stored answer).
    pub fn typed(v: &T) -> Self {
        JsonText::new(text_of(v))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn large_bodies_wait_for_the_budget_and_small_ones_do_not() {
        // A budget of one largest body (1 MiB): one large body holds 1 MiB − 16 KiB of it; a second waits until
        // the first is dropped; a body within 16 KiB never waits.
        let budget = BodyBudget::new(&Bounds { body_budget_bytes: 0, ..Bounds::default() });
        let mut first = Held { budget: Some(budget.clone()), permit: None };
        first.reserve(1 << 20).await;
        assert_eq!(first.permit.as_ref().map(OwnedSemaphorePermit::num_permits), Some(1024 - 16));
        let mut small = Held { budget: Some(budget.clone()), permit: None };
        small.reserve(16 << 10).await;
        assert_eq!(small.permit.as_ref().map(OwnedSemaphorePermit::num_permits), Some(0));
        let mut second = Held { budget: Some(budget.clone()), permit: None };
        let waiting = tokio::time::timeout(std::time::Duration::from_millis(100), second.reserve(1 << 20)).await;
        assert!(waiting.is_err(), "the second large body waits while the first holds the budget");
        drop(first);
        second.reserve(1 << 20).await;
        assert_eq!(second.permit.as_ref().map(OwnedSemaphorePermit::num_permits), Some(1024 - 16));
    }
}
