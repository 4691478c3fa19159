//! An account a partner provisioned for one of its users (the partner's `external_id`).

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "partner_users")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub partner_id: String,
    pub external_id: String,
    pub entity_id: String,
    pub email: Option<String>,
    pub display_name: Option<String>,
    pub claim_token_hash: Option<String>,
    pub claim_expires_at: i64,
    pub claimed_at: Option<i64>,
    pub deleted_at: Option<i64>,
    pub first_upgrade_at: Option<i64>,
    pub locked_revshare_pct: Option<String>,
    pub created_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
