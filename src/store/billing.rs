//! Plans on accounts: billing events applied once, an operator's plan changes, and the figures of a usage
//! statement.

use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter, QueryOrder, Set, TransactionTrait};

use super::entity::{billing_event, entity};
use super::{Store, StoreError};
use crate::billing::changes::apply;
use crate::billing::{statement_counters, Product, Standing};
use crate::payments::checkout::{Change, Event};

/// What taking a billing event did.
#[derive(Debug, PartialEq)]
pub enum Applied {
    /// Applied now to this account; what it did, in words.
    Applied { entity_id: String, outcome: String },
    /// Recorded, changing nothing: why (no account it names, or nothing to act on).
    Nothing(String),
    /// This event id was taken before: nothing changed.
    Duplicate,
}

impl Store {
    /// Takes a verified billing event in one transaction: its id is recorded first (a second delivery, even a
    /// concurrent one on another instance, finds it and changes nothing), then the account it names (by id, or
    /// by the subscription paying for its plans) is changed.
    pub async fn apply_billing_event(&self, event: &Event, now_ms: i64) -> Result<Applied, StoreError> {
        let txn = self.writer.begin().await?;
        let row = billing_event::Model {
            id: event.id.clone(),
            kind: event.kind.clone(),
            entity_id: None,
            subscription: event.change.subscription().map(str::to_string),
            outcome: String::new(),
            created_at: event.created_ms,
            received_at: now_ms,
        };
        let inserted = billing_event::Entity::insert(billing_event::ActiveModel::from(row))
            .on_conflict(OnConflict::column(billing_event::Column::Id).do_nothing().to_owned())
            .exec_without_returning(&txn)
            .await?;
        if inserted == 0 {
            return Ok(Applied::Duplicate);
        }
        if let Some(sub) = event.change.subscription() {
            let newer = billing_event::Entity::find()
                .filter(billing_event::Column::Subscription.eq(sub))
                .filter(billing_event::Column::CreatedAt.gt(event.created_ms))
                .one(&txn)
                .await?;
            if newer.is_some() {
                let why = "a newer event about this subscription was applied before; this one changes nothing";
                return finish(txn, &event.id, None, why).await.map(|()| Applied::Nothing(why.into()));
            }
        }
        let mut account = match event.change.entity_id() {
            Some(id) => entity::Entity::find_by_id(id.to_string()).one(&txn).await?,
            None => None,
        };
        if account.is_none() {
            if let Some(sub) = event.change.subscription() {
                account = entity::Entity::find()
                    .filter(Condition::any().add(entity::Column::TaxSubscription.eq(sub)).add(entity::Column::GainsSubscription.eq(sub)))
                    .one(&txn)
                    .await?;
            }
        }
        let result = match account {
            Some(mut a) => {
                let outcome = apply(&mut a, &event.change, event.created_ms);
                save_plans(&txn, &a, now_ms).await?;
                Applied::Applied { entity_id: a.id, outcome }
            }
            None => match &event.change {
                Change::Nothing(why) => Applied::Nothing(why.clone()),
                _ => Applied::Nothing("no levy account is named by the event or paid for by its subscription".into()),
            },
        };
        let (entity_id, outcome) = match &result {
            Applied::Applied { entity_id, outcome } => (Some(entity_id.clone()), outcome.clone()),
            Applied::Nothing(why) => (None, why.clone()),
            Applied::Duplicate => (None, String::new()),
        };
        finish(txn, &event.id, entity_id, &outcome).await?;
        Ok(result)
    }

    /// Sets an account's plan for a product, by its email, as an operator does without a processor, at `now_ms`; the
    /// account is active again. `None`: no account has that email.
    pub async fn set_plan(&self, email: &str, product: Product, plan: &str, now_ms: i64) -> Result<Option<entity::Model>, StoreError> {
        let txn = self.writer.begin().await?;
        let Some(mut a) = entity::Entity::find().filter(entity::Column::Email.eq(email)).one(&txn).await? else { return Ok(None) };
        match product {
            Product::Tax => a.plan = plan.to_string(),
            Product::Gains => a.gains_plan = plan.to_string(),
        }
        a.plan_status = Standing::ACTIVE.into();
        a.past_due_since = None;
        save_plans(&txn, &a, now_ms).await?;
        txn.commit().await?;
        Ok(Some(a))
    }

    /// Every account, oldest first.
    pub async fn all_accounts(&self) -> Result<Vec<entity::Model>, StoreError> {
        Ok(entity::Entity::find().order_by_asc(entity::Column::CreatedAt).order_by_asc(entity::Column::Id).all(&self.db).await?)
    }

    /// Per product (in [`Product::ALL`]'s order), the account's calls and overage calls in the month starting at
    /// `month_ms`.
    pub async fn month_counts(&self, entity_id: &str, month_ms: i64) -> Result<Vec<(i64, i64)>, StoreError> {
        let mut counts = Vec::new();
        for (_, usage, overage) in statement_counters(entity_id, month_ms) {
            counts.push((
                self.read_counter(&usage.name, usage.window_start).await?,
                self.read_counter(&overage.name, overage.window_start).await?,
            ));
        }
        Ok(counts)
    }
}

/// Writes the account's plan columns at `now_ms`. A tax plan that is a paid one may be a partner user's first
/// upgrade, which locks its partner's revenue share (`store::partners`).
async fn save_plans<C: sea_orm::ConnectionTrait>(conn: &C, a: &entity::Model, now_ms: i64) -> Result<(), StoreError> {
    entity::Entity::update(entity::ActiveModel {
        id: Set(a.id.clone()),
        plan: Set(a.plan.clone()),
        gains_plan: Set(a.gains_plan.clone()),
        plan_status: Set(a.plan_status.clone()),
        past_due_since: Set(a.past_due_since),
        tax_subscription: Set(a.tax_subscription.clone()),
        gains_subscription: Set(a.gains_subscription.clone()),
        billing_customer: Set(a.billing_customer.clone()),
        ..Default::default()
    })
    .exec(conn)
    .await?;
    if a.plan != crate::plans::DEFAULT_PLAN {
        super::partners::record_first_upgrade(conn, &a.id, now_ms).await?;
    }
    Ok(())
}

/// Records what an event did (the account it changed, in words) and commits.
async fn finish(txn: sea_orm::DatabaseTransaction, id: &str, entity_id: Option<String>, outcome: &str) -> Result<(), StoreError> {
    billing_event::Entity::update_many()
        .col_expr(billing_event::Column::EntityId, sea_orm::sea_query::Expr::value(entity_id))
        .col_expr(billing_event::Column::Outcome, sea_orm::sea_query::Expr::value(outcome))
        .filter(billing_event::Column::Id.eq(id))
        .exec(&txn)
        .await?;
    txn.commit().await?;
    Ok(())
}
