//! The Prometheus scrape endpoint: `/metrics` (any method) renders the text exposition of the
//! meter provider's Prometheus reader; every other path is a 404 with `try /metrics`. No auth.

use std::net::SocketAddr;

use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use prometheus::{Encoder, TextEncoder};
use tokio::net::TcpListener;
use tokio::sync::watch;

/// The running endpoint.
pub struct PrometheusEndpoint {
    pub addr: SocketAddr,
    stopping: watch::Sender<bool>,
    serving: tokio::task::JoinHandle<()>,
}

/// Binds `addr` and serves the registry until [`PrometheusEndpoint::stop`].
pub async fn start(addr: SocketAddr, registry: prometheus::Registry) -> std::io::Result<PrometheusEndpoint> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tracing::info!(addr = %bound, "prometheus metrics endpoint listening");
    let router = Router::new()
        .route("/metrics", any(move || render(registry.clone())))
        .fallback(|| async { (StatusCode::NOT_FOUND, "try /metrics\n") });
    let (stopping, mut stopped) = watch::channel(false);
    let serving = tokio::spawn(async move {
        let shutdown = async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        };
        if let Err(error) = axum::serve(listener, router).with_graceful_shutdown(shutdown).await {
            tracing::warn!(%error, "the prometheus metrics endpoint failed");
        }
    });
    Ok(PrometheusEndpoint { addr: bound, stopping, serving })
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
