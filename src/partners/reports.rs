//! A period's figures for a partner: its users' calls (free and billable, and what the billable cost at its wholesale
//! price) and its revenue share of the accounts that upgraded.

use std::collections::HashMap;

use rust_decimal::Decimal;

use super::{contributing_months, split_calls, window_end_ms, Period, Refused};
use crate::plans::Plans;
use crate::store::entity::{partner, partner_user};
use crate::store::{decimal, Store, StoreError};

/// A partner's usage in a period: each of its users (in the order they were provisioned) with their calls, and the
/// totals over all of them.
pub struct Usage {
    pub users: Vec<UserUsage>,
    /// The partner's price of a billable call (USD).
    pub price: Decimal,
    pub free: i64,
    pub billable: i64,
}

pub struct UserUsage {
    pub user: partner_user::Model,
    pub free: i64,
    pub billable: i64,
}

/// The partner's usage in `period`, of all its users or of the one `only` names (another partner's user is refused).
pub async fn usage(store: &Store, p: &partner::Model, period: &Period, only: Option<&str>) -> Result<Usage, Refused> {
    let mut users = store.partner_users(&p.id).await?;
    if let Some(id) = only {
        users.retain(|u| u.id == id);
        if users.is_empty() {
            return Err(match store.partner_user_by_id(id).await? {
                Some(_) => Refused::Forbidden("this partner user belongs to another partner".into()),
                None => Refused::NotFound(format!("no partner user has the id {id}")),
            });
        }
    }
    // Per account, for each month the period touches: the calls of the month before the period, and inside it.
    let mut per_month: HashMap<String, Vec<(i64, i64)>> = HashMap::new();
    let months = period.months();
    for (i, m) in months.iter().enumerate() {
        let before = if m.from_ms > m.start_ms { store.partner_calls(&p.id, m.start_ms, m.from_ms).await? } else { Vec::new() };
        let inside = store.partner_calls(&p.id, m.from_ms, m.to_ms).await?;
        for row in before {
            per_month.entry(row.entity_id).or_insert_with(|| vec![(0, 0); months.len()])[i].0 = row.calls;
        }
        for row in inside {
            per_month.entry(row.entity_id).or_insert_with(|| vec![(0, 0); months.len()])[i].1 = row.calls;
        }
    }
    let (mut free, mut billable) = (0, 0);
    let users = users
        .into_iter()
        .map(|user| {
            let slices = per_month.get(&user.entity_id).map(Vec::as_slice).unwrap_or(&[]);
            let (f, b) = split_calls(slices, p.free_calls_per_user);
            free += f;
            billable += b;
            UserUsage { user, free: f, billable: b }
        })
        .collect();
    Ok(Usage { users, price: decimal(&p.wholesale_per_call), free, billable })
}

/// A partner's revenue share in a period: each upgraded account that contributes in it, and the totals.
pub struct Revshare {
    pub shares: Vec<Share>,
    pub mrr: Decimal,
    pub payout: Decimal,
    /// The first upgrade of any of the partner's accounts (Unix ms), whether or not it contributes in the period.
    pub triggered_at: Option<i64>,
}

/// An account's share: the partner's percentage locked at its first upgrade, its plan's monthly price now, the payout
/// for its months in the period, and when its window ends.
pub struct Share {
    pub user: partner_user::Model,
    pub pct: Decimal,
    pub mrr: Decimal,
    pub payout: Decimal,
    pub window_end_ms: i64,
}

/// The partner's revenue share in `period`: `mrr` × `pct` / 100 for each month of the period in an account's window.
pub async fn revshare(store: &Store, plans: &Plans, p: &partner::Model, period: &Period) -> Result<Revshare, StoreError> {
    let upgraded: Vec<partner_user::Model> =
        store.partner_users(&p.id).await?.into_iter().filter(|u| u.first_upgrade_at.is_some()).collect();
    let triggered_at = upgraded.iter().filter_map(|u| u.first_upgrade_at).min();
    let accounts: HashMap<String, String> =
        store.entities(upgraded.iter().map(|u| u.entity_id.clone()).collect()).await?.into_iter().map(|a| (a.id, a.plan)).collect();
    let (mut mrr_total, mut payout_total) = (Decimal::ZERO, Decimal::ZERO);
    let mut shares = Vec::new();
    for user in upgraded {
        let Some(first) = user.first_upgrade_at else { continue };
        let months = contributing_months(period, first);
        if months == 0 {
            continue;
        }
        let mrr = accounts.get(&user.entity_id).and_then(|plan| plans.plan(plan).price_usd_monthly).unwrap_or_default();
        let pct = decimal(user.locked_revshare_pct.as_deref().unwrap_or("0"));
        let payout = mrr * pct / Decimal::from(100) * Decimal::from(months);
        mrr_total += mrr;
        payout_total += payout;
        shares.push(Share { user, pct, mrr, payout, window_end_ms: window_end_ms(first) });
    }
    Ok(Revshare { shares, mrr: mrr_total, payout: payout_total, triggered_at })
}
