//! Who is asking, and may they: admin keys, roles, sessions, login and logout.
//!
//! With `admin.keys` unset, a server whose admin listener was bound to a loopback address at
//! boot treats every request as the admin `local`; one bound elsewhere refuses every request
//! (keys removed by a reload do not open it up). With keys set, a request presents a key
//! (`Authorization: Bearer`, compared with every key through SHA-256 digests in constant time)
//! or the `sepp_admin` cookie of a session. Wrong bearer keys and failed logins count against
//! the client's address in the server's [`AuthThrottle`](crate::throttle::AuthThrottle): past a
//! few a minute the answer waits, then the client's attempts get 429 with `Retry-After`. A stale
//! session cookie is not a guess (tokens are 256 random bits) and is not counted. A session remembers its key's name and a SHA-256 of its material and
//! is valid only while a live key with both still exists; its role is read from that key on
//! every request, so rotating or removing a key signs its sessions out at once and role edits
//! apply at once. Sessions live in memory, at most [`MAX_SESSIONS`] of them.

use std::collections::HashMap;
use std::sync::Mutex;

use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::header::{AUTHORIZATION, COOKIE, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sepp_admin_types as api;
use sepp_admin_types::{LoginResult, Role, Session as SessionView};
use sepp_config::{AdminKey, AdminRole};
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::admin::AdminState;
use crate::admin::errors::{AdminError, AdminResult};
use crate::admin::hosts::Connection;
use crate::throttle::{Answer, Client, Listener};

/// Sessions kept at most; a new one evicts the one that expires soonest.
pub const MAX_SESSIONS: usize = 1024;
const COOKIE_NAME: &str = "sepp_admin";

/// The one who makes a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Actor {
    /// The admin key's name; `None` for `local` (authentication off on a loopback bind).
    pub name: Option<String>,
    pub role: AdminRole,
}

impl Actor {
    pub fn local() -> Actor {
        Actor { name: None, role: AdminRole::Admin }
    }

    /// The name the audit log shows.
    pub fn label(&self) -> &str {
        self.name.as_deref().unwrap_or("local")
    }

    pub fn role_name(&self) -> &'static str {
        role_name(self.role)
    }
}

/// The role as the admin API shows it.
pub fn api_role(role: AdminRole) -> Role {
    match role {
        AdminRole::Viewer => Role::Viewer,
        AdminRole::Operator => Role::Operator,
        AdminRole::Admin => Role::Admin,
    }
}

pub fn role_name(role: AdminRole) -> &'static str {
    match role {
        AdminRole::Viewer => "viewer",
        AdminRole::Operator => "operator",
        AdminRole::Admin => "admin",
    }
}

/// A signed-in browser.
struct Session {
    name: String,
    key_sha256: [u8; 32],
    expires_at_ms: i64,
}

/// The sessions, by token.
#[derive(Default)]
pub struct Sessions {
    by_token: Mutex<HashMap<String, Session>>,
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

impl Sessions {
    /// Starts a session for `key`, evicting the soonest-expiring one when full; returns the token.
    fn start(&self, key: &AdminKey, now_ms: i64, expires_at_ms: i64) -> String {
        let mut token_bytes = [0u8; 32];
        getrandom::fill(&mut token_bytes).expect("the operating system provides random bytes");
        let token: String = token_bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        let mut sessions = self.by_token.lock().expect("sessions lock");
        sessions.retain(|_, session| session.expires_at_ms > now_ms);
        if sessions.len() >= MAX_SESSIONS
            && let Some(soonest) =
                sessions.iter().min_by_key(|(_, session)| session.expires_at_ms).map(|(token, _)| token.clone())
        {
            sessions.remove(&soonest);
        }
        let session = Session { name: key.name.clone(), key_sha256: sha256(key.key.as_bytes()), expires_at_ms };
        sessions.insert(token.clone(), session);
        token
    }

    /// The actor of a session token, if the session is alive and its key still exists.
    fn resolve(&self, token: &str, keys: &[AdminKey], now_ms: i64) -> Option<Actor> {
        let mut sessions = self.by_token.lock().expect("sessions lock");
        let session = sessions.get(token)?;
        if session.expires_at_ms <= now_ms {
            sessions.remove(token);
            return None;
        }
        let key = keys.iter().find(|key| {
            key.name == session.name && bool::from(sha256(key.key.as_bytes()).ct_eq(&session.key_sha256))
        })?;
        Some(Actor { name: Some(key.name.clone()), role: key.role })
    }

    fn end(&self, token: &str) -> bool {
        self.by_token.lock().expect("sessions lock").remove(token).is_some()
    }
}

/// What a request presented.
#[derive(Clone, Debug, Default)]
pub struct Credentials {
    bearer: Option<String>,
    session: Option<String>,
}

impl Credentials {
    pub fn from_headers(headers: &HeaderMap) -> Credentials {
        let bearer = headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::to_owned);
        let session = headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|cookies| cookies.split(';'))
            .find_map(|cookie| cookie.trim().strip_prefix("sepp_admin=").map(str::to_owned));
        Credentials { bearer, session }
    }
}

impl AdminState {
    /// The actor `credentials` stand for, under the live keys.
    pub fn authenticate(&self, credentials: &Credentials) -> AdminResult<Actor> {
        let live = self.live.get();
        let Some(keys) = &live.config.admin.keys else {
            return if self.boot_loopback {
                Ok(Actor::local())
            } else {
                Err(AdminError::unauthorized("admin keys were removed at runtime; restart required"))
            };
        };
        let required = || AdminError::unauthorized("authentication required");
        if let Some(presented) = &credentials.bearer {
            let presented = sha256(presented.as_bytes());
            let mut found: Option<&AdminKey> = None;
            for key in keys {
                if bool::from(sha256(key.key.as_bytes()).ct_eq(&presented)) {
                    found = Some(key);
                }
            }
            return found.map(|key| Actor { name: Some(key.name.clone()), role: key.role }).ok_or_else(required);
        }
        match &credentials.session {
            Some(token) => self.sessions.resolve(token, keys, self.clock.now_ms()).ok_or_else(required),
            None => Err(required()),
        }
    }

    /// [`AdminState::authenticate`] for a request, throttled: a client the throttle blocks gets
    /// 429 without its key being checked, and a wrong bearer key counts against it.
    pub async fn authenticate_request(&self, parts: &Parts) -> AdminResult<Actor> {
        let credentials = Credentials::from_headers(&parts.headers);
        let guess = credentials.bearer.is_some() && self.live.get().config.admin.keys.is_some();
        let Some(client) = client_of(parts).filter(|_| guess) else {
            return self.authenticate(&credentials);
        };
        let now_ms = self.clock.now_ms();
        if let Some(retry_after_s) = self.throttle.blocked(client, Listener::Admin, now_ms) {
            return Err(AdminError::auth_throttled(retry_after_s));
        }
        match self.authenticate(&credentials) {
            Ok(actor) => Ok(actor),
            Err(error) => Err(self.failed(client, now_ms, error).await),
        }
    }

    /// Counts a failed attempt of `client` and answers it as the throttle says: `error` at
    /// once or after a delay, or 429.
    async fn failed(&self, client: Client, now_ms: i64, error: AdminError) -> AdminError {
        match self.throttle.failed(client, Listener::Admin, now_ms) {
            Answer::Now => error,
            Answer::Delayed(delay) => {
                tokio::time::sleep(delay).await;
                error
            }
            Answer::Blocked { retry_after_s } => AdminError::auth_throttled(retry_after_s),
        }
    }
}

/// The client of a request: the peer of the connection the listener tagged it with.
fn client_of(parts: &Parts) -> Option<Client> {
    parts.extensions.get::<Connection>().map(|connection| Client::of_peer(connection.peer))
}

/// The client of a request, for handlers that authenticate by themselves (login).
pub struct ClientAddress(Option<Client>);

impl FromRequestParts<AdminState> for ClientAddress {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &AdminState) -> Result<Self, Self::Rejection> {
        Ok(ClientAddress(client_of(parts)))
    }
}

/// Extractors that authenticate the request and check the role, before any body is read.
macro_rules! role_extractor {
    ($name:ident, $role:expr, $label:literal) => {
        #[doc = concat!("An actor with at least the ", $label, " role.")]
        pub struct $name(pub Actor);

        impl FromRequestParts<AdminState> for $name {
            type Rejection = AdminError;

            async fn from_request_parts(parts: &mut Parts, state: &AdminState) -> Result<Self, Self::Rejection> {
                let actor = state.authenticate_request(parts).await?;
                if actor.role < $role {
                    return Err(AdminError::forbidden(concat!("this action requires the ", $label, " role")));
                }
                Ok($name(actor))
            }
        }
    };
}

role_extractor!(Viewer, AdminRole::Viewer, "viewer");
role_extractor!(Operator, AdminRole::Operator, "operator");
role_extractor!(Admin, AdminRole::Admin, "admin");

/// `POST /session`: signs in with a key's name and material.
pub async fn login(
    State(state): State<AdminState>,
    ClientAddress(client): ClientAddress,
    Json(login): Json<api::LoginRequest>,
) -> Response {
    let now_ms = state.clock.now_ms();
    if let Some(client) = client
        && let Some(retry_after_s) = state.throttle.blocked(client, Listener::Admin, now_ms)
    {
        return AdminError::auth_throttled(retry_after_s).into_response();
    }
    let live = state.live.get();
    let keys = live.config.admin.keys.as_deref().unwrap_or_default();
    let (name, material) = (sha256(login.name.as_bytes()), sha256(login.key.as_bytes()));
    let mut found: Option<&AdminKey> = None;
    for key in keys {
        let name_matches = sha256(key.name.as_bytes()).ct_eq(&name);
        let key_matches = sha256(key.key.as_bytes()).ct_eq(&material);
        if bool::from(name_matches & key_matches) {
            found = Some(key);
        }
    }
    let Some(key) = found else {
        tracing::warn!(
            target: "sepp::audit",
            action = "session.login_failed",
            name = %crate::logtext::Bounded(&login.name),
            "admin login failed"
        );
        let error = AdminError::unauthorized("invalid name or key");
        let error = match client {
            Some(client) => state.failed(client, now_ms, error).await,
            None => error,
        };
        return error.into_response();
    };
    let expires_at_ms = now_ms.saturating_add(live.config.admin.session_ttl_ms as i64);
    let token = state.sessions.start(key, now_ms, expires_at_ms);
    let actor = Actor { name: Some(key.name.clone()), role: key.role };
    if let Err(error) = state.audit(&actor, "session.login", json!({})).await {
        return error.into_response();
    }
    let secure = if state.admin_tls { "; Secure" } else { "" };
    let cookie = format!("{COOKIE_NAME}={token}; HttpOnly; SameSite=Strict; Path=/{secure}");
    let body = LoginResult { name: key.name.clone(), role: api_role(actor.role), expires_at_ms };
    let mut response = (StatusCode::OK, Json(body)).into_response();
    response.headers_mut().insert(SET_COOKIE, HeaderValue::from_str(&cookie).expect("a cookie of hex and ASCII"));
    response
}

/// `GET /session`: who the caller is.
pub async fn whoami(State(state): State<AdminState>, Viewer(actor): Viewer) -> Json<SessionView> {
    let auth_enabled = state.live.get().config.admin.keys.is_some();
    Json(SessionView { name: actor.name, role: api_role(actor.role), auth_enabled })
}

/// `DELETE /session`: signs out (the session of the cookie, if any).
pub async fn logout(State(state): State<AdminState>, headers: HeaderMap, Viewer(actor): Viewer) -> Response {
    let credentials = Credentials::from_headers(&headers);
    if let Some(token) = &credentials.session
        && state.sessions.end(token)
        && let Err(error) = state.audit(&actor, "session.logout", json!({})).await
    {
        return error.into_response();
    }
    let secure = if state.admin_tls { "; Secure" } else { "" };
    let cookie = format!("{COOKIE_NAME}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{secure}");
    let mut response = StatusCode::NO_CONTENT.into_response();
    response.headers_mut().insert(SET_COOKIE, HeaderValue::from_str(&cookie).expect("an ASCII cookie"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str, material: &str, role: AdminRole) -> AdminKey {
        AdminKey { name: name.into(), key: material.into(), role }
    }

    #[test]
    fn a_session_lives_until_it_expires_and_only_while_its_key_is_unchanged() {
        let sessions = Sessions::default();
        let ops = key("ops", "k1", AdminRole::Operator);
        let token = sessions.start(&ops, 1_000, 5_000);
        assert_eq!(token.len(), 64);
        let actor = sessions.resolve(&token, std::slice::from_ref(&ops), 4_999).expect("alive");
        assert_eq!((actor.label(), actor.role), ("ops", AdminRole::Operator));
        let promoted = key("ops", "k1", AdminRole::Admin);
        assert_eq!(sessions.resolve(&token, &[promoted], 4_999).map(|actor| actor.role), Some(AdminRole::Admin));
        assert_eq!(sessions.resolve(&token, &[key("ops", "k2", AdminRole::Operator)], 4_999), None, "rotated");
        assert_eq!(sessions.resolve(&token, &[key("other", "k1", AdminRole::Operator)], 4_999), None, "renamed");
        assert_eq!(sessions.resolve(&token, &[ops], 5_000), None, "expired");
    }

    #[test]
    fn a_full_table_forgets_the_session_that_expires_soonest() {
        let sessions = Sessions::default();
        let ops = key("ops", "k1", AdminRole::Operator);
        let soonest = sessions.start(&ops, 0, 10);
        let tokens: Vec<String> = (0..MAX_SESSIONS - 1).map(|n| sessions.start(&ops, 0, 1_000 + n as i64)).collect();
        let newest = sessions.start(&ops, 0, 50_000);
        let keys = std::slice::from_ref(&ops);
        assert_eq!(sessions.by_token.lock().unwrap().len(), MAX_SESSIONS);
        assert!(sessions.resolve(&soonest, keys, 1).is_none(), "evicted");
        assert!(sessions.resolve(&tokens[0], keys, 1).is_some());
        assert!(sessions.resolve(&newest, keys, 1).is_some());
        assert!(sessions.end(&newest) && !sessions.end(&newest));
    }
}
