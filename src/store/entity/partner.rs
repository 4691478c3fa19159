//! A partner: a platform that provisions accounts for its users, with its key (hashed), webhook secrets and terms.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "partners")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub slug: String,
    pub name: String,
    pub key_hash: String,
    pub key_prefix: String,
    pub secret: String,
    pub previous_secret: Option<String>,
    pub previous_secret_until: Option<i64>,
    /// Percent, as decimal text (`20`, `12.5`).
    pub revshare_pct: String,
    /// USD per billable call, as decimal text.
    pub wholesale_per_call: String,
    pub free_calls_per_user: i64,
    pub rate_limit_per_minute: i64,
    pub active: bool,
    pub created_at: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
