//! Who is asking, and may they: admin keys, roles, sessions, login and logout.
//!
//! With `admin.keys` unset, a server whose admin listener was bound to a loopback address at
//! boot treats every request as the admin `local`; one bound elsewhere refuses every request
//! (keys removed by a reload do not open it up). With keys set, a request presents a key
//! (`Authorization: Bearer`, compared in constant time with every key) or the `sepp_admin`
//! cookie of a session. A session remembers its key's name and a SHA-256 of its material and
//! is valid only while a live key with both still exists; its role is read from that key on
//! every request, so rotating or removing a key signs its sessions out at once and role edits
//! apply at once. Sessions live in memory, at most [`MAX_SESSIONS`] of them.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use axum::Json;
use axum::extract::{FromRequestParts, State};
use axum::http::header::{AUTHORIZATION, COOKIE, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use sepp_config::{AdminKey, AdminRole};
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::admin::AdminState;
use crate::admin::errors::{AdminError, AdminResult};
use crate::committer::now_ms;

/// Sessions kept at most; a new one evicts the one that expires soonest.
pub const MAX_SESSIONS: usize = 1024;
/// How long a failed login makes its caller wait.
const FAILED_LOGIN_DELAY: Duration = Duration::from_millis(500);
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
    fn start(&self, key: &AdminKey, expires_at_ms: i64) -> String {
        let mut token_bytes = [0u8; 32];
        getrandom::fill(&mut token_bytes).expect("the operating system provides random bytes");
        let token: String = token_bytes.iter().map(|byte| format!("{byte:02x}")).collect();
        let mut sessions = self.by_token.lock().expect("sessions lock");
        let now = now_ms();
        sessions.retain(|_, session| session.expires_at_ms > now);
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
    fn resolve(&self, token: &str, keys: &[AdminKey]) -> Option<Actor> {
        let mut sessions = self.by_token.lock().expect("sessions lock");
        let session = sessions.get(token)?;
        if session.expires_at_ms <= now_ms() {
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

    pub fn len(&self) -> usize {
        self.by_token.lock().expect("sessions lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
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
            let mut found: Option<&AdminKey> = None;
            for key in keys {
                if bool::from(key.key.as_bytes().ct_eq(presented.as_bytes())) {
                    found = Some(key);
                }
            }
            return found.map(|key| Actor { name: Some(key.name.clone()), role: key.role }).ok_or_else(required);
        }
        match &credentials.session {
            Some(token) => self.sessions.resolve(token, keys).ok_or_else(required),
            None => Err(required()),
        }
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
                let actor = state.authenticate(&Credentials::from_headers(&parts.headers))?;
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

#[derive(Deserialize)]
pub struct Login {
    name: String,
    key: String,
}

/// `POST /session`: signs in with a key's name and material.
pub async fn login(State(state): State<AdminState>, Json(login): Json<Login>) -> Response {
    let live = state.live.get();
    let keys = live.config.admin.keys.as_deref().unwrap_or_default();
    let mut found: Option<&AdminKey> = None;
    for key in keys {
        let name_matches = key.name.as_bytes().ct_eq(login.name.as_bytes());
        let key_matches = key.key.as_bytes().ct_eq(login.key.as_bytes());
        if bool::from(name_matches & key_matches) {
            found = Some(key);
        }
    }
    let Some(key) = found else {
        tracing::warn!(
            target: "sepp::audit",
            action = "session.login_failed",
            name = %crate::admin::shorten(&login.name),
            "admin login failed"
        );
        tokio::time::sleep(FAILED_LOGIN_DELAY).await;
        return AdminError::unauthorized("invalid name or key").into_response();
    };
    let expires_at_ms = now_ms().saturating_add(live.config.admin.session_ttl_ms as i64);
    let token = state.sessions.start(key, expires_at_ms);
    let actor = Actor { name: Some(key.name.clone()), role: key.role };
    if let Err(error) = state.audit(&actor, "session.login", json!({})).await {
        return error.into_response();
    }
    let secure = if state.admin_tls { "; Secure" } else { "" };
    let cookie = format!("{COOKIE_NAME}={token}; HttpOnly; SameSite=Strict; Path=/{secure}");
    let body = json!({ "name": key.name, "role": actor.role_name(), "expires_at_ms": expires_at_ms });
    let mut response = (StatusCode::OK, Json(body)).into_response();
    response.headers_mut().insert(SET_COOKIE, HeaderValue::from_str(&cookie).expect("a cookie of hex and ASCII"));
    response
}

/// `GET /session`: who the caller is.
pub async fn whoami(State(state): State<AdminState>, Viewer(actor): Viewer) -> Json<serde_json::Value> {
    let auth_enabled = state.live.get().config.admin.keys.is_some();
    Json(json!({ "name": actor.name, "role": actor.role_name(), "auth_enabled": auth_enabled }))
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
