//! Config endpoints: the redacted running configuration with its etag and pins, edits of the
//! file (`PUT /config`), and the gRPC API keys (add, revoke, turn auth off).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::http::header::IF_MATCH;
use sepp_admin_types as api;
use sepp_admin_types::{ConfigView, WriteResult};
use sepp_config::ApiKey;
use serde_json::json;

use crate::admin::AdminState;
use crate::admin::access::{Admin, Viewer};
use crate::admin::config_file::{
    self, ChangePath, Written, env_pinned, env_pinned_error, parse_path, pinned_by, toml_value,
};
use crate::admin::errors::{AdminError, AdminResult};

/// The etag a DELETE route was given in `If-Match` (400 without one).
pub fn if_match(headers: &HeaderMap) -> AdminResult<String> {
    headers
        .get(IF_MATCH)
        .and_then(|value| value.to_str().ok())
        .map(|value| value.trim().to_owned())
        .filter(|value| !value.is_empty())
        .ok_or_else(AdminError::if_match_required)
}

pub fn written_json(written: &Written) -> WriteResult {
    WriteResult {
        applied: written.applied,
        requires_restart: written.requires_restart.clone(),
        etag: written.etag.clone(),
    }
}

/// `GET /config`.
pub async fn get(State(state): State<AdminState>, Viewer(_): Viewer) -> AdminResult<Json<ConfigView>> {
    let live = state.live.get();
    let etag = state.config.read()?.etag;
    let effective = serde_json::to_value(&live.config).map_err(|error| AdminError::internal(error.to_string()))?;
    Ok(Json(ConfigView {
        effective,
        etag,
        env_pinned: env_pinned(),
        restart_only: sepp_config::RESTART_ONLY.iter().map(|path| (*path).to_owned()).collect(),
        pending_restart: state.live.boot.restart_only_changes(&live.config),
    }))
}

/// `PUT /config`: `{etag, changes: [{path, value}]}`; a `null` value removes the key.
pub async fn put(
    State(state): State<AdminState>,
    Admin(actor): Admin,
    Json(body): Json<api::ConfigPutRequest>,
) -> AdminResult<Json<WriteResult>> {
    let lock = state.config.lock().await;
    let current = state.config.read_expecting(&lock, &body.etag)?;
    for change in &body.changes {
        config_file::refuse_key_lists(&change.path)?;
    }
    let pinned = env_pinned();
    for change in &body.changes {
        if let Some(pin) = pinned_by(&change.path, &pinned) {
            return Err(env_pinned_error(&change.path, &pin));
        }
    }
    let mut document = state.config.document(&current)?;
    for change in &body.changes {
        let path = parse_path(&change.path)?;
        let tables = matches!(path, ChangePath::QueueField { field: "key_overrides", .. });
        let value = if change.value.is_null() { None } else { Some(toml_value(&change.value, tables)?) };
        match path {
            ChangePath::Key { section, key } => config_file::set_key(&mut document, section, key, value)?,
            ChangePath::QueueField { queue, field } => {
                config_file::set_queue_field(&mut document, queue, field, value)?
            }
        }
    }
    let written = state.config.write(&lock, &document, &state.live).await?;
    drop(lock);
    let paths: Vec<&str> = body.changes.iter().map(|change| change.path.as_str()).collect();
    state.audit(&actor, "config.put", json!({ "paths": paths })).await?;
    Ok(Json(written_json(&written)))
}

fn check_new_key(name: &str, key: &str) -> AdminResult<()> {
    let invalid = |message: &str| Err(AdminError::invalid_argument(message));
    if name.is_empty() || key.is_empty() {
        return invalid("name and key must not be empty");
    }
    if name == "." || name == ".." || name.contains('/') || name.chars().any(char::is_control) {
        return invalid("name must not be \".\" or \"..\" and must not contain '/' or control characters");
    }
    if !key.bytes().all(|byte| (0x21..=0x7e).contains(&byte)) {
        return invalid("key must be visible ASCII (no spaces or control characters)");
    }
    Ok(())
}

fn api_keys_not_pinned() -> AdminResult<()> {
    match pinned_by("auth.api_keys", &env_pinned()) {
        Some(pin) => Err(env_pinned_error("auth.api_keys", &pin)),
        None => Ok(()),
    }
}

/// The API keys the file itself sets.
fn file_api_keys(state: &AdminState, text: &str) -> AdminResult<Option<Vec<ApiKey>>> {
    Ok(state.config.check(text)?.auth.api_keys)
}

/// `POST /auth/keys`: `{etag, name, key}` adds a gRPC API key.
pub async fn add_key(
    State(state): State<AdminState>,
    Admin(actor): Admin,
    Json(body): Json<api::KeyAddRequest>,
) -> AdminResult<Json<WriteResult>> {
    check_new_key(&body.name, &body.key)?;
    api_keys_not_pinned()?;
    let lock = state.config.lock().await;
    let current = state.config.read_expecting(&lock, &body.etag)?;
    let mut keys = file_api_keys(&state, &current.text)?.unwrap_or_default();
    if keys.iter().any(|key| key.name == body.name) {
        return Err(AdminError::invalid_change(format!("an API key named {:?} already exists", body.name)));
    }
    if keys.iter().any(|key| key.key == body.key) {
        return Err(AdminError::invalid_change("another API key already uses this key"));
    }
    keys.push(ApiKey { name: body.name.clone(), key: body.key });
    let mut document = state.config.document(&current)?;
    config_file::set_api_keys(&mut document, Some(&keys))?;
    let written = state.config.write(&lock, &document, &state.live).await?;
    drop(lock);
    state.audit(&actor, "auth_key.add", json!({ "name": body.name })).await?;
    Ok(Json(written_json(&written)))
}

/// `DELETE /auth/keys/{name}` (with `If-Match`): revokes one key; the list may become empty,
/// which denies every call.
pub async fn revoke_key(
    State(state): State<AdminState>,
    Admin(actor): Admin,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> AdminResult<Json<WriteResult>> {
    let etag = if_match(&headers)?;
    api_keys_not_pinned()?;
    let lock = state.config.lock().await;
    let current = state.config.read_expecting(&lock, &etag)?;
    let mut keys = file_api_keys(&state, &current.text)?.unwrap_or_default();
    let before = keys.len();
    keys.retain(|key| key.name != name);
    if keys.len() == before {
        return Err(AdminError::not_found(format!("no API key named {name:?}")));
    }
    let mut document = state.config.document(&current)?;
    config_file::set_api_keys(&mut document, Some(&keys))?;
    let written = state.config.write(&lock, &document, &state.live).await?;
    drop(lock);
    state.audit(&actor, "auth_key.revoke", json!({ "name": name })).await?;
    Ok(Json(written_json(&written)))
}

/// `DELETE /auth/keys` (with `If-Match`): turns gRPC authentication off.
pub async fn disable_auth(
    State(state): State<AdminState>,
    Admin(actor): Admin,
    headers: HeaderMap,
) -> AdminResult<Json<WriteResult>> {
    let etag = if_match(&headers)?;
    api_keys_not_pinned()?;
    let lock = state.config.lock().await;
    let current = state.config.read_expecting(&lock, &etag)?;
    if file_api_keys(&state, &current.text)?.is_none() {
        return Err(AdminError::not_found("gRPC auth is already off"));
    }
    let mut document = state.config.document(&current)?;
    config_file::set_api_keys(&mut document, None)?;
    let written = state.config.write(&lock, &document, &state.live).await?;
    drop(lock);
    state.audit(&actor, "auth.disable", json!({})).await?;
    Ok(Json(written_json(&written)))
}
