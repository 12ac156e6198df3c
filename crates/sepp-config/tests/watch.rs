//! The hot-reload watcher against a real file system.

use std::path::Path;
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use sepp_config::{ConfigWatcher, watch};

/// Long enough for a loaded machine; the tests return as soon as the callback fires.
const GENEROUS: Duration = Duration::from_secs(30);

fn watched(path: &Path) -> (ConfigWatcher, Receiver<()>) {
    let (calls, received) = mpsc::channel();
    let watcher = watch(path, move || {
        let _ = calls.send(());
    })
    .expect("the watch starts");
    (watcher, received)
}

#[test]
fn writing_the_file_fires_the_callback() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sepp.toml");
    std::fs::write(&path, "").unwrap();
    let (_watcher, calls) = watched(&path);
    std::fs::write(&path, "[server]\nstrict_queues = true\n").unwrap();
    calls.recv_timeout(GENEROUS).expect("a write triggers a reload");
}

#[test]
fn replacing_the_file_by_rename_fires_the_callback() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sepp.toml");
    std::fs::write(&path, "").unwrap();
    let (_watcher, calls) = watched(&path);
    let temp = dir.path().join(".sepp.toml.tmp");
    std::fs::write(&temp, "[limits]\ndefault_priority = 3\n").unwrap();
    std::fs::remove_file(&path).unwrap();
    std::fs::rename(&temp, &path).unwrap();
    calls.recv_timeout(GENEROUS).expect("an atomic replace triggers a reload");
}

#[test]
fn creating_a_file_that_did_not_exist_fires_the_callback() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sepp.toml");
    let (_watcher, calls) = watched(&path);
    std::fs::write(&path, "").unwrap();
    calls.recv_timeout(GENEROUS).expect("creating the file triggers a reload");
}

#[test]
fn reading_the_file_or_writing_a_sibling_never_fires_the_callback() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sepp.toml");
    std::fs::write(&path, "[server]\n").unwrap();
    let (_watcher, calls) = watched(&path);
    for _ in 0..50 {
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text, "[server]\n");
    }
    std::fs::write(dir.path().join("other.toml"), "x = 1\n").unwrap();
    assert!(
        calls.recv_timeout(Duration::from_millis(1500)).is_err(),
        "reading the config file (or writing another file) must not trigger a reload"
    );
    // The watcher was alive all along: a write is seen.
    std::fs::write(&path, "[server]\nstrict_queues = true\n").unwrap();
    calls.recv_timeout(GENEROUS).expect("a write is still seen");
}

#[test]
fn watching_a_file_in_a_missing_directory_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-dir").join("sepp.toml");
    let error = watch(&path, || {}).expect_err("nothing to watch");
    assert!(error.to_string().starts_with("could not watch "), "{error}");
}
