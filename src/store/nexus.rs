//! An account's nexus settings: which states it has nexus in, merged state by state.

use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set, TransactionTrait};

use super::entity::{entity, nexus_state};
use super::prepared::NEXUS_STATES;
use super::script::{Execute, Sql};
use super::{Store, StoreError};

pub struct NexusEntry {
    pub state: String,
    pub has_nexus: bool,
    pub reason: Option<String>,
}

impl Store {
    pub async fn nexus_states(&self, entity_id: &str) -> Result<Vec<nexus_state::Model>, StoreError> {
        Ok(nexus_state::Entity::find()
            .filter(nexus_state::Column::EntityId.eq(entity_id))
            .order_by_asc(nexus_state::Column::State)
            .all(&self.db)
            .await?)
    }

    /// The nexus settings of several accounts, in one query.
    pub fn nexus_states_sql<'a>(backend: sea_orm::DbBackend, entity_ids: &[&'a str]) -> Sql<'a> {
        let mut sql = Sql::new(backend);
        sql.push(r#"SELECT * FROM "nexus_states" WHERE "entity_id""#).in_list(entity_ids.iter().copied());
        sql.prepared(|| Execute::new(NEXUS_STATES.name).array(entity_ids.iter().copied(), "text"));
        sql
    }

    /// Writes only the states given; the others keep what they had. Marks the account as configured.
    pub async fn merge_nexus(&self, entity_id: &str, entries: &[NexusEntry], now: i64) -> Result<(), StoreError> {
        // The spec's merge: an empty map changes nothing, not even whether nexus counts as configured.
        if entries.is_empty() {
            return Ok(());
        }
        let txn = self.db.begin().await?;
        for e in entries {
            let row = nexus_state::ActiveModel {
                entity_id: Set(entity_id.into()),
                state: Set(e.state.clone()),
                has_nexus: Set(e.has_nexus),
                reason: Set(e.reason.clone()),
                updated_at: Set(now),
            };
            nexus_state::Entity::insert(row)
                .on_conflict(
                    OnConflict::columns([nexus_state::Column::EntityId, nexus_state::Column::State])
                        .update_columns([nexus_state::Column::HasNexus, nexus_state::Column::Reason, nexus_state::Column::UpdatedAt])
                        .to_owned(),
                )
                .exec_without_returning(&txn)
                .await?;
        }
        entity::Entity::update_many()
            .col_expr(entity::Column::NexusConfigured, true.into())
            .filter(entity::Column::Id.eq(entity_id))
            .exec(&txn)
            .await?;
        txn.commit().await?;
        Ok(())
    }
}
