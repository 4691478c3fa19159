//! POST /api/v1/auth/signup, POST /api/v1/auth/login, GET /api/v1/auth/me, POST /api/v1/auth/agents.

use std::sync::Arc;

use chrono::{Datelike, TimeZone, Utc};
use poem_openapi::types::ToJSON;
use poem_openapi::OpenApi;

use super::auth::SessionAuth;
use super::context::client_ip;
use super::error::ApiError;
use super::keys::key_view;
use super::payload::{Body, Json};
use super::schema::accounts::{
    AccountView, Agent, AgentCreated, CreateAgentRequest, JoinedProfile, LoginRequest, LoginResponse, MeResponse, RecentTrade,
    RecentTransaction, SignupRequest, SignupResponse, Usage,
};
use super::schema::billing::PlanStanding;
use super::schema::number::{Exact, Usd};
use super::{ApiTags, AppState};
use crate::accounts::{self, NewAccount, Refused};
use crate::billing::Standing;
use crate::clock::iso;
use crate::store::decimal;
use crate::store::entity::agent;
use crate::{error_responses, ok_responses};

pub struct AccountsApi(pub Arc<AppState>);

ok_responses!(SignupResponses {
    201 => Created(Json<SignupResponse>): "The account, its first agent and its first API key (shown once).",
});

error_responses!(SignupErrors {
    400 => BadRequest: "INVALID_INPUT (errors name each field) or INVALID_JSON_BODY; nothing is written.",
    409 => Conflict: "RESOURCE_CONFLICT: the email is already registered.",
    429 => TooMany: "RATE_LIMITED: too many signups from this address (per hour and per UTC day); Retry-After says when to try again.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(LoginResponses {
    200 => Ok(Json<LoginResponse>): "A session token for the dashboard routes.",
});

error_responses!(LoginErrors {
    400 => BadRequest: "INVALID_INPUT or INVALID_JSON_BODY.",
    401 => Unauthorized: "UNAUTHORIZED: unknown email or wrong password (the message does not say which).",
    429 => TooMany: "RATE_LIMITED: too many failed logins for this account or from this address in the login window; Retry-After says when to try again.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(MeResponses {
    200 => Ok(Json<MeResponse>): "The account, its agents, key prefixes, this month's usage, recent transactions and trades.",
});

error_responses!(MeErrors {
    400 => BadRequest: "INVALID_INPUT: a query parameter this operation does not take.",
    401 => Unauthorized: "UNAUTHORIZED: missing, unknown or expired session token.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

ok_responses!(AgentResponses {
    201 => Created(Json<AgentCreated>): "The new agent.",
});

error_responses!(AgentErrors {
    400 => BadRequest: "INVALID_INPUT or INVALID_JSON_BODY.",
    401 => Unauthorized: "UNAUTHORIZED: missing, unknown or expired session token.",
    503 => DbUnavailable: "DB_UNAVAILABLE.",
});

/// A signup body in the forms its values are stored in; what JSON Schema cannot say of it.
fn new_account(req: SignupRequest) -> NewAccount {
    // Only the attribution fields sent, as before.
    let utm = req.utm.and_then(|u| u.to_json()).map(|mut u| {
        if let Some(o) = u.as_object_mut() {
            o.retain(|_, v| !v.is_null());
        }
        u
    });
    NewAccount {
        email: req.email.text().trim().to_ascii_lowercase(),
        password: req.password,
        agent_name: req.agent_name,
        work_type: req.agent_work_type.0,
        description: req.agent_description.unwrap_or_default(),
        company: req.company_name.unwrap_or_default(),
        state: req.state.map(|s| s.text().to_ascii_uppercase()).unwrap_or_default(),
        ein_digits: req.ein.map(|e| e.text().replace('-', "")).filter(|d| !d.is_empty()),
        est_volume: req.est_volume.unwrap_or_default(),
        join_network: req.join_network.unwrap_or(false),
        visibility: req.network_visibility.map_or("public", |v| v.as_str()).to_string(),
        utm,
    }
}

impl From<Refused> for ApiError {
    fn from(r: Refused) -> ApiError {
        match r {
            Refused::EmailTaken => ApiError::conflict("an account with this email already exists; log in instead"),
            Refused::WrongCredentials => ApiError::unauthorized("wrong email or password"),
            Refused::Internal(m) => ApiError::internal(m),
            Refused::Store(e) => e.into(),
        }
    }
}

pub fn agent_view(a: &agent::Model) -> Agent {
    Agent {
        agent_id: a.id.clone(),
        name: a.name.clone(),
        work_type: a.work_type.clone(),
        description: a.description.clone(),
        created_at: iso(a.created_at),
    }
}

#[OpenApi(prefix_path = "/api/v1", tag = "ApiTags::Accounts")]
impl AccountsApi {
    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const SIGNUP_EXAMPLE: &'static str = r#"{
        "body": {"email": "agent@example.com", "password": "correct horse battery", "agent_name": "invoice-agent", "agent_work_type": "compute"},
        "status": 201,
        "expect": {"/success": true, "/plan": "free"}
    }"#;

    /// Create an account, its first agent and its first API key
    ///
    /// The password is stored as an argon2 hash and the EIN encrypted (AES-256-GCM). The API key is shown
    /// once, in this response only. New accounts are on the free plan (its allowance: GET /api/v1/pricing).
    #[oai(
        path = "/auth/signup",
        method = "post",
        operation_id = "signup",
        code_sample(lang = "json", label = "example", source = "Self::SIGNUP_EXAMPLE")
    )]
    async fn signup(&self, body: Body<SignupRequest>) -> Result<SignupResponses, SignupErrors> {
        let s = &self.0;
        let new = new_account(body.parse()?);
        s.check_signup(&client_ip()).await?;
        let done = accounts::sign_up(&s.store, &s.data_key, new, s.clock.now_ms()).await.map_err(ApiError::from)?;
        let out = SignupResponse {
            success: true,
            entity_id: done.entity_id,
            agent_id: done.agent_id,
            plan: "free".into(),
            network_profile: done.profile.map(|(agent_id, visibility)| JoinedProfile { agent_id, visibility }),
            api_key: key_view(&done.raw_key, &done.key),
            next_steps: [
                "Store the API key now: it is shown only once.",
                "Tell levy where you have nexus: POST /api/v1/nexus {\"nexus\": {\"TX\": {\"hasNexus\": true}}}; until then seller calls return total_tax 0 with tax_if_nexus.",
                "Calculate: POST /api/v1/calculate with X-API-Key, e.g. {\"amount\": 100, \"buyer_state\": \"TX\", \"buyer_zip\": \"78701\", \"counterparty_id\": \"cust-1\"}.",
                "Send an Idempotency-Key header on calculate so that retries never record a transaction twice.",
                "Read the API manual at /docs (OpenAPI document: /api/v1/openapi.json).",
            ]
            .map(String::from)
            .to_vec(),
        };
        Ok(SignupResponses::Created(Json(out)))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const LOGIN_EXAMPLE: &'static str = r#"{
        "body": {"email": "agent@example.com", "password": "correct horse battery"},
        "status": 200,
        "expect": {"/success": true, "/token_type": "Bearer"}
    }"#;

    /// Log in: a session token for the dashboard routes
    #[oai(
        path = "/auth/login",
        method = "post",
        operation_id = "login",
        code_sample(lang = "json", label = "example", source = "Self::LOGIN_EXAMPLE")
    )]
    async fn login(&self, body: Body<LoginRequest>) -> Result<LoginResponses, LoginErrors> {
        let s = &self.0;
        let LoginRequest { email, password } = body.parse()?;
        let email = email.trim().to_ascii_lowercase();
        let ip = client_ip();
        s.check_login(&email, &ip).await?;
        let session = accounts::log_in(&s.store, &email, password, s.clock.now_ms()).await.map_err(ApiError::from)?;
        s.login_succeeded(&email, &ip).await?;
        let out = LoginResponse {
            success: true,
            session_token: session.token,
            token_type: "Bearer".into(),
            expires_at: iso(session.expires_at),
            entity_id: session.entity_id,
        };
        Ok(LoginResponses::Ok(Json(out)))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const ME_EXAMPLE: &'static str = r#"{
        "status": 200,
        "expect": {"/success": true, "/entity/plan": "free"}
    }"#;

    /// The account: entity, agents, key prefixes, this month's usage, recent transactions and trades
    #[oai(
        path = "/auth/me",
        method = "get",
        operation_id = "me",
        code_sample(lang = "json", label = "example", source = "Self::ME_EXAMPLE")
    )]
    async fn me(&self, auth: SessionAuth) -> Result<MeResponses, MeErrors> {
        let s = &self.0;
        let account = s.session(&auth).await?;
        let now_ms = s.clock.now_ms();
        let o = accounts::overview(&s.store, &s.plans, &account, now_ms).await.map_err(ApiError::from)?;
        let (statement, standing) = (&o.statement, o.standing);
        // The tax plan's line: the figures `usage` has always given.
        let (tax_plan, calls, included, overage_calls) =
            statement.lines.first().map_or((String::new(), 0, None, 0), |l| (l.plan.clone(), l.calls, l.included, l.overage_calls));
        let included = included.unwrap_or(i64::MAX);
        let now = Utc.timestamp_millis_opt(now_ms).single().unwrap_or_else(Utc::now);
        let out = MeResponse {
            success: true,
            plans: PlanStanding {
                tax_plan: account.plan.clone(),
                gains_plan: account.gains_plan.clone(),
                status: standing.status().to_string(),
                past_due_since: account.past_due_since.filter(|_| standing != Standing::Active).map(iso),
                grace_ends_at: standing.grace_ends_at().map(iso),
            },
            entity: AccountView {
                ein_on_file: account.ein_ciphertext.is_some(),
                created_at: iso(account.created_at),
                entity_id: account.id,
                email: account.email,
                company_name: account.company_name,
                state: account.state,
                plan: account.plan,
                join_network: account.join_network,
                network_visibility: account.network_visibility,
                nexus_configured: account.nexus_configured,
            },
            agents: o.agents.iter().map(agent_view).collect(),
            keys: o.keys.iter().map(super::keys::summary).collect(),
            usage: Usage {
                month: format!("{:04}-{:02}", now.year(), now.month()),
                plan: tax_plan,
                calls,
                included,
                overage_calls,
                remaining: (included - calls).max(0),
                products: super::billing::usage_lines(statement),
                overage_usd: crate::engine::money::usd(statement.overage_usd()),
            },
            recent_transactions: o
                .recent_transactions
                .into_iter()
                .map(|t| RecentTransaction {
                    transaction_id: t.id,
                    created_at: iso(t.created_at),
                    source: t.source,
                    role: t.role,
                    buyer_state: t.buyer_state,
                    counterparty_id: t.counterparty_id,
                    amount: Exact::of(decimal(&t.amount)),
                    total_tax: Usd::cents(decimal(&t.total_tax)),
                })
                .collect(),
            recent_trades: o
                .recent_trades
                .into_iter()
                .map(|t| RecentTrade {
                    trade_id: t.id,
                    trade_type: t.trade_type,
                    asset_symbol: t.asset_symbol,
                    quantity: Exact::normalized(decimal(&t.quantity)),
                    price_per_unit: Exact::normalized(decimal(&t.price_per_unit)),
                    trade_date: iso(t.trade_date),
                    realized_gain: t.realized_gain.as_deref().map(|g| Usd::cents(decimal(g))),
                })
                .collect(),
        };
        Ok(MeResponses::Ok(Json(out)))
    }

    /// The example in the document (`x-code-samples`): the request and what the answer holds; the guide shows and runs it.
    const CREATE_AGENT_EXAMPLE: &'static str = r#"{
        "body": {"agent_name": "reconciler", "work_type": "compute"},
        "status": 201,
        "expect": {"/success": true, "/agent/name": "reconciler"}
    }"#;

    /// Register another agent under the account
    #[oai(
        path = "/auth/agents",
        method = "post",
        operation_id = "createAgent",
        code_sample(lang = "json", label = "example", source = "Self::CREATE_AGENT_EXAMPLE")
    )]
    async fn create_agent(&self, auth: SessionAuth, body: Body<CreateAgentRequest>) -> Result<AgentResponses, AgentErrors> {
        let s = &self.0;
        let account = s.session(&auth).await?;
        let req = body.parse()?;
        let (name, description) = (req.agent_name, req.description.unwrap_or_default());
        let work_type = req.work_type.map_or_else(|| "compute".to_string(), |w| w.0);
        let a = accounts::add_agent(&s.store, &account.id, name, work_type, description, s.clock.now_ms()).await.map_err(ApiError::from)?;
        Ok(AgentResponses::Created(Json(AgentCreated { success: true, agent: agent_view(&a) })))
    }
}
