//! GET /api/v1/health.

use std::sync::Arc;

use poem_openapi::payload::Json;
use poem_openapi::OpenApi;

use super::error::ApiError;
use super::schema::ledger::{DatabaseHealth, Health};
use super::{ApiTags, AppState};
use crate::{error_responses, ok_responses};

pub struct HealthApi(pub Arc<AppState>);

ok_responses!(HealthResponse {
    200 => Ok(Json<Health>): "The service is up and its database answers.",
});

error_responses!(HealthErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter this operation does not take.",
    503 => DbUnavailable: "The database does not answer (DB_UNAVAILABLE).",
});

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Service")]
impl HealthApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const HEALTH_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/status": "ok"}
    }"#;

    /// Health: status, database connectivity, engine and rule-set versions
    #[oai(
        path = "/health",
        method = "get",
        operation_id = "health",
        code_sample(lang = "json", label = "example", source = "Self::HEALTH_EXAMPLE")
    )]
    async fn health(&self) -> Result<HealthResponse, HealthErrors> {
        let s = &self.0;
        s.store.ping().await.map_err(ApiError::from)?;
        let backend = match s.store.backend() {
            sea_orm::DbBackend::Postgres => "postgres",
            sea_orm::DbBackend::Sqlite => "sqlite",
            sea_orm::DbBackend::MySql => "mysql",
        };
        Ok(HealthResponse::Ok(Json(Health {
            status: "ok".into(),
            database: DatabaseHealth { connected: true, backend: backend.into() },
            engine_version: s.registry.engine_version.clone(),
            rules_version: s.registry.version.clone(),
            service_version: env!("CARGO_PKG_VERSION").into(),
        })))
    }
}
