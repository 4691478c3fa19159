//! The network bodies: a profile as its owner saves and sees it, as the directory and the feed show it.

use poem_openapi::{Object, Union};

use super::accounts::Visibility;
use super::calculate::WorkType;

/// The business (or person) behind a profile. Only the last four digits of an EIN are ever taken.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct NetworkPrincipalRequest {
    #[oai(validator(max_length = 200))]
    pub legal_name: Option<String>,
    /// llc, c_corp, sole_prop, …; up to 20 characters.
    #[oai(validator(max_length = 20))]
    pub entity_type: Option<String>,
    /// Two letters, either case.
    pub state_of_incorporation: Option<super::param::StateParam>,
    /// The last four digits of the EIN (never the whole number).
    pub ein_last4: Option<super::param::EinLast4>,
    /// Shown to the owner only, never publicly.
    #[oai(validator(max_length = 200))]
    pub contact_email: Option<super::param::Email>,
    /// Whether the principal is a business: calculate treats a call whose counterparty is this agent as
    /// business-to-business (`b2b_detection.method: network_verified`) unless the caller declares is_b2b.
    pub is_business: Option<bool>,
}

/// Body of POST /api/v1/network.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct NetworkProfileRequest {
    /// The agent's id on the network: what other callers name as `counterparty_id`. 1 to 200 of A–Z a–z 0–9 _ - . : @.
    pub agent_id: super::param::AgentIdParam,
    #[oai(validator(min_length = 1, max_length = 200))]
    pub entity_name: String,
    /// Two letters, either case.
    pub entity_state: super::param::StateParam,
    /// Default public. A private profile is seen by its owner only, and never verifies a counterparty.
    pub visibility: Option<Visibility>,
    #[oai(validator(max_length = 2000))]
    pub description: Option<String>,
    pub work_type: Option<WorkType>,
    pub principal: Option<NetworkPrincipalRequest>,
}

/// A principal as the directory shows it: no contact email, no EIN digits.
#[derive(Object)]
pub struct PublicPrincipal {
    pub legal_name: Option<String>,
    /// llc, c_corp, sole_prop, …
    pub entity_type: Option<String>,
    /// Two-letter state code.
    pub state_of_incorporation: Option<String>,
    /// Whether the principal is a business (calculate's `b2b_detection` reads it).
    pub is_business: Option<bool>,
}

/// A public profile (directory, feed, calculate's `network_profile`).
#[derive(Object)]
pub struct PublicProfile {
    /// The agent's id on the network: what callers name as `counterparty_id`.
    pub agent_id: String,
    pub entity_name: String,
    /// Two-letter state code; null for a profile made at signup without a state.
    pub entity_state: Option<String>,
    /// compute, research, …; null when none was given.
    pub work_type: Option<String>,
    /// Empty when none was given.
    pub description: String,
    /// Null when the profile names no principal.
    pub principal: Option<PublicPrincipal>,
    /// When it joined (ISO 8601).
    pub joined_at: String,
    /// When it last changed (ISO 8601).
    pub updated_at: String,
}

/// A principal as its owner sees it.
#[derive(Object)]
pub struct OwnPrincipal {
    pub legal_name: Option<String>,
    pub entity_type: Option<String>,
    pub state_of_incorporation: Option<String>,
    pub ein_last4: Option<String>,
    pub contact_email: Option<String>,
    pub is_business: Option<bool>,
}

/// A profile as its owner sees it.
#[derive(Object)]
pub struct OwnProfile {
    pub agent_id: String,
    pub entity_name: String,
    pub entity_state: Option<String>,
    /// `public` or `private`.
    pub visibility: String,
    pub work_type: Option<String>,
    pub description: String,
    pub principal: Option<OwnPrincipal>,
    pub joined_at: String,
    pub updated_at: String,
}

/// POST and GET /api/v1/network.
#[derive(Object)]
pub struct NetworkProfileResponse {
    pub success: bool,
    /// True when the POST created the profile (201); false for an update, and on GET.
    pub created: bool,
    pub profile: OwnProfile,
}

/// GET /api/v1/network-directory with agent_id: that public profile.
#[derive(Object)]
pub struct DirectoryProfile {
    pub success: bool,
    pub profile: PublicProfile,
}

/// GET /api/v1/network-directory: a page of public profiles, oldest member first.
#[derive(Object)]
pub struct DirectoryPage {
    pub success: bool,
    /// 1-based.
    pub page: u64,
    /// 20.
    pub per_page: u64,
    /// Public profiles matching the filters, on all pages.
    pub total: u64,
    pub profiles: Vec<PublicProfile>,
}

/// One public profile (agent_id given), or a page of them.
#[derive(Union)]
#[oai(one_of)]
pub enum DirectoryAnswer {
    One(DirectoryProfile),
    Page(DirectoryPage),
}

/// An event of the public feed.
#[derive(Object)]
pub struct FeedEvent {
    /// `joined` or `updated`.
    pub event: String,
    /// When (ISO 8601).
    pub at: String,
    /// The profile as it is now.
    pub profile: PublicProfile,
}

/// GET /api/v1/network-feed: public joins and profile changes, newest first.
#[derive(Object)]
pub struct FeedPage {
    pub success: bool,
    /// 1-based.
    pub page: u64,
    /// 20.
    pub per_page: u64,
    /// Newest first.
    pub events: Vec<FeedEvent>,
}
