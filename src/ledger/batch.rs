//! The ledger batch: jobs recorded together by group commit (`store::group`).
//!
//! A keyed calculate call is a job of one entry; an ingest request is a job of one to 100. Jobs that arrive
//! while a batch is being written wait and go into the next one. A batch is one database transaction sent as
//! two scripts (`store::script`: many statements, one round trip), whatever its size:
//! 1. begin; the month's usage counters and the calculate keys' burst windows, one upsert for the batch (a
//!    calculate call is counted in its key's window here, exactly); the keys' accounts (a key revoked since the
//!    caller's lookup is refused here); their nexus settings; the new entries' counterparties' network
//!    profiles; for ingest, the external ids already in the
//!    ledger; the counterparties' 1099 totals, one upsert (each entry learns the total before it from the sums);
//!    the states' revenue that calculate's nexus alerts read;
//! 2. the determinations, in memory: made and rendered before the batch in each caller's task (`Prepared`),
//!    redone here for an account whose nexus, or an entry whose counterparty's profile, differs from what they
//!    used, and settled with the 1099 totals;
//! 3. metered overage; the states' monthly revenue for nexus, one upsert; the ledger rows, one insert (on
//!    PostgreSQL run just before the script, its values bound as arrays); calculate's Idempotency-Key
//!    responses; commit.
//!
//! The first script adds every payment as if every job were served and every entry new. When its answers say
//! otherwise (a key past its burst limit, a free account past its allowance, a revoked key, an external id already
//! recorded) or a determination fails, the transaction is rolled back and run again knowing it; each rerun learns
//! something new, so there are at most as many as there are jobs and entries, and in the common case none.
//!
//! Every figure is what recording the jobs one after another, in arrival order, would give; a job's writes
//! are in the database when its caller is answered. Concurrent batches (other instances) meet in the upserts,
//! which add in the database and take their rows in key order. A calculate response's nexus alerts count the
//! revenue as it stood when the batch began plus the batch's own sales.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::ops::Range;
use std::sync::Arc;

use chrono::{Datelike, NaiveDate};
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;
use sea_orm::{ConnectionTrait, DbBackend};
use serde_json::{Map, Value};

use super::alerts::{alerts_from, with_alerts};
use super::{burst_call, Payer, Refusal};
use crate::billing::monthly_call;
use crate::clock::{iso, utc_date};
use crate::engine::nexus as nexus_alerts;
use crate::engine::render::{self, FullText, API_VERSION};
use crate::engine::request::Counterparty;
use crate::engine::{determine, Determination, EngineError, Input, Request};
use crate::plans::Plans;
use crate::rules::registry::Registry;
use crate::rules::schema::state_index;
use crate::security::new_ordered_id;
use crate::store::accounts::KeyOwner;
use crate::store::entity::{counter, entity, network_profile, nexus_state, state_revenue, transaction, vendor_ytd};
use crate::store::group::{Group, Replies};
use crate::store::ledger::{Payment, Sale};
use crate::store::limits::CounterHit;
use crate::store::network::visible_to;
use crate::store::script::{Script, ScriptConn};
use crate::store::{Store, StoreError};

/// Jobs per batch (an ingest job holds up to 100 entries; the store splits long multi-row statements).
const MAX_BATCH: usize = 64;

/// The batches of one instance, and what it caches for them.
pub struct Ledger {
    pub(super) store: Store,
    registry: Arc<Registry>,
    /// The plans whose allowances the batch counts calls against.
    plans: Arc<Plans>,
    /// Keyed calculate calls per key per 60-second window.
    burst_per_minute: i64,
    group: Group<Job, Answer>,
    /// Each account's nexus as this instance's last batch read it, for preparing entries. It only saves work:
    /// the batch compares it with what it reads.
    nexus_seen: crate::cache::Seen<Nexus>,
    /// Each counterparty's network profile (or none) as this instance's last batch read it, for preparing entries.
    /// It only saves work: the batch compares what an entry was prepared with against what it reads.
    profiles_seen: crate::cache::Seen<Option<Arc<network_profile::Model>>>,
    /// The instance's metrics: each batch's size, time and reruns.
    metrics: Arc<crate::metrics::Metrics>,
}

/// One batch at a time per instance, on either database. Every keyed call of an account touches the same
/// usage, 1099 and revenue rows, so on PostgreSQL a second concurrent batch would only wait for the first's row
/// locks until it commits: measured with benches/load.sh, two or four concurrent batches gave 27% and 44% fewer
/// keyed calls per second than one. Partitioned by account (an account in one running batch, up to four batches of
/// others beside it) they gave nothing either with the calls spread over eight accounts (2026-11-28,
/// `LEVY_BENCH_ACCOUNTS=8`, benches/README.md): smaller batches cost more per call on a machine whose cores the
/// database, the server and the load share.
impl Ledger {
    pub fn new(
        store: Store,
        registry: Arc<Registry>,
        plans: Arc<Plans>,
        burst_per_minute: i64,
        metrics: Arc<crate::metrics::Metrics>,
    ) -> Ledger {
        let group = Group::new(MAX_BATCH, 1);
        Ledger {
            store,
            registry,
            plans,
            burst_per_minute,
            group,
            nexus_seen: Default::default(),
            profiles_seen: Default::default(),
            metrics,
        }
    }
}

/// One record to determine and write.
pub struct Entry {
    /// The request as the engine takes it.
    pub request: Request,
    /// The request as sent, stored with the row.
    pub raw: Value,
    /// What the request's field names are prefixed with in input errors (`records[3].` for an ingest record).
    pub prefix: String,
    pub external_tx_id: Option<String>,
    pub metadata: Option<Map<String, Value>>,
    /// Determined and rendered in the caller's task, before the batch (see [`Prepared`]).
    prepared: Option<Prepared>,
}

impl Entry {
    pub fn new(
        request: Request,
        raw: Value,
        prefix: String,
        external_tx_id: Option<String>,
        metadata: Option<Map<String, Value>>,
    ) -> Entry {
        Entry { request, raw, prefix, external_tx_id, metadata, prepared: None }
    }
}

/// An account's nexus as the engine takes it: `None` until the account has configured any.
type Nexus = Arc<Option<BTreeMap<usize, bool>>>;

/// An entry determined and rendered ahead of its batch, from the account's nexus as this instance last
/// read it, so that the batch (one at a time) does not spend its time there. The batch uses it when the nexus it
/// reads in its transaction is the same (otherwise it determines the entry again), and settles the two parts
/// that the counterparty's 1099 total decides (`Determination::with_vendor_prior`), which go between the fixed
/// pieces of the body (`render::FullText`).
struct Prepared {
    nexus: Nexus,
    det: Determination,
    /// The ledger row's id, also in the body. (Taken here, so a job's entries have ids in their order, and a
    /// call answered before another began has the lower id.)
    id: String,
    /// The body's fixed pieces (the 1099 parts go between them once settled).
    fixed: [String; 3],
}

/// Determines an entry of the account's with the nexus given, renders it with the API's members, its 1099 parts
/// left to settle, and packs the rest.
///
/// A call paid per call (x402, MPP) answers with the spec's `upgrade` member, and may state its own nexus
/// (`nexus_override`, which only such calls get past validation): then it is determined with that nexus.
fn prepare(
    registry: &Registry,
    plans: &Plans,
    now_ms: i64,
    payer: &Payer,
    nexus: Nexus,
    entry: &Entry,
    request: &Request,
) -> Result<Prepared, Refusal> {
    let entity_id = payer.entity_id();
    let stated = request.nexus_override.as_ref();
    let input = Input { request, nexus: stated.or((*nexus).as_ref()), vendor_ytd: None, as_of: utc_date(now_ms) };
    let det = determine(registry, &input).map_err(|err| engine_refusal(err, &entry.prefix))?;
    let id = new_ordered_id("tx", now_ms);
    let extra = [
        ("transaction_id", id.as_str()),
        ("timestamp", &iso(now_ms)),
        ("entity_id", entity_id),
        ("mode", payer.mode()),
        ("api_version", API_VERSION),
    ];
    let free_tier = payer.key_id().is_none().then(|| plans.free_allowance());
    let upgrade = free_tier.as_deref().map(|f| [("message", PER_CALL_UPGRADE), ("signup", "/api/v1/auth/signup"), ("free_tier", f)]);
    let fixed = FullText::new(&det).into_fixed(&extra, upgrade.as_ref().map(|u| &u[..]));
    Ok(Prepared { nexus, det, id, fixed })
}

/// The `upgrade` message of a call paid per call.
const PER_CALL_UPGRADE: &str =
    "Paid per call. A free API key answers the same way with a monthly allowance, stores your nexus and keeps your 1099 totals across calls.";

/// An engine failure as the job's refusal: the caller's input, or not.
fn engine_refusal(err: EngineError, prefix: &str) -> Refusal {
    match err {
        EngineError::Input(errors) => Refusal::Input(errors.iter().map(|e| format!("{prefix}{}: {}", e.field, e.message)).collect()),
        other => Refusal::Engine(other.to_string()),
    }
}

pub enum Source {
    /// A keyed calculate call: its response gets nexus alerts and is stored under its Idempotency-Key.
    Calculate { idempotency_key: Option<String> },
    /// An ingest request: records with an external id already in the ledger come back as duplicates.
    Ingest,
}

pub struct Job {
    /// Who pays for the job, and so which account it is recorded to and what it counts against.
    pub payer: Payer,
    pub entries: Vec<Entry>,
    pub source: Source,
    pub now_ms: i64,
}

/// What became of one entry.
pub enum EntryOutcome {
    /// Written now; the full calculate body's text, as stored.
    New { calculation: String },
    /// Already in the ledger (or earlier in this request): the original row, not written again.
    Duplicate(Box<transaction::Model>),
}

/// A job's result from its batch, and for a calculate call paid by a key its count in the key's burst window
/// (the caller reports the window from it).
pub struct Answer {
    pub result: Result<Recorded, Refusal>,
    pub burst: Option<i64>,
}

impl Answer {
    fn failed(e: Refusal) -> Answer {
        Answer { result: Err(e), burst: None }
    }
}

pub struct Recorded {
    pub entries: Vec<EntryOutcome>,
    /// Calculate: the response text (the body with any nexus alerts), as stored for the Idempotency-Key.
    pub response: String,
}

/// A batch attempt's first script and what its answers are read against.
struct Plan<'j> {
    /// Jobs not failed.
    live: Vec<usize>,
    /// Live jobs paid by a key, not past its burst limit: counted in the month's usage.
    counted: Vec<usize>,
    /// Live calculate jobs paid by a key, each counted in its key's burst window (after the usage calls in `hits`).
    bursting: Vec<usize>,
    /// Per served job, where each entry's row comes from.
    slots: HashMap<usize, Vec<Slot>>,
    /// The new entries (job, entry), in order, and their payments to counterparties.
    news: Vec<(usize, usize)>,
    payments: Vec<Payment<'j>>,
    /// The counted jobs' monthly usage calls, then the bursting jobs' burst calls.
    hits: Vec<CounterHit>,
    first: Script<'j>,
    /// Where each answer is in the script.
    usage: Range<usize>,
    owners_at: usize,
    /// The accounts of jobs paid per call (if any).
    accounts_at: Option<usize>,
    nexus_at: usize,
    /// The network profiles of the new entries' counterparties (if any entry is new).
    profiles_at: Option<usize>,
    external: Range<usize>,
    vendor: Range<usize>,
    /// The revenue calculate's nexus alerts read (if any job alerts).
    revenue_at: Option<usize>,
}

impl<'j> Plan<'j> {
    /// Script 1 for the jobs, given what earlier attempts learned: begin; what the determinations need, with
    /// the counters and totals added.
    fn new(jobs: &'j [Job], known: &Known, backend: DbBackend) -> Plan<'j> {
        let live: Vec<usize> = (0..jobs.len()).filter(|i| !known.failed.contains_key(i)).collect();
        let keyed = |i: &usize| jobs[*i].payer.key_id().is_some();
        let counted: Vec<usize> = live.iter().copied().filter(|i| keyed(i) && !known.throttled.contains(i)).collect();
        let serving: Vec<usize> = live.iter().copied().filter(|i| !known.throttled.contains(i) && !known.refused.contains_key(i)).collect();
        let bursting: Vec<usize> =
            live.iter().copied().filter(|i| keyed(i) && matches!(jobs[*i].source, Source::Calculate { .. })).collect();

        // Which entries are new, and which repeat an external id already recorded (or earlier in the batch).
        let mut in_batch: HashMap<(&str, &str), usize> = HashMap::new();
        let mut news: Vec<(usize, usize)> = Vec::new();
        let mut slots: HashMap<usize, Vec<Slot>> = HashMap::new();
        for &i in &serving {
            let job = &jobs[i];
            let mut mine = Vec::new();
            for (e, entry) in job.entries.iter().enumerate() {
                let key =
                    entry.external_tx_id.as_deref().filter(|_| matches!(job.source, Source::Ingest)).map(|x| (job.payer.entity_id(), x));
                let existing = key.and_then(|(a, x)| known.existing.get(&(a.to_string(), x.to_string())));
                let slot = match (existing, key.and_then(|k| in_batch.get(&k))) {
                    (Some(row), _) => Slot::Existing(Box::new(row.clone())),
                    (None, Some(&n)) => Slot::SameAs(n),
                    (None, None) => {
                        if let Some(k) = key {
                            in_batch.insert(k, news.len());
                        }
                        news.push((i, e));
                        Slot::New(news.len() - 1)
                    }
                };
                mine.push(slot);
            }
            slots.insert(i, mine);
        }
        let payments: Vec<Payment> = news
            .iter()
            .map(|&(i, e)| {
                let req = &jobs[i].entries[e].request;
                Payment {
                    entity_id: jobs[i].payer.entity_id(),
                    counterparty_id: &req.counterparty_id,
                    tax_year: utc_date(jobs[i].now_ms).year(),
                    micros: micros(req.amount),
                }
            })
            .collect();

        let mut first = Script::begin(backend);
        let usage_calls = counted.iter().map(|&i| monthly_call(jobs[i].payer.entity_id(), jobs[i].now_ms));
        let burst_calls = bursting.iter().filter_map(|&i| jobs[i].payer.key_id().map(|k| burst_call(k, jobs[i].now_ms)));
        let hits: Vec<_> = usage_calls.chain(burst_calls).collect();
        let usage = first.add_all(Store::hit_counters_sql(backend, &hits));
        let key_ids = distinct(live.iter().filter_map(|&i| jobs[i].payer.key_id()));
        let owners_at = first.add(Store::key_owners_sql(backend, &key_ids));
        let per_call = distinct(live.iter().filter(|i| !keyed(i)).map(|&i| jobs[i].payer.entity_id()));
        let accounts_at = (!per_call.is_empty()).then(|| first.add(Store::entities_sql(backend, &per_call)));
        let accounts = distinct(live.iter().map(|&i| jobs[i].payer.entity_id()));
        let nexus_at = first.add(Store::nexus_states_sql(backend, &accounts));
        let counterparties = distinct(news.iter().map(|&(i, e)| jobs[i].entries[e].request.counterparty_id.as_str()));
        let profiles_at = (!counterparties.is_empty()).then(|| first.add(Store::profiles_sql(backend, &counterparties)));
        // (The external-id queries are consecutive statements.)
        let mut external = first.statements()..first.statements();
        for &i in &serving {
            let ids: Vec<&str> = jobs[i].entries.iter().filter_map(|e| e.external_tx_id.as_deref()).collect();
            if matches!(jobs[i].source, Source::Ingest) && !ids.is_empty() {
                external.end = first.add(Store::transactions_by_external_ids_sql(backend, jobs[i].payer.entity_id(), &ids)) + 1;
            }
        }
        let vendor = first.add_all(Store::add_vendor_payments_sql(backend, &payments));
        let calculating: Vec<usize> = serving.iter().copied().filter(|&i| matches!(jobs[i].source, Source::Calculate { .. })).collect();
        let alerting = distinct(calculating.iter().map(|&i| jobs[i].payer.entity_id()));
        let from_month = calculating.iter().map(|&i| nexus_alerts::earliest_month(utc_date(jobs[i].now_ms))).min().unwrap_or(0);
        let revenue_at = (!alerting.is_empty()).then(|| first.add(Store::state_revenue_sql(backend, &alerting, from_month)));
        Plan {
            live,
            counted,
            bursting,
            slots,
            news,
            payments,
            hits,
            first,
            usage,
            owners_at,
            accounts_at,
            nexus_at,
            profiles_at,
            external,
            vendor,
            revenue_at,
        }
    }
}

/// Dollars as micro-dollars, the unit the running totals are summed in.
pub(super) fn micros(d: Decimal) -> i64 {
    (d * Decimal::from(1_000_000)).round().to_i64().unwrap_or(i64::MAX)
}

fn from_micros(m: i64) -> Decimal {
    Decimal::new(m, 6)
}

/// Where an entry's row comes from.
enum Slot {
    Existing(Box<transaction::Model>),
    /// The same external id earlier in this batch: that new row.
    SameAs(usize),
    New(usize),
}

/// What earlier attempts at a batch learned (each rerun adds to it).
#[derive(Default)]
struct Known {
    /// Jobs answered with an error and not counted: key revoked or unknown, or the determination failed.
    failed: HashMap<usize, Refusal>,
    /// Jobs past a free plan's allowance: counted, answered with this error, not recorded.
    refused: HashMap<usize, Refusal>,
    /// Calculate jobs past their key's burst limit: counted in the burst window only, answered 429.
    throttled: HashSet<usize>,
    /// Ledger rows holding an external id an ingest job sends, by (account, external id).
    existing: HashMap<(String, String), transaction::Model>,
}

impl Ledger {
    /// Determines and records a job's entries (in a batch with whatever else is waiting) and answers once they are
    /// committed.
    pub async fn record(self: &Arc<Self>, job: Job) -> Answer {
        let ledger = self.clone();
        let applied = self
            .group
            .submit(job, move |jobs, replies| {
                let ledger = ledger.clone();
                async move { ledger.apply(jobs, replies).await }
            })
            .await;
        applied.unwrap_or_else(|| Answer::failed(Refusal::Engine("the ledger batch failed".into())))
    }

    /// Names each entry's counterparty as the network knows it (`Request::with_counterparty`), then determines,
    /// renders and packs the job's entries before its batch (see [`Prepared`]), from the account's nexus as this
    /// instance last read it (none, for an account it has not seen). A request the engine cannot answer as
    /// sent is the caller's error whatever the nexus (sourcing does not depend on it): every such entry's fields
    /// come back in one refusal, and the job goes no further. Any other failure leaves the entry to the batch,
    /// which determines it again and answers that failure.
    pub async fn prepare_job(&self, job: &mut Job) -> Result<(), Refusal> {
        let entity_id = job.payer.entity_id().to_string();
        // Each counterparty as this instance last read it (the batch reads it again, and redoes what differs).
        for entry in &mut job.entries {
            if let Some(Some(p)) = self.profiles_seen.get(&entry.request.counterparty_id) {
                entry.request.set_counterparty(visible_counterparty(&p, &entity_id));
            }
        }
        let nexus = self.nexus_seen.get(&entity_id).unwrap_or_default();
        let mut errors = Vec::new();
        for entry in &mut job.entries {
            entry.prepared = match prepare(&self.registry, &self.plans, job.now_ms, &job.payer, nexus.clone(), entry, &entry.request) {
                Ok(p) => Some(p),
                Err(Refusal::Input(e)) => {
                    errors.extend(e);
                    None
                }
                Err(_) => None,
            };
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Refusal::Input(errors))
        }
    }

    /// Writes a batch and answers its callers once it is committed, before the writer connection goes back to its
    /// pool (on SQLite that is one more hand-off to the connection's thread, which the callers need not wait for).
    async fn apply(&self, jobs: Vec<Job>, replies: Replies<Answer>) {
        match self.write_batch(&jobs).await {
            Ok((out, conn)) => {
                replies.send(out);
                conn.release().await;
            }
            Err(e) => replies.send(jobs.iter().map(|_| Answer::failed(Refusal::Store(e.clone()))).collect()),
        }
    }

    /// One transaction for the jobs: an answer per job, in order, and the connection it committed on.
    async fn write_batch(&self, jobs: &[Job]) -> Result<(Vec<Answer>, ScriptConn), StoreError> {
        let backend = self.store.writer.get_database_backend();
        let mut known = Known::default();
        // (Script 1 of the first attempt is written before the connection is taken: on SQLite the other writers
        // on its one connection, the limiter and Idempotency-Key claims, do not wait for that.)
        let mut plan = Plan::new(jobs, &known, backend);
        let acquiring = std::time::Instant::now();
        let mut conn = ScriptConn::acquire(&self.store.writer).await?;
        self.metrics.db_acquire(acquiring.elapsed());
        let writing = std::time::Instant::now();
        let mut reruns = 0;
        if self.store.checkpoints.as_ref().is_some_and(|c| c.take_restart()) {
            // The log is long and the background copies have done most of it: the rest, so that this batch
            // starts the log again. (A failure leaves it to the next.)
            let _ = conn.checkpoint().await;
        }
        loop {
            match self.attempt(&mut conn, jobs, plan, &mut known).await {
                Ok(Some(out)) => {
                    self.metrics.ledger_batch(jobs.len(), writing.elapsed(), reruns);
                    return Ok((out, conn));
                }
                Ok(None) => {
                    reruns += 1;
                    conn.rollback().await?
                }
                Err(e) => {
                    // (If the rollback fails too, dropping the connection closes it, which rolls back.)
                    let _ = conn.rollback().await;
                    return Err(e);
                }
            }
            plan = Plan::new(jobs, &known, backend);
        }
    }

    /// One attempt at the batch: its results, or `None` (transaction left open) when it learned something that
    /// changes what to write, added to `known`.
    async fn attempt(
        &self,
        conn: &mut ScriptConn,
        jobs: &[Job],
        plan: Plan<'_>,
        known: &mut Known,
    ) -> Result<Option<Vec<Answer>>, StoreError> {
        let Plan {
            live,
            counted,
            bursting,
            mut slots,
            news,
            payments,
            hits,
            first,
            usage,
            owners_at,
            accounts_at,
            nexus_at,
            profiles_at,
            external,
            vendor,
            revenue_at,
        } = plan;
        let backend = conn.backend();
        let answers = conn.run(first).await?;

        // What the answers change: keys no longer valid, allowances used up, external ids already recorded.
        let counts = Store::counts_after(&hits, answers.models::<counter::Model>(usage, "").map_err(StoreError::from)?);
        let owners: HashMap<String, entity::Model> =
            Store::key_owners_from(answers.rows(owners_at))?.into_iter().map(|KeyOwner { key_id, entity }| (key_id, entity)).collect();
        let per_call: HashMap<String, entity::Model> = match accounts_at {
            Some(at) => answers.models::<entity::Model>(at..at + 1, "")?.into_iter().map(|a| (a.id.clone(), a)).collect(),
            None => HashMap::new(),
        };
        // Each live job's account: its key's owner (a key revoked since the caller's lookup has none), or the
        // account a per-call payment is attributed to.
        let account_of = |job: &Job| match &job.payer {
            Payer::ApiKey { key_id, entity_id } => owners.get(key_id).filter(|a| a.id == *entity_id),
            Payer::PerCall { entity_id, .. } => per_call.get(entity_id),
        };
        let mut learned = false;
        let limit = self.burst_per_minute;
        let burst: HashMap<usize, i64> = bursting.iter().zip(&counts[counted.len()..]).map(|(&i, &count)| (i, count)).collect();
        for (&i, &count) in &burst {
            if count > limit && known.throttled.insert(i) {
                learned = true;
            }
        }
        let mut metered = Vec::new();
        for &i in &live {
            if account_of(&jobs[i]).is_none() {
                let refusal = if jobs[i].payer.key_id().is_some() { Refusal::KeyRevoked } else { Refusal::UnknownAccount };
                known.failed.insert(i, refusal);
                learned = true;
            }
        }
        for (k, &i) in counted.iter().enumerate() {
            let job = &jobs[i];
            let Some(account) = account_of(job) else { continue };
            match crate::billing::allowance(&self.plans, account, crate::billing::Product::Tax, job.now_ms, counts[k]) {
                Ok(Some(overage)) => metered.push(overage),
                Ok(None) => {}
                Err(message) => {
                    if known.refused.insert(i, Refusal::AllowanceUsedUp(message)).is_none() {
                        learned = true;
                    }
                }
            }
        }
        let recorded = answers.models::<transaction::Model>(external, "")?;
        for row in recorded {
            let ext = row.external_tx_id.clone().unwrap_or_default();
            if known.existing.insert((row.entity_id.clone(), ext), row).is_none() {
                learned = true;
            }
        }
        if learned {
            return Ok(None);
        }
        let priors = Store::totals_before(&payments, answers.models::<vendor_ytd::Model>(vendor, "")?);
        let mut maps: HashMap<&str, BTreeMap<usize, bool>> = HashMap::new();
        for a in owners.values().chain(per_call.values()).filter(|a| a.nexus_configured) {
            maps.insert(a.id.as_str(), BTreeMap::new());
        }
        for r in answers.models::<nexus_state::Model>(nexus_at..nexus_at + 1, "")? {
            if let (Some(map), Some(i)) = (maps.get_mut(r.entity_id.as_str()), state_index(&r.state)) {
                map.insert(i, r.has_nexus);
            }
        }
        // (Owners are per key: an account with two keys in the batch comes twice, and takes its map once.)
        let mut nexus: HashMap<&str, Nexus> = HashMap::new();
        for a in owners.values().chain(per_call.values()) {
            nexus.entry(a.id.as_str()).or_insert_with(|| {
                let n: Nexus = Arc::new(maps.remove(a.id.as_str()));
                self.nexus_seen.put(&a.id, n.clone());
                n
            });
        }
        // The counterparties' profiles as they are, remembered for preparing the next entries.
        let profiles: HashMap<String, Arc<network_profile::Model>> = match profiles_at {
            Some(at) => {
                answers.models::<network_profile::Model>(at..at + 1, "")?.into_iter().map(|p| (p.agent_id.clone(), Arc::new(p))).collect()
            }
            None => HashMap::new(),
        };
        for &(i, e) in &news {
            let id = &jobs[i].entries[e].request.counterparty_id;
            self.profiles_seen.put(id, profiles.get(id).cloned());
        }
        let mut revenue = match revenue_at {
            Some(at) => answers.models::<state_revenue::Model>(at..at + 1, "")?,
            None => Vec::new(),
        };

        // The determinations (made before the batch where the nexus they used is still the account's), settled
        // with the 1099 totals, and the rows, with their bodies' text, and the sales they make.
        let mut rows = Vec::with_capacity(news.len());
        let mut sales = Vec::new();
        for (n, &(i, e)) in news.iter().enumerate() {
            let (job, entry) = (&jobs[i], &jobs[i].entries[e]);
            let req = &entry.request;
            let entity_id = job.payer.entity_id();
            let today = utc_date(job.now_ms);
            let account_nexus = nexus.get(entity_id).cloned().unwrap_or_default();
            let counterparty = profiles.get(&req.counterparty_id).and_then(|p| visible_counterparty(p, entity_id));
            let corrected;
            let req = if req.counterparty == counterparty {
                req
            } else {
                let mut r = req.clone();
                r.set_counterparty(counterparty);
                corrected = r;
                &corrected
            };
            let redone;
            let prepared = match &entry.prepared {
                Some(p) if *p.nexus == *account_nexus && std::ptr::eq(req, &entry.request) => p,
                _ => match prepare(&self.registry, &self.plans, job.now_ms, &job.payer, account_nexus, entry, req) {
                    Ok(p) => {
                        redone = p;
                        &redone
                    }
                    Err(err) => {
                        known.failed.insert(i, err);
                        return Ok(None);
                    }
                },
            };
            let det = &prepared.det;
            let (tracking, advisories) = det.with_vendor_prior(&self.registry, req, from_micros(priors[n]).normalize());
            if det.role == crate::engine::Role::Seller && det.counts_toward_nexus_threshold != Some(false) {
                let month = today.year() * 100 + today.month() as i32;
                sales.push(Sale { entity_id, state: det.buyer_state, month, micros: payments[n].micros });
            }
            let settled = render::settled(det, tracking.as_ref(), &advisories);
            let text = render::joined(prepared.fixed.each_ref().map(String::as_str), &settled);
            rows.push(transaction::Model {
                id: prepared.id.clone(),
                entity_id: entity_id.to_string(),
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
                request: entry.raw.to_string(),
                result: text,
                dated: super::report::day_number(today),
                refund_of: None,
                voided_at: None,
                refunds: 0,
                liability: serde_json::to_string(&super::liability::Liability::of(det)).ok(),
            });
        }
        add_sales(&mut revenue, &sales);

        // Script 2: the writes, the Idempotency-Key responses, commit.
        let mut second = Script::new(backend);
        second.add_all(Store::hit_counters_sql(backend, &metered));
        second.add_all(Store::add_state_revenues_sql(backend, &sales));

        // The outcomes, in job order.
        let mut out = Vec::with_capacity(jobs.len());
        let no_nexus = BTreeMap::new();
        // Every job of an account in this batch sees the same revenue, so the same alerts (serialized once).
        let mut alerts_memo: HashMap<(&str, NaiveDate), Option<String>> = HashMap::new();
        for (i, job) in jobs.iter().enumerate() {
            let burst = burst.get(&i).copied();
            if let Some(e) = known.failed.get(&i) {
                out.push(Answer::failed(e.clone()));
                continue;
            }
            if known.throttled.contains(&i) {
                out.push(Answer { result: Err(Refusal::BurstExceeded { limit }), burst });
                continue;
            }
            if let Some(e) = known.refused.get(&i) {
                out.push(Answer { result: Err(e.clone()), burst });
                continue;
            }
            let slots = slots.remove(&i).unwrap_or_default();
            let first_new = match slots.first() {
                Some(Slot::New(n)) => Some(*n),
                _ => None,
            };
            // Each new body belongs to exactly one entry (a repeated external id points at the row instead).
            let entries: Vec<EntryOutcome> = slots
                .into_iter()
                .map(|slot| match slot {
                    Slot::Existing(row) => EntryOutcome::Duplicate(row),
                    Slot::SameAs(n) => EntryOutcome::Duplicate(Box::new(rows[n].clone())),
                    Slot::New(n) => EntryOutcome::New { calculation: rows[n].result.clone() },
                })
                .collect();
            let mut response = String::new();
            if let Source::Calculate { idempotency_key } = &job.source {
                let today = utc_date(job.now_ms);
                let entity_id = job.payer.entity_id();
                let alerts = alerts_memo.entry((entity_id, today)).or_insert_with(|| {
                    let account_nexus = nexus.get(entity_id).and_then(|n| (**n).as_ref());
                    let alerts = alerts_from(&self.registry, entity_id, &revenue, account_nexus.unwrap_or(&no_nexus), today);
                    (!alerts.is_empty()).then(|| Value::Array(alerts).to_string())
                });
                response = match first_new {
                    Some(n) => with_alerts(&rows[n].result, alerts.as_deref()),
                    None => Value::Null.to_string(),
                };
                if let Some(k) = idempotency_key {
                    second.add(Store::finish_idempotency_key_sql(backend, entity_id, k, 200, response.clone()));
                }
            }
            out.push(Answer { result: Ok(Recorded { entries, response }), burst });
        }
        Store::write_transactions(conn, &mut second, &rows).await?;
        second.commit();
        conn.run(second).await?;
        Ok(Some(out))
    }
}

/// Adds a batch's sales to revenue rows read before it (rows it had none for are added).
fn add_sales(rows: &mut Vec<state_revenue::Model>, sales: &[Sale]) {
    for s in sales {
        match rows.iter_mut().find(|r| r.entity_id == s.entity_id && r.state == s.state && r.month == s.month) {
            Some(r) => {
                r.sales_micros += s.micros;
                r.tx_count += 1;
            }
            None => rows.push(state_revenue::Model {
                entity_id: s.entity_id.to_string(),
                state: s.state.to_string(),
                month: s.month,
                sales_micros: s.micros,
                tx_count: 1,
            }),
        }
    }
}

fn distinct<'a>(ids: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut seen = HashSet::new();
    ids.filter(|id| seen.insert(*id)).collect()
}

/// The counterparty a profile shows the account `viewer` (`store::network::visible_to`); `None` when it may not see it.
fn visible_counterparty(p: &network_profile::Model, viewer: &str) -> Option<Counterparty> {
    visible_to(p, viewer).then(|| Counterparty {
        agent_id: p.agent_id.clone(),
        entity_name: p.entity_name.clone(),
        entity_state: Some(p.entity_state.clone()).filter(|s| !s.is_empty()),
        work_type: p.work_type.clone(),
        legal_name: p.principal_legal_name.clone(),
        is_business: p.principal_is_business,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn alerts_spliced_into_the_stored_body_read_as_if_serialized_with_it() {
        let mut body = json!({"success": true, "total_tax": 66.0, "audit_trail": {"as_of": "2026-11-21"}, "note": "a } and a \"quote\""});
        let alerts = json!([{"state": "TX", "level": "approaching", "percent_of_threshold": 81.5}]);
        let stored = body.to_string();
        body.as_object_mut().unwrap().insert("nexus_alerts".into(), alerts.clone());
        assert_eq!(crate::ledger::with_alerts(&stored, Some(&alerts.to_string())), body.to_string());
        assert_eq!(crate::ledger::with_alerts(&stored, None), stored);
    }
}
