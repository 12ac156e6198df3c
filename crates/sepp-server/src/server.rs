//! Assembles and runs the server: storage and committer, the gRPC listener with health, auth,
//! TLS and limits, hot reload, and graceful shutdown (SPEC section 5).
//!
//! [`run`] takes the configuration, an already-bound listener and a shutdown future, so tests
//! can run a real server in-process on port 0 and stop it when they like.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use sepp_config::{Config, PersistMode};
use sepp_core::{State, StorageRules};
use sepp_log::{DurableLog, LogOptions};
use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, Server, ServerTlsConfig};

use crate::auth::ApiKeyCheck;
use crate::committer::{self, Command, CommitterHandle, CommitterSettings};
use crate::live::{Live, LiveConfig};
use crate::proto::v1::queue_service_server::QueueServiceServer;
use crate::service::QueueApi;

/// How long in-flight calls may take to finish after a shutdown signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("could not bind {addr}: {source}")]
    Bind { addr: std::net::SocketAddr, source: std::io::Error },
    #[error("could not read TLS file {path}: {source}")]
    TlsFile { path: PathBuf, source: std::io::Error },
    #[error("invalid TLS certificate or key: {0}")]
    Tls(tonic::transport::Error),
    #[error("the gRPC server failed: {0}")]
    Serve(tonic::transport::Error),
    #[error(transparent)]
    Config(#[from] sepp_config::ConfigError),
    #[error("could not open storage: {0}")]
    Storage(#[from] sepp_log::OpenError),
    #[error("storage is poisoned: {0}")]
    Poisoned(String),
    #[error(transparent)]
    Admin(#[from] crate::admin::listener::AdminStartError),
}

/// Where the running configuration came from, for hot reload.
pub struct ReloadSource {
    pub source: sepp_config::ConfigSource,
}

/// Binds the configured gRPC address.
pub async fn bind(config: &Config) -> Result<TcpListener, StartError> {
    let addr = config.server.listen_addr;
    TcpListener::bind(addr).await.map_err(|source| StartError::Bind { addr, source })
}

/// Runs the server until `shutdown` resolves, then stops gracefully: parked reserves return
/// empty, in-flight calls finish, and the committer stops after its last cycle. A failed write
/// or sync (poisoned storage) stops it the same way, and it then returns the reason as an error.
pub async fn run(
    config: Config,
    listener: TcpListener,
    reload: Option<ReloadSource>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    if !config.queues.is_empty() {
        let names: Vec<&str> = config.queues.iter().map(|queue| queue.name.as_str()).collect();
        tracing::info!(queues = ?names, "declared queues from config");
    }
    let live = Arc::new(LiveConfig::new(config));
    let boot = &live.boot;
    let (committer, committer_closed) = open_storage(boot, &live)?;
    let addr = listener.local_addr().map_err(|source| StartError::Bind { addr: boot.server.listen_addr, source })?;

    let tls = boot.server.tls_cert_path.is_some();
    let auth = boot.auth.api_keys.is_some();
    if auth && !tls {
        tracing::warn!("API keys are enforced without TLS: keys travel in plain text");
    }
    tracing::info!(
        %addr,
        db_path = %boot.server.db_path.display(),
        tls = enabled(tls),
        auth = enabled(auth),
        strict_queues = enabled(boot.server.strict_queues),
        declared_queues = boot.queues.len(),
        "queue server listening"
    );
    let config_path = reload.as_ref().map(|reload| reload.source.path.clone());
    let watcher = reload.and_then(|reload| watch_config(reload, live.clone(), committer.clone()));
    let workers = boot.admin.enabled.then(|| Arc::new(crate::admin::workers::Workers::default()));
    let admin = crate::admin::listener::start(crate::admin::AdminSetup {
        committer: committer.clone(),
        live: live.clone(),
        config_path,
        watching: watcher.is_some(),
        workers: workers.clone().unwrap_or_default(),
    })
    .await?;

    let mut builder = Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(10)));
    if let (Some(cert), Some(key)) = (&boot.server.tls_cert_path, &boot.server.tls_key_path) {
        let identity = Identity::from_pem(read_tls(cert)?, read_tls(key)?);
        builder = builder.tls_config(ServerTlsConfig::new().identity(identity)).map_err(StartError::Tls)?;
    }
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    health_reporter.set_serving::<QueueServiceServer<QueueApi>>().await;
    let api = QueueApi { committer: committer.clone(), live: live.clone(), workers };
    let queue_service = QueueServiceServer::new(api)
        .max_decoding_message_size(boot.limits.max_message_bytes as usize)
        .max_encoding_message_size(usize::MAX);
    let queue_service =
        tonic::service::interceptor::InterceptedService::new(queue_service, ApiKeyCheck { live: live.clone() });

    let stopping = Arc::new(tokio::sync::Notify::new());
    let graceful = {
        let committer = committer.clone();
        let stopping = stopping.clone();
        async move {
            tokio::select! {
                () = shutdown => tracing::info!("shutdown signal received"),
                reason = committer.poisoned() => tracing::error!(%reason, "storage is poisoned; stopping"),
            }
            stopping.notify_one();
            // Parked reserves answer empty now, before the transport waits for them.
            let _ = committer.send(Command::Shutdown).await;
        }
    };
    // The builder's tcp_nodelay applies only to listeners it binds itself; ours is bound by the
    // caller, so accepted sockets get TCP_NODELAY here (without it, every small reply waits out
    // a delayed ACK of tens of milliseconds).
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let serving =
        builder.add_service(health_service).add_service(queue_service).serve_with_incoming_shutdown(incoming, graceful);
    // In-flight calls get a bounded grace period: a peer that never answers the transport's
    // goodbye (a stalled client) must not keep the server from stopping.
    let served = tokio::select! {
        served = serving => served,
        () = async {
            stopping.notified().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::warn!(grace_s = SHUTDOWN_GRACE.as_secs(), "connections still open after the shutdown grace period; closing them");
            Ok(())
        }
    };
    if let Some(admin) = admin {
        admin.stop().await;
    }
    tracing::info!("queue server stopped");
    drop(watcher);
    let poisoned = committer.poison_reason();
    drop(committer);
    drop(live);
    let _ = committer_closed.wait().await;
    match poisoned {
        Some(reason) => Err(StartError::Poisoned(reason)),
        None => served.map_err(StartError::Serve),
    }
}

fn enabled(on: bool) -> &'static str {
    if on { "enabled" } else { "disabled" }
}

fn read_tls(path: &PathBuf) -> Result<Vec<u8>, StartError> {
    std::fs::read(path).map_err(|source| StartError::TlsFile { path: path.clone(), source })
}

/// Starts the committer, which opens storage (replaying the log into a fresh state) on its own
/// thread before it serves commands.
fn open_storage(boot: &Config, live: &LiveConfig) -> Result<(CommitterHandle, committer::Closed), StartError> {
    let settings = CommitterSettings {
        command_queue_capacity: boot.storage.command_queue_capacity,
        sweep_interval_ms: boot.storage.sweep_interval_ms,
        relocations_per_cycle: CommitterSettings::RELOCATIONS_PER_CYCLE,
    };
    let boot = boot.clone();
    let policy = live.get().policy.clone();
    committer::spawn(move || recover(&boot, policy), settings)
}

/// Replays the data directory into a fresh state and reports what it found.
fn recover(boot: &Config, policy: Arc<sepp_core::Policy>) -> Result<(State, Box<dyn sepp_log::Log>), StartError> {
    tracing::info!("opening storage...");
    let started = Instant::now();
    let storage = &boot.storage;
    let rules = StorageRules {
        dead_letter_retention_ms: storage.dead_letter_retention_ms,
        sweep_limit: storage.sweep_limit as usize,
    };
    let mut state = State::new(policy, rules);
    let persist_mode = match storage.persist_mode {
        PersistMode::SyncAll => sepp_log::PersistMode::SyncAll,
        PersistMode::SyncData => sepp_log::PersistMode::SyncData,
        PersistMode::Buffer => sepp_log::PersistMode::Buffer,
    };
    let (log, recovery) =
        DurableLog::open(&boot.server.db_path, LogOptions::new(persist_mode), |record| state.apply(record))?;
    let depths = state.total_depths();
    tracing::info!(
        elapsed_ms = started.elapsed().as_millis() as u64,
        ready = depths.ready,
        scheduled = depths.scheduled,
        inflight = depths.inflight,
        dead_letter = depths.dead_letter,
        records_replayed = recovery.records,
        segments = recovery.segments,
        "storage ready"
    );
    if storage.persist_mode == PersistMode::Buffer {
        tracing::warn!("persist_mode is buffer: acknowledged writes survive a crash of sepp but not of the machine");
    }
    let unused: Vec<&str> = [
        ("cache_size_bytes", storage.cache_size_bytes.is_some()),
        ("max_journaling_size_bytes", storage.max_journaling_size_bytes.is_some()),
        ("max_cached_files", storage.max_cached_files.is_some()),
        ("worker_threads", storage.worker_threads.is_some()),
    ]
    .into_iter()
    .filter_map(|(key, set)| set.then_some(key))
    .collect();
    if !unused.is_empty() {
        tracing::info!(keys = ?unused, "these [storage] keys tune the storage engine of sepp 0.1 and are not used by this one");
    }
    if boot.server.strict_queues {
        let undeclared: Vec<String> = state
            .queue_names()
            .iter()
            .filter(|queue| !boot.queues.iter().any(|declared| declared.name == ***queue))
            .map(|queue| queue.to_string())
            .collect();
        if !undeclared.is_empty() {
            tracing::warn!(queues = ?undeclared, "strict_queues is on but storage holds jobs of undeclared queues");
        }
    }
    tracing::info!(
        db_path = %boot.server.db_path.display(),
        persist_mode = persist_mode_name(storage.persist_mode),
        sweep_interval_ms = storage.sweep_interval_ms,
        sweep_limit = storage.sweep_limit,
        dead_letter_retention_ms = storage.dead_letter_retention_ms,
        command_queue_capacity = storage.command_queue_capacity,
        "storage opened"
    );
    // Recovery read whole segments; what it freed would stay with this thread until it allocates.
    crate::memory::release_freed();
    Ok((state, Box::new(log)))
}

fn persist_mode_name(mode: PersistMode) -> &'static str {
    match mode {
        PersistMode::SyncAll => "sync_all",
        PersistMode::SyncData => "sync_data",
        PersistMode::Buffer => "buffer",
    }
}

/// Starts the config watcher when the file exists; each change reloads, validates and, when the
/// new configuration is valid, publishes it (restart-only fields are reported, not applied).
fn watch_config(
    reload: ReloadSource,
    live: Arc<LiveConfig>,
    committer: CommitterHandle,
) -> Option<sepp_config::ConfigWatcher> {
    let path = reload.source.path.clone();
    if !path.exists() {
        tracing::info!("no config file; hot reload is disabled and config changes apply after a restart");
        return None;
    }
    let runtime = tokio::runtime::Handle::current();
    let source = reload.source;
    let on_change = move || {
        let attempt = || {
            let candidate = match sepp_config::load(&source) {
                Ok(candidate) => candidate,
                Err(error) => {
                    tracing::error!(%error, "config reload failed; keeping the running configuration");
                    return;
                }
            };
            let current = live.get();
            if candidate == current.config {
                return;
            }
            let restart_only = current.config.restart_only_changes(&candidate);
            if !restart_only.is_empty() {
                tracing::warn!(fields = ?restart_only, "changed restart-only fields are not applied until a restart");
            }
            let published = live.replace(Live::new(candidate, &live.boot));
            let committer = committer.clone();
            runtime.spawn(async move {
                let _ = committer.send(Command::SetPolicy(published.policy.clone())).await;
            });
            tracing::info!("configuration reloaded");
        };
        attempt();
        // Counted after every attempt, whatever came of it: the admin API waits on this.
        live.reloaded();
    };
    match sepp_config::watch(&path, on_change) {
        Ok(watcher) => {
            tracing::info!(path = %path.display(), "watching config file for hot reload");
            Some(watcher)
        }
        Err(error) => {
            tracing::warn!(%error, "could not watch the config file; hot reload is disabled");
            None
        }
    }
}
