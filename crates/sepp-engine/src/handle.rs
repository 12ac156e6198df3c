//! The sending side of the committer, cloned into every request handler, and what tells when the
//! committer has stopped.

use sepp_core::JobId;
use tokio::sync::oneshot;

use crate::command::Command;

/// The sending side, cloned into every request handler.
#[derive(Clone)]
pub struct CommitterHandle {
    pub(crate) sender: flume::Sender<Command>,
    /// Why storage is poisoned, once it is.
    pub(crate) poison: tokio::sync::watch::Receiver<Option<String>>,
    /// Whether the committer serves (false while it follows, in cluster mode).
    pub(crate) leading: tokio::sync::watch::Receiver<bool>,
    /// Leased jobs cancelled, each once its cancel is durable (see [`CommitterHandle::cancelled_leases`]).
    pub(crate) cancels: tokio::sync::broadcast::Sender<JobId>,
}

impl CommitterHandle {
    /// Sends a command, waiting while the channel is full. Fails only once the committer stopped.
    pub async fn send(&self, command: Command) -> Result<(), Stopped> {
        self.sender.send_async(command).await.map_err(|_| Stopped)
    }

    /// Commands waiting in the channel (the admin API shows it).
    pub fn queued(&self) -> usize {
        self.sender.len()
    }

    /// Sends a command from a thread outside the runtime, blocking while the channel is full.
    pub fn send_blocking(&self, command: Command) -> Result<(), Stopped> {
        self.sender.send(command).map_err(|_| Stopped)
    }

    /// Resolves, with the reason, once a failed write poisoned storage. Never resolves for a
    /// committer that works, or that stopped without failing.
    pub async fn poisoned(&self) -> String {
        let mut poison = self.poison.clone();
        // The reason is copied out first: the watch's read guard must not live across an await.
        let reason = poison.wait_for(Option::is_some).await.map(|reason| reason.clone().unwrap_or_default());
        match reason {
            Ok(reason) => reason,
            Err(_) => std::future::pending().await,
        }
    }

    /// Why storage is poisoned, if it is.
    pub fn poison_reason(&self) -> Option<String> {
        self.poison.borrow().clone()
    }

    /// Whether the committer serves commands: always on a single node; in cluster mode, from
    /// [`Command::Lead`] until it follows again (told to, or because a proposal failed).
    pub fn leading(&self) -> tokio::sync::watch::Receiver<bool> {
        self.leading.clone()
    }

    /// The ids of leased jobs as they are cancelled (by CancelJob or the admin API), each sent
    /// once the cancel is durable. A receiver more than [`CANCEL_FEED_CAPACITY`](crate::CANCEL_FEED_CAPACITY) behind misses
    /// the oldest (it hears `Lagged`); the committer looks for cancels only while one listens.
    pub fn cancelled_leases(&self) -> tokio::sync::broadcast::Receiver<JobId> {
        self.cancels.subscribe()
    }
}

/// The committer is gone: storage accepts no more commands.
#[derive(Debug, Clone, Copy)]
pub struct Stopped;

/// Resolves once the committer has stopped and closed its log (its background threads joined,
/// the data directory unlocked). The thread then frees the state's memory, which with a large
/// backlog takes a while (about 0.05 s for a million jobs) and which nobody needs to wait for: a
/// process that exits right after this loses nothing.
pub struct Closed(pub(crate) oneshot::Receiver<()>);

impl Closed {
    /// Waits for the committer to close. Err when its thread panicked instead.
    pub async fn wait(self) -> Result<(), Stopped> {
        self.0.await.map_err(|_| Stopped)
    }
}
