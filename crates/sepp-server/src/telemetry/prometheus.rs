//! The Prometheus scrape endpoint: `/metrics` (any method) renders the text exposition of the
//! meter provider's Prometheus reader; every other path is a 404 with `try /metrics`. No auth.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use prometheus::{Encoder, TextEncoder};
use tokio::sync::watch;

/// The running endpoint.
pub struct PrometheusEndpoint {
    pub addr: SocketAddr,
    stopping: watch::Sender<bool>,
    serving: tokio::task::JoinHandle<()>,
}

/// How long a scrape connection may take to send a request's headers, and stay silent.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// Binds `addr` and serves the registry until [`PrometheusEndpoint::stop`], with at most
/// `max_connections` connections open.
pub async fn start(
    addr: SocketAddr,
    max_connections: u64,
    registry: prometheus::Registry,
) -> std::io::Result<PrometheusEndpoint> {
    let listener = crate::net::bind(addr).await?;
    let bound = listener.local_addr()?;
    let acceptor = crate::net::Acceptor::new(listener, crate::net::Listener::Prometheus, max_connections);
    tracing::info!(addr = %bound, "prometheus metrics endpoint listening");
    let router = Router::new()
        .route("/metrics", any(move || render(registry.clone())))
        .fallback(|| async { (StatusCode::NOT_FOUND, "try /metrics\n") });
    let (stopping, mut stopped) = watch::channel(false);
    let serving = tokio::spawn(serve(acceptor, router, async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    }));
    Ok(PrometheusEndpoint { addr: bound, stopping, serving })
}

/// Serves each connection with HTTP/1.1 or HTTP/2 until `shutdown`; a connection whose request
/// headers take 10 s, or that stays silent for 120 s, is closed.
async fn serve(mut acceptor: crate::net::Acceptor, router: Router, shutdown: impl std::future::Future<Output = ()>) {
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let conn = tokio::select! {
            conn = acceptor.accept() => conn,
            () = &mut shutdown => break,
        };
        let service = TowerToHyperService::new(router.clone());
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let activity = conn.activity();
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder.http1().timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
            let connection = builder.serve_connection(TokioIo::new(conn), service);
            tokio::select! {
                _ = watcher.watch(connection.into_owned()) => {}
                () = activity.idle(IDLE_TIMEOUT) => {}
            }
        });
    }
    drop(acceptor);
    let _ = tokio::time::timeout(Duration::from_secs(2), graceful.shutdown()).await;
}

impl PrometheusEndpoint {
    pub async fn stop(self) {
        self.stopping.send_replace(true);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), self.serving).await;
    }
}

async fn render(registry: prometheus::Registry) -> Response {
    let encoder = TextEncoder::new();
    let mut body = Vec::new();
    match encoder.encode(&registry.gather(), &mut body) {
        Ok(()) => ([(header::CONTENT_TYPE, encoder.format_type().to_owned())], body).into_response(),
        Err(error) => {
            tracing::error!(%error, "rendering metrics failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "rendering metrics failed\n").into_response()
        }
    }
}
