//! `GET /overview` (server facts, the latest stats frame and the history), `GET /server-info`,
//! and `GET /queues/{name}/history` (one queue's own series).

use axum::Json;
use axum::extract::{Path, Query, State};
use sepp_admin_types as api;
use sepp_admin_types::{Overview, QueueHistory, ServerInfo, ServerSummary};

use crate::admin::AdminState;
use crate::admin::access::Viewer;
use crate::service::SERVER_VERSION;

/// `GET /overview[?history=false]`: without history, the `history` key is left out (and
/// `history_info` stays).
pub async fn overview(
    State(state): State<AdminState>,
    Viewer(_): Viewer,
    Query(query): Query<api::OverviewQuery>,
) -> Json<Overview> {
    let live = state.live.get();
    Json(Overview {
        server: ServerSummary {
            version: SERVER_VERSION.to_owned(),
            started_at_ms: state.started_at_ms,
            now_ms: state.clock.now_ms(),
            strict_queues: live.config.server.strict_queues,
            dead_letter_retention_ms: state.live.boot.storage.dead_letter_retention_ms,
            command_queue_len: state.committer.queued() as u64,
        },
        frame: (*state.stats.frame()).clone(),
        history: query.history.unwrap_or(true).then(|| state.stats.history_json()),
        history_info: state.stats.history_info(),
    })
}

/// `GET /queues/{name}/history`: `{name, tracked, seconds, samples}`, where `samples` is the
/// queue's own series (empty when it has none: it is folded into `other`, or unknown).
pub async fn queue_history(
    State(state): State<AdminState>,
    Viewer(_): Viewer,
    Path(name): Path<String>,
) -> Json<QueueHistory> {
    let samples = state.stats.queue_history(&name);
    Json(QueueHistory {
        name,
        tracked: samples.is_some(),
        seconds: state.stats.history_info().seconds,
        samples: samples.unwrap_or_default(),
    })
}

/// `GET /server-info`: the boot addresses and TLS, the live auth and strict-queues settings.
pub async fn server_info(State(state): State<AdminState>, Viewer(_): Viewer) -> Json<ServerInfo> {
    let live = state.live.get();
    let boot = &state.live.boot;
    Json(ServerInfo {
        version: SERVER_VERSION.to_owned(),
        started_at_ms: state.started_at_ms,
        listen_addr: boot.server.listen_addr.to_string(),
        tls: boot.server.tls_cert_path.is_some(),
        auth_enforcing: live.config.auth.api_keys.is_some(),
        strict_queues: live.config.server.strict_queues,
        db_path: boot.server.db_path.display().to_string(),
    })
}
