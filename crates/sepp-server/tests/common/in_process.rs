//! A real server run in this test process (`server::run` on port 0 with a temporary data
//! directory) on a clock the test moves, for rules that depend on time: the test says when a
//! window or lease has passed instead of waiting for the machine to get there.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use sepp_core::TimeMs;
use sepp_engine::Clock;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::{QueueServiceClient, Ready, STARTUP_TIMEOUT, eventually, render_config, reserves_waiting, wait_parked};

/// A clock that stands still until the test moves it.
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn at(now_ms: TimeMs) -> Arc<ManualClock> {
        Arc::new(ManualClock(AtomicI64::new(now_ms)))
    }

    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> TimeMs {
        self.0.load(Ordering::SeqCst)
    }
}

/// A server running in this process until [`InProcessServer::stop`].
pub struct InProcessServer {
    addr: String,
    ready: Ready,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), sepp_server::server::StartError>>>,
}

impl InProcessServer {
    /// Starts a server on `dir` with the harness's base configuration plus `toml_extra`, on
    /// `clock`.
    pub async fn start(dir: &Path, toml_extra: &str, clock: Arc<dyn Clock>) -> InProcessServer {
        let text = render_config(dir, toml_extra);
        let config = sepp_config::load_str(&text, &[]).expect("a valid test config");
        let listener = sepp_server::server::bind(&config).await.expect("bind");
        let addr = format!("http://{}", listener.local_addr().expect("bound"));
        let (stop, stopped) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = stopped.await;
        };
        let ready_path = dir.join("sepp.ready.json");
        let _ = std::fs::remove_file(&ready_path);
        let task =
            tokio::spawn(sepp_server::server::run(config, listener, None, Some(ready_path.clone()), clock, shutdown));
        let ready = eventually("the ready file", STARTUP_TIMEOUT, || async {
            std::fs::read_to_string(&ready_path).ok().map(|text| Ready::parse(&text))
        })
        .await;
        InProcessServer { addr, ready, stop: Some(stop), task: Some(task) }
    }

    /// Waits until `parked` reserves wait for a job at once (see [`super::TestServer::wait_parked`];
    /// the server must run with [`super::WATCH_PARKED`]), and until the committer has taken
    /// them. The gauge counts a reserve as soon as it is in the committer's queue, before the
    /// committer reads the clock for its deadline: a test that moved the clock then could move
    /// the deadline with it (a wait of 300 ms parked at 299 ends at 599). One more call answered
    /// by the committer, which takes commands in order, returns after it has parked them.
    pub async fn wait_parked(&self, parked: u64) {
        let port = self.ready.prometheus.expect("the Prometheus endpoint is on").port();
        wait_parked(port, parked).await;
        let barrier = super::unique("wait-parked-barrier");
        // Any answer will do (even a refusal of the queue, which the committer gives too).
        let _ = self.client().await.reserve(super::reserve(&[&barrier], 30_000)).await;
    }

    /// The `sepp_reserve_waiting` gauge now.
    pub async fn reserves_waiting(&self) -> u64 {
        reserves_waiting(self.ready.prometheus.expect("the Prometheus endpoint is on").port()).await
    }

    /// The admin listener's base URL (the server must run with `[admin] enabled = true` on port 0).
    pub fn admin_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ready.admin.expect("the admin listener is on").port())
    }

    /// The queue service's address (`http://127.0.0.1:<port>`).
    pub fn addr(&self) -> String {
        self.addr.clone()
    }

    pub async fn client(&self) -> QueueServiceClient<tonic::transport::Channel> {
        QueueServiceClient::connect(self.addr.clone()).await.expect("connect")
    }

    /// Stops gracefully and waits until storage is closed.
    pub async fn stop(mut self) {
        let _ = self.stop.take().expect("running").send(());
        self.task.take().expect("running").await.expect("the server task").expect("a clean stop");
    }
}
