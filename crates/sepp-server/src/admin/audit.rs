//! `GET /audit`: the audit log, newest first, with a `before` cursor and filters by actor and
//! action prefix. Entries are written by the mutations themselves (see `commands`); this only
//! reads them, one bounded query of at most 1,000 entries per call.

use axum::Json;
use axum::extract::{Query, State};
use sepp_admin_types::{self as api, AuditPage};
use sepp_core::AuditQuery;

use crate::admin::AdminState;
use crate::admin::access::Admin;
use crate::admin::commands::{AdminCommand, ask};
use crate::admin::errors::AdminResult;
use crate::admin::views;

/// `GET /audit?before=&limit=&actor=&action_prefix=`: `{entries, next_before}`.
pub async fn list(
    State(state): State<AdminState>,
    Admin(_): Admin,
    Query(params): Query<api::AuditQuery>,
) -> AdminResult<Json<AuditPage>> {
    let query = AuditQuery {
        before: params.before,
        limit: params.limit.unwrap_or(50).clamp(1, 100) as usize,
        actor: params.actor.filter(|actor| !actor.is_empty()),
        action_prefix: params.action_prefix.filter(|prefix| !prefix.is_empty()),
    };
    let page = ask(&state.committer, |reply| AdminCommand::AuditPage { query, reply }).await?;
    let entries = page.entries.iter().map(|entry| views::audit_entry(entry)).collect();
    Ok(Json(AuditPage { entries, next_before: page.next_before }))
}
