//! Assembles and runs the server: storage and committer, the gRPC listener with health, auth,
//! TLS and limits, hot reload, and graceful shutdown (docs/operations.md).
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
use tonic::transport::Server;

use crate::auth::ApiKeyCheck;
use crate::live::{Live, LiveConfig};
use crate::proto::v1::queue_service_server::QueueServiceServer;
use crate::service::QueueApi;
use sepp_engine::{Clock, Command, CommitterHandle, CommitterSettings};

/// Calls (and Consume streams) open at once on one queue-service connection.
pub const MAX_STREAMS_PER_CONNECTION: u32 = 1024;

/// How long in-flight calls may take to finish after a shutdown signal.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("could not bind {addr}: {source}")]
    Bind { addr: std::net::SocketAddr, source: std::io::Error },
    #[error("{0}")]
    Tls(String),
    #[error("the gRPC server failed: {0}")]
    Serve(tonic::transport::Error),
    #[error(transparent)]
    Config(#[from] sepp_config::ConfigError),
    #[error("could not open storage: {0}")]
    Storage(#[from] sepp_log::OpenError),
    #[error("storage is poisoned: {0}")]
    Poisoned(String),
    #[error("could not install the signal handlers: {0}")]
    Signals(std::io::Error),
    #[error("could not build the reflection service: {0}")]
    Reflection(tonic_reflection::server::Error),
    #[error(transparent)]
    Admin(#[from] crate::admin::listener::AdminStartError),
    #[error(transparent)]
    Telemetry(#[from] crate::telemetry::TelemetryError),
    #[error("could not bind the prometheus metrics endpoint {addr}: {source}")]
    PrometheusBind { addr: std::net::SocketAddr, source: std::io::Error },
    #[error(transparent)]
    Cluster(#[from] crate::cluster::ClusterStartError),
    #[error(
        "{path} holds a cluster node's data (its cluster/ directory); set cluster.node_id to run this node, or point server.db_path elsewhere"
    )]
    ClusterData { path: PathBuf },
    #[error("could not write the ready file {path}: {source}")]
    ReadyFile { path: PathBuf, source: std::io::Error },
}

/// Where the running configuration came from, for hot reload.
pub struct ReloadSource {
    pub source: sepp_config::ConfigSource,
}

/// Binds the configured gRPC address (with `SO_REUSEADDR`, see [`crate::net::bind`]).
pub async fn bind(config: &Config) -> Result<TcpListener, StartError> {
    let addr = config.server.listen_addr;
    crate::net::bind(addr).await.map_err(|source| StartError::Bind { addr, source })
}

/// Runs the server until `shutdown` resolves, then stops gracefully: parked reserves return
/// empty, in-flight calls finish, and the committer stops after its last cycle. A failed write
/// or sync (poisoned storage) stops it the same way, and it then returns the reason as an error.
pub async fn run(
    config: Config,
    listener: TcpListener,
    reload: Option<ReloadSource>,
    ready_file: Option<PathBuf>,
    clock: Arc<dyn Clock>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), StartError> {
    let pipeline = crate::telemetry::MetricsPipeline::new(&config)?;
    let prometheus = match pipeline.as_ref().and_then(|pipeline| pipeline.registry.clone()) {
        Some(registry) => {
            let addr = config.metrics.prometheus_listen_addr;
            Some(
                crate::telemetry::prometheus::start(addr, config.metrics.prometheus_max_connections, registry)
                    .await
                    .map_err(|source| StartError::PrometheusBind { addr, source })?,
            )
        }
        None => None,
    };
    if !config.queues.is_empty() {
        let names: Vec<&str> = config.queues.iter().map(|queue| queue.name.as_str()).collect();
        tracing::info!(queues = ?names, "declared queues from config");
    }
    let live = Arc::new(LiveConfig::new(config));
    let boot = &live.boot;
    let tracing_on = boot.tracing.enabled;
    let (sweeps, swept) = tokio::sync::mpsc::unbounded_channel();
    let observe = (pipeline.is_some() || tracing_on).then(|| sepp_engine::Observe {
        commit_duration: pipeline.as_ref().map(|pipeline| {
            use opentelemetry::metrics::MeterProvider as _;
            let histogram = pipeline
                .provider
                .meter("sepp")
                .f64_histogram("sepp.commit.duration")
                .with_unit("ms")
                .with_description("Committer cycle: apply, write and persist")
                .build();
            Box::new(move |ms| histogram.record(ms, &[])) as Box<dyn Fn(f64) + Send>
        }),
        sweeps: Some(sweeps),
        settled_jobs: true,
    });
    let (committer, committer_closed) = open_storage(boot, &live, clock.clone(), observe)?;
    // Stats snapshots feed the admin API and the queue gauges; the committer publishes them
    // only when one of those runs.
    let (snapshot_sender, snapshots) =
        tokio::sync::watch::channel(Arc::new(crate::admin::stats::StatsSnapshot::default()));
    if boot.admin.enabled || pipeline.is_some() {
        let publisher = crate::admin::stats::StatsPublisher::new(snapshot_sender);
        committer
            .send(Command::PublishStats(Box::new(publisher)))
            .await
            .map_err(|_| StartError::Poisoned("the committer stopped during startup".into()))?;
    }
    let waiting = Arc::new(crate::service::WaitingReserves::default());
    let telemetry = crate::telemetry::Telemetry {
        metrics: pipeline
            .as_ref()
            .map(|pipeline| pipeline.instruments(snapshots.clone(), committer.clone(), waiting.clone())),
        tracing: tracing_on,
    };
    if telemetry.is_on() {
        tokio::spawn(crate::telemetry::observer::run(telemetry.clone(), swept));
    }
    let addr = listener.local_addr().map_err(|source| StartError::Bind { addr: boot.server.listen_addr, source })?;
    let cluster = match boot.cluster.node_id {
        Some(_) => {
            let (policy, rules) = (live.get().policy.clone(), storage_rules(boot));
            let fresh: sepp_cluster::FreshState = Arc::new(move || State::new(policy.clone(), rules));
            Some(crate::cluster::ClusterNode::start(boot, addr, fresh, committer.clone()).await?)
        }
        None => None,
    };
    let gate = cluster.as_ref().map(|cluster| cluster.gate.clone());
    if let (Some(pipeline), Some(gate)) = (&pipeline, &gate) {
        pipeline.cluster_instruments(gate.clone());
    }

    let tls = boot.server.tls_cert_path.is_some();
    let auth = boot.auth.api_keys.is_some();
    if auth && !tls {
        tracing::warn!("API keys are enforced without TLS: keys travel in plain text");
    }
    tracing::info!(
        %addr,
        db_path = %boot.server.db_path.display(),
        version = crate::service::SERVER_VERSION,
        tls = enabled(tls),
        auth = enabled(auth),
        strict_queues = enabled(boot.server.strict_queues),
        declared_queues = boot.queues.len(),
        "queue server listening"
    );
    let config_path = reload.as_ref().map(|reload| reload.source.path.clone());
    let watcher = reload.and_then(|reload| watch_config(reload, live.clone(), committer.clone()));
    let workers = boot.admin.enabled.then(|| Arc::new(crate::admin::workers::Workers::default()));
    // Failed authentication on either listener counts against the same clients.
    let throttle = Arc::new(crate::throttle::AuthThrottle::new(telemetry.metrics.clone()));
    let admin = crate::admin::listener::start(crate::admin::AdminSetup {
        committer: committer.clone(),
        live: live.clone(),
        config_path,
        watching: watcher.is_some(),
        workers: workers.clone().unwrap_or_default(),
        clock: clock.clone(),
        snapshots,
        metrics: telemetry.metrics.clone(),
        cluster: gate.clone(),
        throttle: throttle.clone(),
    })
    .await?;

    // A peer that stops answering pings (30 s apart, 10 s to answer) is closed. One connection
    // carries at most MAX_STREAMS_PER_CONNECTION calls and Consume streams at once (a client's
    // transport waits for a free one).
    let mut builder = Server::builder()
        .http2_keepalive_interval(Some(Duration::from_secs(30)))
        .http2_keepalive_timeout(Some(Duration::from_secs(10)))
        .max_concurrent_streams(Some(MAX_STREAMS_PER_CONNECTION));
    // TLS is done in the accept path (`net`), under the handshake deadline.
    let tls_acceptor = match (&boot.server.tls_cert_path, &boot.server.tls_key_path) {
        (Some(cert), Some(key)) => Some(crate::net::tls_acceptor(cert, key, &[b"h2"]).map_err(StartError::Tls)?),
        _ => None,
    };
    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    health_reporter.set_serving::<QueueServiceServer<QueueApi>>().await;
    if gate.is_some() {
        // In cluster mode the queue service is SERVING only while this node serves it: it leads
        // and a majority confirmed it. A follower (and a node that believes it leads with nobody
        // to confirm it) refuses queue calls, so it says NOT_SERVING; the server as a whole ("")
        // stays SERVING.
        let mut leading = committer.leading();
        let reporter = health_reporter.clone();
        tokio::spawn(async move {
            loop {
                if *leading.borrow_and_update() {
                    reporter.set_serving::<QueueServiceServer<QueueApi>>().await;
                } else {
                    reporter.set_not_serving::<QueueServiceServer<QueueApi>>().await;
                }
                if leading.changed().await.is_err() {
                    return;
                }
            }
        });
    }
    let (stop_streams, stopping_streams) = tokio::sync::watch::channel(false);
    let api = QueueApi {
        committer: committer.clone(),
        live: live.clone(),
        workers,
        clock: clock.clone(),
        telemetry,
        cluster: gate.clone(),
        stopping: stopping_streams,
        waiting,
    };
    let queue_service = QueueServiceServer::new(api)
        .max_decoding_message_size(boot.limits.max_message_bytes as usize)
        .max_encoding_message_size(usize::MAX);
    // In cluster mode a follower forwards the calls to the leader, or refuses them naming it.
    let forwarding = match (&gate, boot.cluster.node_id) {
        (Some(_), Some(id)) if boot.cluster.forward_calls && !tls => {
            Some(Arc::new(crate::cluster::Forwarding::new(id)))
        }
        (Some(_), Some(_)) if boot.cluster.forward_calls => {
            tracing::info!("followers refuse queue calls instead of forwarding them while server.tls_cert_path is set");
            None
        }
        _ => None,
    };
    let queue_service = crate::cluster::LeaderOnly::new(queue_service, gate, forwarding);
    let queue_service = ApiKeyCheck::new(queue_service, live.clone(), throttle.clone(), clock.clone());
    let (reflection_v1, reflection_v1alpha) = reflection_services()?;
    let reflection_v1 = ApiKeyCheck::new(reflection_v1, live.clone(), throttle.clone(), clock.clone());
    let reflection_v1alpha = ApiKeyCheck::new(reflection_v1alpha, live.clone(), throttle.clone(), clock.clone());

    let stopping = Arc::new(tokio::sync::Notify::new());
    let graceful = {
        let committer = committer.clone();
        let stopping = stopping.clone();
        let health_reporter = health_reporter.clone();
        async move {
            tokio::select! {
                () = shutdown => tracing::info!("shutdown signal received"),
                reason = committer.poisoned() => {
                    tracing::error!(%reason, "storage is poisoned; stopping");
                    health_reporter.set_not_serving::<QueueServiceServer<QueueApi>>().await;
                    health_reporter.set_service_status("", tonic_health::ServingStatus::NotServing).await;
                }
            }
            stopping.notify_one();
            // Consume streams end (UNAVAILABLE) rather than hold the transport open.
            stop_streams.send_replace(true);
            // Parked reserves answer empty now, before the transport waits for them.
            let _ = committer.send(Command::Shutdown).await;
        }
    };
    // Everything that can fail to start is behind: say where the listeners are.
    if let Some(path) = &ready_file {
        let ready = serde_json::json!({
            "pid": std::process::id(),
            "version": crate::service::SERVER_VERSION,
            "queue_addr": addr.to_string(),
            "admin_addr": admin.as_ref().map(|admin| admin.addr.to_string()),
            "admin_tls": boot.admin.tls_cert_path.is_some(),
            "prometheus_addr": prometheus.as_ref().map(|prometheus| prometheus.addr.to_string()),
        });
        write_ready_file(path, &ready).map_err(|source| StartError::ReadyFile { path: path.clone(), source })?;
    }
    // Accepted sockets get TCP_NODELAY in `net` (without it, every small reply waits out a
    // delayed ACK of tens of milliseconds), within the listener's connection limit and the
    // descriptor budget, each after its handshake.
    let acceptor = crate::net::Acceptor::new(listener, crate::net::Listener::Queue, boot.server.max_connections);
    let incoming =
        crate::net::grpc_incoming(acceptor, tls_acceptor, Duration::from_millis(boot.server.handshake_timeout_ms));
    let serving = builder
        .add_service(health_service)
        .add_service(queue_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .serve_with_incoming_shutdown(incoming, graceful);
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
    if let Some(prometheus) = prometheus {
        prometheus.stop().await;
    }
    tracing::info!("queue server stopped");
    if let Some(path) = &ready_file {
        let _ = std::fs::remove_file(path);
    }
    drop(watcher);
    let poisoned = committer.poison_reason();
    // Connections past the grace period may still hold handles; the committer stops anyway.
    let _ = committer.send(Command::Close).await;
    if let Some(cluster) = cluster {
        cluster.stop().await;
    }
    drop(committer);
    drop(live);
    let _ = committer_closed.wait().await;
    if let Some(pipeline) = pipeline {
        // The last OTLP push happens here; it blocks on the exporter, so off the runtime's
        // worker.
        let _ = tokio::task::spawn_blocking(move || pipeline.shutdown()).await;
    }
    match poisoned {
        Some(reason) => Err(StartError::Poisoned(reason)),
        None => served.map_err(StartError::Serve),
    }
}

/// gRPC server reflection, both versions generic tools ask for (`grpcurl list` tries v1, then
/// v1alpha), describing the queue service and the health service.
fn reflection_services() -> Result<
    (
        tonic_reflection::server::v1::ServerReflectionServer<impl tonic_reflection::server::v1::ServerReflection>,
        tonic_reflection::server::v1alpha::ServerReflectionServer<
            impl tonic_reflection::server::v1alpha::ServerReflection,
        >,
    ),
    StartError,
> {
    let builder = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(crate::proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let v1 = builder().build_v1().map_err(StartError::Reflection)?;
    let v1alpha = builder().build_v1alpha().map_err(StartError::Reflection)?;
    Ok((v1, v1alpha))
}

/// Writes `ready` to `path` in one step (a sibling written, then renamed over it), so a reader
/// never sees half a file.
fn write_ready_file(path: &std::path::Path, ready: &serde_json::Value) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let temporary = path.with_file_name(name);
    std::fs::write(&temporary, format!("{ready}\n"))?;
    std::fs::rename(&temporary, path)
}

fn enabled(on: bool) -> &'static str {
    if on { "enabled" } else { "disabled" }
}

/// Starts the committer, which opens storage (replaying the log into a fresh state) on its own
/// thread before it serves commands.
fn open_storage(
    boot: &Config,
    live: &LiveConfig,
    clock: Arc<dyn Clock>,
    observe: Option<sepp_engine::Observe>,
) -> Result<(CommitterHandle, sepp_engine::Closed), StartError> {
    let clustered = boot.cluster.node_id.is_some();
    let settings = CommitterSettings {
        command_queue_capacity: boot.storage.command_queue_capacity,
        sweep_interval_ms: boot.storage.sweep_interval_ms,
        relocations_per_cycle: CommitterSettings::RELOCATIONS_PER_CYCLE,
        clock,
        observe,
        follows: clustered,
    };
    let boot = boot.clone();
    let policy = live.get().policy.clone();
    if clustered {
        // A cluster node's state comes from Raft (`cluster`), once it leads.
        let empty = State::new(policy, storage_rules(&boot));
        return sepp_engine::spawn(
            move || Ok((empty, Box::new(sepp_engine::NotLeading) as Box<dyn sepp_log::Log>)),
            settings,
        );
    }
    if crate::cluster::data_dir(&boot.server.db_path).is_dir() {
        return Err(StartError::ClusterData { path: boot.server.db_path.clone() });
    }
    sepp_engine::spawn(move || recover(&boot, policy), settings)
}

fn storage_rules(boot: &Config) -> StorageRules {
    StorageRules {
        dead_letter_retention_ms: boot.storage.dead_letter_retention_ms,
        sweep_limit: boot.storage.sweep_limit as usize,
    }
}

/// Replays the data directory into a fresh state and reports what it found.
fn recover(boot: &Config, policy: Arc<sepp_core::Policy>) -> Result<(State, Box<dyn sepp_log::Log>), StartError> {
    tracing::info!("opening storage...");
    let started = Instant::now();
    let storage = &boot.storage;
    let mut state = State::new(policy, storage_rules(boot));
    let persist_mode = storage.persist_mode;
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
        persist_mode = persist_mode.name(),
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
    let source = reload.source;
    let on_change = move || {
        let attempt = || {
            let candidate = match sepp_config::load(&source) {
                Ok(loaded) => loaded.config,
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
            // Sent from this one watcher thread, in order: a later reload's policy can never reach
            // the committer before an earlier one's.
            let _ = committer.send_blocking(Command::SetPolicy(published.policy.clone()));
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
