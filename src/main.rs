//! The `levy` binary: the analysts' rule commands (and, with the service, `serve` and `migrate`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc: a calculate call builds and drops many small JSON values across threads, where glibc's allocator
/// spent a quarter of the service's CPU time (measured with perf under benches/load.sh).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(name = "levy", version, about = "Open tax-intelligence service: rules, engine and API")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the service (the default): SQLite under levy-data/ unless DATABASE_URL says otherwise.
    Serve {
        /// Address to listen on (overrides LEVY_BIND; default 127.0.0.1:8080).
        #[arg(long)]
        bind: Option<String>,
        /// Database URL (overrides DATABASE_URL).
        #[arg(long)]
        database_url: Option<String>,
        /// Rules directory, loaded and checked at start (overrides LEVY_RULES; default: the rules compiled in).
        #[arg(long)]
        rules: Option<PathBuf>,
    },
    /// Apply pending database migrations and exit.
    Migrate {
        #[arg(long)]
        database_url: Option<String>,
    },
    /// Print the OpenAPI document.
    Openapi,
    /// levy's tools for an agent over MCP on stdio: each tool call is made to the levy server at --url (LEVY_URL)
    /// with the API key in LEVY_API_KEY (none: the demo and the free tools).
    Mcp {
        /// The levy server's base URL (overrides LEVY_URL; default http://127.0.0.1:8080).
        #[arg(long)]
        url: Option<String>,
    },
    /// The operator's account commands: set a plan without a payment processor, list accounts, export usage.
    Accounts {
        /// Database URL (overrides DATABASE_URL).
        #[arg(long, global = true)]
        database_url: Option<String>,
        #[command(subcommand)]
        command: AccountsCommand,
    },
    /// The operator's report commands: an account's liability report (what it files).
    Reports {
        /// Database URL (overrides DATABASE_URL).
        #[arg(long, global = true)]
        database_url: Option<String>,
        #[command(subcommand)]
        command: ReportsCommand,
    },
    /// The operator's partner commands: create, list, deactivate, reactivate, rotate-secret, set-terms.
    Partners {
        /// Database URL (overrides DATABASE_URL).
        #[arg(long, global = true)]
        database_url: Option<String>,
        #[command(subcommand)]
        command: PartnersCommand,
    },
    /// Work with the rule files: check, test, explain, diff.
    Rules {
        #[command(subcommand)]
        command: RulesCommand,
    },
}

#[derive(Subcommand)]
enum RulesCommand {
    /// Load and check a rules directory; print every diagnostic; exit 1 on any error.
    Check {
        #[arg(default_value = "rules")]
        dir: PathBuf,
    },
    /// Run the scenario cases in DIR/tests; close with "N passed, M failed".
    Test {
        #[arg(default_value = "rules")]
        dir: PathBuf,
        /// Run only cases whose name contains this text.
        #[arg(long)]
        filter: Option<String>,
    },
    /// Evaluate one calculate request and show how the answer was derived.
    Explain {
        /// A JSON or YAML file, or the JSON text itself.
        #[arg(long)]
        request: String,
        /// The date to evaluate as of (default: today, UTC).
        #[arg(long)]
        as_of: Option<String>,
        /// States where the seller has nexus, comma-separated (e.g. TX,CA).
        #[arg(long)]
        nexus: Option<String>,
        /// Print the response body as JSON instead of the derivation.
        #[arg(long)]
        json: bool,
        #[arg(long, default_value = "rules")]
        rules: PathBuf,
    },
    /// Compare two rule sets: what changed in the rule files (by id and file:line), and which determinations that
    /// changes, grouped by jurisdiction, rule and effect, on every day a change starts or ends.
    Diff(levy::cli::DiffArgs),
    /// Compare our combined rate at each zip code of independent rate tables (Avalara's TAXRATES_ZIP5, the DOR
    /// grid, or state,zip,rate) with theirs; exit 1 on any disagreement no rule file records.
    AuditRates {
        #[arg(required = true)]
        tables: Vec<PathBuf>,
        /// Compare every row as of this date (default: each table's own date, else today, UTC).
        #[arg(long)]
        as_of: Option<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        #[arg(long, default_value = "rules")]
        rules: PathBuf,
        /// Count a row as agreeing within this many percentage points (default: the table's own tolerance; for
        /// Avalara's table, a thousandth of a point).
        #[arg(long)]
        tolerance: Option<String>,
    },
    /// Turn a state's Streamlined Sales Tax rate file (and boundary file) into its local tax data:
    /// DIR/local/<xx>.sst.yaml and, with a boundary file, DIR/local/<xx>.sst.csv; then check DIR.
    ImportSst {
        rate_file: PathBuf,
        boundary_file: Option<PathBuf>,
        /// The rules directory to write into.
        #[arg(long, default_value = "rules")]
        into: PathBuf,
        /// A CSV `code,name,counties,cite` naming special districts the files leave unnamed, the 3-digit county
        /// FIPS codes they cover (space-separated) and the source that says so; without a boundary file, a district
        /// is placed by these counties.
        #[arg(long)]
        districts: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum AccountsCommand {
    /// Put the account with this email on PLAN (a tier id of rules/plans.yaml) from its next call.
    SetPlan {
        email: String,
        plan: String,
        /// The product: tax (calculate and ingest) or gains (the gains tracker's trades).
        #[arg(long, default_value = "tax")]
        product: String,
    },
    /// Every account with its plans, standing and this month's calls.
    List {
        #[arg(long)]
        json: bool,
    },
    /// Every account's usage statement of a month: calls, allowance, overage and its amount.
    Usage {
        /// YYYY-MM (default: the current month, UTC).
        #[arg(long)]
        month: Option<String>,
        /// csv or json.
        #[arg(long, default_value = "csv")]
        format: String,
    },
}

#[derive(Subcommand)]
enum ReportsCommand {
    /// The liability report of the account with EMAIL: per state, tax and period, then per jurisdiction (as GET
    /// /api/v1/reports/liability gives it).
    Liability(levy::cli::reports::LiabilityArgs),
}

#[derive(Subcommand)]
enum PartnersCommand {
    /// Create a partner: prints its key and webhook signing secret, once.
    Create {
        #[arg(long)]
        slug: String,
        #[arg(long)]
        name: String,
        #[command(flatten)]
        terms: levy::cli::partners::Terms,
    },
    /// Every partner with its terms (never its key or secret).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Refuse the partner's key and webhooks (403) until it is reactivated.
    Deactivate {
        slug: String,
    },
    Reactivate {
        slug: String,
    },
    /// A new webhook signing secret, printed once; the previous one still verifies for 24 hours.
    RotateSecret {
        slug: String,
    },
    /// Change a partner's terms from now on (a revenue share locked by an account's first upgrade stays).
    SetTerms {
        slug: String,
        #[command(flatten)]
        terms: levy::cli::partners::Terms,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        None => serve(None, None, None),
        Some(Command::Serve { bind, database_url, rules }) => serve(bind, database_url, rules),
        Some(Command::Migrate { database_url }) => migrate(database_url),
        Some(Command::Openapi) => openapi(),
        Some(Command::Mcp { url }) => mcp(url),
        Some(Command::Accounts { database_url, command }) => accounts(database_url, command),
        Some(Command::Partners { database_url, command }) => partners(database_url, command),
        Some(Command::Reports { database_url, command }) => reports(database_url, command),
        Some(Command::Rules { command }) => match command {
            RulesCommand::Check { dir } => levy::cli::check(&dir),
            RulesCommand::Test { dir, filter } => levy::cli::test(&dir, filter.as_deref()),
            RulesCommand::Explain { request, as_of, nexus, json, rules } => {
                levy::cli::explain(&rules, &request, as_of.as_deref(), nexus.as_deref(), json)
            }
            RulesCommand::Diff(args) => levy::cli::diff(&args),
            RulesCommand::AuditRates { tables, as_of, json, rules, tolerance } => {
                levy::cli::audit_rates(&rules, &tables, as_of.as_deref(), tolerance.as_deref(), json)
            }
            RulesCommand::ImportSst { rate_file, boundary_file, into, districts } => {
                levy::cli::import_sst(&rate_file, boundary_file.as_deref(), &into, districts.as_deref())
            }
        },
    };
    ExitCode::from(code)
}

/// Runs `work` on a new async runtime: hands its value to `done` and exits 0, or prints its error and exits 1.
fn run<T>(work: impl std::future::Future<Output = Result<T, String>>, done: impl FnOnce(T)) -> u8 {
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return 1;
        }
    };
    match rt.block_on(work) {
        Ok(value) => {
            done(value);
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

fn serve(bind: Option<String>, database_url: Option<String>, rules: Option<PathBuf>) -> u8 {
    levy::server::init_tracing();
    let mut config = levy::config::Config::from_env();
    if let Some(b) = bind {
        config.bind = b;
    }
    if let Some(u) = database_url {
        config.database_url = u;
    }
    if let Some(r) = rules {
        config.rules_dir = Some(r);
    }
    run(levy::server::serve(config), |()| {})
}

fn migrate(database_url: Option<String>) -> u8 {
    levy::server::init_tracing();
    let mut config = levy::config::Config::from_env();
    if let Some(u) = database_url {
        config.database_url = u;
    }
    run(levy::server::connect_and_migrate(&config.database_url), |_| println!("ok: migrations applied"))
}

/// Runs an operator's command on the configured database (`--database-url` overrides DATABASE_URL), migrated:
/// prints its text and exits 0, or prints the error and exits 1.
fn operate(
    database_url: Option<String>,
    command: impl AsyncFnOnce(&levy::config::Config, levy::store::Store, i64) -> Result<String, String>,
) -> u8 {
    let mut config = levy::config::Config::from_env();
    if let Some(u) = database_url {
        config.database_url = u;
    }
    let work = async {
        let store = levy::server::connect_and_migrate(&config.database_url).await?;
        command(&config, store, chrono::Utc::now().timestamp_millis()).await
    };
    run(work, |text| println!("{text}"))
}

fn accounts(database_url: Option<String>, command: AccountsCommand) -> u8 {
    operate(database_url, async |config, store, now_ms| {
        let plans = levy::plans::Plans::configured(config.rules_dir.as_deref(), &config.x402)?;
        use levy::cli::accounts;
        match command {
            AccountsCommand::SetPlan { email, plan, product } => accounts::set_plan(&store, &plans, &email, &plan, &product).await,
            AccountsCommand::List { json } => accounts::list(&store, &plans, now_ms, json).await,
            AccountsCommand::Usage { month, format } => accounts::usage(&store, &plans, now_ms, month.as_deref(), &format).await,
        }
    })
}

fn reports(database_url: Option<String>, command: ReportsCommand) -> u8 {
    operate(database_url, async |_, store, now_ms| match command {
        ReportsCommand::Liability(args) => levy::cli::reports::liability(&store, &args, now_ms).await,
    })
}

fn partners(database_url: Option<String>, command: PartnersCommand) -> u8 {
    operate(database_url, async |_, store, now_ms| {
        use levy::cli::partners;
        match command {
            PartnersCommand::Create { slug, name, terms } => partners::create(&store, &slug, &name, &terms, now_ms).await,
            PartnersCommand::List { json } => partners::list(&store, json).await,
            PartnersCommand::Deactivate { slug } => partners::set_active(&store, &slug, false).await,
            PartnersCommand::Reactivate { slug } => partners::set_active(&store, &slug, true).await,
            PartnersCommand::RotateSecret { slug } => partners::rotate_secret(&store, &slug, now_ms).await,
            PartnersCommand::SetTerms { slug, terms } => partners::set_terms(&store, &slug, &terms).await,
        }
    })
}

fn mcp(url: Option<String>) -> u8 {
    let url = url.or_else(|| std::env::var("LEVY_URL").ok()).unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let config = levy::config::Config::from_env();
    let work = async {
        let state = levy::server::offline_state(&config).await?;
        levy::api::mcp::stdio::serve(&levy::api::openapi_json(state), &url, std::env::var("LEVY_API_KEY").ok()).await
    };
    run(work, |()| {})
}

fn openapi() -> u8 {
    let config = levy::config::Config::from_env();
    run(levy::server::offline_state(&config), |state| println!("{}", levy::api::openapi_json(state)))
}
