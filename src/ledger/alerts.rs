//! Nexus alerts from the revenue the ledger has recorded: the states where an account's seller sales reach 80% or
//! more of an economic-nexus threshold, each as calculate's `nexus_alerts` carries it (the engine writes them), and
//! the account's nexus as the engine takes it.

use std::collections::BTreeMap;

use chrono::NaiveDate;
use serde_json::Value;

use crate::engine::nexus::{self as nexus_alerts, MonthRevenue};
use crate::rules::registry::Registry;
use crate::rules::schema::state_index;
use crate::store::entity::{entity, state_revenue};
use crate::store::{Store, StoreError};

/// The account's nexus as the engine takes it (state index → has nexus): `None` until the account has configured any.
pub async fn nexus_of(store: &Store, account: &entity::Model) -> Result<Option<BTreeMap<usize, bool>>, StoreError> {
    if !account.nexus_configured {
        return Ok(None);
    }
    let rows = store.nexus_states(&account.id).await?;
    Ok(Some(rows.iter().filter_map(|r| state_index(&r.state).map(|i| (i, r.has_nexus))).collect()))
}

/// The account's alerts at `now_ms`, from the revenue it has recorded, with its nexus (`None`: none configured).
pub async fn alerts(
    store: &Store,
    registry: &Registry,
    account: &entity::Model,
    nexus: Option<&BTreeMap<usize, bool>>,
    now_ms: i64,
) -> Result<Vec<Value>, StoreError> {
    let today = crate::clock::utc_date(now_ms);
    let rows = Store::state_revenue_of(&store.db, &[account.id.as_str()], nexus_alerts::earliest_month(today)).await?;
    Ok(alerts_from(registry, &account.id, &rows, nexus.unwrap_or(&BTreeMap::new()), today))
}

/// The rendered alerts of one account, from revenue rows (which may hold other accounts' too).
pub fn alerts_from(
    registry: &Registry,
    entity_id: &str,
    rows: &[state_revenue::Model],
    nexus: &BTreeMap<usize, bool>,
    today: NaiveDate,
) -> Vec<Value> {
    let from = nexus_alerts::earliest_month(today);
    let revenue: Vec<MonthRevenue> = rows
        .iter()
        .filter(|r| r.entity_id == entity_id && r.month >= from)
        .filter_map(|r| {
            state_index(&r.state).map(|state| MonthRevenue {
                state,
                month: r.month,
                sales: rust_decimal::Decimal::new(r.sales_micros, 6),
                transactions: r.tx_count,
            })
        })
        .collect();
    nexus_alerts::alerts(registry, &revenue, nexus, today).iter().map(nexus_alerts::render).collect()
}

/// A calculate response: the stored body with the nexus alerts, if any, as its last member. The same text as
/// serializing the body with the alerts inserted, without serializing the body again.
pub fn with_alerts(body: &str, alerts: Option<&str>) -> String {
    match (alerts, body.strip_suffix('}')) {
        (Some(alerts), Some(open)) => format!("{open},\"nexus_alerts\":{alerts}}}"),
        _ => body.to_string(),
    }
}
