//! An agent's profile on the network, owned by an account; public ones are listed in the directory and the feed,
//! and let calculate recognize the agent as a counterparty.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "network_profiles")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub agent_id: String,
    pub entity_id: String,
    pub entity_name: String,
    pub entity_state: String,
    pub visibility: String,
    pub description: String,
    pub work_type: Option<String>,
    pub principal_legal_name: Option<String>,
    pub principal_entity_type: Option<String>,
    pub principal_state: Option<String>,
    pub principal_ein_last4: Option<String>,
    pub principal_contact_email: Option<String>,
    pub principal_is_business: Option<bool>,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Model {
    /// A profile saved at `now_ms` without a principal (the principal's fields are set apart).
    #[allow(clippy::too_many_arguments, reason = "one argument per column a profile always has")]
    pub fn new(
        agent_id: String,
        entity_id: String,
        entity_name: String,
        entity_state: String,
        visibility: String,
        description: String,
        work_type: Option<String>,
        now_ms: i64,
    ) -> Model {
        Model {
            agent_id,
            entity_id,
            entity_name,
            entity_state,
            visibility,
            description,
            work_type,
            principal_legal_name: None,
            principal_entity_type: None,
            principal_state: None,
            principal_ein_last4: None,
            principal_contact_email: None,
            principal_is_business: None,
            created_at: now_ms,
            updated_at: now_ms,
        }
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
