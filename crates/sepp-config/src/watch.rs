//! The hot-reload trigger: tells the server when the config file's content may have changed.
//!
//! This module owns the file-system watch (docs/configuration.md#hot-reload): it watches the file's parent
//! directory (so replacing the file by rename is seen), keeps only events that can change the
//! file's data, and coalesces a burst of them into one call. Reading the file never counts, which
//! is what keeps a reload's own read from triggering the next reload. It does not load or
//! compare configurations; the callback does.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::{Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

use crate::load::ConfigError;

/// How long after the first event of a burst the callback runs; later events of the burst are
/// absorbed into that one call.
const DEBOUNCE: Duration = Duration::from_millis(500);

/// A running watch. Dropping it stops the watch; no callback starts after the drop.
pub struct ConfigWatcher {
    _watcher: RecommendedWatcher,
    stopped: Arc<AtomicBool>,
}

impl Drop for ConfigWatcher {
    fn drop(&mut self) {
        self.stopped.store(true, Ordering::Release);
    }
}

impl std::fmt::Debug for ConfigWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConfigWatcher").finish_non_exhaustive()
    }
}

/// Calls `on_change` (on a thread of its own) each time the file at `path` is written, created,
/// or replaced by a rename, at most once per 500 ms burst.
pub fn watch(path: &Path, on_change: impl Fn() + Send + 'static) -> Result<ConfigWatcher, ConfigError> {
    let watch_error = |source| ConfigError::Watch { path: path.to_path_buf(), source };
    let file_name: OsString = path
        .file_name()
        .ok_or_else(|| watch_error(notify::Error::generic("the path does not name a file")))?
        .to_owned();
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };

    let (events, received) = std::sync::mpsc::channel::<EventKind>();
    let mut watcher = notify::recommended_watcher(forward_changes_to(file_name, events)).map_err(watch_error)?;
    watcher.watch(&directory, RecursiveMode::NonRecursive).map_err(watch_error)?;

    let stopped = Arc::new(AtomicBool::new(false));
    let stopped_for_thread = Arc::clone(&stopped);
    std::thread::Builder::new()
        .name("sepp-config-watch".into())
        .spawn(move || debounce(&received, DEBOUNCE, &stopped_for_thread, on_change))
        .map_err(|error| watch_error(notify::Error::io(error)))?;
    Ok(ConfigWatcher { _watcher: watcher, stopped })
}

/// The notify handler: one message (the event's kind) per relevant event. When the watcher is
/// dropped, so is this handler and its sender, which ends the debounce thread.
fn forward_changes_to(
    file_name: OsString,
    events: Sender<EventKind>,
) -> impl FnMut(notify::Result<Event>) + Send + 'static {
    move |event| match event {
        Ok(event) if changes_data_of(&event, &file_name) => {
            let _ = events.send(event.kind);
        }
        Ok(_) => {}
        Err(error) => tracing::warn!(%error, "config file watch error"),
    }
}

/// Whether `event` can have changed the content of the file called `file_name`: a write, a
/// create, or a rename onto it. Opening, reading, closing after reading, metadata changes and
/// removal do not count (a removal followed by a create counts through the create).
fn changes_data_of(event: &Event, file_name: &OsStr) -> bool {
    let names_file = |path: &PathBuf| path.file_name() == Some(file_name);
    let any_path = || event.paths.iter().any(names_file);
    match event.kind {
        EventKind::Create(_) => any_path(),
        EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Any | ModifyKind::Other) => any_path(),
        // `Both` carries [from, to]: only the destination matters.
        EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => event.paths.last().is_some_and(names_file),
        EventKind::Modify(ModifyKind::Name(RenameMode::From)) => false,
        EventKind::Modify(ModifyKind::Name(_)) => any_path(),
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => any_path(),
        _ => false,
    }
}

/// Runs `on_change` once per burst of messages: the first message opens a `window`, every
/// message until it closes is absorbed, then the callback runs. Messages that arrive during the
/// callback start the next burst. Returns when every sender is gone or `stopped` is set.
fn debounce<T>(received: &Receiver<T>, window: Duration, stopped: &AtomicBool, on_change: impl Fn()) {
    while received.recv().is_ok() {
        let deadline = Instant::now() + window;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match received.recv_timeout(left) {
                Ok(_) => continue,
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        if stopped.load(Ordering::Acquire) {
            return;
        }
        on_change();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;

    use notify::event::{CreateKind, DataChange, MetadataKind, RemoveKind};

    fn event(kind: EventKind, paths: &[&str]) -> Event {
        paths.iter().fold(Event::new(kind), |e, p| e.add_path(PathBuf::from(p)))
    }

    const FILE: &str = "/etc/sepp/sepp.toml";

    #[test]
    fn writes_creates_and_renames_onto_the_file_count_as_changes() {
        let name = OsStr::new("sepp.toml");
        let changes = [
            event(EventKind::Modify(ModifyKind::Data(DataChange::Any)), &[FILE]),
            event(EventKind::Modify(ModifyKind::Any), &[FILE]),
            event(EventKind::Create(CreateKind::File), &[FILE]),
            event(EventKind::Access(AccessKind::Close(AccessMode::Write)), &[FILE]),
            event(EventKind::Modify(ModifyKind::Name(RenameMode::To)), &[FILE]),
            event(EventKind::Modify(ModifyKind::Name(RenameMode::Both)), &["/etc/sepp/.sepp.toml.tmp", FILE]),
        ];
        for change in changes {
            assert!(changes_data_of(&change, name), "{change:?}");
        }
    }

    #[test]
    fn reads_metadata_removals_and_other_files_do_not_count() {
        let name = OsStr::new("sepp.toml");
        let ignored = [
            event(EventKind::Access(AccessKind::Open(AccessMode::Any)), &[FILE]),
            event(EventKind::Access(AccessKind::Read), &[FILE]),
            event(EventKind::Access(AccessKind::Close(AccessMode::Read)), &[FILE]),
            event(EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any)), &[FILE]),
            event(EventKind::Remove(RemoveKind::File), &[FILE]),
            event(EventKind::Modify(ModifyKind::Name(RenameMode::From)), &[FILE]),
            event(EventKind::Modify(ModifyKind::Name(RenameMode::Both)), &[FILE, "/etc/sepp/sepp.toml.bak"]),
            event(EventKind::Modify(ModifyKind::Data(DataChange::Any)), &["/etc/sepp/other.toml"]),
            event(EventKind::Any, &[FILE]),
        ];
        for not_a_change in ignored {
            assert!(!changes_data_of(&not_a_change, name), "{not_a_change:?}");
        }
    }

    /// On the real file system (inotify here): the kernel reports a read's open, access and close
    /// before a later write's events, so if reading were forwarded, the first message would be
    /// the read's.
    #[test]
    fn on_a_real_file_reads_forward_nothing_and_the_next_write_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sepp.toml");
        std::fs::write(&path, "[server]\n").unwrap();
        let (events, forwarded) = mpsc::channel();
        let mut watcher = notify::recommended_watcher(forward_changes_to("sepp.toml".into(), events)).unwrap();
        watcher.watch(dir.path(), RecursiveMode::NonRecursive).unwrap();
        for _ in 0..3 {
            assert_eq!(std::fs::read_to_string(&path).unwrap(), "[server]\n");
        }
        // Writing another file in the directory is not about the config file either.
        std::fs::write(dir.path().join("other.toml"), "x").unwrap();
        std::fs::write(&path, "[server]\nlisten_addr = \"127.0.0.1:0\"\n").unwrap();
        let first = forwarded.recv_timeout(Duration::from_secs(30)).expect("the write is forwarded");
        assert!(
            matches!(
                first,
                EventKind::Modify(_) | EventKind::Create(_) | EventKind::Access(AccessKind::Close(AccessMode::Write))
            ),
            "the first forwarded event came before the write: {first:?}"
        );
    }

    #[test]
    fn a_burst_of_events_is_coalesced_into_one_call() {
        let (events, received) = mpsc::channel();
        let (calls, call_seen) = mpsc::channel();
        let count = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&count);
        let thread = std::thread::spawn(move || {
            let stopped = AtomicBool::new(false);
            debounce(&received, Duration::from_millis(200), &stopped, || {
                counter.fetch_add(1, Ordering::SeqCst);
                calls.send(()).unwrap();
            });
        });
        for _ in 0..10 {
            events.send(()).unwrap();
        }
        call_seen.recv_timeout(Duration::from_secs(30)).unwrap();
        events.send(()).unwrap();
        call_seen.recv_timeout(Duration::from_secs(30)).unwrap();
        drop(events);
        thread.join().unwrap();
        assert_eq!(count.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn nothing_is_called_once_stopped() {
        let (events, received) = mpsc::channel();
        events.send(()).unwrap();
        // Were the callback to run, it would drop the last sender so that the loop ends.
        let events = std::cell::RefCell::new(Some(events));
        let called = AtomicBool::new(false);
        let stopped = AtomicBool::new(true);
        debounce(&received, Duration::from_millis(10), &stopped, || {
            called.store(true, Ordering::SeqCst);
            events.borrow_mut().take();
        });
        assert!(!called.load(Ordering::SeqCst));
    }
}
