//! The `levy` binary: the analysts' rule commands (and, with the service, `serve` and `migrate`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "levy", version, about = "Open tax-intelligence service: rules, engine and API")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
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
    /// Compare two rule directories by what they determine, not by their text.
    Diff {
        old: PathBuf,
        new: PathBuf,
        #[arg(long)]
        as_of: Option<String>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let code = match cli.command {
        None => {
            eprintln!("usage: levy rules <check|test|explain|diff> (see levy --help)");
            2
        }
        Some(Command::Rules { command }) => match command {
            RulesCommand::Check { dir } => levy::cli::check(&dir),
            RulesCommand::Test { dir, filter } => levy::cli::test(&dir, filter.as_deref()),
            RulesCommand::Explain { request, as_of, nexus, json, rules } => levy::cli::explain(&rules, &request, as_of.as_deref(), nexus.as_deref(), json),
            RulesCommand::Diff { old, new, as_of } => levy::cli::diff(&old, &new, as_of.as_deref()),
        },
    };
    ExitCode::from(code)
}
