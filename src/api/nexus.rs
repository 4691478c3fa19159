//! POST and GET /api/v1/nexus, GET /api/v1/nexus-alerts.

use std::collections::BTreeMap;
use std::sync::Arc;

use poem_openapi::types::ParseFromJSON;
use poem_openapi::OpenApi;

use super::auth::KeyAuth;
use super::error::ApiError;
use super::payload::{Body, Json};
use super::schema::calculate::NexusAlert;
use super::schema::ledger::{NexusAlertsResponse, NexusEntryOut, NexusRequest, NexusResponse};
use super::{ApiTags, AppState};
use crate::clock::iso;
use crate::store::entity::entity;
use crate::store::nexus::NexusEntry;
use crate::{error_responses, ok_responses};

pub struct NexusApi(pub Arc<AppState>);

ok_responses!(NexusResponses {
    200 => Ok(Json<NexusResponse>): "The account's stored nexus configuration after the change (or as it stands).",
});

error_responses!(NexusErrors {
    400 => BadRequest: "INVALID_INPUT (errors name each state and field) or INVALID_JSON_BODY; nothing is written.",
    401 => Unauthorized: "UNAUTHORIZED.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(AlertsResponses {
    200 => Ok(Json<NexusAlertsResponse>): "States at 80% or more of their threshold (possibly none).",
});

error_responses!(AlertsErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter this operation does not take.",
    401 => Unauthorized: "UNAUTHORIZED.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

/// The entries of a checked body, codes upper-cased.
fn entries(req: NexusRequest) -> Vec<NexusEntry> {
    req.nexus.0.into_iter().map(|(k, e)| NexusEntry { state: k.to_ascii_uppercase(), has_nexus: e.has_nexus, reason: e.reason }).collect()
}

impl AppState {
    async fn nexus_view(&self, account_id: &str) -> Result<NexusResponse, ApiError> {
        let account = self.store.entity_by_id(account_id).await?.ok_or_else(|| ApiError::unauthorized("the account no longer exists"))?;
        let rows = self.store.nexus_states(account_id).await?;
        let mut nexus = BTreeMap::new();
        let mut with = Vec::new();
        for r in rows {
            if r.has_nexus {
                with.push(r.state.clone());
            }
            nexus.insert(r.state, NexusEntryOut { has_nexus: r.has_nexus, reason: r.reason, updated_at: iso(r.updated_at) });
        }
        Ok(NexusResponse { success: true, nexus_configured: account.nexus_configured, nexus, states_with_nexus: with })
    }

    async fn alerts_view(&self, account: &entity::Model) -> Result<NexusAlertsResponse, ApiError> {
        let nexus = self.nexus_map(account).await?;
        let now = self.clock.now_ms();
        let alerts = self.nexus_alerts(account, nexus.as_ref(), now).await?;
        Ok(NexusAlertsResponse {
            success: true,
            as_of: self.clock.now().date_naive().to_string(),
            jurisdictions_checked: crate::rules::schema::STATES.len() as u32,
            alerts,
        })
    }
}

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Nexus")]
impl NexusApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const SET_NEXUS_EXAMPLE: &'static str = r#"{
        "body": {"nexus": {"TX": {"hasNexus": true}}},
        "status": 200,
        "expect": {"/nexus/TX/hasNexus": true}
    }"#;

    /// Store where the account has nexus (merge)
    ///
    /// Only the states in the map are written; the others keep their setting; an empty map changes nothing
    /// (an account that never configured nexus stays unconfigured). Send hasNexus false to remove a state. Codes may be lowercase.
    #[oai(
        path = "/nexus",
        method = "post",
        operation_id = "setNexus",
        code_sample(lang = "json", label = "example", source = "Self::SET_NEXUS_EXAMPLE")
    )]
    async fn set(&self, auth: KeyAuth, body: Body<NexusRequest>) -> Result<NexusResponses, NexusErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let entries = entries(body.parse()?);
        s.store.merge_nexus(&owner.entity.id, &entries, s.clock.now_ms()).await.map_err(ApiError::from)?;
        Ok(NexusResponses::Ok(Json(s.nexus_view(&owner.entity.id).await?)))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const GET_NEXUS_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/states_with_nexus": ["TX"]}
    }"#;

    /// The account's nexus configuration
    #[oai(
        path = "/nexus",
        method = "get",
        operation_id = "getNexus",
        code_sample(lang = "json", label = "example", source = "Self::GET_NEXUS_EXAMPLE")
    )]
    async fn get(&self, auth: KeyAuth) -> Result<NexusResponses, NexusErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        Ok(NexusResponses::Ok(Json(s.nexus_view(&owner.entity.id).await?)))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const NEXUS_ALERTS_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/success": true}
    }"#;

    /// States where recorded sales reach 80% or more of the economic-nexus threshold
    ///
    /// All 51 jurisdictions are checked, each over its own threshold period (calendar year, trailing 12 months,
    /// four quarters, or the year ending September 30), from the seller-role sales this account recorded.
    #[oai(
        path = "/nexus-alerts",
        method = "get",
        operation_id = "nexusAlerts",
        code_sample(lang = "json", label = "example", source = "Self::NEXUS_ALERTS_EXAMPLE")
    )]
    async fn alerts(&self, auth: KeyAuth) -> Result<AlertsResponses, AlertsErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        Ok(AlertsResponses::Ok(Json(s.alerts_view(&owner.entity).await?)))
    }
}

impl AppState {
    /// The account's nexus as the engine takes it: `None` until the account has configured any.
    pub async fn nexus_map(&self, account: &entity::Model) -> Result<Option<BTreeMap<usize, bool>>, ApiError> {
        Ok(crate::ledger::alerts::nexus_of(&self.store, account).await?)
    }

    /// Alerts for every state at 80% or more of its threshold, from the revenue the account has recorded.
    pub async fn nexus_alerts(
        &self,
        account: &entity::Model,
        nexus: Option<&BTreeMap<usize, bool>>,
        now_ms: i64,
    ) -> Result<Vec<NexusAlert>, ApiError> {
        alert_views(crate::ledger::alerts::alerts(&self.store, &self.registry, account, nexus, now_ms).await?)
    }
}

/// The alerts as documented. The engine writes an alert as calculate's nexus_alerts carry it; `api::calculate_contract`
/// proves that text is what `NexusAlert` writes, so it reads back whole.
pub fn alert_views(alerts: Vec<serde_json::Value>) -> Result<Vec<NexusAlert>, ApiError> {
    alerts
        .into_iter()
        .map(|a| NexusAlert::parse_from_json(Some(a)).map_err(|e| ApiError::internal(format!("nexus alert: {}", e.into_message()))))
        .collect()
}
