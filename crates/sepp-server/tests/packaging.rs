//! The systemd unit of `packaging/`: systemd accepts it, it keeps the promises
//! docs/operations.md#run-as-a-service makes, and the real binary serves and stops the way the
//! unit runs it: its `ExecStart` line, environment and working directory, with the file system
//! read-only but for its state directory as `ProtectSystem=strict` leaves it.
//!
//! Without systemd as PID 1 (as in CI) the unit cannot be started for real, so the last test
//! reproduces what systemd would do. The parts that need a tool (`systemd-analyze`,
//! `systemd-sysusers`, `unshare`) say so on stderr and are left out where the tool is missing.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use tempfile::TempDir;

/// The server's grace period for calls in flight after SIGTERM (`server::SHUTDOWN_GRACE`).
const SERVER_GRACE_S: u64 = 10;

fn packaging(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../packaging").join(file)
}

fn read(file: &str) -> String {
    let path = packaging(file);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("read {}: {error}", path.display()))
}

/// The unit's directives by section, in file order (a directive may repeat).
fn unit() -> BTreeMap<String, Vec<(String, String)>> {
    let mut sections: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut current = String::new();
    for line in read("sepp.service").lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(name) = line.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
            current = name.to_owned();
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or_else(|| panic!("not a directive: {line}"));
        sections.entry(current.clone()).or_default().push((key.trim().to_owned(), value.trim().to_owned()));
    }
    sections
}

/// The last value of `key` in `[Service]`.
fn service(key: &str) -> Option<String> {
    unit()["Service"].iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.clone())
}

fn required(key: &str) -> String {
    service(key).unwrap_or_else(|| panic!("packaging/sepp.service sets no {key}="))
}

/// Seconds of a systemd time span such as `30`, `30s`, `1min 30s`.
fn seconds(span: &str) -> u64 {
    span.split_whitespace()
        .map(|part| {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            let number: u64 = digits.parse().unwrap_or_else(|_| panic!("not a time span: {span}"));
            match &part[digits.len()..] {
                "" | "s" | "sec" => number,
                "min" | "m" => number * 60,
                unit => panic!("unexpected unit {unit:?} in {span}"),
            }
        })
        .sum()
}

fn tool(name: &str) -> bool {
    let found = Command::new(name).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    if !found {
        eprintln!("{name} is not installed: that check is left out");
    }
    found
}

#[test]
fn systemd_accepts_the_unit_and_the_user() {
    if tool("systemd-analyze") {
        // `verify` checks that the binary exists: point the copy at the one under test.
        let dir = TempDir::new().unwrap();
        let copy = dir.path().join("sepp.service");
        let text = read("sepp.service").replace("/usr/local/bin/sepp", &sepp_bin().display().to_string());
        std::fs::write(&copy, text).unwrap();
        let verified = Command::new("systemd-analyze").arg("verify").arg(&copy).output().expect("run systemd-analyze");
        let said =
            format!("{}{}", String::from_utf8_lossy(&verified.stdout), String::from_utf8_lossy(&verified.stderr));
        // It only warns about unknown directives and bad values, so any output is a failure.
        assert!(verified.status.success() && said.trim().is_empty(), "systemd-analyze verify: {said}");
    }
    if tool("systemd-sysusers") {
        let root = TempDir::new().unwrap();
        let created = Command::new("systemd-sysusers")
            .arg("--dry-run")
            .arg("--root")
            .arg(root.path())
            .arg(packaging("sepp.sysusers").canonicalize().unwrap())
            .output()
            .expect("run systemd-sysusers");
        let said = String::from_utf8_lossy(&created.stderr);
        assert!(created.status.success(), "systemd-sysusers: {said}");
        assert!(said.contains(&format!("Creating user '{}'", required("User"))), "systemd-sysusers: {said}");
    }
}

#[test]
fn the_unit_runs_a_dedicated_user_in_its_state_directory_and_outlasts_the_grace_period() {
    let user = required("User");
    assert!(user != "root" && user != "0", "the unit must not run as root");
    assert_eq!(required("ProtectSystem"), "strict");
    assert_eq!(required("NoNewPrivileges"), "yes");
    assert_eq!(required("Restart"), "on-failure");
    assert!(required("LimitNOFILE").parse::<u64>().expect("LimitNOFILE is a number") >= 65_536);
    assert_eq!(service("KillSignal").as_deref().unwrap_or("SIGTERM"), "SIGTERM");
    let stop = seconds(&required("TimeoutStopSec"));
    assert!(stop > SERVER_GRACE_S, "TimeoutStopSec={stop} does not leave the server its {SERVER_GRACE_S} s grace");

    // ProtectSystem=strict leaves only the state directory writable: the data must be there.
    let state = format!("/var/lib/{}", required("StateDirectory"));
    assert_eq!(required("WorkingDirectory"), state);
    let exec = required("ExecStart");
    let config_path = exec.split_whitespace().skip_while(|arg| *arg != "--config").nth(1).expect("ExecStart --config");
    assert_eq!(config_path, "/etc/sepp/sepp.toml");
    let config = sepp_config::load_str(&read("sepp.toml"), &[]).expect("packaging/sepp.toml is a valid config");
    let db_path = config.server.db_path;
    assert!(db_path.starts_with(&state), "db_path {} is outside the state directory {state}", db_path.display());
}

/// Reads a systemd environment file: `KEY=value` lines, one pair of quotes around a value taken
/// off, comments and blank lines skipped.
fn environment_file(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| {
            let (key, value) = line.split_once('=')?;
            let value = value.trim();
            let unquoted =
                ['\'', '"'].iter().find_map(|quote| value.strip_prefix(*quote)?.strip_suffix(*quote)).unwrap_or(value);
            Some((key.trim().to_owned(), unquoted.to_owned()))
        })
        .collect()
}

/// Whether this process may make a private mount namespace (root, or a user namespace).
fn can_unshare_mounts() -> bool {
    let works = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "true"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if !works {
        eprintln!("unshare --mount is not permitted here: the server runs without a read-only root");
    }
    works
}

/// The unit's `ExecStart`, `Environment`, `EnvironmentFile` and `WorkingDirectory` with the
/// absolute paths moved under `root`, and the binary under test in place of `/usr/local/bin/sepp`.
fn command_of_the_unit(root: &Path, state: &Path) -> Command {
    let moved = |text: &str| {
        text.replace("/var/lib/", &format!("{}/var/lib/", root.display()))
            .replace("/etc/sepp/", &format!("{}/etc/sepp/", root.display()))
    };
    let exec = required("ExecStart");
    let mut argv = exec.split_whitespace().map(moved);
    assert_eq!(argv.next().as_deref(), Some(moved("/usr/local/bin/sepp").as_str()), "ExecStart runs the binary");
    let mut env: Vec<(String, String)> = vec![
        ("PATH".into(), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into()),
        ("STATE_DIRECTORY".into(), state.display().to_string()),
    ];
    for (key, value) in &unit()["Service"] {
        match key.as_str() {
            "Environment" => env.extend(environment_file(&value.replace(' ', "\n"))),
            "EnvironmentFile" => {
                let (optional, path) = value.strip_prefix('-').map_or((false, value.as_str()), |path| (true, path));
                match std::fs::read_to_string(moved(path)) {
                    Ok(text) => env.extend(environment_file(&text)),
                    Err(_) if optional => {}
                    Err(error) => panic!("EnvironmentFile {path}: {error}"),
                }
            }
            _ => {}
        }
    }
    let (program, prefix): (PathBuf, Vec<String>) = if can_unshare_mounts() {
        // As ProtectSystem=strict: everything read-only but the state directory.
        let script = r#"mount --bind "$1" "$1" && mount -o remount,bind,ro / &&
            { ! mountpoint -q /tmp || mount -o remount,bind,ro /tmp; } && shift && exec "$@""#;
        let prefix = ["--mount", "--propagation", "private", "--", "sh", "-c", script, "sh"];
        let mut prefix: Vec<String> = prefix.iter().map(|arg| arg.to_string()).collect();
        prefix.push(state.display().to_string());
        prefix.push(sepp_bin().display().to_string());
        ("unshare".into(), prefix)
    } else {
        (sepp_bin(), Vec::new())
    };
    let mut command = Command::new(program);
    command.args(prefix).args(argv).env_clear().envs(env).current_dir(moved(&required("WorkingDirectory")));
    command
}

#[tokio::test]
async fn the_server_serves_and_stops_on_sigterm_as_the_unit_runs_it() {
    let root = TempDir::new().unwrap();
    // What systemd prepares: the state directory, and the files the operator installs.
    let state = root.path().join("var/lib").join(required("StateDirectory"));
    std::fs::create_dir_all(&state).unwrap();
    let etc = root.path().join("etc/sepp");
    std::fs::create_dir_all(&etc).unwrap();
    let mut config: toml::Table = read("sepp.toml").parse().unwrap();
    let listen = |address: &str| toml::Value::String(address.into());
    config["server"].as_table_mut().unwrap().insert("listen_addr".into(), listen("127.0.0.1:0"));
    let admin = config.entry("admin").or_insert_with(|| toml::Value::Table(Default::default()));
    admin.as_table_mut().unwrap().insert("listen_addr".into(), listen("127.0.0.1:0"));
    let config = toml::to_string(&config).unwrap().replace("/var/lib/", &format!("{}/var/lib/", root.path().display()));
    std::fs::write(etc.join("sepp.toml"), config).unwrap();
    // The API key comes from the environment file, as docs/operations.md suggests.
    std::fs::write(etc.join("sepp.env"), "# test\nSEPP_AUTH__API_KEYS='[{name=\"workers\",key=\"unit-test-key\"}]'\n")
        .unwrap();

    let mut child = command_of_the_unit(root.path(), &state)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the unit's command");
    let stdout = Lines::drain(child.stdout.take().unwrap());
    let stderr = Lines::drain(child.stderr.take().unwrap());
    let Some(line) = stdout.wait_for("queue server listening", STARTUP_TIMEOUT) else {
        let _ = child.kill();
        panic!("the server did not start\n--- stdout\n{}\n--- stderr\n{}", stdout.text(), stderr.text());
    };
    assert!(line.contains("auth=\"enabled\""), "the environment file was not read: {line}");
    let port = loopback_port(&line).expect("a port");

    let channel = tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
        .unwrap()
        .connect()
        .await
        .expect("connect");
    let key: tonic::metadata::MetadataValue<_> = "Bearer unit-test-key".parse().unwrap();
    let mut client = QueueServiceClient::with_interceptor(channel, move |mut request: tonic::Request<()>| {
        request.metadata_mut().insert("authorization", key.clone());
        Ok(request)
    });
    let enqueued = client.enqueue_batch(batch(vec![job("emails", "send_welcome")])).await.expect("enqueue");
    let job_id = match &enqueued.into_inner().results[0].outcome {
        Some(sepp_server::proto::v1::job_result::Outcome::Success(success)) => success.job_id.clone(),
        other => panic!("not enqueued: {other:?}"),
    };
    let jobs = client.reserve(reserve(&["emails"], 30_000)).await.expect("reserve").into_inner().jobs;
    assert_eq!(jobs.iter().map(|job| job.id.as_str()).collect::<Vec<_>>(), [job_id.as_str()]);
    client.ack(ack(&job_id, 1)).await.expect("ack");
    assert!(state.join("sepp-data/FORMAT").is_file(), "the data directory is not in the state directory");

    let signal = service("KillSignal").unwrap_or_else(|| "SIGTERM".into());
    let sent = Command::new("kill")
        .arg(format!("-{}", signal.trim_start_matches("SIG")))
        .arg(child.id().to_string())
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill -{signal} failed");
    let stop = Duration::from_secs(seconds(&required("TimeoutStopSec")));
    // Waited for off the runtime, which must stay free to answer the server's goodbye.
    let waiting = stdout.clone();
    let closed = tokio::task::spawn_blocking(move || waiting.wait_closed(stop)).await.unwrap();
    assert!(closed, "the server did not stop within TimeoutStopSec\n{}", stdout.text());
    let status = child.wait().expect("wait for the server");
    // Restart=on-failure must not restart a server that was told to stop.
    assert!(status.success(), "exit status {status}\n--- stderr\n{}", stderr.text());
    assert!(stdout.contains("queue server stopped"), "{}", stdout.text());
}
