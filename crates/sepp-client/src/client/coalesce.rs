//! Coalescing: concurrent `enqueue` / `enqueue_batch` calls of one client (and its
//! clones) share `EnqueueBatch` calls.
//!
//! A best-effort batch answers every job on its own, so the jobs of several callers can travel
//! in one call and each caller still gets exactly its own results. No timer is involved:
//!
//! * a caller puts its jobs in its lane's queue; the first caller to find no flush pending
//!   spawns one (a task, which runs once the callers already running have had their turn),
//!   and every caller that queues before it runs joins it;
//! * the flush sends what is waiting, one call per group, while fewer than
//!   [`MAX_CALLS_IN_FLIGHT`] calls of the lane are in flight; otherwise the jobs wait, and the
//!   moment a call finishes every waiting caller's jobs go out together (at most
//!   [`MAX_JOBS_PER_CALL`] jobs and about [`MAX_BYTES_PER_CALL`] bytes per call; one caller's
//!   batch is never split);
//! * jobs that all carry an idempotency key and jobs that do not wait in separate lanes,
//!   because their calls are retried under different rules (each lane's calls are retried
//!   exactly as a single caller's call of that kind would be).
//!
//! A lone caller's jobs go out at once. A coalesced call that the server refuses as a whole
//! with INVALID_ARGUMENT (its batch limit may be lower than ours) is resent as one call per
//! caller, so every caller sees what it would have seen alone. Any other failure of a shared
//! call is every sharer's failure, as it would have been had each sent its own call at that
//! moment. A caller dropped while its jobs still wait takes them back unsent.
//!
//! Acks coalesce the same way in one lane ([`AckPipeline`]), with no limit on calls in flight:
//! the first ack to find no flush pending spawns one, and every ack queued before it runs
//! joins it. A flush of one ack sends a plain `Ack`; of several, one `AckBatch` (at most
//! [`MAX_ACKS_PER_CALL`] items), retried as a whole under the retry policy exactly as each
//! `Ack` would be (a repeated ack is as harmless as a repeated `Ack`). The server answers each
//! item as that `Ack` alone, so every caller gets what its own call would have given. A server
//! without `AckBatch` (it answers UNIMPLEMENTED, or its `GetServerInfo` lacks the feature
//! `ack_batch`) gets plain `Ack` calls from then on; a batch refused as a whole with
//! INVALID_ARGUMENT (a lower batch limit) is resent as one `Ack` per caller.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use prost::Message;
use prost::bytes::{Bytes, BytesMut};
use tokio::sync::oneshot;
use tonic::Code;

use super::retry::RetryScope;
use super::{ClientError, SeppClient, wire};
use crate::proto as pb;

/// The most coalesced calls of one lane in flight at once: one being answered while the next
/// gathers the callers that came meanwhile. Measured with 50 producers on one client against a
/// `sync_all` server on 2 cores, 2 gave the same rate as 4 at about a fifth less server CPU per
/// job (fewer, larger calls and cycles); 1 left the server idle between calls.
pub(crate) const MAX_CALLS_IN_FLIGHT: usize = 2;
/// The server's default batch limit (`limits.max_enqueue_batch`) is 256: a coalesced call never
/// carries more (a smaller limit is handled by resending per caller).
pub(crate) const MAX_JOBS_PER_CALL: usize = 256;
/// Far under the server's default message limit (16 MiB).
pub(crate) const MAX_BYTES_PER_CALL: usize = 4 * 1024 * 1024;

/// The most acks in one `AckBatch` call (the server's default batch limit is 256).
pub(crate) const MAX_ACKS_PER_CALL: usize = 256;

type Reply = Result<Vec<pb::JobResult>, ClientError>;

/// One caller's jobs, encoded as an `EnqueueBatchRequest` of its own: the encodings of two
/// requests of repeated jobs, joined, are the encoding of one request with the jobs of both, so
/// a coalesced call sends the callers' bytes joined and a resend per caller sends each one's
/// own, with no copy of the messages.
struct Waiting {
    body: Bytes,
    jobs: usize,
    reply: oneshot::Sender<Reply>,
}

#[derive(Default)]
struct Lane {
    in_flight: usize,
    flush_scheduled: bool,
    waiting: VecDeque<Waiting>,
}

/// The two lanes: keyed (every job has an idempotency key) and keyless.
#[derive(Default)]
pub(crate) struct EnqueuePipeline {
    lanes: [Mutex<Lane>; 2],
}

fn lane_index(keyed: bool) -> usize {
    usize::from(keyed)
}

fn scope(keyed: bool) -> RetryScope {
    if keyed { RetryScope::Transient } else { RetryScope::KeylessEnqueue }
}

/// The results of `jobs`, in order, or the failure of the call that carried them.
pub(crate) async fn submit(
    client: &SeppClient,
    pipeline: &Arc<EnqueuePipeline>,
    jobs: Vec<pb::EnqueueRequest>,
    keyed: bool,
) -> Reply {
    let (reply, answer) = oneshot::channel();
    let count = jobs.len();
    let body = Bytes::from(pb::EnqueueBatchRequest { jobs }.encode_to_vec());
    let spawn_flush = {
        let mut lane = pipeline.lanes[lane_index(keyed)].lock().expect("enqueue lane lock");
        lane.waiting.push_back(Waiting { body, jobs: count, reply });
        !std::mem::replace(&mut lane.flush_scheduled, true)
    };
    if spawn_flush {
        let client = client.clone();
        let pipeline = pipeline.clone();
        tokio::spawn(async move {
            pipeline.lanes[lane_index(keyed)].lock().expect("enqueue lane lock").flush_scheduled = false;
            flush(&client, &pipeline, keyed);
        });
    }
    match answer.await {
        Ok(reply) => reply,
        // The task carrying the call ended without answering: only a runtime shutting down
        // drops it.
        Err(_) => {
            Err(ClientError::Transport("the call carrying these jobs was dropped (runtime shutting down?)".to_owned()))
        }
    }
}

/// Sends what waits in the lane, while the lane has calls to spare.
fn flush(client: &SeppClient, pipeline: &Arc<EnqueuePipeline>, keyed: bool) {
    let mut lane = pipeline.lanes[lane_index(keyed)].lock().expect("enqueue lane lock");
    // A caller dropped meanwhile has taken its jobs back.
    lane.waiting.retain(|waiting| !waiting.reply.is_closed());
    while !lane.waiting.is_empty() && lane.in_flight < MAX_CALLS_IN_FLIGHT {
        let group = take_group(&mut lane.waiting);
        lane.in_flight += 1;
        let client = client.clone();
        let pipeline = pipeline.clone();
        tokio::spawn(async move {
            deliver(&client, keyed, group).await;
            pipeline.lanes[lane_index(keyed)].lock().expect("enqueue lane lock").in_flight -= 1;
            flush(&client, &pipeline, keyed);
        });
    }
}

/// The longest run of waiting callers that fits one call (always at least one caller).
fn take_group(waiting: &mut VecDeque<Waiting>) -> Vec<Waiting> {
    let mut group = Vec::new();
    let (mut jobs, mut bytes) = (0, 0);
    while let Some(next) = waiting.front() {
        let fits = jobs + next.jobs <= MAX_JOBS_PER_CALL && bytes + next.body.len() <= MAX_BYTES_PER_CALL;
        if !group.is_empty() && !fits {
            break;
        }
        jobs += next.jobs;
        bytes += next.body.len();
        group.push(waiting.pop_front().expect("front exists"));
    }
    group
}

async fn deliver(client: &SeppClient, keyed: bool, group: Vec<Waiting>) {
    let counts: Vec<usize> = group.iter().map(|waiting| waiting.jobs).collect();
    let total: usize = counts.iter().sum();
    let single = group.len() == 1;
    let body = if single {
        group[0].body.clone()
    } else {
        let mut joined = BytesMut::with_capacity(group.iter().map(|waiting| waiting.body.len()).sum());
        for waiting in &group {
            joined.extend_from_slice(&waiting.body);
        }
        joined.freeze()
    };
    let (bodies, replies): (Vec<Bytes>, Vec<_>) =
        group.into_iter().map(|waiting| (waiting.body, waiting.reply)).unzip();
    let (result, _) = client.unary_encoded(wire::ENQUEUE_BATCH, Some(scope(keyed)), client.rpc_timeout, body).await;
    let results = match result {
        Ok(response) => response.into_inner().results,
        Err(status) if status.code() == Code::InvalidArgument && !single => {
            // The server's batch limit may be lower than ours: one call per caller, as each
            // would have sent alone.
            let mut calls = tokio::task::JoinSet::new();
            for ((body, reply), count) in bodies.into_iter().zip(replies).zip(counts) {
                let client = client.clone();
                calls.spawn(async move {
                    let (result, _) =
                        client.unary_encoded(wire::ENQUEUE_BATCH, Some(scope(keyed)), client.rpc_timeout, body).await;
                    let _ = reply.send(split_one(result.map(|response| response.into_inner().results), count));
                });
            }
            while calls.join_next().await.is_some() {}
            return;
        }
        Err(status) => {
            let error = ClientError::from(status);
            for reply in replies {
                let _ = reply.send(Err(error.clone()));
            }
            return;
        }
    };
    if results.len() != total {
        let error = ClientError::BatchResultCountMismatch { expected: total, got: results.len() };
        for reply in replies {
            let _ = reply.send(Err(error.clone()));
        }
        return;
    }
    let mut results = results.into_iter();
    for (reply, count) in replies.into_iter().zip(counts) {
        let _ = reply.send(Ok(results.by_ref().take(count).collect()));
    }
}

fn split_one(result: Result<Vec<pb::JobResult>, tonic::Status>, expected: usize) -> Reply {
    let results = result?;
    if results.len() != expected {
        return Err(ClientError::BatchResultCountMismatch { expected, got: results.len() });
    }
    Ok(results)
}

/// An ack's answer, as its own call would have given it, and the attempts it took.
pub(crate) type AckReply = (Result<(), tonic::Status>, u32);

// `AckPipeline::batch`: 0 until known.
const BATCH_SUPPORTED: u8 = 1;
const BATCH_UNSUPPORTED: u8 = 2;

#[derive(Default)]
struct AckState {
    flush_scheduled: bool,
    waiting: Vec<(pb::AckRequest, oneshot::Sender<AckReply>)>,
}

/// The acks waiting for the next flush, and whether the server takes `AckBatch`.
#[derive(Default)]
pub(crate) struct AckPipeline {
    state: Mutex<AckState>,
    batch: std::sync::atomic::AtomicU8,
}

impl AckPipeline {
    /// What the server's features say about `AckBatch`.
    pub(crate) fn learned_features(&self, features: &[String]) {
        let batch =
            if features.iter().any(|feature| feature == "ack_batch") { BATCH_SUPPORTED } else { BATCH_UNSUPPORTED };
        self.batch.store(batch, std::sync::atomic::Ordering::Relaxed);
    }

    fn batch_unsupported(&self) -> bool {
        self.batch.load(std::sync::atomic::Ordering::Relaxed) == BATCH_UNSUPPORTED
    }
}

/// Sends `request`'s ack, alone or with the acks waiting with it.
pub(crate) async fn submit_ack(client: &SeppClient, pipeline: &Arc<AckPipeline>, request: pb::AckRequest) -> AckReply {
    if pipeline.batch_unsupported() {
        return send_ack(client, request).await;
    }
    let (reply, answer) = oneshot::channel();
    let spawn_flush = {
        let mut state = pipeline.state.lock().expect("ack pipeline lock");
        state.waiting.push((request, reply));
        !std::mem::replace(&mut state.flush_scheduled, true)
    };
    if spawn_flush {
        let client = client.clone();
        let pipeline = pipeline.clone();
        tokio::spawn(async move {
            let waiting = {
                let mut state = pipeline.state.lock().expect("ack pipeline lock");
                state.flush_scheduled = false;
                std::mem::take(&mut state.waiting)
            };
            // An ack dropped meanwhile is taken back.
            let mut waiting: Vec<_> = waiting.into_iter().filter(|(_, reply)| !reply.is_closed()).collect();
            while !waiting.is_empty() {
                let rest = waiting.split_off(waiting.len().min(MAX_ACKS_PER_CALL));
                let group = std::mem::replace(&mut waiting, rest);
                let (client, pipeline) = (client.clone(), pipeline.clone());
                tokio::spawn(async move { deliver_acks(&client, &pipeline, group).await });
            }
        });
    }
    match answer.await {
        Ok(reply) => reply,
        Err(_) => (Err(tonic::Status::cancelled("the call carrying this ack was dropped (runtime shutting down?)")), 1),
    }
}

async fn send_ack(client: &SeppClient, request: pb::AckRequest) -> AckReply {
    let (result, attempts) = client.unary(wire::ACK, Some(RetryScope::Transient), client.rpc_timeout, request).await;
    (result.map(drop), attempts)
}

/// Each ack as its own call, concurrently.
async fn send_acks_alone(client: &SeppClient, group: Vec<(pb::AckRequest, oneshot::Sender<AckReply>)>) {
    let mut calls = tokio::task::JoinSet::new();
    for (request, reply) in group {
        let client = client.clone();
        calls.spawn(async move {
            let _ = reply.send(send_ack(&client, request).await);
        });
    }
    while calls.join_next().await.is_some() {}
}

async fn deliver_acks(
    client: &SeppClient,
    pipeline: &AckPipeline,
    group: Vec<(pb::AckRequest, oneshot::Sender<AckReply>)>,
) {
    if group.len() == 1 || pipeline.batch_unsupported() {
        return send_acks_alone(client, group).await;
    }
    let request = pb::AckBatchRequest { acks: group.iter().map(|(request, _)| request.clone()).collect() };
    let (result, attempts) =
        client.unary(wire::ACK_BATCH, Some(RetryScope::Transient), client.rpc_timeout, request).await;
    let results = match result {
        Ok(response) => response.into_inner().results,
        Err(status) if status.code() == Code::Unimplemented => {
            pipeline.batch.store(BATCH_UNSUPPORTED, std::sync::atomic::Ordering::Relaxed);
            return send_acks_alone(client, group).await;
        }
        Err(status) if status.code() == Code::InvalidArgument => return send_acks_alone(client, group).await,
        Err(status) => {
            for (_, reply) in group {
                let _ = reply.send((Err(status.clone()), attempts));
            }
            return;
        }
    };
    if results.len() != group.len() {
        let status =
            tonic::Status::internal(format!("AckBatch answered {} results for {} acks", results.len(), group.len()));
        for (_, reply) in group {
            let _ = reply.send((Err(status.clone()), attempts));
        }
        return;
    }
    for ((_, reply), result) in group.into_iter().zip(results) {
        let outcome = match result.outcome {
            Some(pb::ack_result::Outcome::Success(_)) => Ok(()),
            Some(pb::ack_result::Outcome::Error(error)) => {
                Err(tonic::Status::new(Code::from_i32(error.code), error.message))
            }
            None => Err(tonic::Status::internal("an AckBatch result without an outcome")),
        };
        let _ = reply.send((outcome, attempts));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(jobs: usize) -> Waiting {
        let (reply, _) = oneshot::channel();
        Waiting { body: Bytes::from(vec![0; jobs]), jobs, reply }
    }

    #[test]
    fn a_group_never_splits_a_caller_and_stays_under_the_job_cap() {
        let mut queue: VecDeque<Waiting> = [200, 50, 10, 300].into_iter().map(waiting).collect();
        assert_eq!(take_group(&mut queue).iter().map(|w| w.jobs).collect::<Vec<_>>(), [200, 50]);
        assert_eq!(take_group(&mut queue).iter().map(|w| w.jobs).collect::<Vec<_>>(), [10]);
        // One caller over the cap still goes, alone (the server judges its batch).
        assert_eq!(take_group(&mut queue).iter().map(|w| w.jobs).collect::<Vec<_>>(), [300]);
        assert!(queue.is_empty());
    }

    #[test]
    fn callers_encodings_joined_are_one_batch_of_all_their_jobs_in_order() {
        let job = |kind: &str| pb::EnqueueRequest { queue: "q".into(), job_type: kind.into(), ..Default::default() };
        let first = pb::EnqueueBatchRequest { jobs: vec![job("a"), job("b")] }.encode_to_vec();
        let second = pb::EnqueueBatchRequest { jobs: vec![job("c")] }.encode_to_vec();
        let joined = pb::EnqueueBatchRequest::decode([first, second].concat().as_slice()).unwrap();
        let kinds: Vec<&str> = joined.jobs.iter().map(|job| job.job_type.as_str()).collect();
        assert_eq!(kinds, ["a", "b", "c"]);
    }
}
