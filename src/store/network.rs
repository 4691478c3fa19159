//! The agent network: profiles (saved by their owner, each save an event of the public feed), the public
//! directory and the feed, and the public profile calculate recognizes a counterparty by.

use sea_orm::sea_query::{Expr, Func, LikeExpr, OnConflict};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, Condition, ConnectionTrait, DbBackend, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
    QuerySelect, TransactionTrait,
};

use super::entity::{network_event, network_profile};
use super::script::Sql;
use super::{Store, StoreError};
use crate::security::new_ordered_id;

pub const PUBLIC: &str = "public";

/// What saving a profile did.
#[derive(Debug, PartialEq)]
pub enum Saved {
    /// A new profile.
    Created(network_profile::Model),
    /// The owner's profile of that agent id, changed.
    Updated(network_profile::Model),
    /// Another account holds the agent id.
    HeldElsewhere,
}

/// A directory query: an optional work type, an optional search text, and a page.
#[derive(Debug, Default)]
pub struct DirectoryQuery {
    pub work_type: Option<String>,
    pub search: Option<String>,
    /// 0-based.
    pub page: u64,
    pub per_page: u64,
}

/// `%text%` for LIKE, with `\` escaping LIKE's own wildcards in the text.
fn contains_pattern(text: &str) -> String {
    let mut p = String::from("%");
    for ch in text.to_lowercase().chars() {
        if matches!(ch, '%' | '_' | '\\') {
            p.push('\\');
        }
        p.push(ch);
    }
    p.push('%');
    p
}

impl Store {
    /// Saves an account's profile of `p.agent_id` (the primary key: one account per agent id, on every instance)
    /// and records the feed's event in the same transaction. A profile of another account's agent id is not touched.
    pub async fn save_profile(&self, p: network_profile::Model) -> Result<Saved, StoreError> {
        let txn = self.writer.begin().await?;
        let existing = network_profile::Entity::find_by_id(p.agent_id.clone()).one(&txn).await?;
        let saved = match existing {
            Some(e) if e.entity_id != p.entity_id => return Ok(Saved::HeldElsewhere),
            Some(e) => {
                let row = network_profile::Model { created_at: e.created_at, ..p };
                network_profile::Entity::update(network_profile::ActiveModel::from(row.clone()).reset_all()).exec(&txn).await?;
                Saved::Updated(row)
            }
            None => {
                if !Store::insert_profile(&txn, p.clone()).await? {
                    // Taken meanwhile, by another request: this one changes nothing.
                    return Ok(Saved::HeldElsewhere);
                }
                txn.commit().await?;
                return Ok(Saved::Created(p));
            }
        };
        if let Saved::Updated(row) = &saved {
            Store::feed_event(&txn, row, "updated").await?;
        }
        txn.commit().await?;
        Ok(saved)
    }

    /// Inserts a new profile and its `joined` event inside `conn`'s transaction; false (nothing written) when the
    /// agent id is taken.
    pub async fn insert_profile<C: ConnectionTrait>(conn: &C, p: network_profile::Model) -> Result<bool, StoreError> {
        let inserted = network_profile::Entity::insert(network_profile::ActiveModel::from(p.clone()))
            .on_conflict(OnConflict::column(network_profile::Column::AgentId).do_nothing().to_owned())
            .exec_without_returning(conn)
            .await?;
        if inserted == 0 {
            return Ok(false);
        }
        Store::feed_event(conn, &p, "joined").await?;
        Ok(true)
    }

    async fn feed_event<C: ConnectionTrait>(conn: &C, p: &network_profile::Model, kind: &str) -> Result<(), StoreError> {
        let event = network_event::Model {
            id: new_ordered_id("nev", p.updated_at),
            agent_id: p.agent_id.clone(),
            kind: kind.into(),
            at: p.updated_at,
        };
        network_event::Entity::insert(network_event::ActiveModel::from(event)).exec_without_returning(conn).await?;
        Ok(())
    }

    /// The account's profile of `agent_id`, or its first profile.
    pub async fn own_profile(&self, entity_id: &str, agent_id: Option<&str>) -> Result<Option<network_profile::Model>, StoreError> {
        let mut q = network_profile::Entity::find().filter(network_profile::Column::EntityId.eq(entity_id));
        if let Some(a) = agent_id {
            q = q.filter(network_profile::Column::AgentId.eq(a));
        }
        Ok(q.order_by_asc(network_profile::Column::CreatedAt).order_by_asc(network_profile::Column::AgentId).one(&self.db).await?)
    }

    /// The profiles of these agent ids, whoever may see them (the ledger batch reads them with the rest it needs,
    /// and keeps for each job only what its account may see: [`visible_to`]).
    pub fn profiles_sql<'a>(backend: DbBackend, agent_ids: &[&'a str]) -> Sql<'a> {
        let mut sql = Sql::new(backend);
        sql.push(r#"SELECT * FROM "network_profiles" WHERE "agent_id""#).in_list(agent_ids.iter().copied());
        sql
    }

    /// The public profile of `agent_id` (a private one is `None`, as if there were none).
    pub async fn public_profile(&self, agent_id: &str) -> Result<Option<network_profile::Model>, StoreError> {
        Ok(network_profile::Entity::find_by_id(agent_id.to_string())
            .filter(network_profile::Column::Visibility.eq(PUBLIC))
            .one(&self.db)
            .await?)
    }

    /// A page of the public directory, oldest member first, and how many public profiles match in all.
    pub async fn directory(&self, q: &DirectoryQuery) -> Result<(Vec<network_profile::Model>, u64), StoreError> {
        let mut cond = Condition::all().add(network_profile::Column::Visibility.eq(PUBLIC));
        if let Some(w) = &q.work_type {
            cond = cond.add(network_profile::Column::WorkType.eq(w.as_str()));
        }
        if let Some(text) = q.search.as_deref().filter(|t| !t.is_empty()) {
            let like = || LikeExpr::new(contains_pattern(text)).escape('\\');
            let lower = |c: network_profile::Column| Expr::expr(Func::lower(Expr::col(c)));
            cond = cond.add(
                Condition::any()
                    .add(lower(network_profile::Column::AgentId).like(like()))
                    .add(lower(network_profile::Column::EntityName).like(like()))
                    .add(lower(network_profile::Column::Description).like(like())),
            );
        }
        let total = network_profile::Entity::find().filter(cond.clone()).count(&self.db).await?;
        let rows = network_profile::Entity::find()
            .filter(cond)
            .order_by_asc(network_profile::Column::CreatedAt)
            .order_by_asc(network_profile::Column::AgentId)
            .offset(q.page * q.per_page)
            .limit(q.per_page)
            .all(&self.db)
            .await?;
        Ok((rows, total))
    }

    /// A page of the public feed, newest first: each event with the profile as it is now. Events of profiles
    /// that are private now are left out.
    pub async fn feed(&self, page: u64, per_page: u64) -> Result<Vec<(network_event::Model, network_profile::Model)>, StoreError> {
        let events = network_event::Entity::find()
            .filter(
                network_event::Column::AgentId.in_subquery(
                    sea_orm::sea_query::Query::select()
                        .column(network_profile::Column::AgentId)
                        .from(network_profile::Entity)
                        .and_where(network_profile::Column::Visibility.eq(PUBLIC))
                        .to_owned(),
                ),
            )
            .order_by_desc(network_event::Column::At)
            .order_by_desc(network_event::Column::Id)
            .offset(page * per_page)
            .limit(per_page)
            .all(&self.db)
            .await?;
        let ids: Vec<String> = events.iter().map(|e| e.agent_id.clone()).collect();
        let profiles: std::collections::HashMap<String, network_profile::Model> = network_profile::Entity::find()
            .filter(network_profile::Column::AgentId.is_in(ids))
            .filter(network_profile::Column::Visibility.eq(PUBLIC))
            .all(&self.db)
            .await?
            .into_iter()
            .map(|p| (p.agent_id.clone(), p))
            .collect();
        Ok(events.into_iter().filter_map(|e| profiles.get(&e.agent_id).cloned().map(|p| (e, p))).collect())
    }
}

/// Whether the account `viewer` may see profile `p`: a public profile anyone, a private one its owner only.
pub fn visible_to(p: &network_profile::Model, viewer: &str) -> bool {
    p.visibility == PUBLIC || p.entity_id == viewer
}
