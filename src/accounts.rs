//! Accounts: signing up (the account, its first agent, its first API key, and its network profile when it joins the
//! network), logging in (a session for the dashboard routes), what the account holds (its overview), and another
//! agent. The API reads the bodies and keeps the limits per address; what is decided and stored is here.

use serde_json::Value;

use crate::billing::{month_counts, month_start_ms, Standing, Statement};
use crate::plans::Plans;
use crate::security::{
    check_login_password, hash_password_off_thread, new_id, new_session_token, off_request_threads, sha256_hex, DataKey,
};
use crate::store::entity::{agent, api_key, entity, network_profile, session, trade, transaction};
use crate::store::gains::TradeFilter;
use crate::store::{Store, StoreError};

/// Dashboard sessions last a week.
pub const SESSION_LIFETIME_MS: i64 = 7 * 24 * 3600 * 1000;

/// How many transactions and trades the overview shows, newest first.
const RECENT: u64 = 10;

/// Why an account request was refused; nothing of it was written.
#[derive(Debug)]
pub enum Refused {
    /// The email is already registered.
    EmailTaken,
    /// Unknown email or wrong password (the refusal does not say which).
    WrongCredentials,
    Internal(String),
    Store(StoreError),
}

crate::store_failure!(Refused);

/// A signup as the API read it: the forms the values are stored in (email trimmed and in lower case, the state in
/// upper case, the EIN's digits alone).
pub struct NewAccount {
    pub email: String,
    pub password: String,
    pub agent_name: String,
    pub work_type: String,
    pub description: String,
    pub company: String,
    pub state: String,
    pub ein_digits: Option<String>,
    pub est_volume: String,
    pub join_network: bool,
    pub visibility: String,
    /// The attribution fields sent.
    pub utm: Option<Value>,
}

/// A new account's ids, its network profile's (if it joined) and its first API key, shown once.
pub struct SignedUp {
    pub entity_id: String,
    pub agent_id: String,
    /// The profile's agent id and visibility.
    pub profile: Option<(String, String)>,
    pub raw_key: String,
    pub key: api_key::Model,
}

/// Signs up: the EIN encrypted with `data_key`, the password hashed (argon2, off the request threads), then the
/// account, its first agent, its first API key and its profile stored together.
pub async fn sign_up(store: &Store, data_key: &DataKey, new: NewAccount, now: i64) -> Result<SignedUp, Refused> {
    let ein_ciphertext = match new.ein_digits {
        Some(d) => Some(data_key.encrypt(&d).map_err(Refused::Internal)?),
        None => None,
    };
    let id = new_id("ent");
    let agent = agent::Model {
        id: new_id("agt"),
        entity_id: id.clone(),
        name: new.agent_name.clone(),
        work_type: new.work_type.clone(),
        description: new.description.clone(),
        created_at: now,
    };
    // Joining the network: the first agent's profile, under its agent id, with what the signup says of it.
    let profile = new.join_network.then(|| {
        let name = if new.company.is_empty() { new.agent_name.clone() } else { new.company.clone() };
        let (state, work) = (new.state.clone(), Some(new.work_type.clone()));
        network_profile::Model::new(agent.id.clone(), id.clone(), name, state, new.visibility.clone(), new.description.clone(), work, now)
    });
    let password = new.password;
    let password_hash = hash_password_off_thread(password).await.map_err(Refused::Internal)?;
    let account = entity::Model {
        password_hash,
        agent_name: new.agent_name,
        agent_work_type: new.work_type,
        agent_description: new.description,
        company_name: new.company,
        state: new.state,
        ein_ciphertext,
        est_volume: new.est_volume,
        join_network: new.join_network,
        network_visibility: new.visibility,
        utm: new.utm.unwrap_or_else(|| Value::Object(Default::default())).to_string(),
        ..entity::Model::new(id.clone(), new.email, now)
    };
    let (raw_key, key) = api_key::Model::fresh(&id, "Default", now);
    let agent_id = agent.id.clone();
    let joined = profile.as_ref().map(|p| (p.agent_id.clone(), p.visibility.clone()));
    match store.create_account(account, agent, key.clone(), profile).await {
        Ok(()) => Ok(SignedUp { entity_id: id, agent_id, profile: joined, raw_key, key }),
        Err(StoreError::Conflict(_)) => Err(Refused::EmailTaken),
        Err(e) => Err(e.into()),
    }
}

/// A session: its token (shown once; the store keeps its hash), when it expires, and the account.
pub struct LoggedIn {
    pub token: String,
    pub expires_at: i64,
    pub entity_id: String,
}

/// Logs in with `email` (trimmed, lower case) and `password`. An unknown email costs the same password check as a
/// wrong password (`security::check_login_password`).
pub async fn log_in(store: &Store, email: &str, password: String, now: i64) -> Result<LoggedIn, Refused> {
    let account = store.entity_by_email(email).await?;
    let stored = account.as_ref().map(|a| a.password_hash.clone());
    let opened = off_request_threads(move || check_login_password(&password, stored.as_deref())).await.map_err(Refused::Internal)?;
    let Some(account) = account.filter(|_| opened) else { return Err(Refused::WrongCredentials) };
    let token = new_session_token();
    let expires_at = now + SESSION_LIFETIME_MS;
    let row = session::Model { token_hash: sha256_hex(token.as_bytes()), entity_id: account.id.clone(), created_at: now, expires_at };
    Store::insert(&store.db, row).await?;
    Ok(LoggedIn { token, expires_at, entity_id: account.id })
}

/// What an account holds: its agents, its keys, this month's statement and its standing, its latest transactions and
/// trades.
pub struct Overview {
    pub agents: Vec<agent::Model>,
    pub keys: Vec<api_key::Model>,
    pub statement: Statement,
    pub standing: Standing,
    pub recent_transactions: Vec<transaction::Model>,
    pub recent_trades: Vec<trade::Model>,
}

pub async fn overview(store: &Store, plans: &Plans, account: &entity::Model, now_ms: i64) -> Result<Overview, StoreError> {
    let month_ms = month_start_ms(now_ms);
    let counts = month_counts(store, &account.id, month_ms).await?;
    Ok(Overview {
        agents: store.agents(&account.id).await?,
        keys: store.keys(&account.id).await?,
        statement: Statement::new(plans, account, month_ms, now_ms, &counts),
        standing: Standing::of(account, now_ms),
        recent_transactions: store.recent_transactions(&account.id, RECENT).await?,
        recent_trades: store.list_trades(&account.id, &TradeFilter { limit: RECENT, ..Default::default() }).await?,
    })
}

/// Registers another agent of the account.
pub async fn add_agent(
    store: &Store,
    entity_id: &str,
    name: String,
    work_type: String,
    description: String,
    now: i64,
) -> Result<agent::Model, StoreError> {
    let a = agent::Model { id: new_id("agt"), entity_id: entity_id.to_string(), name, work_type, description, created_at: now };
    Store::insert(&store.db, a.clone()).await?;
    Ok(a)
}
