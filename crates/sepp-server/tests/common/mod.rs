//! The end-to-end harness: starts the real `sepp` binary as a child process on port 0 with a
//! temporary data directory, and waits on signals rather than on the clock: the ready file the
//! server writes once its listeners are bound (`--ready-file`), what it prints, and its
//! `sepp_reserve_waiting` gauge.
//!
//! The binary is `$SEPP_BIN` when set (to run the same tests against another build, such as
//! the published 0.1.1 release), else the one Cargo built for this crate.

#![allow(dead_code)]

pub mod cluster;
pub mod crash_load;
pub mod in_process;
pub mod netns;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use sepp_server::proto::v1 as pb;
use tempfile::TempDir;
use tonic::transport::Channel;

pub use pb::queue_service_client::QueueServiceClient;

/// How long a server may take to write its ready file (or print `queue server listening`).
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);

/// The binary under test.
pub fn sepp_bin() -> PathBuf {
    match std::env::var_os("SEPP_BIN") {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_sepp")),
    }
}

/// Whether the tests run against another build than this workspace's (normally the published
/// 0.1.1 release, through `$SEPP_BIN`). Only used where docs/operations.md#what-differs says this project
/// deliberately differs from 0.1.
pub fn is_reference() -> bool {
    let own = PathBuf::from(env!("CARGO_BIN_EXE_sepp"));
    let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    canonical(&sepp_bin()) != canonical(&own)
}

/// The version the binary under test reports: this crate's, or 0.1.1 for the published release.
pub fn server_version() -> &'static str {
    if is_reference() { "0.1.1" } else { env!("CARGO_PKG_VERSION") }
}

/// Configuration for a server whose tests wait for reserves to park
/// ([`TestServer::wait_parked`]): its Prometheus endpoint, on a port of its own, serves the
/// `sepp_reserve_waiting` gauge. Add it to the test's own TOML with [`watching_parked`].
pub const WATCH_PARKED: &str = "[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = \"127.0.0.1:0\"\n";

/// `toml_extra` with [`WATCH_PARKED`].
pub fn watching_parked(toml_extra: &str) -> String {
    format!("{toml_extra}\n{WATCH_PARKED}")
}

/// What the server wrote to its ready file: the addresses it bound.
#[derive(Clone, Debug)]
pub struct Ready {
    pub pid: u32,
    pub queue: std::net::SocketAddr,
    pub admin: Option<std::net::SocketAddr>,
    pub admin_tls: bool,
    pub prometheus: Option<std::net::SocketAddr>,
}

impl Ready {
    /// Parses the ready file's JSON.
    pub fn parse(text: &str) -> Ready {
        let json: serde_json::Value =
            serde_json::from_str(text).unwrap_or_else(|error| panic!("the ready file is not JSON: {error}\n{text}"));
        let addr = |name: &str| {
            json[name].as_str().map(|addr| addr.parse().unwrap_or_else(|_| panic!("{name} is no address: {text}")))
        };
        Ready {
            pid: json["pid"].as_u64().unwrap_or_else(|| panic!("no pid: {text}")) as u32,
            queue: addr("queue_addr").unwrap_or_else(|| panic!("no queue_addr: {text}")),
            admin: addr("admin_addr"),
            admin_tls: json["admin_tls"].as_bool().unwrap_or_else(|| panic!("no admin_tls: {text}")),
            prometheus: addr("prometheus_addr"),
        }
    }
}

/// A `Command` for the binary under test with a clean environment: no `SEPP_*` variable of the
/// test process leaks into the server's configuration.
pub fn sepp_command() -> Command {
    sepp_command_in(None)
}

/// Like [`sepp_command`], run in the network namespace `netns` when given (`ip netns exec`).
pub fn sepp_command_in(netns: Option<&str>) -> Command {
    let mut command = match netns {
        Some(netns) => {
            let mut command = Command::new("ip");
            command.args(["netns", "exec", netns]).arg(sepp_bin());
            command
        }
        None => Command::new(sepp_bin()),
    };
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().to_ascii_uppercase().starts_with("SEPP_") {
            command.env_remove(name);
        }
    }
    command.env("RUST_LOG", "sepp=info");
    command
}

/// A name no other test (or earlier run) uses: `<prefix>-<pid>-<counter>-<nanos>`.
/// Returns once the wall clock is past the millisecond it was in when called. A server on this
/// machine reads the same clock, so whatever it stamped before this call has an earlier
/// millisecond than anything it stamps after.
pub async fn next_millisecond() {
    let now_ms =
        || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0);
    let start = now_ms();
    while now_ms() == start {
        tokio::task::yield_now().await;
    }
}

pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}-{}-{}-{nanos}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed))
}

pub use sepp_logline::{loopback_port, strip_ansi};

/// Every line a child printed on one stream, with a condition variable to wait for more.
#[derive(Default)]
pub struct Lines {
    state: Mutex<LinesState>,
    changed: Condvar,
}

#[derive(Default)]
struct LinesState {
    lines: Vec<String>,
    closed: bool,
    /// Bytes read from the stream, as written (colour codes included).
    bytes: usize,
    /// Lines that held an ANSI escape before it was removed.
    coloured: usize,
}

impl Lines {
    /// Starts a thread that drains `stream` to its end, keeping each line (ANSI codes removed),
    /// so the child never blocks on a full pipe.
    pub fn drain(stream: impl Read + Send + 'static) -> Arc<Lines> {
        let lines = Arc::new(Lines::default());
        let sink = lines.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stream);
            let mut buffer = Vec::new();
            loop {
                buffer.clear();
                match reader.read_until(b'\n', &mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(read) => {
                        let line = strip_ansi(String::from_utf8_lossy(&buffer).trim_end_matches(['\n', '\r']));
                        let mut state = sink.state.lock().unwrap();
                        state.bytes += read;
                        state.coloured += usize::from(buffer.contains(&0x1b));
                        state.lines.push(line);
                        drop(state);
                        sink.changed.notify_all();
                    }
                }
            }
            sink.state.lock().unwrap().closed = true;
            sink.changed.notify_all();
        });
        lines
    }

    pub fn snapshot(&self) -> Vec<String> {
        self.state.lock().unwrap().lines.clone()
    }

    pub fn text(&self) -> String {
        self.snapshot().join("\n")
    }

    /// Bytes the stream carried so far, colour codes included.
    pub fn bytes(&self) -> usize {
        self.state.lock().unwrap().bytes
    }

    /// Lines that carried ANSI colour codes.
    pub fn coloured(&self) -> usize {
        self.state.lock().unwrap().coloured
    }

    pub fn contains(&self, needle: &str) -> bool {
        self.state.lock().unwrap().lines.iter().any(|line| line.contains(needle))
    }

    /// How many lines arrived so far: a mark for [`Lines::wait_for_since`].
    pub fn len(&self) -> usize {
        self.state.lock().unwrap().lines.len()
    }

    pub fn count(&self, needle: &str) -> usize {
        self.state.lock().unwrap().lines.iter().filter(|line| line.contains(needle)).count()
    }

    /// Blocks until a line containing `needle` arrives (returning it), the stream ends, or
    /// `timeout` passes.
    pub fn wait_for(&self, needle: &str, timeout: Duration) -> Option<String> {
        self.wait_for_since(0, needle, timeout)
    }

    /// Like [`Lines::wait_for`], looking only at lines after the first `mark` ones.
    pub fn wait_for_since(&self, mark: usize, needle: &str, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        let mut state = self.state.lock().unwrap();
        loop {
            if let Some(line) = state.lines.iter().skip(mark).find(|line| line.contains(needle)) {
                return Some(line.clone());
            }
            let now = Instant::now();
            if state.closed || now >= deadline {
                return None;
            }
            state = self.changed.wait_timeout(state, deadline - now).unwrap().0;
        }
    }

    /// Whether the stream ended (the child closed it, normally by exiting).
    pub fn is_closed(&self) -> bool {
        self.state.lock().unwrap().closed
    }

    /// Blocks until the stream ends (the child closed it, normally by exiting).
    pub fn wait_closed(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut state = self.state.lock().unwrap();
        while !state.closed {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            state = self.changed.wait_timeout(state, deadline - now).unwrap().0;
        }
        true
    }
}

/// Renders the harness's base configuration merged with `extra` (a TOML fragment whose tables
/// may repeat `[server]`, `[admin]`, ...; `{dir}` stands for the temporary directory).
pub fn render_config(dir: &Path, extra: &str) -> String {
    let extra = extra.replace("{dir}", &dir.display().to_string());
    let base = format!(
        "[server]\nlisten_addr = \"127.0.0.1:0\"\ndb_path = {db:?}\n\n[admin]\nenabled = false\n",
        db = dir.join("db").display().to_string()
    );
    let mut merged: toml::Table = base.parse().expect("base config is TOML");
    let extra: toml::Table = extra.parse().unwrap_or_else(|error| panic!("test config is not TOML: {error}\n{extra}"));
    merge(&mut merged, extra);
    toml::to_string(&merged).expect("config serializes")
}

fn merge(into: &mut toml::Table, from: toml::Table) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(toml::Value::Table(existing)), toml::Value::Table(table)) => merge(existing, table),
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}

/// Replaces `path` with `contents` in one step (write a sibling, then rename), so a watcher
/// never reads a half-written file.
pub fn replace_file(path: &Path, contents: &str) {
    let temporary = path.with_extension("toml.tmp");
    std::fs::write(&temporary, contents).expect("write the new config");
    std::fs::rename(&temporary, path).expect("rename the new config into place");
}

/// A running `sepp` child process.
pub struct TestServer {
    dir: TempDir,
    config_path: PathBuf,
    child: Option<Child>,
    stdout: Arc<Lines>,
    stderr: Arc<Lines>,
    port: u16,
    /// What the running server wrote to its ready file (`None` for a server without the
    /// option: the published 0.1.1).
    ready: Option<Ready>,
    env: Vec<(String, String)>,
    /// The largest file the server may write (`RLIMIT_FSIZE`), when limited.
    file_size_limit: Option<u64>,
    /// The most descriptors the server may hold (`RLIMIT_NOFILE`, soft and hard), when limited.
    descriptor_limit: Option<u64>,
    /// The network namespace the server runs in, and the address it serves at there (the
    /// loopback address otherwise).
    netns: Option<String>,
    host: String,
}

impl TestServer {
    /// Starts a server with the base configuration plus `toml_extra`.
    pub fn start(toml_extra: &str) -> TestServer {
        TestServer::start_in(TempDir::new().expect("temporary directory"), toml_extra)
    }

    /// Like [`TestServer::start`], in a directory the test prepared (e.g. with TLS files).
    pub fn start_in(dir: TempDir, toml_extra: &str) -> TestServer {
        let contents = render_config(dir.path(), toml_extra);
        TestServer::start_raw(dir, &contents, &[])
    }

    /// Like [`TestServer::start`], with extra environment variables for the server.
    pub fn start_with_env(toml_extra: &str, env: &[(&str, &str)]) -> TestServer {
        let dir = TempDir::new().expect("temporary directory");
        let contents = render_config(dir.path(), toml_extra);
        TestServer::start_raw(dir, &contents, env)
    }

    /// Starts a server whose config file holds exactly `contents`.
    pub fn start_raw(dir: TempDir, contents: &str, env: &[(&str, &str)]) -> TestServer {
        let mut server = TestServer::unstarted(dir, contents, env);
        server.spawn();
        server
    }

    /// Like [`TestServer::start`], in a process that may write no file larger than `bytes`
    /// (`RLIMIT_FSIZE`, as `ulimit -f` sets it): writes past it fail.
    pub fn start_with_file_size_limit(toml_extra: &str, bytes: u64) -> TestServer {
        let dir = TempDir::new().expect("temporary directory");
        let contents = render_config(dir.path(), toml_extra);
        let mut server = TestServer::unstarted(dir, &contents, &[]);
        server.file_size_limit = Some(bytes);
        server.spawn();
        server
    }

    /// Like [`TestServer::start`], in a process that may hold at most `descriptors` file
    /// descriptors (`RLIMIT_NOFILE`, soft and hard, as `prlimit --nofile=N:N` sets it).
    pub fn start_with_descriptor_limit(toml_extra: &str, descriptors: u64) -> TestServer {
        let dir = TempDir::new().expect("temporary directory");
        let contents = render_config(dir.path(), toml_extra);
        let mut server = TestServer::unstarted(dir, &contents, &[]);
        server.descriptor_limit = Some(descriptors);
        server.spawn();
        server
    }

    /// A server with its config file written, not started yet.
    fn unstarted(dir: TempDir, contents: &str, env: &[(&str, &str)]) -> TestServer {
        let config_path = dir.path().join("sepp.toml");
        std::fs::write(&config_path, contents).expect("write config");
        let env = env.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect();
        TestServer {
            dir,
            config_path,
            child: None,
            stdout: Arc::default(),
            stderr: Arc::default(),
            port: 0,
            ready: None,
            env,
            file_size_limit: None,
            descriptor_limit: None,
            netns: None,
            host: "127.0.0.1".into(),
        }
    }

    /// Like [`TestServer::start`], in the network namespace `netns`, where the configuration
    /// (`toml_extra`) makes it listen on `host`.
    pub fn start_in_netns(netns: &str, host: &str, toml_extra: &str) -> TestServer {
        let dir = TempDir::new().expect("temporary directory");
        let contents = render_config(dir.path(), toml_extra);
        let mut server = TestServer::unstarted(dir, &contents, &[]);
        server.netns = Some(netns.into());
        server.host = host.into();
        server.spawn();
        server
    }

    /// Starts later runs of this server without a file size limit.
    pub fn lift_file_size_limit(&mut self) {
        self.file_size_limit = None;
    }

    fn spawn(&mut self) {
        let mut command = sepp_command_in(self.netns.as_deref());
        if let Some(bytes) = self.file_size_limit {
            limit_file_size(&mut command, bytes);
        }
        if let Some(descriptors) = self.descriptor_limit {
            limit_descriptors(&mut command, descriptors);
        }
        let ready_path = self.dir.path().join("sepp.ready.json");
        // A server killed earlier left its file behind.
        let _ = std::fs::remove_file(&ready_path);
        command.arg("--config").arg(&self.config_path);
        if !is_reference() {
            command.arg("--ready-file").arg(&ready_path);
        }
        let mut child = command
            .current_dir(self.dir.path())
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", sepp_bin().display()));
        self.stdout = Lines::drain(child.stdout.take().expect("stdout piped"));
        self.stderr = Lines::drain(child.stderr.take().expect("stderr piped"));
        self.child = Some(child);
        if !is_reference() {
            let ready = self.wait_ready_file(&ready_path);
            self.port = ready.queue.port();
            self.ready = Some(ready);
            return;
        }
        // The published 0.1.1 writes no ready file: its listening line names the port.
        let Some(line) = self.stdout.wait_for("queue server listening", STARTUP_TIMEOUT) else {
            panic!(
                "the server did not log `queue server listening`\n--- stdout\n{}\n--- stderr\n{}",
                self.stdout.text(),
                self.stderr.text()
            );
        };
        let host = format!("{}:", self.host);
        let port = line.find(&host).and_then(|at| {
            line[at + host.len()..].chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
        });
        self.port = port.unwrap_or_else(|| panic!("no {host}<port> in {line:?}"));
    }

    /// Waits (polling, up to [`STARTUP_TIMEOUT`]) until the server has written its ready file,
    /// failing at once if it exits first.
    fn wait_ready_file(&self, path: &Path) -> Ready {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            // Written in one step (a rename), so a file that exists is whole.
            if let Ok(text) = std::fs::read_to_string(path) {
                return Ready::parse(&text);
            }
            assert!(
                !self.stdout.is_closed() && Instant::now() < deadline,
                "the server wrote no ready file\n--- stdout\n{}\n--- stderr\n{}",
                self.stdout.text(),
                self.stderr.text()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// What the server wrote to its ready file (not for the published 0.1.1, which writes none).
    pub fn ready(&self) -> &Ready {
        self.ready.as_ref().expect("a ready file (the server under test is not this workspace's)")
    }

    /// The Prometheus endpoint's port, from the ready file.
    pub fn prometheus_port(&self) -> u16 {
        self.ready().prometheus.expect("the Prometheus endpoint is on").port()
    }

    /// The admin listener's base URL (`http://127.0.0.1:<port>`, or https under TLS): from the
    /// ready file, or for the published 0.1.1 from its `admin UI listening` line (which names
    /// `localhost` when it is bound to every address).
    pub fn admin_url(&self) -> String {
        if let Some(ready) = &self.ready {
            let admin = ready.admin.expect("the admin listener is on");
            let scheme = if ready.admin_tls { "https" } else { "http" };
            return format!("{scheme}://127.0.0.1:{}", admin.port());
        }
        let Some(line) = self.stdout.wait_for("admin UI listening", STARTUP_TIMEOUT) else {
            panic!("the server did not log `admin UI listening`\n{}", self.stdout.text());
        };
        let scheme = if line.contains("https://") { "https" } else { "http" };
        let port = loopback_port(&line)
            .or_else(|| {
                let after = &line[line.find("localhost:")? + "localhost:".len()..];
                after.chars().take_while(char::is_ascii_digit).collect::<String>().parse().ok()
            })
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        format!("{scheme}://127.0.0.1:{port}")
    }

    pub fn addr(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn config_path(&self) -> &Path {
        &self.config_path
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("server running").id()
    }

    /// Rewrites the config file as the base configuration plus `toml_extra`.
    pub fn write_config(&self, toml_extra: &str) {
        replace_file(&self.config_path, &render_config(self.dir.path(), toml_extra));
    }

    /// Rewrites the config file with exactly `contents`.
    pub fn write_raw_config(&self, contents: &str) {
        replace_file(&self.config_path, contents);
    }

    pub async fn channel(&self) -> Channel {
        Channel::from_shared(self.addr()).expect("valid uri").connect().await.expect("connect to the server")
    }

    pub async fn raw_client(&self) -> QueueServiceClient<Channel> {
        QueueServiceClient::new(self.channel().await)
    }

    pub async fn sepp_rs_client(&self) -> sepp_rs::client::SeppClient {
        sepp_rs::client::SeppClient::connect(self.addr()).await.expect("sepp-rs connects")
    }

    pub fn stdout(&self) -> &Lines {
        &self.stdout
    }

    pub fn stderr(&self) -> &Lines {
        &self.stderr
    }

    pub fn logs(&self) -> String {
        self.stdout.text()
    }

    /// Waits (without blocking the async runtime) for a stdout line containing `needle`.
    pub async fn wait_for_log(&self, needle: &str, timeout: Duration) -> Option<String> {
        self.wait_for_log_since(0, needle, timeout).await
    }

    /// The number of stdout lines so far, to wait for lines printed after this point.
    pub fn log_mark(&self) -> usize {
        self.stdout.len()
    }

    /// Like [`TestServer::wait_for_log`], ignoring the first `mark` lines.
    pub async fn wait_for_log_since(&self, mark: usize, needle: &str, timeout: Duration) -> Option<String> {
        let lines = self.stdout.clone();
        let needle = needle.to_owned();
        tokio::task::spawn_blocking(move || lines.wait_for_since(mark, &needle, timeout)).await.expect("log waiter")
    }

    /// The server's `sepp_reserve_waiting` gauge now (the server runs with [`WATCH_PARKED`]).
    pub async fn reserves_waiting(&self) -> u64 {
        reserves_waiting(self.prometheus_port()).await
    }

    /// Waits until `parked` reserves wait for a job at once: the committer has each of them, so
    /// it parks them before any command sent after this returns (the server must run with
    /// [`WATCH_PARKED`]). The published 0.1.1 has no such gauge, so against it this can only
    /// give the reserves a moment.
    pub async fn wait_parked(&self, parked: u64) {
        if is_reference() {
            tokio::time::sleep(Duration::from_millis(200)).await;
            return;
        }
        wait_parked(self.prometheus_port(), parked).await;
    }

    /// Sends SIGTERM to the server (and nothing else).
    pub fn sigterm(&self) {
        let sent = Command::new("kill").arg("-TERM").arg(self.pid().to_string()).status().expect("run kill");
        assert!(sent.success(), "kill -TERM failed");
    }

    /// Sends SIGTERM and waits (bounded) for the process to exit.
    pub fn sigterm_and_wait(&mut self) -> ExitStatus {
        self.sigterm();
        self.wait_exit(Duration::from_secs(20))
    }

    /// Waits up to `timeout` for the process to exit (it is killed if it does not).
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let mut child = self.child.take().expect("server running");
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = child.try_wait().expect("wait for the server") {
                // The reader threads see end-of-file once the process is gone.
                self.stdout.wait_closed(Duration::from_secs(5));
                return status;
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the server did not exit within {timeout:?}\n{}", self.stdout.text());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Kills the server with SIGKILL (it dies wherever it is) and waits for it to be gone.
    pub fn sigkill_and_wait(&mut self) {
        let sent = Command::new("kill").arg("-KILL").arg(self.pid().to_string()).status().expect("run kill");
        assert!(sent.success(), "kill -KILL failed");
        self.wait_exit(Duration::from_secs(20));
    }

    /// Whether the server process runs (it was started and has not been stopped).
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// Stops the server gracefully and starts it again on the same data directory and config.
    pub fn restart(&mut self) {
        let status = self.sigterm_and_wait();
        assert!(status.success(), "the server exited with {status} on SIGTERM");
        self.start_again();
    }

    /// Starts the stopped server again on the same data directory and config.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "the server is still running");
        self.spawn();
    }
}

/// Has `command` run with `RLIMIT_FSIZE` set to `bytes`.
fn limit_file_size(command: &mut Command, bytes: u64) {
    use std::os::unix::process::CommandExt;
    let limit = libc::rlimit { rlim_cur: bytes as libc::rlim_t, rlim_max: bytes as libc::rlim_t };
    // SAFETY: runs in the child between fork and exec, and only calls setrlimit, which is
    // async-signal-safe and reads nothing but `limit`, a copy owned by the closure.
    unsafe {
        command.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
        });
    }
}

/// Has `command` run with `RLIMIT_NOFILE` set to `descriptors` (soft and hard).
fn limit_descriptors(command: &mut Command, descriptors: u64) {
    use std::os::unix::process::CommandExt;
    let limit = libc::rlimit { rlim_cur: descriptors as libc::rlim_t, rlim_max: descriptors as libc::rlim_t };
    // SAFETY: as in `limit_file_size`: only setrlimit, between fork and exec.
    unsafe {
        command.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        });
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// What a short-lived run of the binary printed, and how it ended.
pub struct Finished {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

/// Runs the binary with `args` (in `dir`, with `env`) and waits up to 20 s for it to exit.
pub fn run_to_exit(args: &[&str], dir: &Path, env: &[(&str, &str)]) -> Finished {
    let mut child = sepp_command()
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|error| panic!("cannot start {}: {error}", sepp_bin().display()));
    let stdout = Lines::drain(child.stdout.take().expect("stdout piped"));
    let stderr = Lines::drain(child.stderr.take().expect("stderr piped"));
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("`sepp {}` did not exit within 20 s\n{}", args.join(" "), stdout.text());
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    stdout.wait_closed(Duration::from_secs(5));
    stderr.wait_closed(Duration::from_secs(5));
    Finished { status, stdout: stdout.text(), stderr: stderr.text() }
}

/// Polls `check` every 25 ms until it returns `Some`, or panics after `timeout` with `what`.
pub async fn eventually<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out after {timeout:?} waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The value of the series `name` with (at least) `labels` that the Prometheus endpoint on
/// `port` serves now, if it serves one.
pub async fn scrape_metric(port: u16, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let url = format!("http://127.0.0.1:{port}/metrics");
    let text = reqwest::get(&url).await.expect("scrape").text().await.expect("the scrape's body");
    text.lines().find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        let rest = series.strip_prefix(name)?;
        let matches = (rest.is_empty() || rest.starts_with('{'))
            && labels.iter().all(|(label, wanted)| rest.contains(&format!("{label}=\"{wanted}\"")));
        matches.then(|| value.parse::<f64>().expect("a number"))
    })
}

/// The `sepp_reserve_waiting` gauge of the server whose Prometheus endpoint is on `port`.
pub async fn reserves_waiting(port: u16) -> u64 {
    scrape_metric(port, "sepp_reserve_waiting", &[]).await.expect("the sepp_reserve_waiting gauge") as u64
}

/// Polls the `sepp_reserve_waiting` gauge on `port` until it reaches `parked` (10 s at most).
pub async fn wait_parked(port: u16, parked: u64) {
    let what = format!("{parked} reserves waiting");
    eventually(&what, Duration::from_secs(10), || async { (reserves_waiting(port).await >= parked).then_some(()) })
        .await;
}

// ---- raw request builders -------------------------------------------------------------------

pub fn ms(millis: u64) -> prost_types::Duration {
    prost_types::Duration { seconds: (millis / 1000) as i64, nanos: ((millis % 1000) * 1_000_000) as i32 }
}

pub fn job(queue: &str, job_type: &str) -> pb::EnqueueRequest {
    pb::EnqueueRequest { queue: queue.into(), job_type: job_type.into(), ..Default::default() }
}

pub fn with_payload(mut request: pb::EnqueueRequest, data: &[u8], encoding: &str) -> pb::EnqueueRequest {
    request.payload = Some(pb::Payload { data: data.to_vec(), encoding: encoding.into() });
    request
}

pub fn batch(jobs: Vec<pb::EnqueueRequest>) -> pb::EnqueueBatchRequest {
    pb::EnqueueBatchRequest { jobs }
}

pub fn reserve(queues: &[&str], lease_ms: u64) -> pb::ReserveRequest {
    pb::ReserveRequest {
        queues: queues.iter().map(|queue| queue.to_string()).collect(),
        wait_timeout: None,
        lease_duration: Some(ms(lease_ms)),
        worker_id: None,
        max_jobs: None,
    }
}

/// Enqueues one job with the raw client and returns its id.
pub async fn enqueue_one(client: &mut QueueServiceClient<Channel>, request: pb::EnqueueRequest) -> String {
    let response = client.enqueue_batch(batch(vec![request])).await.expect("enqueue").into_inner();
    match response.results.into_iter().next().and_then(|result| result.outcome) {
        Some(pb::job_result::Outcome::Success(success)) => success.job_id,
        other => panic!("expected an accepted job, got {other:?}"),
    }
}

/// Reserves with the raw client (no wait) and returns the jobs.
/// The ack of a delivered job, under the attempt it was delivered with.
pub fn ack_of(job: &pb::Job) -> pb::AckRequest {
    pb::AckRequest { job_id: job.id.clone(), attempt: job.attempt, worker_id: None }
}

pub async fn reserve_now(client: &mut QueueServiceClient<Channel>, queues: &[&str], lease_ms: u64) -> Vec<pb::Job> {
    client.reserve(reserve(queues, lease_ms)).await.expect("reserve").into_inner().jobs
}

/// A reserve of `queue` for up to `max_jobs` (the server's default when `None`) that waits up to
/// 30 s, on a connection of its own, running in the background: park it with
/// [`TestServer::wait_parked`], then make a job reservable and await the handle.
pub fn reserve_waiting(
    server: &TestServer,
    queue: &str,
    max_jobs: Option<u32>,
) -> tokio::task::JoinHandle<Vec<pb::Job>> {
    let mut request = reserve(&[queue], 60_000);
    request.wait_timeout = Some(ms(30_000));
    request.max_jobs = max_jobs;
    let addr = server.addr();
    tokio::spawn(async move {
        let mut client = QueueServiceClient::connect(addr).await.expect("connect");
        client.reserve(request).await.expect("reserve").into_inner().jobs
    })
}

/// Asserts `result` failed with `code` and exactly `message`.
#[track_caller]
pub fn assert_status<T: std::fmt::Debug>(result: Result<T, tonic::Status>, code: tonic::Code, message: &str) {
    match result {
        Ok(value) => panic!("expected {code:?} {message:?}, got Ok({value:?})"),
        Err(status) => {
            assert_eq!(status.code(), code, "unexpected code (message {:?})", status.message());
            assert_eq!(status.message(), message, "unexpected message for {code:?}");
        }
    }
}

/// Asserts `result` failed with `code` (the message is not part of the contract).
#[track_caller]
pub fn assert_code<T: std::fmt::Debug>(result: Result<T, tonic::Status>, code: tonic::Code) -> tonic::Status {
    match result {
        Ok(value) => panic!("expected {code:?}, got Ok({value:?})"),
        Err(status) => {
            assert_eq!(status.code(), code, "unexpected code (message {:?})", status.message());
            status
        }
    }
}

// ---- wire helpers shared by the raw-client tests -------------------------------------------

/// Each result of an EnqueueBatch response: the success, or the rejection's reason.
pub fn results(response: pb::EnqueueBatchResponse) -> Vec<Result<pb::EnqueueResponse, pb::job_rejection::Reason>> {
    response
        .results
        .into_iter()
        .map(|result| match result.outcome.expect("every result has an outcome") {
            pb::job_result::Outcome::Success(success) => Ok(success),
            pb::job_result::Outcome::Rejection(rejection) => Err(rejection.reason.expect("a rejection has a reason")),
        })
        .collect()
}

pub fn string_value(text: &str) -> pb::PrimitiveValue {
    pb::PrimitiveValue { value: Some(pb::primitive_value::Value::StringValue(text.into())) }
}

/// Wall-clock milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

pub fn timestamp_ms(timestamp: &prost_types::Timestamp) -> i64 {
    timestamp.seconds * 1000 + i64::from(timestamp.nanos) / 1_000_000
}

pub fn ack(job_id: &str, attempt: u32) -> pb::AckRequest {
    pb::AckRequest { job_id: job_id.into(), attempt, worker_id: None }
}

pub fn nack(job_id: &str, attempt: u32, strategy: Option<pb::nack_retry::Strategy>) -> pb::NackRequest {
    pb::NackRequest {
        job_id: job_id.into(),
        attempt,
        reason: None,
        retry: strategy.map(|strategy| pb::NackRetry { strategy: Some(strategy) }),
        worker_id: None,
    }
}

pub fn extend(job_id: &str, attempt: u32, lease_ms: u64) -> pb::ExtendRequest {
    pb::ExtendRequest { job_id: job_id.into(), attempt, lease_duration: Some(ms(lease_ms)), worker_id: None }
}
