//! The workers view: which worker ids reserved recently, when each was last seen, and which
//! jobs each holds, by queue.
//!
//! Kept in memory only and bounded: at most [`MAX_WORKERS`] workers (the least recently seen is
//! forgotten first, and so is one unseen for [`FORGET_AFTER_MS`]) and at most
//! [`MAX_HELD_PER_WORKER`] remembered deliveries each. The Reserve handler records what it
//! already has (the request's `worker_id` and the jobs it hands out) after the committer
//! answered, so the committer does no work for it; acks and nacks are not tracked at all.
//! Instead `GET /workers` asks the committer, in bounded queries, which of the remembered
//! deliveries are still in flight under the attempt delivered, and forgets the rest.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;

use axum::Json;
use axum::extract::State;
use sepp_admin_types::{WorkerInfo, WorkerList};
use sepp_core::{JobId, TimeMs};

use crate::admin::AdminState;
use crate::admin::access::Viewer;
use crate::admin::commands::{AdminCommand, ask};
use crate::admin::errors::AdminResult;

pub const MAX_WORKERS: usize = 1024;
pub const MAX_HELD_PER_WORKER: usize = 1024;
pub const FORGET_AFTER_MS: TimeMs = 15 * 60 * 1000;
/// Worker ids longer than this are cut (they are labels, not keys).
const WORKER_ID_MAX: usize = 256;
/// Deliveries checked per committer query.
const LEASE_QUERY_CHUNK: usize = 10_000;

struct Worker {
    last_seen_ms: TimeMs,
    reserves: u64,
    delivered: u64,
    /// Deliveries that may still be held, oldest first.
    held: VecDeque<(JobId, u32)>,
}

/// Every worker seen recently.
#[derive(Default)]
pub struct Workers {
    by_id: Mutex<HashMap<String, Worker>>,
}

/// One worker as `GET /workers` shows it, before its held jobs are checked.
struct Seen {
    worker_id: String,
    last_seen_ms: TimeMs,
    reserves: u64,
    delivered: u64,
    held: Vec<(JobId, u32)>,
}

impl Workers {
    /// Records one Reserve call of `worker_id` at `now_ms` and the jobs (id, attempt) it got.
    pub fn saw(&self, worker_id: &str, now_ms: TimeMs, deliveries: impl ExactSizeIterator<Item = (JobId, u32)>) {
        let mut end = worker_id.len().min(WORKER_ID_MAX);
        while !worker_id.is_char_boundary(end) {
            end -= 1;
        }
        let worker_id = &worker_id[..end];
        let mut workers = self.by_id.lock().expect("workers lock");
        if !workers.contains_key(worker_id) && workers.len() >= MAX_WORKERS {
            workers.retain(|_, worker| now_ms - worker.last_seen_ms <= FORGET_AFTER_MS);
            if workers.len() >= MAX_WORKERS
                && let Some(oldest) =
                    workers.iter().min_by_key(|(_, worker)| worker.last_seen_ms).map(|(id, _)| id.clone())
            {
                workers.remove(&oldest);
            }
        }
        let worker = workers.entry(worker_id.to_owned()).or_insert_with(|| Worker {
            last_seen_ms: now_ms,
            reserves: 0,
            delivered: 0,
            held: VecDeque::new(),
        });
        worker.last_seen_ms = now_ms;
        worker.reserves += 1;
        worker.delivered += deliveries.len() as u64;
        worker.held.extend(deliveries);
        while worker.held.len() > MAX_HELD_PER_WORKER {
            worker.held.pop_front();
        }
    }

    fn seen(&self, now_ms: TimeMs) -> Vec<Seen> {
        let mut workers = self.by_id.lock().expect("workers lock");
        workers.retain(|_, worker| now_ms - worker.last_seen_ms <= FORGET_AFTER_MS);
        workers
            .iter()
            .map(|(id, worker)| Seen {
                worker_id: id.clone(),
                last_seen_ms: worker.last_seen_ms,
                reserves: worker.reserves,
                delivered: worker.delivered,
                held: worker.held.iter().copied().collect(),
            })
            .collect()
    }

    /// Forgets `worker_id`'s remembered deliveries that are no longer held.
    fn settle(&self, worker_id: &str, released: &[(JobId, u32)]) {
        if released.is_empty() {
            return;
        }
        if let Some(worker) = self.by_id.lock().expect("workers lock").get_mut(worker_id) {
            worker.held.retain(|delivery| !released.contains(delivery));
        }
    }
}

/// `GET /workers`: `{workers: [{worker_id, last_seen_ms, reserves, jobs_delivered,
/// held: {queue: n}, held_total, next_lease_expires_at_ms}]}`, most recently seen first.
pub async fn list(State(state): State<AdminState>, Viewer(_): Viewer) -> AdminResult<Json<WorkerList>> {
    let mut seen = state.workers.seen(state.clock.now_ms());
    seen.sort_by(|a, b| b.last_seen_ms.cmp(&a.last_seen_ms).then_with(|| a.worker_id.cmp(&b.worker_id)));
    let deliveries: Vec<(JobId, u32)> = seen.iter().flat_map(|worker| worker.held.iter().copied()).collect();
    let mut leases = Vec::with_capacity(deliveries.len());
    for chunk in deliveries.chunks(LEASE_QUERY_CHUNK) {
        let jobs = chunk.to_vec();
        leases.extend(ask(&state.committer, |reply| AdminCommand::Leases { jobs, reply }).await?);
    }
    let mut leases = leases.into_iter();
    let mut shown = Vec::with_capacity(seen.len());
    for worker in seen {
        let mut by_queue: BTreeMap<String, u64> = BTreeMap::new();
        let mut next_expiry: Option<TimeMs> = None;
        let mut released = Vec::new();
        for delivery in &worker.held {
            match leases.next().flatten() {
                Some((queue, lease_deadline_ms)) => {
                    *by_queue.entry(queue.to_string()).or_default() += 1;
                    next_expiry = Some(next_expiry.map_or(lease_deadline_ms, |at| at.min(lease_deadline_ms)));
                }
                None => released.push(*delivery),
            }
        }
        state.workers.settle(&worker.worker_id, &released);
        shown.push(WorkerInfo {
            worker_id: worker.worker_id.to_string(),
            last_seen_ms: worker.last_seen_ms,
            reserves: worker.reserves,
            jobs_delivered: worker.delivered,
            held_total: by_queue.values().sum::<u64>(),
            held: by_queue,
            next_lease_expires_at_ms: next_expiry,
        });
    }
    Ok(Json(WorkerList { workers: shown }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u128) -> JobId {
        JobId::from_u128(n)
    }

    #[test]
    fn a_worker_remembers_its_recent_deliveries_up_to_the_bound() {
        let workers = Workers::default();
        workers.saw("w1", 1_000, [(id(1), 1), (id(2), 1)].into_iter());
        workers.saw("w1", 2_000, std::iter::empty::<(JobId, u32)>().collect::<Vec<_>>().into_iter());
        let deliveries: Vec<_> = (0..MAX_HELD_PER_WORKER as u128 + 5).map(|n| (id(100 + n), 1)).collect();
        workers.saw("w2", 1_500, deliveries.into_iter());
        let seen = workers.seen(2_000);
        let w1 = seen.iter().find(|worker| worker.worker_id == "w1").unwrap();
        assert_eq!((w1.last_seen_ms, w1.reserves, w1.delivered, w1.held.len()), (2_000, 2, 2, 2));
        let w2 = seen.iter().find(|worker| worker.worker_id == "w2").unwrap();
        assert_eq!(w2.held.len(), MAX_HELD_PER_WORKER);
        assert_eq!(w2.held[0], (id(105), 1), "the oldest deliveries go first");
        workers.settle("w1", &[(id(1), 1)]);
        assert_eq!(workers.seen(2_000).iter().find(|worker| worker.worker_id == "w1").unwrap().held, [(id(2), 1)]);
    }

    #[test]
    fn workers_are_bounded_and_forgotten_when_idle() {
        let workers = Workers::default();
        for n in 0..MAX_WORKERS + 10 {
            workers.saw(
                &format!("w{n}"),
                n as TimeMs,
                std::iter::empty::<(JobId, u32)>().collect::<Vec<_>>().into_iter(),
            );
        }
        let seen = workers.seen(MAX_WORKERS as TimeMs + 10);
        assert_eq!(seen.len(), MAX_WORKERS);
        assert!(!seen.iter().any(|worker| worker.worker_id == "w0"), "the least recently seen went first");
        assert!(workers.seen(FORGET_AFTER_MS * 2 + 5_000).is_empty());
        workers.saw(&"x".repeat(1_000), 0, Vec::new().into_iter());
        assert_eq!(workers.seen(0)[0].worker_id.len(), WORKER_ID_MAX);
    }
}
