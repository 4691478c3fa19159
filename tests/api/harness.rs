//! A service instance for one test: its own SQLite file, or its own PostgreSQL schema when
//! TEST_DATABASE_URL is set, a settable clock, and poem's test client.

use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Utc};
use levy::api::{app, AppState};
use levy::clock::Clock;
use levy::config::Limits;
use levy::rules::registry::Registry;
use levy::security::DataKey;
use levy::store::Store;
use poem::endpoint::BoxEndpoint;
use poem::http::HeaderMap;
use poem::test::TestClient;
use poem::EndpointExt;
use serde_json::{json, Value};

static REGISTRY: OnceLock<Arc<Registry>> = OnceLock::new();

pub fn registry() -> Arc<Registry> {
    REGISTRY
        .get_or_init(|| {
            let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("rules");
            Arc::new(levy::server::load_rules(&dir).expect("rules load"))
        })
        .clone()
}

/// 2026-11-21 10:00:00 UTC: tax year 2026, 1099 threshold 2000.
pub fn start_time() -> DateTime<Utc> {
    "2026-11-21T10:00:00Z".parse().unwrap()
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

pub struct Db {
    pub url: String,
    pub schema: Option<String>,
    _tmp: Option<tempfile::TempDir>,
}

impl Db {
    /// A fresh database: a new SQLite file, or a new schema in TEST_DATABASE_URL. `None` when PostgreSQL is not configured.
    pub async fn fresh(backend: Backend) -> Option<Db> {
        match backend {
            Backend::Sqlite => {
                let tmp = tempfile::tempdir().unwrap();
                let url = levy::config::sqlite_url(&tmp.path().join("levy.db"));
                Some(Db { url, schema: None, _tmp: Some(tmp) })
            }
            Backend::Postgres => {
                let url = std::env::var("TEST_DATABASE_URL").ok()?;
                let schema = format!("t_{}", uuid::Uuid::new_v4().simple());
                let admin = Store::connect(&url).await.unwrap();
                use sea_orm::ConnectionTrait;
                admin.db.execute_unprepared(&format!("CREATE SCHEMA {schema}")).await.unwrap();
                Some(Db { url, schema: Some(schema), _tmp: None })
            }
        }
    }

    pub async fn store(&self) -> Store {
        Store::connect_in_schema(&self.url, self.schema.as_deref()).await.unwrap()
    }
}

impl Drop for Db {
    /// Drops the test's PostgreSQL schema (on a thread of its own: Drop cannot await).
    fn drop(&mut self) {
        let Some(schema) = self.schema.take() else { return };
        let url = self.url.clone();
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
            rt.block_on(async {
                use sea_orm::ConnectionTrait;
                if let Ok(admin) = Store::connect(&url).await {
                    let _ = admin.db.execute_unprepared(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE")).await;
                }
            });
        })
        .join();
    }
}

/// The EIN encryption key of every test instance.
fn test_data_key() -> DataKey {
    DataKey::from_hex(&"ab".repeat(32)).unwrap()
}

pub struct TestApp {
    pub state: Arc<AppState>,
    pub client: Arc<TestClient<BoxEndpoint<'static>>>,
    pub clock: Clock,
    pub backend: Backend,
    pub db: Arc<Db>,
}

#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: HeaderMap,
    pub text: String,
    pub json: Value,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
    }

    pub fn code(&self) -> &str {
        self.json["code"].as_str().unwrap_or("")
    }

    pub fn errors(&self) -> Vec<String> {
        self.json["errors"].as_array().map(|a| a.iter().filter_map(|e| e.as_str().map(str::to_string)).collect()).unwrap_or_default()
    }
}

/// The pay-per-call settings of an instance.
#[derive(Clone, Default)]
pub struct Payments {
    pub x402: levy::config::X402,
    pub mpp: levy::config::Mpp,
    pub public_url: Option<String>,
}

pub struct Account {
    pub key: String,
    pub entity_id: String,
    pub prefix: String,
}

impl TestApp {
    pub async fn start(backend: Backend) -> Option<TestApp> {
        TestApp::start_with(backend, Limits::default()).await
    }

    /// An instance with limits of its own (shorter time bounds, say).
    pub async fn start_with(backend: Backend, limits: Limits) -> Option<TestApp> {
        let db = Arc::new(Db::fresh(backend).await?);
        Some(TestApp::on_with(db, backend, Clock::fixed(start_time()), limits).await)
    }

    /// An instance with rules of its own (a partial rule set, say) on a fresh database.
    pub async fn start_with_rules(backend: Backend, rules: Arc<Registry>) -> Option<TestApp> {
        let db = Arc::new(Db::fresh(backend).await?);
        Some(TestApp::build(db, backend, Clock::fixed(start_time()), Limits::default(), rules).await)
    }

    /// Another instance on the same database (its own pool, no shared memory), sharing the clock.
    pub async fn on(db: Arc<Db>, backend: Backend, clock: Clock) -> TestApp {
        TestApp::build(db, backend, clock, Limits::default(), registry()).await
    }

    pub async fn on_with(db: Arc<Db>, backend: Backend, clock: Clock, limits: Limits) -> TestApp {
        TestApp::build(db, backend, clock, limits, registry()).await
    }

    /// An instance with plans of its own (a plans file with other allowances, say) on a fresh database.
    pub async fn start_with_plans(backend: Backend, limits: Limits, plans: levy::plans::Plans) -> Option<TestApp> {
        let db = Arc::new(Db::fresh(backend).await?);
        Some(
            TestApp::build_with(db, backend, Clock::fixed(start_time()), limits, registry(), Some(Arc::new(plans)), &Default::default())
                .await,
        )
    }

    /// An instance taking x402 payments as `x402` says, its clock at the real time (the x402 client library
    /// signs authorizations valid from the real time).
    pub async fn start_x402(backend: Backend, limits: Limits, x402: &levy::config::X402) -> Option<TestApp> {
        let pay = Payments { x402: x402.clone(), ..Default::default() };
        let db = Arc::new(Db::fresh(backend).await?);
        Some(TestApp::build_with(db, backend, Clock::fixed(Utc::now()), limits, registry(), None, &pay).await)
    }

    /// An instance taking payments as `pay` says, on `plans` (`None`: the compiled-in plans), its clock at the real
    /// time.
    pub async fn start_paid(backend: Backend, limits: Limits, plans: Option<levy::plans::Plans>, pay: &Payments) -> Option<TestApp> {
        let db = Arc::new(Db::fresh(backend).await?);
        Some(TestApp::build_with(db, backend, Clock::fixed(Utc::now()), limits, registry(), plans.map(Arc::new), pay).await)
    }

    async fn build(db: Arc<Db>, backend: Backend, clock: Clock, limits: Limits, rules: Arc<Registry>) -> TestApp {
        TestApp::build_with(db, backend, clock, limits, rules, None, &Default::default()).await
    }

    /// `plans`: `None` for the plans compiled into the binary (`rules/plans.yaml`).
    async fn build_with(
        db: Arc<Db>,
        backend: Backend,
        clock: Clock,
        limits: Limits,
        rules: Arc<Registry>,
        plans: Option<Arc<levy::plans::Plans>>,
        pay: &Payments,
    ) -> TestApp {
        let store = db.store().await;
        store.migrate().await.unwrap();
        let state = match plans {
            Some(plans) => AppState::with_plans(store, rules, plans, clock.clone(), limits, test_data_key()),
            None => AppState::new(store, rules, clock.clone(), limits, test_data_key()),
        };
        TestApp::serving(state.with_x402(&pay.x402).unwrap().with_mpp(&pay.mpp, pay.public_url.as_deref()).unwrap(), clock, backend, db)
    }

    /// An instance on a fresh database, with default limits and plans, whose state `configure` finishes (a payment
    /// processor's settings, say).
    pub async fn start_configured(backend: Backend, configure: impl FnOnce(AppState) -> AppState) -> Option<TestApp> {
        let db = Arc::new(Db::fresh(backend).await?);
        let clock = Clock::fixed(start_time());
        let store = db.store().await;
        store.migrate().await.unwrap();
        let state = configure(AppState::new(store, registry(), clock.clone(), Limits::default(), test_data_key()));
        Some(TestApp::serving(state, clock, backend, db))
    }

    fn serving(state: AppState, clock: Clock, backend: Backend, db: Arc<Db>) -> TestApp {
        let state = Arc::new(state);
        let client = Arc::new(TestClient::new(app(state.clone(), true).boxed()));
        TestApp { state, client, clock, backend, db }
    }

    pub async fn request(&self, method: &str, path: &str, key: Option<&str>, headers: &[(&str, &str)], body: Option<&str>) -> Reply {
        let c = &self.client;
        let mut req = match method {
            "GET" => c.get(path),
            "POST" => c.post(path),
            "DELETE" => c.delete(path),
            "PUT" => c.put(path),
            "PATCH" => c.patch(path),
            other => panic!("method {other}"),
        };
        if let Some(k) = key {
            req = req.header("X-API-Key", k);
        }
        for (n, v) in headers {
            req = req.header(*n, *v);
        }
        if let Some(b) = body {
            req = req.content_type("application/json").body(b.to_string());
        }
        let resp = req.send().await;
        let status = resp.0.status().as_u16();
        let headers = resp.0.headers().clone();
        let text = resp.0.into_body().into_string().await.unwrap();
        let json = serde_json::from_str(&text).unwrap_or(Value::Null);
        Reply { status, headers, text, json }
    }

    pub async fn post(&self, path: &str, key: Option<&str>, body: &Value) -> Reply {
        self.request("POST", path, key, &[], Some(&body.to_string())).await
    }

    pub async fn get(&self, path: &str, key: Option<&str>) -> Reply {
        self.request("GET", path, key, &[], None).await
    }

    /// A new account, signed up from an address of its own (as different users would; the signup limit counts
    /// per address).
    pub async fn signup(&self, email: &str) -> Account {
        static NEXT_ADDRESS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
        let address = format!("2001:db8::{:x}", NEXT_ADDRESS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let body = json!({"email": email, "password": "correct horse battery", "agent_name": "agent", "agent_work_type": "compute"});
        let r = self.request("POST", "/api/v1/auth/signup", None, &[("X-Forwarded-For", &address)], Some(&body.to_string())).await;
        assert_eq!(r.status, 201, "{}", r.text);
        Account {
            key: r.json["api_key"]["key"].as_str().unwrap().into(),
            prefix: r.json["api_key"]["prefix"].as_str().unwrap().into(),
            entity_id: r.json["entity_id"].as_str().unwrap().into(),
        }
    }

    pub async fn set_nexus(&self, key: &str, states: &[&str]) {
        let map: serde_json::Map<String, Value> = states.iter().map(|s| (s.to_string(), json!({"hasNexus": true}))).collect();
        let r = self.post("/api/v1/nexus", Some(key), &json!({"nexus": map})).await;
        assert_eq!(r.status, 200, "{}", r.text);
    }

    /// PostgreSQL: every connection the instance's pool holds, taken at once (none is in use between requests).
    pub async fn pool_connections(&self) -> Vec<sea_orm::sqlx::pool::PoolConnection<sea_orm::sqlx::Postgres>> {
        let pool = self.state.store.db.get_postgres_connection_pool();
        let mut conns = Vec::new();
        for _ in 0..pool.size() {
            conns.push(pool.acquire().await.unwrap());
        }
        conns
    }

    /// Gives connections back to the pool and waits until each is in it again (after its ping), so that the next
    /// [`TestApp::pool_connections`] takes the same ones.
    pub async fn give_back<C>(&self, conns: Vec<C>) {
        drop(conns);
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    /// The value of one series of the instance's metrics (as `GET /metrics` renders them): the sample `name` whose
    /// labels include `labels`, 0 when none is counted yet.
    pub fn metric(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let text = self.state.metrics.render(&self.state.store.pool_readings());
        let wanted: Vec<String> = labels.iter().map(|(k, v)| format!("{k}=\"{v}\"")).collect();
        let found: Vec<f64> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.rsplit_once(' '))
            .filter(|(series, _)| {
                let (n, rest) = series.split_once('{').unwrap_or((series, ""));
                let have: Vec<&str> = rest.trim_end_matches('}').split(',').collect();
                n == name && wanted.iter().all(|w| have.contains(&w.as_str()))
            })
            .map(|(_, v)| v.parse().unwrap())
            .collect();
        assert!(found.len() <= 1, "{name} {labels:?} matches several series:\n{text}");
        found.first().copied().unwrap_or(0.0)
    }

    /// Rows in the account's ledger, read straight from the database.
    pub async fn ledger_rows(&self, entity_id: &str) -> usize {
        use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
        levy::store::entity::transaction::Entity::find()
            .filter(levy::store::entity::transaction::Column::EntityId.eq(entity_id))
            .count(&self.state.store.db)
            .await
            .unwrap() as usize
    }
}

/// Runs a scenario on SQLite, and as a second test on PostgreSQL when TEST_DATABASE_URL is set.
#[macro_export]
macro_rules! on_both {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                use $crate::harness::{Backend, TestApp};

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    let app = TestApp::start(Backend::Sqlite).await.unwrap();
                    super::$name(app).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    match TestApp::start(Backend::Postgres).await {
                        Some(app) => super::$name(app).await,
                        None => eprintln!("TEST_DATABASE_URL not set: PostgreSQL run skipped"),
                    }
                }
            }
        )+
    };
}

/// Runs each scenario, an async fn taking the [`Backend`], on SQLite, and on PostgreSQL when TEST_DATABASE_URL is
/// set (for scenarios that start their instances themselves).
#[macro_export]
macro_rules! on_each_backend {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$name($crate::harness::Backend::Sqlite).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    if std::env::var("TEST_DATABASE_URL").is_err() {
                        eprintln!("TEST_DATABASE_URL not set: PostgreSQL run skipped");
                        return;
                    }
                    super::$name($crate::harness::Backend::Postgres).await;
                }
            }
        )+
    };
}

/// The Python of the venv of the payment clients (LEVY_X402_VENV, default target/x402-venv; .ci/run creates it
/// with x402, eth-account and pympp), and a script of `tests/<dir>/`. The assertion says how to make the venv.
pub fn payment_python(dir: &str, script: &str) -> (String, String) {
    let venv = std::env::var("LEVY_X402_VENV").unwrap_or_else(|_| format!("{}/target/x402-venv", env!("CARGO_MANIFEST_DIR")));
    let python = format!("{venv}/bin/python");
    assert!(
        std::path::Path::new(&python).exists(),
        "the payment tests need a Python venv with x402[evm]==2.25.0, eth-account==0.14.0 and pympp==0.16.0 at {venv} \
         (LEVY_X402_VENV): python3 -m venv {venv} && {venv}/bin/pip install 'x402[evm]==2.25.0' 'eth-account==0.14.0' \
         'pympp==0.16.0' (as .ci/run does)"
    );
    (python, format!("{}/tests/{dir}/{script}", env!("CARGO_MANIFEST_DIR")))
}

/// A JSON number as f64 (bodies keep money as exact decimals such as 6.60, which compare unequal to 6.6 as JSON).
pub fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}
