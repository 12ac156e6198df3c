//! Server-sent events: `GET /events` streams `hello` (the history summary and the latest
//! frame, both of bounded size), then `stats` once a second, `config` after each reload attempt
//! (the reload counter), `audit` entries (to admin-role subscribers only), and `lagged` (how many
//! events a subscriber that fell behind the 32-event buffer missed). A comment every 15 s keeps proxies from closing the
//! stream. A subscriber whose credentials stop being valid (signed out, key rotated) is cut off
//! at its next event, and every stream ends when the server stops.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use axum::response::IntoResponse;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;
use sepp_admin_types::{Frame, Hello};
use sepp_config::AdminRole;
use sepp_core::AuditEntry;
use tokio::sync::{broadcast, watch};

use crate::admin::AdminState;
use crate::admin::access::{Credentials, Viewer};
use crate::admin::views;

/// Events a subscriber may fall behind by before it misses some.
pub const EVENT_BUFFER: usize = 32;
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// One event for every subscriber.
#[derive(Clone, Debug)]
pub struct Event {
    pub name: &'static str,
    pub data: Arc<str>,
    /// Sent only to subscribers with the admin role.
    pub admin_only: bool,
}

impl Event {
    pub fn stats(frame: &Frame) -> Event {
        let data = serde_json::to_string(frame).expect("a frame serializes");
        Event { name: "stats", data: Arc::from(data), admin_only: false }
    }

    pub fn audit(entry: &AuditEntry) -> Event {
        Event {
            name: "audit",
            data: Arc::from(serde_json::to_string(&views::audit_entry(entry)).expect("an audit entry serializes")),
            admin_only: true,
        }
    }

    pub fn config(reloads: u64) -> Event {
        Event { name: "config", data: Arc::from(reloads.to_string()), admin_only: false }
    }
}

/// Forwards every reload attempt of the config watcher as a `config` event until `stopping`.
pub async fn forward_reloads(
    mut reloads: watch::Receiver<u64>,
    events: broadcast::Sender<Event>,
    mut stopping: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            changed = reloads.changed() => {
                if changed.is_err() {
                    return;
                }
                let counter = *reloads.borrow_and_update();
                let _ = events.send(Event::config(counter));
            }
            _ = stopping.wait_for(|stopping| *stopping) => return,
        }
    }
}

struct Subscription {
    state: AdminState,
    credentials: Credentials,
    receiver: broadcast::Receiver<Event>,
    stopping: watch::Receiver<bool>,
    hello: Option<SseEvent>,
}

/// `GET /events`.
pub async fn events(State(state): State<AdminState>, headers: HeaderMap, Viewer(_): Viewer) -> impl IntoResponse {
    let hello = Hello {
        history: state.stats.history_json(),
        history_info: state.stats.history_info(),
        frame: (*state.stats.frame()).clone(),
    };
    let subscription = Subscription {
        receiver: state.events.subscribe(),
        stopping: state.stopping.clone(),
        credentials: Credentials::from_headers(&headers),
        hello: Some(SseEvent::default().event("hello").data(serde_json::to_string(&hello).expect("hello serializes"))),
        state,
    };
    let stream = Sse::new(stream_of(subscription)).keep_alive(KeepAlive::new().interval(KEEP_ALIVE));
    ([(HeaderName::from_static("x-accel-buffering"), HeaderValue::from_static("no"))], stream)
}

fn stream_of(subscription: Subscription) -> impl Stream<Item = Result<SseEvent, Infallible>> {
    futures_util::stream::unfold(subscription, |mut sub| async move {
        if let Some(hello) = sub.hello.take() {
            return Some((Ok(hello), sub));
        }
        loop {
            let received = tokio::select! {
                received = sub.receiver.recv() => received,
                _ = sub.stopping.wait_for(|stopping| *stopping) => return None,
            };
            let actor = sub.state.authenticate(&sub.credentials).ok()?;
            let event = match received {
                Ok(event) if event.admin_only && actor.role < AdminRole::Admin => continue,
                Ok(event) => SseEvent::default().event(event.name).data(&*event.data),
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    SseEvent::default().event("lagged").data(missed.to_string())
                }
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            return Some((Ok(event), sub));
        }
    })
}
