//! Plans on accounts: billing events taken once, and an operator's plan changes. What an event does to an account is
//! `billing::events`' to decide; the store records the event and saves the account in one transaction.

use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, Condition, DatabaseTransaction, EntityTrait, QueryFilter, QueryOrder, Set, TransactionTrait};

use super::entity::{billing_event, entity};
use super::{Store, StoreError};

/// A billing event's row, as recorded when it is taken.
pub struct EventRow<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    /// The subscription it is about, if any.
    pub subscription: Option<&'a str>,
    pub created_ms: i64,
}

/// A billing event taken for the first time, in an open transaction that [`Store::settle_billing_event`] commits.
pub struct TakenEvent {
    txn: DatabaseTransaction,
    id: String,
    /// A newer event about the same subscription was applied before this one.
    pub superseded: bool,
    /// The account the event names (by id, or by the subscription paying for its plans); not read when superseded.
    pub account: Option<entity::Model>,
}

impl Store {
    /// Records a billing event's id, then reads what deciding it needs. `None`: the id was taken before (a second
    /// delivery, even a concurrent one on another instance, finds it), and nothing is changed.
    pub async fn take_billing_event(
        &self,
        event: EventRow<'_>,
        entity_id: Option<&str>,
        now_ms: i64,
    ) -> Result<Option<TakenEvent>, StoreError> {
        let txn = self.writer.begin().await?;
        let row = billing_event::Model {
            id: event.id.to_string(),
            kind: event.kind.to_string(),
            entity_id: None,
            subscription: event.subscription.map(str::to_string),
            outcome: String::new(),
            created_at: event.created_ms,
            received_at: now_ms,
        };
        let inserted = billing_event::Entity::insert(billing_event::ActiveModel::from(row))
            .on_conflict(OnConflict::column(billing_event::Column::Id).do_nothing().to_owned())
            .exec_without_returning(&txn)
            .await?;
        if inserted == 0 {
            return Ok(None);
        }
        if let Some(sub) = event.subscription {
            let newer = billing_event::Entity::find()
                .filter(billing_event::Column::Subscription.eq(sub))
                .filter(billing_event::Column::CreatedAt.gt(event.created_ms))
                .one(&txn)
                .await?;
            if newer.is_some() {
                return Ok(Some(TakenEvent { txn, id: event.id.to_string(), superseded: true, account: None }));
            }
        }
        let mut account = match entity_id {
            Some(id) => entity::Entity::find_by_id(id.to_string()).one(&txn).await?,
            None => None,
        };
        if account.is_none() {
            if let Some(sub) = event.subscription {
                account = entity::Entity::find()
                    .filter(Condition::any().add(entity::Column::TaxSubscription.eq(sub)).add(entity::Column::GainsSubscription.eq(sub)))
                    .one(&txn)
                    .await?;
            }
        }
        Ok(Some(TakenEvent { txn, id: event.id.to_string(), superseded: false, account }))
    }

    /// Saves the account the event changed (its plan columns), records what the event did, and commits.
    pub async fn settle_billing_event(
        &self,
        taken: TakenEvent,
        changed: Option<&entity::Model>,
        outcome: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        if let Some(a) = changed {
            save_plans(&taken.txn, a, now_ms).await?;
        }
        billing_event::Entity::update_many()
            .col_expr(billing_event::Column::EntityId, sea_orm::sea_query::Expr::value(changed.map(|a| a.id.clone())))
            .col_expr(billing_event::Column::Outcome, sea_orm::sea_query::Expr::value(outcome))
            .filter(billing_event::Column::Id.eq(taken.id.as_str()))
            .exec(&taken.txn)
            .await?;
        taken.txn.commit().await?;
        Ok(())
    }

    /// Sets an account's tax plan and/or gains plan, by its email, as an operator does without a processor, at
    /// `now_ms`; the account is in good standing again. `None`: no account has that email.
    pub async fn set_plan(
        &self,
        email: &str,
        tax_plan: Option<&str>,
        gains_plan: Option<&str>,
        now_ms: i64,
    ) -> Result<Option<entity::Model>, StoreError> {
        let txn = self.writer.begin().await?;
        let Some(mut a) = entity::Entity::find().filter(entity::Column::Email.eq(email)).one(&txn).await? else { return Ok(None) };
        if let Some(plan) = tax_plan {
            a.plan = plan.to_string();
        }
        if let Some(plan) = gains_plan {
            a.gains_plan = plan.to_string();
        }
        a.plan_status = entity::PLAN_ACTIVE.into();
        a.past_due_since = None;
        save_plans(&txn, &a, now_ms).await?;
        txn.commit().await?;
        Ok(Some(a))
    }

    /// Every account, oldest first.
    pub async fn all_accounts(&self) -> Result<Vec<entity::Model>, StoreError> {
        Ok(entity::Entity::find().order_by_asc(entity::Column::CreatedAt).order_by_asc(entity::Column::Id).all(&self.db).await?)
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
