//! The integration harness: starts the real `sepp` server binary on port 0 with a temporary
//! data directory, learns its addresses from the ready file it writes once its listeners are
//! bound (`--ready-file`), and kills it on drop. Nothing here sleeps to wait for the server: it
//! polls for that file, and fails at once if the server exits first.
//!
//! The binary is `$SEPP_BIN` when set, else `$CARGO_TARGET_DIR/debug/sepp`, else the `sepp`
//! next to this test executable's `deps/` directory. Build it with `cargo build -p sepp-server`.

#![allow(dead_code)]

use std::future::Future;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use sepp_client::client::SeppClient;
use tempfile::TempDir;

/// How long the server may take to write its ready file.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `eventually` keeps checking a condition before the test fails.
const EVENTUALLY_TIMEOUT: Duration = Duration::from_secs(30);

/// A running server; killed when dropped.
pub struct Server {
    child: Child,
    port: u16,
    /// The Prometheus endpoint's port, when it is on.
    prometheus_port: Option<u16>,
    logs: Arc<Mutex<Vec<String>>>,
    _dir: TempDir,
}

impl Server {
    /// A server with the default test configuration (dead letters kept for a day).
    pub fn start() -> Self {
        Self::start_with("", "")
    }

    /// A server whose configuration adds `server_extra` to `[server]` and appends `tail`
    /// (more sections, such as `[auth]` or `[[queues]]`).
    pub fn start_with(server_extra: &str, tail: &str) -> Self {
        let dir = tempfile::tempdir().expect("create a temporary directory");
        let data = dir.path().join("data");
        let config = dir.path().join("sepp.toml");
        let text = format!(
            "[server]\nlisten_addr = \"127.0.0.1:0\"\ndb_path = {data:?}\n{server_extra}\n\n\
             [admin]\nenabled = false\n\n\
             [storage]\npersist_mode = \"buffer\"\ndead_letter_retention_ms = 86400000\n\n{tail}\n"
        );
        std::fs::write(&config, text).expect("write the server configuration");
        let mut command = Command::new(server_binary());
        for (name, _) in std::env::vars_os() {
            if name.to_string_lossy().to_ascii_uppercase().starts_with("SEPP_") {
                command.env_remove(name);
            }
        }
        let ready_file = dir.path().join("sepp.ready.json");
        let mut child = command
            .arg("--config")
            .arg(&config)
            .arg("--ready-file")
            .arg(&ready_file)
            .env("RUST_LOG", "sepp=info")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|error| panic!("start {}: {error}", server_binary().display()));
        let stdout = child.stdout.take().expect("piped stdout");
        let logs = Arc::new(Mutex::new(Vec::new()));
        let (closed_tx, closed_rx) = mpsc::channel::<()>();
        let drained = logs.clone();
        // Keep draining stdout for the server's whole life, so it never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                drained.lock().unwrap().push(strip_ansi(&line));
            }
            drop(closed_tx);
        });
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let ready = loop {
            // Written in one step (a rename): a file that exists is whole.
            if let Ok(text) = std::fs::read_to_string(&ready_file) {
                break serde_json::from_str::<serde_json::Value>(&text).expect("the ready file is JSON");
            }
            // Ten milliseconds between looks, or at once when the server's stdout closes.
            let exited =
                matches!(closed_rx.recv_timeout(Duration::from_millis(10)), Err(mpsc::RecvTimeoutError::Disconnected));
            if exited || Instant::now() >= deadline {
                let _ = child.kill();
                panic!("the server did not start:\n{}", logs.lock().unwrap().join("\n"));
            }
        };
        let port_of = |name: &str| {
            ready[name].as_str().map(|addr| addr.parse::<std::net::SocketAddr>().expect("an address").port())
        };
        let port = port_of("queue_addr").expect("the queue listener's address");
        let prometheus_port = port_of("prometheus_addr");
        Self { child, port, prometheus_port, logs, _dir: dir }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// `127.0.0.1:<port>`, without a scheme.
    pub fn host_port(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A connected client with the defaults.
    pub async fn client(&self) -> SeppClient {
        SeppClient::connect(self.url()).await.expect("connect to the test server")
    }

    /// What the server printed so far.
    pub fn logs(&self) -> String {
        self.logs.lock().unwrap().join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn server_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("SEPP_BIN").filter(|path| !path.is_empty()) {
        return PathBuf::from(path);
    }
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|dir| !dir.is_empty()) {
        let path = PathBuf::from(dir).join("debug").join("sepp");
        if path.exists() {
            return path;
        }
    }
    // target/debug/deps/<this test> -> target/debug/sepp
    let exe = std::env::current_exe().expect("the test executable's path");
    let path = exe.parent().and_then(|deps| deps.parent()).map(|debug| debug.join("sepp"));
    match path {
        Some(path) if path.exists() => path,
        _ => panic!("no sepp binary: run `cargo build -p sepp-server` first, or set SEPP_BIN"),
    }
}

pub use sepp_logline::strip_ansi;

/// A queue name no other test uses.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!("{prefix}-{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

/// Checks `condition` until it holds (failing the test after 30 s). For conditions only the
/// server can tell, such as "this job was dead-lettered"; each check is a call, not a guess
/// at how long something takes.
pub async fn eventually<T, F, Fut>(what: &str, mut condition: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let started = Instant::now();
    loop {
        if let Some(value) = condition().await {
            return value;
        }
        assert!(started.elapsed() < EVENTUALLY_TIMEOUT, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits for a signal sent from inside a handler, failing the test after 30 s.
pub async fn signalled<T>(what: &str, receiver: &mut tokio::sync::mpsc::UnboundedReceiver<T>) -> T {
    match tokio::time::timeout(EVENTUALLY_TIMEOUT, receiver.recv()).await {
        Ok(Some(value)) => value,
        Ok(None) => panic!("channel closed while waiting for {what}"),
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// The server's count of successful calls of `method`, read from its Prometheus endpoint (the
/// server must have been started with it on, as `[metrics] prometheus_enabled = true`).
pub async fn calls(server: &Server, method: &str) -> u64 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let port = server.prometheus_port.expect("the Prometheus endpoint is on");
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(b"GET /metrics HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").await.unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    let label = format!("method=\"{method}\"");
    text.lines()
        .filter(|line| {
            line.starts_with("sepp_requests_total{") && line.contains(&label) && line.contains("outcome=\"ok\"")
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|value| value as u64)
        .sum()
}
