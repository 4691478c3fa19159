//! Signup, login, the account view, agents and API keys (interface spec: "Account resources").

use poem_openapi::{Enum, Object};

use super::calculate::WorkType;
use super::number::{Exact, Usd};

#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum Visibility {
    Public,
    Private,
}

impl Visibility {
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Public => "public",
            Visibility::Private => "private",
        }
    }
}

/// Signup attribution; each value at most 200 characters, landing_page at most 500.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct Utm {
    #[oai(validator(max_length = 200))]
    pub utm_source: Option<String>,
    #[oai(validator(max_length = 200))]
    pub utm_medium: Option<String>,
    #[oai(validator(max_length = 200))]
    pub utm_campaign: Option<String>,
    #[oai(validator(max_length = 200))]
    pub utm_content: Option<String>,
    #[oai(validator(max_length = 200))]
    pub utm_term: Option<String>,
    #[oai(validator(max_length = 500))]
    pub landing_page: Option<String>,
}

/// Body of POST /api/v1/auth/signup.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct SignupRequest {
    /// Unique per account; compared case-insensitively. One @, a local part, a dotted domain, no spaces.
    pub email: super::param::Email,
    /// At least 8 characters; stored only as an argon2 hash.
    #[oai(validator(min_length = 8, max_length = 1024))]
    pub password: String,
    #[oai(validator(min_length = 1, max_length = 200))]
    pub agent_name: String,
    pub agent_work_type: WorkType,
    #[oai(validator(max_length = 2000))]
    pub agent_description: Option<String>,
    #[oai(validator(max_length = 200))]
    pub company_name: Option<String>,
    /// Two-letter state code (any case) or empty.
    pub state: Option<super::param::StateOrEmpty>,
    /// Nine digits (dashes allowed); stored encrypted (AES-256-GCM), never returned.
    pub ein: Option<super::param::Ein>,
    #[oai(validator(max_length = 100))]
    pub est_volume: Option<String>,
    pub join_network: Option<bool>,
    pub network_visibility: Option<Visibility>,
    pub utm: Option<Utm>,
}

/// A new API key: shown once, never again.
#[derive(Object)]
pub struct NewApiKey {
    /// The full key; store it now.
    pub key: String,
    /// The first 16 characters, used to list and revoke the key.
    pub prefix: String,
    pub note: String,
    pub name: String,
    pub created_at: String,
}

/// The network profile a signup with join_network made.
#[derive(Object)]
pub struct JoinedProfile {
    /// The first agent's id, which is its id on the network.
    pub agent_id: String,
    pub visibility: String,
}

#[derive(Object)]
pub struct SignupResponse {
    pub success: bool,
    pub entity_id: String,
    pub agent_id: String,
    pub plan: String,
    /// With join_network: the first agent's network profile (complete it with POST /api/v1/network); else null.
    pub network_profile: Option<JoinedProfile>,
    pub api_key: NewApiKey,
    pub next_steps: Vec<String>,
}

#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct LoginRequest {
    #[oai(validator(min_length = 1, max_length = 320))]
    pub email: String,
    #[oai(validator(min_length = 1, max_length = 1024))]
    pub password: String,
}

#[derive(Object)]
pub struct LoginResponse {
    pub success: bool,
    /// Send as `Authorization: Bearer <session_token>` to GET /api/v1/auth/me.
    pub session_token: String,
    pub token_type: String,
    pub expires_at: String,
    pub entity_id: String,
}

/// Body of POST /api/v1/auth/agents.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct CreateAgentRequest {
    #[oai(validator(min_length = 1, max_length = 200))]
    pub agent_name: String,
    /// Default compute.
    pub work_type: Option<WorkType>,
    #[oai(validator(max_length = 2000))]
    pub description: Option<String>,
}

#[derive(Object)]
pub struct Agent {
    pub agent_id: String,
    pub name: String,
    pub work_type: String,
    pub description: String,
    pub created_at: String,
}

#[derive(Object)]
pub struct AgentCreated {
    pub success: bool,
    pub agent: Agent,
}

/// A key as listed: never the key itself.
#[derive(Object)]
pub struct KeySummary {
    pub prefix: String,
    pub name: String,
    pub created_at: String,
    /// Set once revoked; a revoked key gets 401.
    pub revoked_at: Option<String>,
    pub active: bool,
}

#[derive(Object)]
pub struct KeyList {
    pub success: bool,
    pub keys: Vec<KeySummary>,
}

#[derive(Enum, Clone, Copy)]
#[oai(rename_all = "snake_case")]
pub enum KeyType {
    Live,
}

/// Body of POST /api/v1/keys.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct KeyCreateRequest {
    /// Default "Default".
    #[oai(validator(min_length = 1, max_length = 200))]
    pub name: Option<String>,
    /// Only live: test keys are on the roadmap and not available (400).
    #[oai(rename = "type")]
    pub kind: Option<KeyType>,
}

#[derive(Object)]
pub struct KeyCreated {
    pub success: bool,
    pub api_key: NewApiKey,
}

/// Body of DELETE /api/v1/keys.
#[derive(Object)]
#[oai(deny_unknown_fields)]
pub struct RevokeRequest {
    /// The first 16 characters of the key.
    #[oai(validator(min_length = 16, max_length = 16))]
    pub prefix: String,
}

#[derive(Object)]
pub struct RevokeResponse {
    pub success: bool,
    pub prefix: String,
    pub revoked: bool,
    pub revoked_at: String,
}

/// This month's usage: the tax plan's figures (calculate and ingest), then every product's line as GET
/// /api/v1/usage gives it.
#[derive(Object)]
pub struct Usage {
    /// YYYY-MM (UTC).
    pub month: String,
    /// The tax plan that applies now.
    pub plan: String,
    pub calls: i64,
    pub included: i64,
    /// Calls past the allowance on a paid plan, billed per call.
    pub overage_calls: i64,
    pub remaining: i64,
    /// Per product (tax, gains): plan, calls, allowance, overage and its amount.
    pub products: Vec<super::billing::UsageLine>,
    /// The month's overage amount so far, USD with two decimals.
    pub overage_usd: String,
}

/// The account as its owner sees it (never the EIN).
#[derive(Object)]
pub struct AccountView {
    pub entity_id: String,
    /// The email it logs in with.
    pub email: String,
    /// Empty when none was given.
    pub company_name: String,
    /// Two-letter state code, or empty.
    pub state: String,
    /// The tax plan held (a tier id of GET /api/v1/pricing).
    pub plan: String,
    /// True when an EIN is on file (it is never shown).
    pub ein_on_file: bool,
    /// Whether the signup asked to join the agent network.
    pub join_network: bool,
    /// `public` or `private`.
    pub network_visibility: String,
    /// True once the account has said where it has nexus (POST /api/v1/nexus).
    pub nexus_configured: bool,
    /// ISO 8601, UTC.
    pub created_at: String,
}

/// A ledger entry, summarized.
#[derive(Object)]
pub struct RecentTransaction {
    pub transaction_id: String,
    /// When it was recorded (ISO 8601, UTC).
    pub created_at: String,
    /// `calculate` (a keyed calculate call) or `ingest` (an ingested record).
    pub source: String,
    /// seller or buyer.
    pub role: String,
    pub buyer_state: String,
    pub counterparty_id: String,
    /// The amount (USD) as recorded.
    pub amount: Exact,
    /// The total tax (USD) as recorded.
    pub total_tax: Usd,
}

/// A recorded trade, summarized (its figures as GET /api/v1/trades gives them).
#[derive(Object)]
pub struct RecentTrade {
    pub trade_id: String,
    /// buy or sell.
    pub trade_type: String,
    pub asset_symbol: String,
    pub quantity: Exact,
    /// USD per unit.
    pub price_per_unit: Exact,
    /// ISO 8601, UTC.
    pub trade_date: String,
    /// The gain or loss a sale realized (USD); null for a buy.
    pub realized_gain: Option<Usd>,
}

/// GET /api/v1/auth/me.
#[derive(Object)]
pub struct MeResponse {
    pub success: bool,
    pub entity: AccountView,
    pub agents: Vec<Agent>,
    pub keys: Vec<KeySummary>,
    /// The plans held, and whether they are paid up.
    pub plans: super::billing::PlanStanding,
    pub usage: Usage,
    /// The ten most recent ledger entries, newest first.
    pub recent_transactions: Vec<RecentTransaction>,
    /// The ten most recent trades by trade date.
    pub recent_trades: Vec<RecentTrade>,
}
