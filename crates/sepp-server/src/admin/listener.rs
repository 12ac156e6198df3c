//! Starting and stopping the admin listener: bind, optional TLS (rustls with ring, ALPN `h2`
//! and `http/1.1`), the stats hub, serving each connection with HTTP/1.1 or HTTP/2, and a
//! graceful stop with a 10 s cap during which SSE streams end at once.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tonic::codegen::Service as _;

use crate::admin::config_file::ConfigFile;
use crate::admin::events::{self, EVENT_BUFFER};
use crate::admin::hosts::Connection;
use crate::admin::stats::{self, StatsHub};
use crate::admin::{AdminSetup, AdminShared, AdminState, access::Sessions, routes};

/// How long open connections may take to finish once the server stops.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The connection bounds of the admin listener (`[admin]`).
#[derive(Clone, Copy)]
struct Bounds {
    handshake: Duration,
    idle: Duration,
}

/// Why the admin listener could not start.
#[derive(Debug, thiserror::Error)]
pub enum AdminStartError {
    #[error("could not bind the admin listener {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("could not read admin TLS file {path}: {source}")]
    TlsFile { path: String, source: std::io::Error },
    #[error("invalid admin TLS certificate or key: {0}")]
    Tls(String),
    #[error("the committer stopped before the admin listener started")]
    Stopped,
}

/// A running admin listener.
pub struct RunningAdmin {
    pub addr: SocketAddr,
    stopping: watch::Sender<bool>,
    serving: JoinHandle<()>,
}

impl RunningAdmin {
    /// Stops accepting, ends the SSE streams and the stats hub, and waits (at most 10 s) for the
    /// open connections to finish.
    pub async fn stop(self) {
        let _ = self.stopping.send(true);
        let _ = self.serving.await;
    }
}

fn read_file(path: &Path) -> Result<Vec<u8>, AdminStartError> {
    std::fs::read(path).map_err(|source| AdminStartError::TlsFile { path: path.display().to_string(), source })
}

/// The TLS acceptor for the configured certificate and key.
fn tls_acceptor(cert_path: &Path, key_path: &Path) -> Result<TlsAcceptor, AdminStartError> {
    let invalid = |error: &dyn std::fmt::Display| AdminStartError::Tls(error.to_string());
    let certs = CertificateDer::pem_slice_iter(&read_file(cert_path)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| invalid(&error))?;
    if certs.is_empty() {
        return Err(AdminStartError::Tls(format!("{} holds no certificate", cert_path.display())));
    }
    let key = PrivateKeyDer::from_pem_slice(&read_file(key_path)?).map_err(|error| invalid(&error))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| invalid(&error))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|error| invalid(&error))?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Starts the admin listener when `admin.enabled`; `None` when it is off.
pub async fn start(setup: AdminSetup) -> Result<Option<RunningAdmin>, AdminStartError> {
    let boot = &setup.live.boot;
    if !boot.admin.enabled {
        return Ok(None);
    }
    let tls = match (&boot.admin.tls_cert_path, &boot.admin.tls_key_path) {
        (Some(cert), Some(key)) => Some(tls_acceptor(cert, key)?),
        _ => None,
    };
    let bind = boot.admin.listen_addr;
    let listener = crate::net::bind(bind).await.map_err(|source| AdminStartError::Bind { addr: bind, source })?;
    let addr = listener.local_addr().map_err(|source| AdminStartError::Bind { addr: bind, source })?;
    let acceptor = crate::net::Acceptor::new(listener, crate::net::Listener::Admin, boot.admin.max_connections);
    let bounds = Bounds {
        handshake: Duration::from_millis(boot.admin.handshake_timeout_ms),
        idle: Duration::from_millis(boot.admin.idle_timeout_ms),
    };

    let hub = Arc::new(StatsHub::new(setup.snapshots.clone()));
    let (events, _) = broadcast::channel(EVENT_BUFFER);
    let (stopping, stopping_receiver) = watch::channel(false);
    stats::start_hub(
        hub.clone(),
        setup.live.clone(),
        setup.committer.clone(),
        events.clone(),
        setup.clock.clone(),
        stopping_receiver.clone(),
    );
    tokio::spawn(events::forward_reloads(setup.live.subscribe_reloads(), events.clone(), stopping_receiver.clone()));

    let config_path = setup.config_path.unwrap_or_else(|| "./sepp.toml".into());
    let state = AdminState::new(AdminShared {
        committer: setup.committer,
        started_at_ms: setup.clock.now_ms(),
        boot_loopback: bind.ip().is_loopback(),
        admin_tls: tls.is_some(),
        sessions: Sessions::default(),
        stats: hub,
        events,
        config: ConfigFile::new(config_path, setup.watching),
        workers: setup.workers,
        clock: setup.clock.clone(),
        stopping: stopping_receiver.clone(),
        live: setup.live.clone(),
        metrics: setup.metrics.clone(),
        cluster: setup.cluster.clone(),
        throttle: setup.throttle.clone(),
    });
    log_listening(&state, addr, bind);
    let router = routes::router(state);
    let serving = tokio::spawn(serve(acceptor, bounds, tls, router, stopping_receiver));
    Ok(Some(RunningAdmin { addr, stopping, serving }))
}

/// The startup lines of the admin listener, with the warnings that go around them.
fn log_listening(state: &AdminState, addr: SocketAddr, bind: SocketAddr) {
    let keys = state.live.boot.admin.keys.as_deref().unwrap_or_default();
    if keys.iter().any(|key| key.key == "admin") {
        tracing::warn!(
            "an admin key is the literal `admin` (the demo credential); replace it before exposing the admin UI"
        );
    }
    let scheme = if state.admin_tls { "https" } else { "http" };
    let tls = if state.admin_tls { "enabled" } else { "disabled" };
    if addr.ip().is_unspecified() {
        tracing::info!(%addr, tls, "admin UI listening at {scheme}://localhost:{}", addr.port());
    } else {
        tracing::info!(tls, "admin UI listening at {scheme}://{addr}");
    }
    let allowed_hosts = &state.live.boot.admin.allowed_hosts;
    if !bind.ip().is_loopback() {
        let own = if addr.ip().is_unspecified() { "the address a client reaches" } else { "its address" };
        tracing::info!(
            allowed_hosts = ?allowed_hosts,
            "the admin listener answers only requests whose Host is {own}, localhost, a loopback address \
             (with port {}) or one of admin.allowed_hosts; list the names operators browse to there",
            addr.port()
        );
        if allowed_hosts.is_empty() {
            tracing::warn!(
                "admin.allowed_hosts is empty on a non-loopback admin listener: browsing to it by a DNS name \
                 (or through a proxy or a port mapping) gets 421 Misdirected Request until the name is listed"
            );
        }
    }
    if !keys.is_empty() && !state.admin_tls && !bind.ip().is_loopback() {
        tracing::warn!("admin keys are used without TLS on a non-loopback address: they travel in plain text");
    }
}

/// Accepts connections (within `admin.max_connections` and the descriptor budget, see `net`)
/// until `stopping`, then lets the open ones finish for at most 10 s. A connection is closed
/// when its TLS handshake or a request's headers take longer than `admin.handshake_timeout_ms`,
/// and when it has carried no byte either way for `admin.idle_timeout_ms`.
async fn serve(
    mut acceptor: crate::net::Acceptor,
    bounds: Bounds,
    tls: Option<TlsAcceptor>,
    router: axum::Router,
    mut stopping: watch::Receiver<bool>,
) {
    let graceful = GracefulShutdown::new();
    loop {
        let conn = tokio::select! {
            conn = acceptor.accept() => conn,
            _ = stopping.wait_for(|stopping| *stopping) => break,
        };
        let (Ok(peer), Ok(local)) = (conn.peer_addr(), conn.local_addr()) else { continue };
        // Every request carries the ends of its connection: the Host check needs the address
        // the client reached, the authentication throttle the client's.
        let connection = Connection { peer, local };
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(connection);
            router.clone().call(request)
        });
        let watcher = graceful.watcher();
        let tls = tls.clone();
        tokio::spawn(async move {
            let activity = conn.activity();
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder.http1().timer(TokioTimer::new()).header_read_timeout(bounds.handshake);
            builder
                .http2()
                .timer(TokioTimer::new())
                .keep_alive_interval(Some(Duration::from_secs(30)))
                .keep_alive_timeout(Duration::from_secs(10));
            let served = async {
                match tls {
                    None => {
                        let connection = builder.serve_connection_with_upgrades(TokioIo::new(conn), service);
                        let _ = watcher.watch(connection.into_owned()).await;
                    }
                    Some(acceptor) => {
                        let Ok(handshake) = tokio::time::timeout(bounds.handshake, acceptor.accept(conn)).await else {
                            crate::net::handshake_timed_out(crate::net::Listener::Admin);
                            return;
                        };
                        let Ok(stream) = handshake else { return };
                        let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                        let _ = watcher.watch(connection.into_owned()).await;
                    }
                }
            };
            // Dropping the connection closes it.
            tokio::select! {
                () = served => {}
                () = activity.idle(bounds.idle) => {}
            }
        });
    }
    drop(acceptor);
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown()).await.is_err() {
        tracing::warn!(
            grace_s = SHUTDOWN_GRACE.as_secs(),
            "admin connections still open after the shutdown grace period; closing them"
        );
    }
}
