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

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
