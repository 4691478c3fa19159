//! The error envelope of every failure, its frozen code enum, and the per-operation error responses.
//!
//! Handlers return `ApiError`; each operation converts it into its own response enum (declared with
//! [`error_responses!`]) so the OpenAPI document lists exactly the statuses that operation can give.
//! Statuses the spec leaves open: INVALID_JSON_BODY and IDEMPOTENCY_KEY_INVALID are 400,
//! WEBHOOK_SIGNATURE_INVALID is 401.

use super::schema::number::Exact;
use poem::http::StatusCode;
use poem_openapi::{Enum, Object};

use crate::engine::{EngineError, FieldError};
use crate::store::StoreError;

/// The 16 error codes. Frozen: clients branch on these; adding one needs an API version bump.
///
/// - INVALID_INPUT (400): validation failure; `errors` names each field.
/// - INVALID_JSON_BODY (400): the body is not valid JSON.
/// - UNAUTHORIZED (401): missing or invalid credentials (API key or session token).
/// - PAYMENT_REQUIRED (402): payment missing or invalid; also the demo daily limit reached without a key.
/// - FORBIDDEN (403): authenticated but not permitted (another account's data, a deactivated partner).
/// - TIER_LIMIT_REACHED (429): the monthly optimization-report allowance is used up.
/// - RESOURCE_NOT_FOUND (404): entity, key, partner, record or endpoint missing.
/// - METHOD_NOT_ALLOWED (405): wrong method for the route; the Allow header lists the right ones.
/// - RESOURCE_CONFLICT (409): unique-constraint violation (an email already registered), or a request with the same Idempotency-Key still running.
/// - IDEMPOTENCY_KEY_CONFLICT (409): the Idempotency-Key was used with a different body.
/// - IDEMPOTENCY_KEY_INVALID (400): the Idempotency-Key header is malformed (1 to 255 visible ASCII characters expected).
/// - NEXUS_NOT_REACHED (422): reserved, not returned; a seller call without nexus answers 200 with total_tax 0.
/// - RATE_LIMITED (429): burst or demo limiter tripped (Retry-After sent), or the free plan's monthly allowance used up ("Monthly limit reached", no Retry-After).
/// - WEBHOOK_SIGNATURE_INVALID (401): the partner webhook signature did not verify.
/// - INTERNAL (500): unexpected error; details are only in the server log. Safe to retry with backoff.
/// - DB_UNAVAILABLE (503): the database, or the x402 facilitator or MPP payment processor of a paid call, did not answer (nothing was charged). Transient; retry.
#[derive(Enum, Clone, Copy, Debug, PartialEq, Eq)]
#[oai(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    InvalidInput,
    InvalidJsonBody,
    Unauthorized,
    PaymentRequired,
    Forbidden,
    TierLimitReached,
    ResourceNotFound,
    MethodNotAllowed,
    ResourceConflict,
    IdempotencyKeyConflict,
    IdempotencyKeyInvalid,
    NexusNotReached,
    RateLimited,
    WebhookSignatureInvalid,
    Internal,
    DbUnavailable,
}

/// The body of every error response.
#[derive(Object, Clone, Debug)]
pub struct ErrorEnvelope {
    /// Always false.
    pub success: bool,
    /// Stable machine-readable code; branch on this.
    pub code: ErrorCode,
    /// Human-readable message; wording may change.
    pub error: String,
    /// The request id (the caller's X-Request-Id when sent); quote it when asking for help.
    pub request_id: String,
    /// One string per offending field, `field: problem`.
    #[oai(skip_serializing_if_is_none)]
    pub errors: Option<Vec<String>>,
    /// On a 402: how to get a key instead.
    #[oai(skip_serializing_if_is_none)]
    pub signup: Option<SignupBlock>,
    /// On a 402: the ways to pay for the call without an account. The challenges themselves are `accepts`,
    /// PAYMENT-REQUIRED and WWW-Authenticate.
    #[oai(skip_serializing_if_is_none)]
    pub pay_per_call: Option<PayPerCallOffer>,
    /// On the errors an agent can act on (401, 402, 429): the integration guide, /api/v1/agents, which says
    /// how to authenticate, pay and retry.
    #[oai(skip_serializing_if_is_none)]
    pub agent_guide: Option<String>,
    /// On a 402 while x402 is on: 1, the x402 version of `accepts` (this body is x402 v1's `PaymentRequirementsResponse`).
    #[oai(rename = "x402Version", skip_serializing_if_is_none)]
    pub x402_version: Option<i32>,
    /// On a 402 while x402 is on: how to pay for the call (the same offer, in x402 v2 form, is the PAYMENT-REQUIRED header).
    #[oai(skip_serializing_if_is_none)]
    pub accepts: Option<Vec<crate::payments::x402::PaymentRequirements>>,
    /// On a 402 refusing an MPP credential: its problem type (RFC 9457), one of the MPP specification's
    /// `https://paymentauth.org/problems/…` (malformed-credential, invalid-challenge, payment-expired,
    /// payment-insufficient, invalid-payload, verification-failed, payment-action-required).
    #[oai(rename = "type", skip_serializing_if_is_none)]
    pub problem_type: Option<String>,
}

/// How a keyless caller gets an API key.
#[derive(Object, Clone, Debug)]
pub struct SignupBlock {
    /// POST.
    pub method: String,
    pub url: String,
    /// The free plan's allowance.
    pub free_tier: String,
    pub required_fields: Vec<String>,
}

/// Paying for the call without an account: x402 (USDC), and MPP.
#[derive(Object, Clone, Debug)]
pub struct PayPerCallOffer {
    /// x402.
    pub id: String,
    /// The price of one call (USD, paid in USDC).
    pub price_usd_per_call: Exact,
    /// USDC.
    pub currency: String,
    /// The request header that carries the x402 payment (X-PAYMENT; PAYMENT-SIGNATURE in x402 v2).
    pub header: String,
    /// The chain payments are taken on, while x402 is on.
    #[oai(skip_serializing_if_is_none)]
    pub network: Option<String>,
    /// The address paid, while x402 is on.
    #[oai(skip_serializing_if_is_none)]
    pub payee: Option<String>,
    pub note: String,
    /// Paying by MPP (a 402 answering a calculate call).
    #[oai(skip_serializing_if_is_none)]
    pub mpp: Option<MppOffer>,
}

/// Paying by MPP, through Stripe (only `note` while MPP is off on this server).
#[derive(Object, Clone, Debug, Default)]
pub struct MppOffer {
    /// stripe.
    #[oai(skip_serializing_if_is_none)]
    pub method: Option<String>,
    /// charge.
    #[oai(skip_serializing_if_is_none)]
    pub intent: Option<String>,
    /// The charge in the currency's smallest unit (cents).
    #[oai(skip_serializing_if_is_none)]
    pub amount: Option<String>,
    /// usd.
    #[oai(skip_serializing_if_is_none)]
    pub currency: Option<String>,
    /// Authorization.
    #[oai(skip_serializing_if_is_none)]
    pub header: Option<String>,
    pub note: String,
}

impl PayPerCallOffer {
    /// The x402 offer at the plans' per-call price, its network, payee and MPP to be filled in.
    pub fn x402(ppc: &crate::plans::PayPerCall) -> PayPerCallOffer {
        PayPerCallOffer {
            id: ppc.id.clone(),
            price_usd_per_call: Exact::of(ppc.price_usd_per_call),
            currency: "USDC".into(),
            header: "X-PAYMENT".into(),
            network: None,
            payee: None,
            note: String::new(),
            mpp: None,
        }
    }
}

/// The statuses whose envelope carries `agent_guide`.
pub const AGENT_GUIDE_STATUSES: [u16; 3] = [401, 402, 429];

/// A failure on its way to the caller.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: ErrorCode,
    pub message: String,
    pub errors: Vec<String>,
    pub signup: Option<SignupBlock>,
    pub pay_per_call: Option<PayPerCallOffer>,
    /// The x402 payment requirements a 402 offers.
    pub accepts: Option<Vec<crate::payments::x402::PaymentRequirements>>,
    /// The MPP problem type of a refused credential.
    pub problem_type: Option<String>,
    /// Why a payment was refused (x402's reason, MPP's problem), for the metrics (bounded there).
    pub payment_reason: Option<String>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            errors: Vec::new(),
            signup: None,
            pay_per_call: None,
            accepts: None,
            problem_type: None,
            payment_reason: None,
        }
    }

    /// INVALID_INPUT naming every problem found, or nothing when none was.
    pub fn check(errors: Vec<String>) -> Result<(), ApiError> {
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(errors))
        }
    }

    pub fn invalid(errors: Vec<String>) -> Self {
        let n = errors.len();
        let mut e = ApiError::new(
            StatusCode::BAD_REQUEST,
            ErrorCode::InvalidInput,
            format!("the request has {n} invalid field{}", if n == 1 { "" } else { "s" }),
        );
        e.errors = errors;
        e
    }

    pub fn fields(errors: &[FieldError]) -> Self {
        ApiError::invalid(errors.iter().map(|e| format!("{}: {}", e.field, e.message)).collect())
    }

    /// The engine's answer to a request it cannot determine: its input errors are the caller's (400 INVALID_INPUT,
    /// each naming its field after `prefix`, as `records[3].` for an ingest record); anything else is a 500.
    pub fn engine(e: EngineError, prefix: &str) -> Self {
        match e {
            EngineError::Input(errors) => ApiError::invalid(errors.iter().map(|e| format!("{prefix}{}: {}", e.field, e.message)).collect()),
            other @ (EngineError::BeforeCoverage { .. } | EngineError::Internal(_)) => ApiError::internal(format!("engine: {other}")),
        }
    }

    pub fn field(field: &str, message: impl std::fmt::Display) -> Self {
        ApiError::invalid(vec![format!("{field}: {message}")])
    }

    pub fn invalid_json(detail: impl std::fmt::Display) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, ErrorCode::InvalidJsonBody, format!("the body is not valid JSON: {detail}"))
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::UNAUTHORIZED, ErrorCode::Unauthorized, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, ErrorCode::ResourceNotFound, message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::CONFLICT, ErrorCode::ResourceConflict, message)
    }

    pub fn rate_limited(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::TOO_MANY_REQUESTS, ErrorCode::RateLimited, message)
    }

    /// The refusal of a call past its key's burst limit (the headers are `AppState::burst_verdict`'s).
    pub fn burst_exceeded(limit: i64) -> Self {
        ApiError::rate_limited(format!(
            "rate limit of {limit} requests per 60 seconds for this key exceeded; retry after the window resets"
        ))
    }

    /// Logs the detail and tells the caller nothing more than that something went wrong.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::error!(error = %detail, "internal error");
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, ErrorCode::Internal, "unexpected error; safe to retry with backoff")
    }

    pub fn envelope(&self) -> ErrorEnvelope {
        ErrorEnvelope {
            success: false,
            code: self.code,
            error: self.message.clone(),
            request_id: super::context::request_id(),
            errors: (!self.errors.is_empty()).then(|| self.errors.clone()),
            signup: self.signup.clone(),
            pay_per_call: self.pay_per_call.clone(),
            agent_guide: AGENT_GUIDE_STATUSES.contains(&self.status.as_u16()).then(|| super::agents::GUIDE_PATH.to_string()),
            x402_version: self.accepts.as_ref().map(|_| 1),
            accepts: self.accepts.clone(),
            problem_type: self.problem_type.clone(),
        }
    }
}

impl From<crate::ledger::Refusal> for ApiError {
    fn from(r: crate::ledger::Refusal) -> Self {
        use crate::ledger::Refusal;
        match r {
            Refusal::KeyRevoked => ApiError::unauthorized("unknown or revoked API key"),
            Refusal::UnknownAccount => ApiError::internal("a per-call payment named an account that does not exist"),
            Refusal::BurstExceeded { limit } => ApiError::burst_exceeded(limit),
            Refusal::AllowanceUsedUp(message) => ApiError::rate_limited(message),
            Refusal::Input(errors) => ApiError::invalid(errors),
            Refusal::Engine(detail) => ApiError::internal(format!("engine: {detail}")),
            Refusal::Store(e) => ApiError::from(e),
        }
    }
}

impl From<sea_orm::DbErr> for ApiError {
    fn from(e: sea_orm::DbErr) -> Self {
        ApiError::from(StoreError::from(e))
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unavailable(detail) => {
                tracing::warn!(error = %detail, "database unavailable");
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, ErrorCode::DbUnavailable, "the database is unavailable; retry shortly")
            }
            StoreError::Conflict(detail) => {
                tracing::info!(error = %detail, "unique constraint");
                ApiError::conflict("the record conflicts with an existing one")
            }
            StoreError::Other(detail) => ApiError::internal(detail),
        }
    }
}

/// Declares an operation's success response enum: one variant per status, each with its payload and description, and
/// the request id header on every one.
#[macro_export]
macro_rules! ok_responses {
    ($name:ident { $($status:literal => $variant:ident($payload:ty): $doc:literal),+ $(,)? }) => {
        #[derive(poem_openapi::ApiResponse)]
        #[oai(header(name = "X-Request-Id", ty = "String", description = "The request id."))]
        pub enum $name {
            $(
                #[doc = $doc]
                #[oai(status = $status)]
                $variant($payload),
            )+
        }
    };
}

/// Declares an operation's error response enum: one variant per status it can return, each the envelope.
/// An `ApiError` with a status the operation did not declare becomes 500 INTERNAL (and is logged),
/// so the document never under-states what a route returns.
/// A status may carry more of `#[oai(...)]` in brackets after it (its headers: `402 [header(...)] => ...`).
#[macro_export]
macro_rules! error_responses {
    ($name:ident { $($status:literal $([$($extra:tt)*])? => $variant:ident: $doc:literal),+ $(,)? }) => {
        #[derive(poem_openapi::ApiResponse)]
        #[oai(header(name = "X-Request-Id", ty = "String", description = "The request id, echoed from the request or generated."))]
        pub enum $name {
            $(
                #[doc = $doc]
                #[oai(status = $status $(, $($extra)*)?)]
                $variant(poem_openapi::payload::Json<$crate::api::error::ErrorEnvelope>),
            )+
            /// Unexpected error; details are only in the server log.
            #[oai(status = 500)]
            Internal(poem_openapi::payload::Json<$crate::api::error::ErrorEnvelope>),
        }

        impl From<$crate::api::error::ApiError> for $name {
            fn from(e: $crate::api::error::ApiError) -> Self {
                match e.status.as_u16() {
                    $($status => $name::$variant(poem_openapi::payload::Json(e.envelope())),)+
                    other => {
                        let e = if other == 500 { e } else { $crate::api::error::ApiError::internal(format!("undeclared status {other} from {}: {}", stringify!($name), e.message)) };
                        $name::Internal(poem_openapi::payload::Json(e.envelope()))
                    }
                }
            }
        }
    };
}
