//! An API key: only its SHA-256 and its first 16 characters are stored.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "api_keys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub entity_id: String,
    pub name: String,
    pub prefix: String,
    pub key_hash: String,
    pub created_at: i64,
    pub revoked_at: Option<i64>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(belongs_to = "super::entity::Entity", from = "Column::EntityId", to = "super::entity::Column::Id")]
    Entity,
}

impl Related<super::entity::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Entity.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}

impl Model {
    /// A fresh key of the account `entity_id`, and the row that stores it (its hash and prefix only): the key is
    /// shown once and never again.
    pub fn fresh(entity_id: &str, name: &str, now: i64) -> (String, Model) {
        use crate::security::{key_prefix, new_api_key, new_id, sha256_hex};
        let raw = new_api_key();
        let row = Model {
            id: new_id("key"),
            entity_id: entity_id.into(),
            name: name.into(),
            prefix: key_prefix(&raw),
            key_hash: sha256_hex(raw.as_bytes()),
            created_at: now,
            revoked_at: None,
        };
        (raw, row)
    }
}
