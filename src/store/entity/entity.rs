//! An account: the business (or person) behind one or more agents.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "entities")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub email: String,
    pub password_hash: String,
    pub agent_name: String,
    pub agent_work_type: String,
    pub agent_description: String,
    pub company_name: String,
    pub state: String,
    /// AES-256-GCM ciphertext of the EIN (nonce prepended, base64); never the plain number.
    pub ein_ciphertext: Option<String>,
    pub est_volume: String,
    pub join_network: bool,
    pub network_visibility: String,
    /// Signup attribution (utm_* and landing_page) as JSON text.
    pub utm: String,
    /// The tax plan: a tier id of `rules/plans.yaml` (calculate and ingest count against it).
    pub plan: String,
    /// The gains tracker's plan (recorded trades count against it).
    pub gains_plan: String,
    /// `active` or `past_due` (see `billing::Standing`).
    pub plan_status: String,
    pub past_due_since: Option<i64>,
    /// The processor's subscriptions paying for the tax and gains plans, and its customer id.
    pub tax_subscription: Option<String>,
    pub gains_subscription: Option<String>,
    pub billing_customer: Option<String>,
    /// False until the account first stores its nexus configuration.
    pub nexus_configured: bool,
    pub created_at: i64,
}

/// The values of `plan_status`: in good standing, or behind on a payment since `past_due_since` (the grace it gets
/// is `billing::Standing`'s).
pub const PLAN_ACTIVE: &str = "active";
pub const PLAN_PAST_DUE: &str = "past_due";

impl Model {
    /// A new account as every account starts: on the free plans, paid up, no nexus configured, private, nothing
    /// declared (the caller sets the rest with struct update syntax).
    pub fn new(id: String, email: String, now_ms: i64) -> Model {
        Model {
            id,
            email,
            password_hash: String::new(),
            agent_name: String::new(),
            agent_work_type: "compute".into(),
            agent_description: String::new(),
            company_name: String::new(),
            state: String::new(),
            ein_ciphertext: None,
            est_volume: String::new(),
            join_network: false,
            network_visibility: "private".into(),
            utm: "{}".into(),
            plan: crate::plans::DEFAULT_PLAN.into(),
            gains_plan: crate::plans::DEFAULT_PLAN.into(),
            plan_status: PLAN_ACTIVE.into(),
            past_due_since: None,
            tax_subscription: None,
            gains_subscription: None,
            billing_customer: None,
            nexus_configured: false,
            created_at: now_ms,
        }
    }

    /// The account that stands for a payer paying per call with no account of its own (an x402 wallet, an MPP
    /// challenge): its email under the reserved `.invalid` domain (RFC 2606), no password (nobody logs in to it),
    /// private, on the free plans.
    pub fn payer_account(id: String, email: String, agent_name: &str, agent_description: String, now_ms: i64) -> Model {
        Model { password_hash: "!".into(), agent_name: agent_name.into(), agent_description, ..Model::new(id, email, now_ms) }
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
