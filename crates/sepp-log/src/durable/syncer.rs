//! The syncer: a thread that makes a written frame durable while the committer applies the next
//! cycle ([`crate::Log::start_sync`]). One sync is in flight at a time, and the log writes
//! nothing while it is: so at most one frame is ever written and not yet durable, and a frame a
//! power loss tore is always the last one in its segment, which is what recovery cuts.

use std::fs::File;
use std::io;
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use sepp_core::PersistMode;

use super::files::close_and_join;

/// Makes what was written to `segment` as durable as `mode` promises. `grew` says whether a
/// write since the last sync went beyond the segment's allocated space.
pub(super) fn sync_segment(segment: &File, mode: PersistMode, grew: bool) -> io::Result<()> {
    match mode {
        // Inside preallocated space only the data changes: its size and blocks were synced when
        // the segment was prepared, so fdatasync makes the write exactly as durable as fsync
        // would. A write that grows the file syncs everything.
        PersistMode::SyncAll if grew => segment.sync_all(),
        PersistMode::SyncAll | PersistMode::SyncData => segment.sync_data(),
        PersistMode::Buffer => Ok(()),
    }
}

struct Request {
    segment: Arc<File>,
    mode: PersistMode,
    grew: bool,
}

/// The bytes of the current segment from `from` on are written and not yet known durable.
#[derive(Clone, Copy, Debug)]
pub(super) struct Unsynced {
    pub(super) from: u64,
    pub(super) grew: bool,
}

pub(super) struct Syncer {
    requests: mpsc::Sender<Request>,
    done: mpsc::Receiver<(io::Result<()>, Duration)>,
    /// What the sync in flight covers.
    in_flight: Option<Unsynced>,
    thread: Option<JoinHandle<()>>,
}

impl Syncer {
    pub(super) fn start() -> Syncer {
        let (requests, request_receiver) = mpsc::channel::<Request>();
        let (done_sender, done) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("sepp-log-sync".into())
            .spawn(move || {
                for request in request_receiver {
                    let started = Instant::now();
                    let result = sync_segment(&request.segment, request.mode, request.grew);
                    if done_sender.send((result, started.elapsed())).is_err() {
                        break;
                    }
                }
            })
            .expect("spawn the log syncer");
        Syncer { requests, done, in_flight: None, thread: Some(thread) }
    }

    /// Starts syncing `segment`; [`Syncer::finish`] waits for it. Only one sync is in flight.
    pub(super) fn begin(&mut self, segment: Arc<File>, mode: PersistMode, unsynced: Unsynced) {
        assert!(self.in_flight.is_none(), "a second sync started while one is in flight");
        let request = Request { segment, mode, grew: unsynced.grew };
        // Should the thread be gone, `finish` reports it: the frame is never taken as durable.
        let _ = self.requests.send(request);
        self.in_flight = Some(unsynced);
    }

    /// Waits for the sync in flight, if any: how long it took, or its error with what it
    /// covered.
    pub(super) fn finish(&mut self) -> Result<Option<Duration>, (io::Error, Unsynced)> {
        let Some(unsynced) = self.in_flight.take() else { return Ok(None) };
        match self.done.recv() {
            Ok((Ok(()), took)) => Ok(Some(took)),
            Ok((Err(error), _)) => Err((error, unsynced)),
            Err(_) => Err((io::Error::other("the log syncer stopped"), unsynced)),
        }
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        close_and_join(&mut self.requests, &mut self.thread);
    }
}
