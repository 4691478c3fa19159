//! The agent network: POST and GET /api/v1/network (an account's profiles), GET /api/v1/network-directory (public
//! profiles, one or a page of 20) and GET /api/v1/network-feed (public joins and changes, newest first).
//!
//! A private profile is seen by its owner only: the directory, the feed and calculate's counterparty check
//! never read it. Contact emails and EIN digits are shown to the owner only.

use std::sync::Arc;

use poem_openapi::param::Query;
use poem_openapi::OpenApi;

use super::auth::KeyAuth;
use super::context::client_ip;
use super::error::ApiError;
use super::payload::{Body, Json};
use super::schema::network::{
    DirectoryAnswer, DirectoryPage, DirectoryProfile, FeedEvent, FeedPage, NetworkProfileRequest, NetworkProfileResponse, OwnPrincipal,
    OwnProfile, PublicPrincipal, PublicProfile,
};
use super::schema::param::{AgentIdParam, PageNumber, Param, ShortText, WorkTypeFilter};
use super::{ApiTags, AppState};
use crate::clock::iso;
use crate::rules::schema::WORK_TYPES;
use crate::store::entity::network_profile;
use crate::store::network::{DirectoryQuery, Saved, PUBLIC};
use crate::{error_responses, ok_responses};

pub struct NetworkApi(pub Arc<AppState>);

/// Profiles per page of the directory and the feed (the spec's directory page).
pub const PER_PAGE: u64 = 20;

fn has_principal(p: &network_profile::Model) -> bool {
    p.principal_legal_name.is_some()
        || p.principal_entity_type.is_some()
        || p.principal_state.is_some()
        || p.principal_ein_last4.is_some()
        || p.principal_contact_email.is_some()
        || p.principal_is_business.is_some()
}

/// A profile as anyone may see it: no visibility, no contact email, no EIN digits.
pub fn public_view(p: &network_profile::Model) -> PublicProfile {
    let principal = has_principal(p).then(|| PublicPrincipal {
        legal_name: p.principal_legal_name.clone(),
        entity_type: p.principal_entity_type.clone(),
        state_of_incorporation: p.principal_state.clone(),
        is_business: p.principal_is_business,
    });
    PublicProfile {
        agent_id: p.agent_id.clone(),
        entity_name: p.entity_name.clone(),
        entity_state: (!p.entity_state.is_empty()).then(|| p.entity_state.clone()),
        work_type: p.work_type.clone(),
        description: p.description.clone(),
        principal,
        joined_at: iso(p.created_at),
        updated_at: iso(p.updated_at),
    }
}

/// A profile as its owner sees it.
fn own_view(p: network_profile::Model) -> OwnProfile {
    let principal = has_principal(&p).then(|| OwnPrincipal {
        legal_name: p.principal_legal_name.clone(),
        entity_type: p.principal_entity_type.clone(),
        state_of_incorporation: p.principal_state.clone(),
        ein_last4: p.principal_ein_last4.clone(),
        contact_email: p.principal_contact_email.clone(),
        is_business: p.principal_is_business,
    });
    OwnProfile {
        entity_state: (!p.entity_state.is_empty()).then(|| p.entity_state.clone()),
        joined_at: iso(p.created_at),
        updated_at: iso(p.updated_at),
        agent_id: p.agent_id,
        entity_name: p.entity_name,
        visibility: p.visibility,
        work_type: p.work_type,
        description: p.description,
        principal,
    }
}

/// The answer of POST and GET /network.
fn own_answer(p: network_profile::Model, created: bool) -> Json<NetworkProfileResponse> {
    Json(NetworkProfileResponse { success: true, created, profile: own_view(p) })
}

/// The profile a checked body asks for, for the account `entity_id`, at `now_ms`.
pub fn profile_row(req: NetworkProfileRequest, entity_id: &str, now_ms: i64) -> network_profile::Model {
    let visibility = req.visibility.map_or(PUBLIC, |v| v.as_str()).to_string();
    let mut row = network_profile::Model::new(
        req.agent_id.text().to_string(),
        entity_id.to_string(),
        req.entity_name,
        req.entity_state.text().to_ascii_uppercase(),
        visibility,
        req.description.unwrap_or_default(),
        req.work_type.map(|w| w.0),
        now_ms,
    );
    if let Some(p) = req.principal {
        row.principal_legal_name = p.legal_name;
        row.principal_entity_type = p.entity_type;
        row.principal_state = p.state_of_incorporation.map(|s| s.text().to_ascii_uppercase());
        row.principal_ein_last4 = p.ein_last4.map(|e| e.text().to_string());
        row.principal_contact_email = p.contact_email.map(|e| e.text().to_string());
        row.principal_is_business = p.is_business;
    }
    row
}

/// A page query (`PageNumber`: 1 by default, 1 to `MAX_PAGE`), 0-based.
fn page_of(page: Query<Option<Param<PageNumber>>>) -> Result<u64, ApiError> {
    page.0.map_or(Ok(0), |p| p.checked_whole::<u64>("page").map(|n| n - 1))
}

ok_responses!(SaveProfileResponses {
    201 => Created(Json<NetworkProfileResponse>): "The profile is created.",
    200 => Ok(Json<NetworkProfileResponse>): "The account's profile of this agent id is updated.",
});

error_responses!(SaveProfileErrors {
    400 => BadRequest: "INVALID_INPUT (errors names each field, `principal.` before the principal's) or INVALID_JSON_BODY.",
    401 => Unauthorized: "UNAUTHORIZED.",
    409 => Conflict: "RESOURCE_CONFLICT: another account's profile has this agent id.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(GetProfileResponses {
    200 => Ok(Json<NetworkProfileResponse>): "The profile.",
});

error_responses!(GetProfileErrors {
    400 => BadRequest: "INVALID_INPUT: agent_id is not an agent id.",
    401 => Unauthorized: "UNAUTHORIZED.",
    404 => NotFound: "RESOURCE_NOT_FOUND: the account has no profile (of this agent id).",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(DirectoryResponses {
    200 => Ok(Json<DirectoryAnswer>): "One public profile (agent_id given), or a page of them.",
});

error_responses!(DirectoryErrors {
    400 => BadRequest: "INVALID_INPUT: page is not an integer from 1 to 100000, or agent_id or search is malformed.",
    404 => NotFound: "RESOURCE_NOT_FOUND: no public profile has this agent_id.",
    429 => TooManyRequests: "RATE_LIMITED: the address's calls per minute or per UTC day (Retry-After sent).",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(FeedResponses {
    200 => Ok(Json<FeedPage>): "A page of the feed.",
});

error_responses!(FeedErrors {
    400 => BadRequest: "INVALID_INPUT: page is not an integer from 1 to 100000.",
    429 => TooManyRequests: "RATE_LIMITED: the address's calls per minute or per UTC day (Retry-After sent).",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Network")]
impl NetworkApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const SAVE_NETWORK_PROFILE_EXAMPLE: &'static str = r#"{
        "body": {"agent_id": "acme-invoicer", "entity_name": "Acme Invoicing", "entity_state": "TX", "work_type": "compute", "principal": {"legal_name": "Acme Invoicing LLC", "is_business": true}},
        "status": 201,
        "expect": {"/created": true, "/profile/visibility": "public"}
    }"#;

    /// Create or update a network profile
    ///
    /// The account's profile of `agent_id`: 201 when it is new, 200 when the account's profile of that agent id
    /// is updated (the whole profile is replaced by the body), 409 when another account holds the agent id. A
    /// public profile is listed in the directory and the feed, and lets calculate recognize the agent as a
    /// counterparty (its principal's `is_business` decides `b2b_detection` when the caller does not declare
    /// is_b2b). The principal's contact email and EIN digits are shown to the owner only.
    #[oai(
        path = "/network",
        method = "post",
        operation_id = "saveNetworkProfile",
        code_sample(lang = "json", label = "example", source = "Self::SAVE_NETWORK_PROFILE_EXAMPLE")
    )]
    async fn save(&self, auth: KeyAuth, body: Body<NetworkProfileRequest>) -> Result<SaveProfileResponses, SaveProfileErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let row = profile_row(body.parse()?, &owner.entity.id, s.clock.now_ms());
        match s.store.save_profile(row).await.map_err(ApiError::from)? {
            Saved::Created(p) => Ok(SaveProfileResponses::Created(own_answer(p, true))),
            Saved::Updated(p) => Ok(SaveProfileResponses::Ok(own_answer(p, false))),
            Saved::HeldElsewhere => Err(ApiError::conflict("another account's network profile has this agent_id").into()),
        }
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const GET_NETWORK_PROFILE_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/profile/agent_id": "acme-invoicer"}
    }"#;

    /// The account's network profile
    ///
    /// The account's profile of `agent_id`, or, without it, the account's first profile.
    #[oai(
        path = "/network",
        method = "get",
        operation_id = "getNetworkProfile",
        code_sample(lang = "json", label = "example", source = "Self::GET_NETWORK_PROFILE_EXAMPLE")
    )]
    async fn get(&self, auth: KeyAuth, agent_id: Query<Option<Param<AgentIdParam>>>) -> Result<GetProfileResponses, GetProfileErrors> {
        let s = &self.0;
        let owner = s.authenticate(&auth).await?;
        let agent_id = agent_id.0.map(|p| p.checked("agent_id")).transpose()?;
        let found = s.store.own_profile(&owner.entity.id, agent_id.as_deref()).await.map_err(ApiError::from)?;
        let Some(p) = found else {
            return Err(ApiError::not_found(match agent_id {
                Some(a) => format!("this account has no network profile with agent_id {a}"),
                None => "this account has no network profile yet: POST /api/v1/network creates one".into(),
            })
            .into());
        };
        Ok(GetProfileResponses::Ok(own_answer(p, false)))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const NETWORK_DIRECTORY_EXAMPLE: &'static str = r#"{
        "query": "search=acme",
        "status": 200,
        "expect": {"/profiles/0/agent_id": "acme-invoicer", "/profiles/0/principal/is_business": true}
    }"#;

    /// The public directory of the network
    ///
    /// With `agent_id`: that public profile (404 when there is none, or it is private). Otherwise public profiles,
    /// oldest member first, 20 per page: `work_type` keeps one work type (a value that is not one is ignored, as if
    /// absent), `search` keeps profiles whose agent id, entity name or description contains the text (any case).
    /// Keyless; limited per client address.
    #[oai(
        path = "/network-directory",
        method = "get",
        operation_id = "networkDirectory",
        code_sample(lang = "json", label = "example", source = "Self::NETWORK_DIRECTORY_EXAMPLE")
    )]
    async fn directory(
        &self,
        agent_id: Query<Option<Param<AgentIdParam>>>,
        /// A work type (compute, research, …); any other value is ignored.
        work_type: Query<Option<Param<WorkTypeFilter>>>,
        /// Text to find in the agent id, the entity name or the description (any case).
        search: Query<Option<Param<ShortText>>>,
        page: Query<Option<Param<PageNumber>>>,
    ) -> Result<DirectoryResponses, DirectoryErrors> {
        let s = &self.0;
        s.check_network_read(&client_ip()).await?;
        // Every parameter is checked, also those a lookup by agent id does not use.
        let agent_id = agent_id.0.map(|p| p.checked("agent_id")).transpose()?;
        let search = search.0.map(|p| p.checked("search")).transpose()?;
        let page = page_of(page)?;
        if let Some(a) = agent_id {
            let Some(p) = s.store.public_profile(&a).await.map_err(ApiError::from)? else {
                return Err(ApiError::not_found(format!("no public network profile has agent_id {a}")).into());
            };
            return Ok(DirectoryResponses::Ok(Json(DirectoryAnswer::One(DirectoryProfile { success: true, profile: public_view(&p) }))));
        }
        let work_type = work_type.0.map(|p| p.0).filter(|w| WORK_TYPES.contains(&w.as_str()));
        let q = DirectoryQuery { work_type, search, page, per_page: PER_PAGE };
        let (rows, total) = s.store.directory(&q).await.map_err(ApiError::from)?;
        Ok(DirectoryResponses::Ok(Json(DirectoryAnswer::Page(DirectoryPage {
            success: true,
            page: page + 1,
            per_page: PER_PAGE,
            total,
            profiles: rows.iter().map(public_view).collect(),
        }))))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const NETWORK_FEED_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/events/0/event": "joined", "/events/0/profile/agent_id": "acme-invoicer"}
    }"#;

    /// The public network feed
    ///
    /// Public profiles that joined or changed, newest first, 20 per page, each with the profile as it is now (a
    /// profile made private leaves the feed). Keyless; limited per client address with the directory.
    #[oai(
        path = "/network-feed",
        method = "get",
        operation_id = "networkFeed",
        code_sample(lang = "json", label = "example", source = "Self::NETWORK_FEED_EXAMPLE")
    )]
    async fn feed(&self, page: Query<Option<Param<PageNumber>>>) -> Result<FeedResponses, FeedErrors> {
        let s = &self.0;
        s.check_network_read(&client_ip()).await?;
        let page = page_of(page)?;
        let events = s.store.feed(page, PER_PAGE).await.map_err(ApiError::from)?;
        let events = events.iter().map(|(e, p)| FeedEvent { event: e.kind.clone(), at: iso(e.at), profile: public_view(p) }).collect();
        Ok(FeedResponses::Ok(Json(FeedPage { success: true, page: page + 1, per_page: PER_PAGE, events })))
    }
}
