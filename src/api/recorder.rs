//! Recording keyed calculations and ingested records in the ledger, by group commit (`store::group`).
//!
//! A keyed calculate call is a job of one entry; an ingest request is a job of one to 100. Jobs that arrive
//! while a batch is being written wait and go into the next one. A batch is one database transaction with the
//! same statements whatever its size:
//! 1. the month's usage counters, one upsert for the batch (a free account past its allowance is refused here,
//!    and a paid one past it is metered);
//! 2. the nexus settings of the batch's accounts;
//! 3. for ingest, the external ids already in the ledger;
//! 4. the counterparties' 1099 totals, one upsert; each entry learns the total before it from the sums;
//! 5. the determinations, in memory;
//! 6. the states' monthly revenue for nexus, one upsert;
//! 7. the ledger rows, one insert;
//! 8. the revenue that calculate's nexus alerts read;
//! 9. calculate's Idempotency-Key responses.
//!
//! Every figure is what recording the jobs one after another, in arrival order, would give; a job's writes
//! are in the database when its caller is answered. Concurrent batches (other instances) meet in the upserts,
//! which add in the database and take their rows in key order.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DbErr, TransactionTrait};
use serde_json::{json, Map, Value};

use super::calculate::{iso, LiveRequest};
use super::error::ApiError;
use super::limits::{allowance, monthly_call};
use super::{AppState, API_VERSION};
use crate::engine::nexus::{self as nexus_alerts, MonthRevenue};
use crate::engine::{determine, render, Input};
use crate::rules::schema::state_index;
use crate::security::new_ordered_id;
use crate::store::entity::{entity, state_revenue, transaction};
use crate::store::group::Group;
use crate::store::ledger::{Payment, Sale};
use crate::store::{Store, StoreError};

/// Jobs per batch (an ingest job holds up to 100 entries; the store splits long multi-row statements).
const MAX_BATCH: usize = 64;

pub type Recorder = Group<RecordJob, Result<Recorded, ApiError>>;

/// One batch at a time per instance, on either database. Every keyed call of an account touches the same
/// usage, 1099 and revenue rows, so on PostgreSQL a second concurrent batch would only wait for the first's row
/// locks until it commits: measured with benches/load.sh, two or four concurrent batches gave 27% and 44% fewer
/// keyed calls per second than one.
pub fn recorder() -> Recorder {
    Group::new(MAX_BATCH, 1)
}

/// One record to determine and write.
pub struct Entry {
    pub live: LiveRequest,
    pub external_tx_id: Option<String>,
    pub metadata: Option<Map<String, Value>>,
}

pub enum Source {
    /// A keyed calculate call: its response gets nexus alerts and is stored under its Idempotency-Key.
    Calculate { idempotency_key: Option<String> },
    /// An ingest request: records with an external id already in the ledger come back as duplicates.
    Ingest,
}

pub struct RecordJob {
    pub account: entity::Model,
    pub entries: Vec<Entry>,
    pub source: Source,
    pub now_ms: i64,
}

/// What became of one entry.
pub enum EntryOutcome {
    /// Written now; the full calculate body.
    New { body: Value },
    /// Already in the ledger (or earlier in this request): the original row, not written again.
    Duplicate(transaction::Model),
}

pub struct Recorded {
    pub entries: Vec<EntryOutcome>,
    /// Calculate: the response text (the body with any nexus alerts), as stored for the Idempotency-Key.
    pub response: String,
}

/// Why a batch stopped: one job's determination failed (the others are written without it), or the database did.
enum Abort {
    Job(usize, ApiError),
    Batch(ApiError),
}

impl From<StoreError> for Abort {
    fn from(e: StoreError) -> Self {
        Abort::Batch(e.into())
    }
}

impl From<DbErr> for Abort {
    fn from(e: DbErr) -> Self {
        Abort::Batch(e.into())
    }
}

fn micros(d: Decimal) -> i64 {
    (d * Decimal::from(1_000_000)).round().to_i64().unwrap_or(i64::MAX)
}

fn from_micros(m: i64) -> Decimal {
    Decimal::new(m, 6)
}

fn day(ms: i64) -> NaiveDate {
    DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default().date_naive()
}

/// Where an entry's row comes from.
enum Slot {
    Existing(transaction::Model),
    /// The same external id earlier in this batch: that new row.
    SameAs(usize),
    New(usize),
}

impl AppState {
    /// Determines and records a job's entries (in a batch with whatever else is waiting) and answers once they are committed.
    pub async fn record(self: &Arc<Self>, job: RecordJob) -> Result<Recorded, ApiError> {
        let state = self.clone();
        let applied = self
            .recorder
            .submit(job, move |jobs| {
                let state = state.clone();
                async move { state.apply(jobs).await }
            })
            .await;
        applied.unwrap_or_else(|| Err(ApiError::internal("the ledger batch failed")))
    }

    async fn apply(&self, jobs: Vec<RecordJob>) -> Vec<Result<Recorded, ApiError>> {
        let mut results: Vec<Option<Result<Recorded, ApiError>>> = jobs.iter().map(|_| None).collect();
        loop {
            let pending: Vec<usize> = (0..jobs.len()).filter(|&i| results[i].is_none()).collect();
            if pending.is_empty() {
                break;
            }
            match self.write_batch(&jobs, &pending).await {
                Ok(done) => {
                    for (i, r) in pending.into_iter().zip(done) {
                        results[i] = Some(r);
                    }
                    break;
                }
                Err(Abort::Job(i, e)) => results[i] = Some(Err(e)),
                Err(Abort::Batch(e)) => {
                    for i in pending {
                        results[i] = Some(Err(e.clone()));
                    }
                    break;
                }
            }
        }
        results.into_iter().map(|r| r.unwrap_or_else(|| Err(ApiError::internal("entry not recorded")))).collect()
    }

    /// One transaction for the jobs at `pending`; a result per pending job, in order.
    async fn write_batch(&self, jobs: &[RecordJob], pending: &[usize]) -> Result<Vec<Result<Recorded, ApiError>>, Abort> {
        let txn = self.store.writer.begin().await?;

        // 1. The monthly allowance: every job is one call.
        let hits: Vec<_> = pending.iter().map(|&i| monthly_call(&jobs[i].account, jobs[i].now_ms)).collect();
        let counts = Store::hit_counters(&txn, &hits).await?;
        let mut refused: HashMap<usize, ApiError> = HashMap::new();
        let mut metered = Vec::new();
        for (k, &i) in pending.iter().enumerate() {
            match allowance(&jobs[i].account, jobs[i].now_ms, counts[k]) {
                Ok(Some(overage)) => metered.push(overage),
                Ok(None) => {}
                Err(e) => {
                    refused.insert(i, e);
                }
            }
        }
        Store::hit_counters(&txn, &metered).await?;
        let accepted: Vec<usize> = pending.iter().copied().filter(|i| !refused.contains_key(i)).collect();

        // 2. Nexus as each account has configured it (None: not configured, every state treated as without nexus).
        let configured: Vec<&str> = distinct(accepted.iter().filter(|&&i| jobs[i].account.nexus_configured).map(|&i| jobs[i].account.id.as_str()));
        let mut nexus: HashMap<&str, BTreeMap<usize, bool>> = configured.iter().map(|id| (*id, BTreeMap::new())).collect();
        for r in Store::nexus_states_of(&txn, &configured).await? {
            if let (Some(map), Some(i)) = (nexus.get_mut(r.entity_id.as_str()), state_index(&r.state)) {
                map.insert(i, r.has_nexus);
            }
        }

        // 3. Which entries are new, and which repeat an external id already recorded (or earlier in the batch).
        let mut known: HashMap<(&str, &str), Slot> = HashMap::new();
        for &i in &accepted {
            let ids: Vec<&str> = jobs[i].entries.iter().filter_map(|e| e.external_tx_id.as_deref()).collect();
            if matches!(jobs[i].source, Source::Ingest) && !ids.is_empty() {
                for row in Store::transactions_by_external_ids(&txn, &jobs[i].account.id, &ids).await? {
                    let ext = ids.iter().copied().find(|x| Some(*x) == row.external_tx_id.as_deref()).unwrap_or_default();
                    known.insert((jobs[i].account.id.as_str(), ext), Slot::Existing(row));
                }
            }
        }
        let mut news: Vec<(usize, usize)> = Vec::new();
        let mut slots: HashMap<usize, Vec<Slot>> = HashMap::new();
        for &i in &accepted {
            let job = &jobs[i];
            let mut mine = Vec::new();
            for (e, entry) in job.entries.iter().enumerate() {
                let key = entry.external_tx_id.as_deref().filter(|_| matches!(job.source, Source::Ingest)).map(|x| (job.account.id.as_str(), x));
                let slot = match key.and_then(|k| known.get(&k)) {
                    Some(Slot::Existing(row)) => Slot::Existing(row.clone()),
                    Some(Slot::SameAs(n) | Slot::New(n)) => Slot::SameAs(*n),
                    None => {
                        if let Some(k) = key {
                            known.insert(k, Slot::SameAs(news.len()));
                        }
                        news.push((i, e));
                        Slot::New(news.len() - 1)
                    }
                };
                mine.push(slot);
            }
            slots.insert(i, mine);
        }

        // 4. The counterparties' year-to-date totals, each entry seeing the total before it.
        let payments: Vec<Payment> = news
            .iter()
            .map(|&(i, e)| {
                let req = &jobs[i].entries[e].live.request;
                Payment { entity_id: &jobs[i].account.id, counterparty_id: &req.counterparty_id, tax_year: day(jobs[i].now_ms).year(), micros: micros(req.amount) }
            })
            .collect();
        let priors = Store::add_vendor_payments(&txn, &payments).await?;

        // 5. The determinations, and the rows and sales they make.
        let mut bodies = Vec::with_capacity(news.len());
        let mut rows = Vec::with_capacity(news.len());
        let mut sales = Vec::new();
        for (n, &(i, e)) in news.iter().enumerate() {
            let (job, entry) = (&jobs[i], &jobs[i].entries[e]);
            let req = &entry.live.request;
            let today = day(job.now_ms);
            let input = Input { request: req, nexus: nexus.get(job.account.id.as_str()), vendor_ytd: Some(from_micros(priors[n]).normalize()), as_of: today };
            let det = determine(&self.registry, &input).map_err(|err| Abort::Job(i, ApiError::internal(format!("{err:?}"))))?;
            let id = new_ordered_id("tx", job.now_ms);
            let mut body = render::full(&det);
            if let Some(o) = body.as_object_mut() {
                o.insert("transaction_id".into(), json!(id));
                o.insert("timestamp".into(), json!(iso(job.now_ms)));
                o.insert("entity_id".into(), json!(job.account.id));
                o.insert("mode".into(), json!("live"));
                o.insert("api_version".into(), json!(API_VERSION));
            }
            if det.role == "seller" && det.counts_toward_nexus_threshold != Some(false) {
                let month = today.year() * 100 + today.month() as i32;
                sales.push(Sale { entity_id: &job.account.id, state: det.buyer_state, month, micros: payments[n].micros });
            }
            rows.push(transaction::Model {
                id,
                entity_id: job.account.id.clone(),
                created_at: job.now_ms,
                role: det.role.to_string(),
                buyer_state: det.buyer_state.to_string(),
                counterparty_id: req.counterparty_id.clone(),
                amount: req.amount.normalize().to_string(),
                amount_micros: payments[n].micros,
                total_tax: crate::engine::money::cents(det.total_tax).to_string(),
                external_tx_id: entry.external_tx_id.clone(),
                source: match job.source {
                    Source::Calculate { .. } => "calculate",
                    Source::Ingest => "ingest",
                }
                .to_string(),
                metadata: entry.metadata.as_ref().map(|m| Value::Object(m.clone()).to_string()),
                request: entry.live.raw.to_string(),
                result: body.to_string(),
            });
            bodies.push(body);
        }

        // 6, 7. Revenue for nexus, and the ledger rows.
        Store::add_state_revenues(&txn, &sales).await?;
        Store::insert_transactions(&txn, &rows).await?;

        // 8. Nexus alerts for calculate responses, from the revenue now recorded.
        let calculating: Vec<usize> = accepted.iter().copied().filter(|&i| matches!(jobs[i].source, Source::Calculate { .. })).collect();
        let accounts = distinct(calculating.iter().map(|&i| jobs[i].account.id.as_str()));
        let from_month = calculating.iter().map(|&i| nexus_alerts::earliest_month(day(jobs[i].now_ms))).min().unwrap_or(0);
        let revenue = if accounts.is_empty() { Vec::new() } else { Store::state_revenue_of(&txn, &accounts, from_month).await? };

        // 9. The outcomes; calculate responses are stored under their Idempotency-Keys in this transaction.
        let mut out = Vec::with_capacity(pending.len());
        let no_nexus = BTreeMap::new();
        // Every job of an account in this batch sees the same revenue, so the same alerts.
        let mut alerts_memo: HashMap<(&str, NaiveDate), Vec<Value>> = HashMap::new();
        for &i in pending {
            if let Some(e) = refused.remove(&i) {
                out.push(Err(e));
                continue;
            }
            let job = &jobs[i];
            let slots = slots.remove(&i).unwrap_or_default();
            let first_new = match slots.first() {
                Some(Slot::New(n)) => Some(*n),
                _ => None,
            };
            // Each new body belongs to exactly one entry (a repeated external id points at the row instead).
            let mut entries: Vec<EntryOutcome> = slots
                .into_iter()
                .map(|slot| match slot {
                    Slot::Existing(row) => EntryOutcome::Duplicate(row),
                    Slot::SameAs(n) => EntryOutcome::Duplicate(rows[n].clone()),
                    Slot::New(n) => EntryOutcome::New { body: std::mem::take(&mut bodies[n]) },
                })
                .collect();
            let mut response = String::new();
            if let Source::Calculate { idempotency_key } = &job.source {
                let today = day(job.now_ms);
                let alerts = alerts_memo
                    .entry((job.account.id.as_str(), today))
                    .or_insert_with(|| alerts_from(&self.registry, &job.account.id, &revenue, nexus.get(job.account.id.as_str()).unwrap_or(&no_nexus), today))
                    .clone();
                // Without alerts the response is the body as stored in the row's result, already serialized.
                response = match (entries.first_mut(), first_new) {
                    (Some(EntryOutcome::New { body }), _) if !alerts.is_empty() => {
                        if let Some(o) = body.as_object_mut() {
                            o.insert("nexus_alerts".into(), Value::Array(alerts));
                        }
                        body.to_string()
                    }
                    (_, Some(n)) => rows[n].result.clone(),
                    _ => Value::Null.to_string(),
                };
                if let Some(k) = idempotency_key {
                    Store::finish_idempotency_key(&txn, &job.account.id, k, 200, &response).await?;
                }
            }
            out.push(Ok(Recorded { entries, response }));
        }
        txn.commit().await?;
        Ok(out)
    }

    /// The account's nexus as the engine takes it: `None` until the account has configured any.
    pub async fn nexus_map(&self, account: &entity::Model) -> Result<Option<BTreeMap<usize, bool>>, ApiError> {
        if !account.nexus_configured {
            return Ok(None);
        }
        let rows = self.store.nexus_states(&account.id).await?;
        Ok(Some(rows.iter().filter_map(|r| state_index(&r.state).map(|i| (i, r.has_nexus))).collect()))
    }

    /// Alerts for every state at 80% or more of its threshold, from the revenue the account has recorded.
    pub async fn nexus_alerts<C: ConnectionTrait>(&self, conn: &C, account: &entity::Model, nexus: Option<&BTreeMap<usize, bool>>, now_ms: i64) -> Result<Vec<Value>, ApiError> {
        let today = day(now_ms);
        let rows = Store::state_revenue_of(conn, &[account.id.as_str()], nexus_alerts::earliest_month(today)).await?;
        let empty = BTreeMap::new();
        Ok(alerts_from(&self.registry, &account.id, &rows, nexus.unwrap_or(&empty), today))
    }
}

/// The rendered alerts of one account, from revenue rows (which may hold other accounts' too).
fn alerts_from(registry: &crate::rules::registry::Registry, entity_id: &str, rows: &[state_revenue::Model], nexus: &BTreeMap<usize, bool>, today: NaiveDate) -> Vec<Value> {
    let from = nexus_alerts::earliest_month(today);
    let revenue: Vec<MonthRevenue> = rows
        .iter()
        .filter(|r| r.entity_id == entity_id && r.month >= from)
        .filter_map(|r| state_index(&r.state).map(|state| MonthRevenue { state, month: r.month, sales: from_micros(r.sales_micros), transactions: r.tx_count }))
        .collect();
    nexus_alerts::alerts(registry, &revenue, nexus, today).iter().map(nexus_alerts::render).collect()
}

fn distinct<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = HashSet::new();
    ids.filter(|id| seen.insert(*id)).collect()
}
