//! The `sepp` binary: command line, logging, configuration, signals; then `server::run`. The
//! `admin` subcommand is a client of a running server instead (`admin_cli`).

// A panic outside the tests is a bug with a message: `expect` says what was assumed.
#![deny(clippy::unwrap_used)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

use std::path::PathBuf;
use std::process::ExitCode;

use std::io::IsTerminal;

use clap::{Parser, Subcommand};
use sepp_config::{Config, LogFormat};
use sepp_server::logtext::Bounded;
use sepp_server::service::SERVER_VERSION;
use sepp_server::telemetry::Tracing;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

#[derive(Parser)]
#[command(name = "sepp", version = SERVER_VERSION, about = "A small, durable job queue server")]
struct Cli {
    /// Path of the configuration file (default: ./sepp.toml when it exists).
    #[arg(long, global = true, env = "SEPP_CONFIG")]
    config: Option<PathBuf>,
    /// Once every listener is bound, write their addresses to this file as JSON (replaced in
    /// one step; removed when the server stops).
    #[arg(long, value_name = "PATH")]
    ready_file: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Commands>,
}

#[derive(Subcommand)]
enum Commands {
    /// Configuration helpers.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Operate a running server through its admin API (key from SEPP_ADMIN_KEY).
    Admin(Box<sepp_server::admin_cli::AdminArgs>),
    /// Start a cluster, add and remove nodes, and see its status (cluster mode, docs/cluster.md).
    Cluster(Box<sepp_server::cluster_cli::ClusterArgs>),
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print a commented example configuration, equal to the defaults.
    Example,
    /// Check a configuration file, with the environment's SEPP_* overrides applied: print every
    /// error (unknown keys included), and exit 1 if there is one.
    Check,
}

fn main() -> ExitCode {
    sepp_server::memory::disable_transparent_huge_pages();
    #[cfg(unix)]
    ignore_file_size_signal();
    // Connections and storage share the descriptor limit; the server takes all it may have.
    sepp_server::net::raise_descriptor_limit();
    let cli = Cli::parse();
    let source = sepp_config::discover(cli.config, &|name| std::env::var(name).ok());
    match cli.command {
        Some(Commands::Config { command: ConfigCommand::Example }) => {
            print!("{}", sepp_config::example());
            return ExitCode::SUCCESS;
        }
        Some(Commands::Config { command: ConfigCommand::Check }) => return check_config(&source),
        Some(Commands::Admin(args)) => return sepp_server::admin_cli::run(*args),
        Some(Commands::Cluster(args)) => {
            let config = sepp_config::load(&source).map(|loaded| loaded.config).map_err(|error| error.to_string());
            return sepp_server::cluster_cli::run(*args, config);
        }
        None => {}
    }
    let sepp_config::Loaded { config } = match sepp_config::load(&source) {
        Ok(loaded) => loaded,
        Err(error) => return fail(&error),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .on_thread_park(sepp_server::memory::collect_when_idle)
        .on_thread_unpark(sepp_server::memory::woke)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return fail(&error),
    };
    // The span exporter's gRPC channel lives on the runtime.
    let otel = match runtime.block_on(async { Tracing::new(&config) }) {
        Ok(otel) => otel,
        Err(error) => return fail(&error),
    };
    init_logging(&config, otel.as_ref());
    if let Some(_otel) = &otel {
        tracing::info!(
            endpoint = %config.tracing.otlp_endpoint,
            service_name = %config.tracing.service_name,
            sample_ratio = config.tracing.sample_ratio,
            "OTLP tracing enabled"
        );
    }
    tracing::info!(version = SERVER_VERSION, "starting sepp");
    tracing::debug!("configuration loaded");
    let result = runtime.block_on(async move {
        let shutdown = shutdown_signal().map_err(sepp_server::server::StartError::Signals)?;
        let listener = sepp_server::server::bind(&config).await?;
        let reload = Some(sepp_server::server::ReloadSource { source });
        let clock = std::sync::Arc::new(sepp_engine::SystemClock);
        sepp_server::server::run(config, listener, reload, cli.ready_file, clock, shutdown).await
    });
    if let Some(otel) = otel {
        // Flushes the last spans; the exporter's channel still runs on the runtime.
        otel.shutdown();
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => fail(&error),
    }
}

/// A write past the file size limit (`ulimit -f`) would kill the process with SIGXFSZ before
/// it could say why. Ignored, the write fails with EFBIG instead, and storage poisons itself
/// with that reason like after any other failed write.
#[cfg(unix)]
fn ignore_file_size_signal() {
    // SAFETY: changes this process's handling of one signal, before any other thread exists.
    unsafe { libc::signal(libc::SIGXFSZ, libc::SIG_IGN) };
}

/// `sepp config check`: every error of the configuration `source` names, with the environment
/// overlay, on stdout; exit 1 when there is one.
fn check_config(source: &sepp_config::ConfigSource) -> ExitCode {
    let report = sepp_config::check_with_env(source, &sepp_config::process_env());
    let shown = source.path.display();
    let defaults = !source.explicit && !source.path.exists();
    for error in &report.errors {
        println!("error: {error}");
    }
    let errors = report.errors.len();
    let file = if defaults { format!("{shown} (not found: the defaults)") } else { format!("{shown}") };
    println!("{file}: {errors} error(s)");
    if errors > 0 { ExitCode::FAILURE } else { ExitCode::SUCCESS }
}

fn fail(error: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("error: {error}");
    ExitCode::FAILURE
}

/// Logs go to stdout; `RUST_LOG` replaces `logging.level`. Text logs are coloured only on a
/// terminal, unless the environment forces it either way.
fn init_logging(config: &Config, otel: Option<&Tracing>) {
    let from_env =
        std::env::var("RUST_LOG").ok().map(|directives| (EnvFilter::try_new(&directives).is_ok(), directives));
    let make_filter = || {
        from_env
            .as_ref()
            .and_then(|(valid, directives)| valid.then(|| EnvFilter::new(directives)))
            .or_else(|| EnvFilter::try_new(quiet_raft(&config.logging.level)).ok())
            .unwrap_or_else(|| EnvFilter::new("info"))
    };
    let filter = make_filter();
    let ansi = colour(std::io::stdout().is_terminal(), &|name| std::env::var(name).ok());
    let format = config.logging.format;
    // A macro, not a closure: each subscriber stack below boxes the layer for its own type.
    macro_rules! fmt {
        () => {{
            let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::stdout);
            match format {
                LogFormat::Json => fmt.json().boxed(),
                LogFormat::Text => fmt.with_ansi(ansi).boxed(),
            }
        }};
    }
    // The flood guard is outermost: it sees each line the log's filter lets through, once, and
    // holds every call site to about a line a second (docs/operations.md, "Log volume"). It is
    // behind the log's filter: beside per-layer filters, a layer without one would make every
    // call site of every crate (h2's and hyper's trace lines, their spans) interesting, and each
    // would be built and dispatched on every call.
    let guard = sepp_server::log_limit::FloodGuard::new;
    match otel {
        // Spans go to the exporter whatever the log level: only the server's own (`sepp`
        // targets). Each layer has its own filter then.
        Some(otel) => {
            let otel = tracing_opentelemetry::layer()
                .with_tracer(otel.tracer())
                .with_filter(Targets::new().with_target("sepp", tracing::Level::INFO));
            tracing_subscriber::registry()
                .with(fmt!().with_filter(filter))
                .with(otel)
                .with(guard().with_filter(make_filter()))
                .init();
        }
        // Without tracing, the log's filter is global: a call site it disables is never
        // registered as interesting, for the flood guard either, and costs nothing.
        None => tracing_subscriber::registry().with(filter).with(fmt!()).with(guard()).init(),
    }
    if let Some((false, directives)) = &from_env {
        tracing::warn!(rust_log = %Bounded(directives), "RUST_LOG is not a valid filter; using logging.level instead");
    }
}

/// `logging.level`, with openraft's own lines cut to errors unless the level names openraft:
/// its warnings (a vote that arrived after the term moved on, a peer that did not answer) are
/// the normal course of an election, which sepp reports in its own words.
fn quiet_raft(level: &str) -> String {
    if level.contains("openraft") { level.to_owned() } else { format!("{level},openraft=error") }
}

/// Whether text logs carry ANSI colours: on a terminal, unless `NO_COLOR` is set; elsewhere
/// only when `CLICOLOR_FORCE` or `FORCE_COLOR` is set to something other than `0`.
fn colour(terminal: bool, env: &dyn Fn(&str) -> Option<String>) -> bool {
    let set = |name: &str| env(name).is_some_and(|value| !value.is_empty() && value != "0");
    if set("CLICOLOR_FORCE") || set("FORCE_COLOR") {
        return true;
    }
    terminal && env("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed here, before the server starts,
/// so that a signal sent the moment it logs that it listens is not the default (a kill).
fn shutdown_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::colour;

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| pairs.iter().find(|(key, _)| *key == name).map(|(_, value)| value.to_string())
    }

    #[test]
    fn openraft_logs_only_errors_unless_the_level_names_it() {
        assert_eq!(super::quiet_raft("info"), "info,openraft=error");
        assert_eq!(super::quiet_raft("debug,openraft=info"), "debug,openraft=info");
    }

    #[test]
    fn colour_is_on_only_on_a_terminal_by_default() {
        assert!(colour(true, &env(&[])));
        assert!(!colour(false, &env(&[])));
    }

    #[test]
    fn the_environment_can_force_colour_either_way() {
        assert!(colour(false, &env(&[("CLICOLOR_FORCE", "1")])));
        assert!(colour(false, &env(&[("FORCE_COLOR", "true")])));
        assert!(!colour(false, &env(&[("FORCE_COLOR", "0")])));
        assert!(!colour(true, &env(&[("NO_COLOR", "1")])));
    }
}
