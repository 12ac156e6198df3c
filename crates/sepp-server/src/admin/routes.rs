//! The admin listener's URL space, and what every response and mutation goes through.
//!
//! - `/` redirects to `/admin/`; `/admin/...` is the UI bundle (see `ui`); `/admin/api/v1/...`
//!   is the JSON API; everything else is a JSON 404.
//! - Every response carries a Content-Security-Policy that allows scripts from this origin only
//!   (no inline script, no `eval`), and headers that forbid framing and MIME sniffing.
//! - Before routing, a request whose `Host` (or HTTP/2 `:authority`) is not one of the
//!   listener's names ([`hosts`]) gets 421 `misdirected_request`: a DNS-rebinding page reaches
//!   nothing.
//! - A mutation (any method but GET/HEAD/OPTIONS) is refused (403) when the browser says it comes
//!   from another site (`Sec-Fetch-Site`) or its `Origin` is not one of the listener's names.
//!   Bodies must be JSON (`Content-Type: application/json`), which no cross-site HTML form can
//!   send.

use axum::Router;
use axum::extract::Request;
use axum::extract::State;
use axum::http::header::{
    CONTENT_SECURITY_POLICY, HOST, ORIGIN, REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use axum::http::{HeaderValue, Method};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{delete, get, post, put};
use sepp_config::HostPort;

use crate::admin::errors::AdminError;
use crate::admin::hosts::{self, Connection};
use crate::admin::{
    AdminState, access, audit, cluster, config_api, events, jobs, overview, pauses, queues, schedules, ui, workers,
};

const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; \
                   connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; \
                   form-action 'self'";

/// The whole admin listener.
pub fn router(state: AdminState) -> Router {
    // What any node answers: this node's own sessions, files and view of the cluster. The
    // queue's data and changes are the leader's: on a cluster node that does not serve, those
    // routes answer 503 `not_leader`.
    let any_node = Router::new()
        .route("/session", post(access::login).get(access::whoami).delete(access::logout))
        .route("/server-info", get(overview::server_info))
        .route("/config", get(config_api::get).put(config_api::put))
        .route("/auth/keys", post(config_api::add_key).delete(config_api::disable_auth))
        .route("/auth/keys/{name}", delete(config_api::revoke_key))
        .route("/events", get(events::events))
        .route("/cluster", get(cluster::view));
    let leader_only = Router::new()
        .route("/overview", get(overview::overview))
        .route("/queues", get(queues::list))
        .route("/queues/{name}", get(queues::get).put(queues::put).delete(queues::delete))
        .route("/queues:pause", post(pauses::pause_all))
        .route("/queues:resume", post(pauses::resume_all))
        .route("/queues/{name}/pause", post(pauses::pause))
        .route("/queues/{name}/resume", post(pauses::resume))
        .route("/queues/{name}/history", get(overview::queue_history))
        .route("/pauses", get(pauses::list))
        .route("/schedules", get(schedules::list))
        .route("/schedules/{id}", put(schedules::put).delete(schedules::delete))
        .route("/queues/{name}/jobs", get(jobs::peek).post(jobs::enqueue))
        .route("/queues/{name}/jobs:count", get(jobs::count))
        .route("/queues/{name}/jobs:dead-letter", post(jobs::dead_letter_jobs))
        .route("/queues/{name}/jobs:bulk", post(jobs::bulk))
        .route("/queues/{name}/dead-letters/{key}", get(jobs::dead_letter))
        .route("/queues/{name}/dead-letters:requeue", post(jobs::requeue))
        .route("/queues/{name}/dead-letters:delete", post(jobs::delete))
        .route("/jobs/{id}", get(jobs::job))
        .route("/jobs/{id}/cancel", post(jobs::cancel))
        .route("/audit", get(audit::list))
        .route("/workers", get(workers::list))
        .route_layer(middleware::from_fn_with_state(state.clone(), cluster::leader_only));
    let api = any_node
        .merge(leader_only)
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), refuse_cross_site));
    Router::new()
        .route("/", get(|| async { Redirect::temporary("/admin/") }))
        .route("/admin", get(ui::shell))
        .route("/admin/", get(ui::shell))
        .nest("/admin/api/v1", api)
        .route("/admin/api/{*rest}", get(not_found).post(not_found).put(not_found).delete(not_found))
        .route("/admin/{*path}", get(ui::asset))
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), refuse_other_hosts))
        .layer(middleware::from_fn(security_headers))
        .with_state(state)
}

async fn not_found() -> Response {
    AdminError::not_found("not found").into_response()
}

async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    response
}

/// The port a name without one means on this listener.
fn default_port(state: &AdminState) -> u16 {
    if state.admin_tls { 443 } else { 80 }
}

/// Whether `name` is one of the names of the listener `request` came to. A request the
/// listener did not tag with its connection (none in the server) is judged by loopback alone.
fn names_this_listener(state: &AdminState, request: &Request, name: &HostPort, default_port: u16) -> bool {
    let local = request
        .extensions()
        .get::<Connection>()
        .map_or_else(|| std::net::SocketAddr::from(([127, 0, 0, 1], 0)), |connection| connection.local);
    hosts::allowed(name, default_port, local, &state.live.get().config.admin.allowed_hosts)
}

/// What a 421 says about the name a request gave.
fn misdirected(given: &str) -> Response {
    let given: String = given.chars().take(100).collect();
    AdminError::misdirected(format!(
        "{given:?} is not a name of this admin listener (its address, localhost or a loopback address with its \
         port); if it is yours, add it to admin.allowed_hosts"
    ))
    .into_response()
}

/// Refuses (421) a request whose `Host`, or the authority of its URI (HTTP/2 `:authority`, an
/// absolute-form target), does not name this listener, or that gives neither.
async fn refuse_other_hosts(State(state): State<AdminState>, request: Request, next: Next) -> Response {
    let default_port = default_port(&state);
    let host = request.headers().get(HOST).map(|host| host.to_str().unwrap_or("(not text)"));
    let authority = request.uri().authority().map(|authority| authority.as_str());
    if host.is_none() && authority.is_none() {
        return AdminError::misdirected("a Host header is required").into_response();
    }
    for given in host.into_iter().chain(authority) {
        let named =
            HostPort::parse(given).is_some_and(|name| names_this_listener(&state, &request, &name, default_port));
        if !named {
            return misdirected(given);
        }
    }
    next.run(request).await
}

/// Whether a mutation comes from a page of another site: the browser says so
/// (`Sec-Fetch-Site`), or its `Origin` is not one of the listener's names.
fn is_cross_site(state: &AdminState, request: &Request) -> bool {
    let headers = request.headers();
    if let Some(site) = headers.get("sec-fetch-site")
        && !matches!(site.as_bytes(), b"same-origin" | b"none")
    {
        return true;
    }
    let Some(origin) = headers.get(ORIGIN) else { return false };
    match origin.to_str().ok().and_then(hosts::origin) {
        Some((name, default_port)) => !names_this_listener(state, request, &name, default_port),
        None => true,
    }
}

async fn refuse_cross_site(State(state): State<AdminState>, request: Request, next: Next) -> Response {
    let safe = matches!(*request.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !safe && is_cross_site(&state, &request) {
        return AdminError::forbidden("cross-site requests are refused").into_response();
    }
    next.run(request).await
}
