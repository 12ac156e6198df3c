//! The `sepp` binary: command line, logging, configuration, signals; then `server::run`. The
//! `admin` subcommand is a client of a running server instead (`admin_cli`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use sepp_config::{Config, LogFormat};
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(name = "sepp", version = sepp_server::service::SERVER_VERSION, about = "A small, durable job queue server")]
struct Cli {
    /// Path of the configuration file (default: ./sepp.toml when it exists).
    #[arg(long, global = true, env = "SEPP_CONFIG")]
    config: Option<PathBuf>,
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
    Admin(sepp_server::admin_cli::AdminArgs),
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Print a commented example configuration, equal to the defaults.
    Example,
}

fn main() -> ExitCode {
    sepp_server::memory::disable_transparent_huge_pages();
    #[cfg(unix)]
    ignore_file_size_signal();
    let cli = Cli::parse();
    match cli.command {
        Some(Commands::Config { command: ConfigCommand::Example }) => {
            print!("{}", sepp_config::example());
            return ExitCode::SUCCESS;
        }
        Some(Commands::Admin(args)) => return sepp_server::admin_cli::run(args),
        None => {}
    }
    let source = sepp_config::discover(cli.config, &|name| std::env::var(name).ok());
    let config = match sepp_config::load(&source) {
        Ok(config) => config,
        Err(error) => return fail(&error),
    };
    init_logging(&config);
    tracing::debug!("configuration loaded");
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => return fail(&error),
    };
    let result = runtime.block_on(async move {
        let listener = sepp_server::server::bind(&config).await?;
        let reload = Some(sepp_server::server::ReloadSource { source });
        sepp_server::server::run(config, listener, reload, shutdown_signal()).await
    });
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

fn fail(error: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("error: {error}");
    ExitCode::FAILURE
}

/// Logs go to stdout; `RUST_LOG` replaces `logging.level`.
fn init_logging(config: &Config) {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|directives| EnvFilter::try_new(directives).ok())
        .or_else(|| EnvFilter::try_new(&config.logging.level).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stdout);
    match config.logging.format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.with_ansi(true).init(),
    }
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("install the SIGTERM handler");
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}
