//! Starting and stopping the servers under test as child processes.
//!
//! A sepp binary (ours or 0.1.1) gets a fresh temporary directory with a config file and an
//! empty data directory; the ceiling is this binary's `ceiling` subcommand. The harness reads
//! the bound address from the ready file a sepp that offers `--ready-file` writes (ours), else
//! from the `queue server listening` line on stdout (0.1.1, the ceiling), and can sample the
//! process in `/proc`, stop it with SIGTERM (or kill it with SIGKILL) and start it again on the
//! same port.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub use sepp_core::PersistMode;
use tempfile::TempDir;

use crate::BenchError;
use crate::procfs::{self, ProcessSample};

/// How long a server may take to print its listening line (a 0.1.1 server replaying a large
/// backlog is slow).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(600);

/// How long a server may take to exit after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(120);

/// Which program a target runs.
#[derive(Clone, Debug)]
pub enum Program {
    /// A sepp server binary (`sepp --config <file>`).
    Sepp { binary: PathBuf, persist_mode: PersistMode },
    /// The same with its admin listener on (loopback, no keys), for measuring what it costs.
    SeppWithAdmin { binary: PathBuf, persist_mode: PersistMode },
    /// The do-nothing ceiling (`sepp-bench ceiling --listen <addr>`).
    Ceiling { binary: PathBuf },
    /// A sepp server with extra configuration appended (tables the base file does not have,
    /// such as `[metrics]` or `[tracing]`), for measuring what they cost.
    SeppWith { binary: PathBuf, persist_mode: PersistMode, extra: String },
}

/// A running server child process.
pub struct ServerProcess {
    program: Program,
    child: Child,
    addr: SocketAddr,
    /// Holds `sepp.toml` and `data/`; removed when the server is dropped.
    dir: TempDir,
    output: Output,
}

impl ServerProcess {
    /// Starts `program` on a free loopback port with an empty data directory.
    pub fn start(program: &Program) -> Result<ServerProcess, BenchError> {
        let dir = tempfile::Builder::new().prefix("sepp-bench-").tempdir()?;
        let listen: SocketAddr = "127.0.0.1:0".parse().expect("a valid address");
        let (child, addr, output) = spawn(program, dir.path(), listen)?;
        Ok(ServerProcess { program: program.clone(), child, addr, dir, output })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// CPU and memory of the process now.
    pub fn sample(&self) -> Option<ProcessSample> {
        procfs::sample(self.pid())
    }

    /// Bytes on disk under the data directory (sepp servers only).
    pub fn data_dir_bytes(&self) -> Option<u64> {
        match self.program {
            Program::Sepp { .. } | Program::SeppWithAdmin { .. } | Program::SeppWith { .. } => {
                Some(procfs::disk_usage_bytes(&self.dir.path().join("data")))
            }
            Program::Ceiling { .. } => None,
        }
    }

    /// Whether the process still runs (it has not exited, or been killed, and reaped).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The program a later [`ServerProcess::start_again`] or [`ServerProcess::restart`] runs, in
    /// place of the one it was started with (a cluster node's, with its ports pinned).
    pub fn set_program(&mut self, program: Program) {
        self.program = program;
    }

    /// Sends SIGKILL and waits until the process is reaped; returns when the signal was sent.
    pub fn kill(&mut self) -> Result<Instant, BenchError> {
        let sent = Instant::now();
        // SAFETY: kill(2) on our own child's pid, which has not been reaped yet.
        unsafe { libc::kill(self.pid() as libc::pid_t, libc::SIGKILL) };
        self.child.wait()?;
        Ok(sent)
    }

    /// Starts the program again, after it exited, on the same port and data directory, and
    /// waits for its listening line.
    pub fn start_again(&mut self) -> Result<(), BenchError> {
        let (child, addr, output) = spawn(&self.program, self.dir.path(), self.addr)?;
        if addr != self.addr {
            return Err(BenchError::Server(format!("came back on {addr}, not {}", self.addr)));
        }
        self.child = child;
        self.output = output;
        Ok(())
    }

    /// Empties the data directory of a stopped server: its next start begins with nothing, as
    /// a node whose disk was replaced.
    pub fn clear_data_dir(&mut self) -> Result<(), BenchError> {
        if self.is_running() {
            return Err(BenchError::Server("the data directory of a running server cannot be cleared".into()));
        }
        let data = self.dir.path().join("data");
        if data.exists() {
            std::fs::remove_dir_all(&data)?;
        }
        Ok(())
    }

    /// Sends SIGTERM and waits for the process to exit; returns how long that took.
    pub fn stop(&mut self) -> Result<Duration, BenchError> {
        let started = Instant::now();
        // SAFETY: kill(2) on our own child's pid, which has not been reaped yet.
        unsafe { libc::kill(self.pid() as libc::pid_t, libc::SIGTERM) };
        loop {
            if let Some(status) = self.child.try_wait()? {
                if !status.success() {
                    return Err(BenchError::Server(format!("exited with {status} on SIGTERM{}", self.tail())));
                }
                return Ok(started.elapsed());
            }
            if started.elapsed() > STOP_TIMEOUT {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(BenchError::Server(format!("did not stop within {STOP_TIMEOUT:?} of SIGTERM")));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops the server with SIGTERM and starts it again on the same port and data directory;
    /// `until_serving` is called until it returns true (the port answers a real call). Returns
    /// the time from the new process's start until then.
    pub fn restart(&mut self, mut until_serving: impl FnMut(SocketAddr) -> bool) -> Result<Duration, BenchError> {
        self.stop()?;
        let started = Instant::now();
        let (child, addr, output) = spawn_detached(&self.program, self.dir.path(), self.addr)?;
        self.child = child;
        self.output = output;
        loop {
            if until_serving(addr) {
                return Ok(started.elapsed());
            }
            if let Some(status) = self.child.try_wait()? {
                return Err(BenchError::Server(format!("exited with {status} while restarting{}", self.tail())));
            }
            if started.elapsed() > STARTUP_TIMEOUT {
                return Err(BenchError::Server(format!("did not serve within {STARTUP_TIMEOUT:?} of a restart")));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn tail(&self) -> String {
        tail_of(&self.output)
    }

    /// The admin listener's address, from its `admin UI listening` line (waiting a little for
    /// it, since it comes after the gRPC one); `None` when the server has none.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.logged_addr("admin UI listening")
    }

    /// The most recent of the lines kept of this start's output that contains `needle`.
    pub fn logged(&self, needle: &str) -> Option<String> {
        self.output.lock().expect("output lock").iter().rev().find(|line| line.contains(needle)).cloned()
    }

    /// The loopback address in the first line containing `needle` (waiting a little for it).
    pub fn logged_addr(&self, needle: &str) -> Option<SocketAddr> {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let found = self
                .output
                .lock()
                .expect("output lock")
                .iter()
                .find_map(|line| line.contains(needle).then(|| sepp_logline::loopback_port(line)).flatten());
            if let Some(port) = found {
                return Some(SocketAddr::from(([127, 0, 0, 1], port)));
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// What the harness reads of a server it started, one process or several: CPU and memory, and
/// the size of the data directory.
pub trait Sampled {
    /// CPU and memory now; `None` when a process is gone.
    fn sample(&self) -> Option<ProcessSample>;
    /// Bytes on disk under the data directory; `None` for servers without one.
    fn data_dir_bytes(&self) -> Option<u64>;
    /// A cluster's leader alone, when this is a cluster.
    fn leader_sample(&self) -> Option<ProcessSample> {
        None
    }
}

impl Sampled for ServerProcess {
    fn sample(&self) -> Option<ProcessSample> {
        ServerProcess::sample(self)
    }

    fn data_dir_bytes(&self) -> Option<u64> {
        ServerProcess::data_dir_bytes(self)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn tail_of(output: &Mutex<Vec<String>>) -> String {
    let lines = output.lock().expect("output lock");
    let start = lines.len().saturating_sub(10);
    if lines.is_empty() { String::new() } else { format!("; last output:\n{}", lines[start..].join("\n")) }
}

/// The recent lines a child printed (stdout and stderr), for error messages.
type Output = Arc<Mutex<Vec<String>>>;

type Spawned = (Child, SocketAddr, Output);

/// Starts `program` listening on `listen` and waits for its ready file, or its listening line.
fn spawn(program: &Program, dir: &Path, listen: SocketAddr) -> Result<Spawned, BenchError> {
    let (listening_tx, listening_rx) = mpsc::channel();
    let (mut child, output) = launch(program, dir, listen, Some(listening_tx))?;
    if let Some(ready_file) = ready_file_of(program, dir) {
        return match wait_ready_file(&mut child, &ready_file) {
            Ok(addr) => Ok((child, addr, output)),
            Err(why) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(BenchError::Server(format!("{program:?} {why}{}", tail_of(&output))))
            }
        };
    }
    match listening_rx.recv_timeout(STARTUP_TIMEOUT) {
        Ok(addr) => Ok((child, addr, output)),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            Err(BenchError::Server(format!("{program:?} printed no `queue server listening` line{}", tail_of(&output))))
        }
    }
}

/// Where `program` writes its ready file in `dir`: a sepp binary that offers `--ready-file`.
fn ready_file_of(program: &Program, dir: &Path) -> Option<PathBuf> {
    match program {
        Program::Sepp { binary, .. } | Program::SeppWithAdmin { binary, .. } | Program::SeppWith { binary, .. }
            if offers_ready_file(binary) =>
        {
            Some(dir.join("sepp.ready.json"))
        }
        _ => None,
    }
}

/// Whether `binary` takes `--ready-file` (its `--help` says so; sepp 0.1.1's does not).
fn offers_ready_file(binary: &Path) -> bool {
    static PROBED: Mutex<Vec<(PathBuf, bool)>> = Mutex::new(Vec::new());
    let mut probed = PROBED.lock().expect("probe lock");
    if let Some((_, offers)) = probed.iter().find(|(path, _)| path == binary) {
        return *offers;
    }
    let help = Command::new(binary).arg("--help").stdin(Stdio::null()).output();
    let offers = help.is_ok_and(|help| String::from_utf8_lossy(&help.stdout).contains("--ready-file"));
    probed.push((binary.to_path_buf(), offers));
    offers
}

/// Polls for `ready_file` (written in one step, once every listener is bound) until it exists,
/// the child exits, or [`STARTUP_TIMEOUT`] passes; returns the gRPC address it names.
fn wait_ready_file(child: &mut Child, ready_file: &Path) -> Result<SocketAddr, String> {
    let deadline = Instant::now() + STARTUP_TIMEOUT;
    loop {
        if let Ok(text) = std::fs::read_to_string(ready_file) {
            let ready: serde_json::Value =
                serde_json::from_str(&text).map_err(|error| format!("wrote a ready file that is not JSON: {error}"))?;
            return ready["queue_addr"]
                .as_str()
                .and_then(|addr| addr.parse().ok())
                .ok_or_else(|| format!("wrote a ready file without a queue_addr: {text}"));
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!("exited with {status} before it was ready"));
        }
        if Instant::now() >= deadline {
            return Err(format!("wrote no ready file within {STARTUP_TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Starts `program` on `listen` without waiting for anything: for timing a restart by polling.
fn spawn_detached(program: &Program, dir: &Path, listen: SocketAddr) -> Result<Spawned, BenchError> {
    let (child, output) = launch(program, dir, listen, None)?;
    Ok((child, listen, output))
}

fn launch(
    program: &Program,
    dir: &Path,
    listen: SocketAddr,
    listening: Option<mpsc::Sender<SocketAddr>>,
) -> Result<(Child, Output), BenchError> {
    let mut command = match program {
        Program::Sepp { binary, persist_mode } | Program::SeppWithAdmin { binary, persist_mode } => {
            let config = dir.join("sepp.toml");
            let admin = matches!(program, Program::SeppWithAdmin { .. });
            std::fs::write(&config, sepp_config(&dir.join("data"), listen, *persist_mode, admin))?;
            let mut command = Command::new(binary);
            command.arg("--config").arg(&config);
            command
        }
        Program::Ceiling { binary } => {
            let mut command = Command::new(binary);
            command.arg("ceiling").arg("--listen").arg(listen.to_string());
            command
        }
        Program::SeppWith { binary, persist_mode, extra } => {
            let config = dir.join("sepp.toml");
            let mut contents = sepp_config(&dir.join("data"), listen, *persist_mode, false);
            contents.push('\n');
            contents.push_str(extra);
            std::fs::write(&config, contents)?;
            let mut command = Command::new(binary);
            command.arg("--config").arg(&config);
            command
        }
    };
    if let Some(ready_file) = ready_file_of(program, dir) {
        // A file left by an earlier run of this directory (killed, or restarted) is not this one's.
        let _ = std::fs::remove_file(&ready_file);
        command.arg("--ready-file").arg(ready_file);
    }
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().to_ascii_uppercase().starts_with("SEPP_") {
            command.env_remove(name);
        }
    }
    // For a look at what the servers did: BENCH_SERVER_RUST_LOG sets their log filter, and
    // BENCH_SERVER_LOGS names a directory that gets each one's output whole, a file per process.
    let filter = std::env::var("BENCH_SERVER_RUST_LOG").unwrap_or_else(|_| "sepp=info".into());
    command.env("RUST_LOG", filter).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child =
        command.spawn().map_err(|error| BenchError::Server(format!("could not start {program:?}: {error}")))?;
    let output = Arc::new(Mutex::new(Vec::new()));
    let log = std::env::var_os("BENCH_SERVER_LOGS").and_then(|logs| {
        let path = PathBuf::from(logs).join(format!("{}.log", child.id()));
        std::fs::File::create(path).ok().map(|file| Arc::new(Mutex::new(file)))
    });
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    collect_lines(stdout, output.clone(), listening, log.clone());
    collect_lines(stderr, output.clone(), None, log);
    Ok((child, output))
}

/// Reads `stream` to its end on a thread (so the child never blocks on a full pipe), keeps the
/// recent lines, and reports the address of the first `queue server listening` line.
fn collect_lines(
    stream: impl Read + Send + 'static,
    output: Arc<Mutex<Vec<String>>>,
    mut listening: Option<mpsc::Sender<SocketAddr>>,
    log: Option<Arc<Mutex<std::fs::File>>>,
) {
    std::thread::spawn(move || {
        let reader = BufReader::new(stream);
        for line in reader.split(b'\n').map_while(Result::ok) {
            let line = sepp_logline::strip_ansi(&String::from_utf8_lossy(&line));
            if let Some(log) = &log {
                let _ = writeln!(log.lock().expect("log lock"), "{line}");
            }
            if line.contains("queue server listening")
                && let Some(port) = sepp_logline::loopback_port(&line)
                && let Some(sender) = listening.take()
            {
                let _ = sender.send(SocketAddr::from(([127, 0, 0, 1], port)));
            }
            let mut lines = output.lock().expect("output lock");
            if lines.len() >= 200 {
                lines.drain(..100);
            }
            lines.push(line);
        }
    });
}

/// The configuration of a benchmarked sepp server: loopback only, the given persist mode, the
/// admin listener off (or on a free loopback port, without keys), everything else at its default.
fn sepp_config(data_dir: &Path, listen: SocketAddr, persist_mode: PersistMode, admin: bool) -> String {
    let admin = if admin { "enabled = true\nlisten_addr = \"127.0.0.1:0\"" } else { "enabled = false" };
    format!(
        "[server]\nlisten_addr = \"{listen}\"\ndb_path = {data_dir:?}\n\n[storage]\npersist_mode = \"{}\"\n\n[logging]\nlevel = \"info\"\n\n[admin]\n{admin}\n",
        persist_mode.name(),
        data_dir = data_dir.display().to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_names_the_persist_mode_and_turns_the_admin_ui_off() {
        let config = sepp_config(Path::new("/tmp/d"), "127.0.0.1:0".parse().unwrap(), PersistMode::Buffer, false);
        assert!(config.contains("persist_mode = \"buffer\""));
        assert!(config.contains("[admin]\nenabled = false"));
        assert!(config.contains("db_path = \"/tmp/d\""));
    }
}
