//! The admin listener: the JSON API under `/admin/api/v1`, live stats over SSE, and the web UI
//! bundle under `/admin/`.
//!
//! # Layout
//!
//! - [`listener`]: binding, TLS (ALPN h2 and http/1.1), serving and graceful shutdown.
//! - [`routes`]: the URL space, the security headers, the Host and cross-site checks (with the
//!   names of [`hosts`]).
//! - [`access`]: authentication (throttled per client by [`crate::throttle`]), roles, sessions,
//!   login and logout.
//! - [`errors`]: the error envelope.
//! - [`commands`]: what the API asks of the committer (mutations with their audit entries, and
//!   bounded reads), each a `sepp_engine::Operation`.
//! - [`stats`], [`history`] and [`events`]: the published stats, the once-a-second frames, the
//!   history within its byte budget, SSE.
//! - [`jobs`], [`queues`], [`pauses`], [`schedules`], [`overview`], [`audit`], [`cluster`] (with
//!   the refusal of the data routes on a follower), [`config_api`] (with [`config_file`]),
//!   [`workers`]: the endpoints; [`views`]: their JSON shapes.
//! - [`ui`]: the embedded bundle.
//!
//! Every change to queue state goes through the committer as a command whose records are in the
//! log, answered once persisted. Reads come from the stats the committer publishes or from
//! bounded query commands. Nothing here adds work to the committer when the API is not used,
//! beyond counting per-queue totals and publishing a snapshot every 250 ms.

pub mod access;
pub mod audit;
pub mod cluster;
pub mod commands;
pub mod config_api;
pub mod config_file;
pub mod errors;
pub mod events;
pub mod history;
pub mod hosts;
pub mod jobs;
pub mod listener;
pub mod overview;
pub mod pauses;
pub mod queues;
pub mod routes;
pub mod schedules;
pub mod stats;
pub mod ui;
pub mod views;
pub mod workers;

use std::path::PathBuf;
use std::sync::Arc;

use sepp_core::AuditEntry;
use serde_json::Value;
use tokio::sync::{broadcast, watch};

use crate::live::LiveConfig;
use crate::logtext::Bounded;
use access::{Actor, Sessions};
use errors::AdminResult;
use events::Event;
use sepp_engine::{Clock, CommitterHandle};
use stats::StatsHub;
use workers::Workers;

/// Everything the handlers share.
pub struct AdminShared {
    pub committer: CommitterHandle,
    pub live: Arc<LiveConfig>,
    pub started_at_ms: i64,
    /// The admin listener was bound to a loopback address at boot.
    pub boot_loopback: bool,
    /// The admin listener has TLS.
    pub admin_tls: bool,
    pub sessions: Sessions,
    pub stats: Arc<StatsHub>,
    pub events: broadcast::Sender<Event>,
    pub config: config_file::ConfigFile,
    pub workers: Arc<Workers>,
    /// The server's clock (the committer's).
    pub clock: Arc<dyn Clock>,
    /// Turns true when the server stops: SSE streams end.
    pub stopping: watch::Receiver<bool>,
    /// The server's metrics, when they are on (operator dead-letters are counted).
    pub metrics: Option<Arc<crate::telemetry::Metrics>>,
    /// Cluster mode: this node's view of the cluster, and whether it serves.
    pub cluster: Option<Arc<crate::cluster::ClusterGate>>,
    /// Failed authentication per client, shared with the gRPC listener.
    pub throttle: Arc<crate::throttle::AuthThrottle>,
}

/// The handlers' state: a cheap handle on [`AdminShared`].
#[derive(Clone)]
pub struct AdminState(Arc<AdminShared>);

impl std::ops::Deref for AdminState {
    type Target = AdminShared;

    fn deref(&self) -> &AdminShared {
        &self.0
    }
}

impl AdminState {
    pub fn new(shared: AdminShared) -> AdminState {
        AdminState(Arc::new(shared))
    }

    /// Appends an audit entry for an action that changed no queue state, waits until it is
    /// persisted, and announces it. On a cluster node that does not lead, whose own sessions and
    /// files these actions are, the entry cannot join the cluster's audit log (only the leader
    /// writes it): the action is logged on this node instead.
    pub async fn audit(&self, actor: &Actor, action: &'static str, details: Value) -> AdminResult<()> {
        if let Some(gate) = &self.cluster
            && gate.refusal().is_some()
        {
            tracing::info!(
                target: "sepp::audit",
                actor = %Bounded(actor.name.as_deref().unwrap_or("local")),
                role = ?actor.role,
                action,
                details = %Bounded(&details.to_string()),
                "admin action on a node that does not lead (not in the cluster's audit log)"
            );
            return Ok(());
        }
        let actor = actor.clone();
        let entry =
            commands::ask(&self.committer, |reply| commands::AdminCommand::Audit { actor, action, details, reply })
                .await?;
        self.announce(&entry);
        Ok(())
    }

    /// Logs a persisted audit entry and sends it to the SSE subscribers.
    pub fn announce(&self, entry: &AuditEntry) {
        tracing::info!(
            target: "sepp::audit",
            actor = %Bounded(&entry.actor),
            role = %entry.role,
            action = %entry.action,
            details = %Bounded(&entry.details),
            "admin action"
        );
        let _ = self.events.send(Event::audit(entry));
    }
}

/// How the admin listener is set up, from `server::run`.
pub struct AdminSetup {
    pub committer: CommitterHandle,
    pub live: Arc<LiveConfig>,
    /// The config file, and whether a watcher applies its changes.
    pub config_path: Option<PathBuf>,
    pub watching: bool,
    pub workers: Arc<Workers>,
    pub clock: Arc<dyn Clock>,
    /// The stats snapshots the committer publishes (`server::run` started the publisher).
    pub snapshots: tokio::sync::watch::Receiver<Arc<stats::StatsSnapshot>>,
    pub metrics: Option<Arc<crate::telemetry::Metrics>>,
    pub cluster: Option<Arc<crate::cluster::ClusterGate>>,
    pub throttle: Arc<crate::throttle::AuthThrottle>,
}
