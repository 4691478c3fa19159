//! What a billing event asks of an account (`Change`, as `payments::checkout` reads it from the processor's event),
//! and what it does to the account's plans.

use super::{Product, Standing};
use crate::plans::DEFAULT_PLAN;
use crate::store::entity::entity;

/// What a billing event asks of an account.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// `checkout.session.completed`, paid: the account holds these tiers, paid by this subscription.
    Subscribed { entity_id: String, subscription: String, customer: Option<String>, tiers: Vec<(Product, String)> },
    /// `customer.subscription.updated`: the subscription's status and the tiers its prices stand for.
    Updated { entity_id: Option<String>, subscription: String, status: String, tiers: Vec<(Product, String)> },
    /// `customer.subscription.deleted`: the products it paid for go back to the free plan.
    Ended { entity_id: Option<String>, subscription: String },
    /// `invoice.payment_failed`: the account becomes past due.
    PaymentFailed { subscription: String },
    /// `invoice.paid`: a payment succeeded; a past-due account is active again.
    Paid { subscription: String },
    /// An event levy does not act on (another type, or an unpaid checkout): why.
    Nothing(String),
}

impl Change {
    /// The account the event names by id, when it does (otherwise it is found by its subscription).
    pub fn entity_id(&self) -> Option<&str> {
        match self {
            Change::Subscribed { entity_id, .. } => Some(entity_id),
            Change::Updated { entity_id, .. } | Change::Ended { entity_id, .. } => entity_id.as_deref(),
            _ => None,
        }
    }

    /// The processor's subscription the event is about.
    pub fn subscription(&self) -> Option<&str> {
        match self {
            Change::Subscribed { subscription, .. }
            | Change::Updated { subscription, .. }
            | Change::Ended { subscription, .. }
            | Change::PaymentFailed { subscription }
            | Change::Paid { subscription } => Some(subscription),
            Change::Nothing(_) => None,
        }
    }
}

fn subscription_of(account: &mut entity::Model, product: Product) -> &mut Option<String> {
    match product {
        Product::Tax => &mut account.tax_subscription,
        Product::Gains => &mut account.gains_subscription,
    }
}

fn set_plan(account: &mut entity::Model, product: Product, tier: &str) {
    match product {
        Product::Tax => account.plan = tier.to_string(),
        Product::Gains => account.gains_plan = tier.to_string(),
    }
}

fn paid_up(account: &mut entity::Model) {
    account.plan_status = Standing::ACTIVE.into();
    account.past_due_since = None;
}

fn current_subscription(account: &entity::Model, product: Product) -> Option<&str> {
    match product {
        Product::Tax => account.tax_subscription.as_deref(),
        Product::Gains => account.gains_subscription.as_deref(),
    }
}

/// The products this subscription pays for on the account.
fn paid_by(account: &entity::Model, subscription: &str) -> Vec<Product> {
    Product::ALL.into_iter().filter(|p| current_subscription(account, *p) == Some(subscription)).collect()
}

/// Applies a change to the account; what it did, in words. A subscription changes only the products it pays for,
/// so the end of an old subscription never undoes a newer one.
pub fn apply(account: &mut entity::Model, change: &Change, event_ms: i64) -> String {
    let mut done = Vec::new();
    match change {
        Change::Subscribed { subscription, customer, tiers, .. } => {
            for (product, tier) in tiers {
                set_plan(account, *product, tier);
                *subscription_of(account, *product) = Some(subscription.clone());
                done.push(format!("{} plan {tier}", product.id()));
            }
            if customer.is_some() {
                account.billing_customer = customer.clone();
            }
            paid_up(account);
        }
        Change::Updated { subscription, status, tiers, .. } => {
            let products = paid_by(account, subscription);
            match status.as_str() {
                "active" | "trialing" => {
                    let taken: Vec<&(Product, String)> =
                        tiers.iter().filter(|(p, _)| products.contains(p) || current_subscription(account, *p).is_none()).collect();
                    for (product, tier) in taken {
                        set_plan(account, *product, tier);
                        *subscription_of(account, *product) = Some(subscription.clone());
                        done.push(format!("{} plan {tier}", product.id()));
                    }
                    if !done.is_empty() || !products.is_empty() {
                        paid_up(account);
                        done.push("active".into());
                    }
                }
                "past_due" if !products.is_empty() => {
                    if account.plan_status != Standing::PAST_DUE {
                        account.plan_status = Standing::PAST_DUE.into();
                        account.past_due_since = Some(event_ms);
                    }
                    done.push("past due".into());
                }
                "canceled" | "unpaid" | "incomplete_expired" => {
                    for product in products {
                        set_plan(account, product, DEFAULT_PLAN);
                        *subscription_of(account, product) = None;
                        done.push(format!("{} plan free", product.id()));
                    }
                }
                _ => {}
            }
        }
        Change::Ended { subscription, .. } => {
            for product in paid_by(account, subscription) {
                set_plan(account, product, DEFAULT_PLAN);
                *subscription_of(account, product) = None;
                done.push(format!("{} plan free", product.id()));
            }
            if account.tax_subscription.is_none() && account.gains_subscription.is_none() {
                paid_up(account);
            }
        }
        Change::PaymentFailed { subscription } => {
            if !paid_by(account, subscription).is_empty() {
                if account.plan_status != Standing::PAST_DUE {
                    account.plan_status = Standing::PAST_DUE.into();
                    account.past_due_since = Some(event_ms);
                }
                done.push("past due".into());
            }
        }
        Change::Paid { subscription } => {
            if !paid_by(account, subscription).is_empty() && account.plan_status == Standing::PAST_DUE {
                paid_up(account);
                done.push("active".into());
            }
        }
        Change::Nothing(why) => return why.clone(),
    }
    if done.is_empty() {
        "nothing to change: the subscription pays for none of the account's plans".into()
    } else {
        done.join(", ")
    }
}
