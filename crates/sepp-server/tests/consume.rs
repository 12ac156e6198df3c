//! The Consume stream against the real binary (docs/protocol.md#consume): jobs pushed within
//! the worker's credits and as they become ready, settles answered with the unary calls'
//! outcomes, queue limits that credits cannot get around, cancels pushed to the stream that
//! holds the job, refused openings and credits, a half-close, and a shutdown.

mod common;

use std::time::Duration;

use common::*;
use sepp_server::proto::v1 as pb;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Streaming};

const WAIT: Duration = Duration::from_secs(20);

/// A worker's end of a stream.
struct Stream {
    requests: mpsc::Sender<pb::ConsumeRequest>,
    answers: Streaming<pb::ConsumeResponse>,
}

fn opening(queues: &[&str], credits: u32) -> pb::ConsumeRequest {
    pb::ConsumeRequest {
        open: Some(pb::ConsumeOpen {
            queues: queues.iter().map(|queue| queue.to_string()).collect(),
            lease_duration: Some(prost_types::Duration { seconds: 60, nanos: 0 }),
            worker_id: Some("stream-worker".into()),
            credits,
        }),
        ..Default::default()
    }
}

async fn open(server: &TestServer, first: pb::ConsumeRequest) -> Result<Stream, tonic::Status> {
    let (requests, outgoing) = mpsc::channel(16);
    requests.send(first).await.unwrap();
    let mut client = server.raw_client().await;
    let answers = client.consume(ReceiverStream::new(outgoing)).await?.into_inner();
    Ok(Stream { requests, answers })
}

impl Stream {
    async fn send(&self, request: pb::ConsumeRequest) {
        self.requests.send(request).await.expect("the stream takes the message");
    }

    /// The next message from the server.
    async fn next(&mut self) -> pb::ConsumeResponse {
        tokio::time::timeout(WAIT, self.answers.message())
            .await
            .expect("a message within the wait")
            .expect("the stream did not fail")
            .expect("the stream did not end")
    }

    /// Messages until `count` jobs have been pushed (settle results on the way are kept too).
    async fn jobs(&mut self, count: usize) -> (Vec<pb::Job>, Vec<pb::ConsumeResult>) {
        let (mut jobs, mut results) = (Vec::new(), Vec::new());
        while jobs.len() < count {
            let message = self.next().await;
            jobs.extend(message.jobs);
            results.extend(message.results);
        }
        (jobs, results)
    }

    /// Messages until `count` settle results have come.
    async fn results(&mut self, count: usize) -> Vec<pb::ConsumeResult> {
        let mut results = Vec::new();
        while results.len() < count {
            let message = self.next().await;
            assert!(message.jobs.is_empty(), "no credit was left for jobs: {message:?}");
            results.extend(message.results);
        }
        results.sort_by_key(|result| result.id);
        results
    }

    /// How the stream ends: `Ok(())` for a clean end, or its status.
    async fn end(mut self) -> Result<(), tonic::Status> {
        loop {
            match tokio::time::timeout(WAIT, self.answers.message()).await.expect("the stream ends within the wait") {
                Ok(Some(_)) => continue,
                Ok(None) => return Ok(()),
                Err(status) => return Err(status),
            }
        }
    }
}

fn ack(id: u64, job: &pb::Job) -> pb::ConsumeSettle {
    pb::ConsumeSettle {
        id,
        op: Some(pb::consume_settle::Op::Ack(pb::AckRequest {
            job_id: job.id.clone(),
            attempt: job.attempt,
            worker_id: None,
        })),
    }
}

fn settles(credits: u32, settles: Vec<pb::ConsumeSettle>) -> pb::ConsumeRequest {
    pb::ConsumeRequest { credits, settles, ..Default::default() }
}

fn error(result: &pb::ConsumeResult) -> Option<&pb::CallStatus> {
    match &result.outcome {
        Some(pb::consume_result::Outcome::Error(status)) => Some(status),
        _ => None,
    }
}

#[tokio::test]
async fn the_server_offers_the_stream_and_says_its_credit_limit() {
    if is_reference() {
        return; // 0.1 has no Consume.
    }
    let server = TestServer::start("");
    let info = server.raw_client().await.get_server_info(pb::GetServerInfoRequest {}).await.unwrap().into_inner();
    assert!(info.features.iter().any(|feature| feature == "consume"), "{:?}", info.features);
    assert_eq!(info.max_consume_credits, 10_000);
}

#[tokio::test]
async fn jobs_are_pushed_within_the_credits_and_settles_are_answered_as_the_unary_calls_answer() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("");
    let mut producer = server.raw_client().await;
    for _ in 0..5 {
        enqueue_one(&mut producer, job("work", "t")).await;
    }
    let mut stream = open(&server, opening(&["work"], 2)).await.expect("opened");
    let (first, _) = stream.jobs(2).await;
    assert_eq!(first.len(), 2, "two credits, two jobs");
    // The other three are still there for anyone: the stream took only what it was granted.
    let mut other = server.raw_client().await;
    let mut peek = reserve(&["work"], 60_000);
    peek.max_jobs = Some(10);
    let taken = other.reserve(peek).await.unwrap().into_inner().jobs;
    assert_eq!(taken.len(), 3, "three left for a unary reserve");

    // Acks of both with no new credit: two results, no job.
    stream.send(settles(0, vec![ack(1, &first[0]), ack(2, &first[1])])).await;
    let results = stream.results(2).await;
    for (result, job) in results.iter().zip(&first) {
        match &result.outcome {
            Some(pb::consume_result::Outcome::Ack(answer)) => assert_eq!(answer.job_id, job.id),
            other => panic!("ack {}: {other:?}", result.id),
        }
    }

    // An ack of a job already acked, and one with the wrong attempt, fail as the unary Ack does.
    stream
        .send(settles(
            0,
            vec![ack(3, &first[0]), ack(4, &pb::Job { attempt: taken[0].attempt + 1, ..taken[0].clone() })],
        ))
        .await;
    let results = stream.results(2).await;
    let unary_again = other
        .ack(pb::AckRequest { job_id: first[0].id.clone(), attempt: first[0].attempt, worker_id: None })
        .await
        .unwrap_err();
    let unary_attempt = other
        .ack(pb::AckRequest { job_id: taken[0].id.clone(), attempt: taken[0].attempt + 1, worker_id: None })
        .await
        .unwrap_err();
    for (result, unary) in results.iter().zip([unary_again, unary_attempt]) {
        let status = error(result).unwrap_or_else(|| panic!("settle {} should fail: {result:?}", result.id));
        assert_eq!(status.code, unary.code() as i32, "settle {}", result.id);
        assert_eq!(status.message, unary.message());
        assert!(!status.cancelled);
    }

    // A nack and an extend of jobs leased elsewhere: the stream settles any lease.
    let nack = pb::ConsumeSettle {
        id: 5,
        op: Some(pb::consume_settle::Op::Nack(pb::NackRequest {
            job_id: taken[1].id.clone(),
            attempt: taken[1].attempt,
            reason: Some("try later".into()),
            retry: None,
            worker_id: None,
        })),
    };
    let extend = pb::ConsumeSettle {
        id: 6,
        op: Some(pb::consume_settle::Op::Extend(pb::ExtendRequest {
            job_id: taken[2].id.clone(),
            attempt: taken[2].attempt,
            lease_duration: Some(prost_types::Duration { seconds: 120, nanos: 0 }),
            worker_id: None,
        })),
    };
    stream.send(settles(0, vec![nack, extend])).await;
    let results = stream.results(2).await;
    match &results[0].outcome {
        Some(pb::consume_result::Outcome::Nack(answer)) => {
            assert_eq!(answer.job_id, taken[1].id);
            assert!(!answer.dead_lettered);
        }
        other => panic!("nack: {other:?}"),
    }
    match &results[1].outcome {
        Some(pb::consume_result::Outcome::Extend(answer)) => {
            assert_eq!(answer.job_id, taken[2].id);
            assert!(answer.lease_expires_at.is_some());
        }
        other => panic!("extend: {other:?}"),
    }
}

#[tokio::test]
async fn a_job_is_pushed_as_soon_as_it_is_enqueued() {
    if is_reference() {
        return;
    }
    let server = TestServer::start(&watching_parked(""));
    let mut stream = open(&server, opening(&["later"], 1)).await.expect("opened");
    server.wait_parked(1).await;
    let mut producer = server.raw_client().await;
    let id = enqueue_one(&mut producer, job("later", "t")).await;
    let (jobs, _) = stream.jobs(1).await;
    assert_eq!(jobs[0].id, id);
    assert_eq!(jobs[0].attempt, 1);
}

#[tokio::test]
async fn credits_never_lease_past_a_queue_in_flight_limit() {
    if is_reference() {
        return;
    }
    let server = TestServer::start(&watching_parked("[[queues]]\nname = \"db\"\nmax_in_flight = 2\n"));
    let mut producer = server.raw_client().await;
    for _ in 0..5 {
        enqueue_one(&mut producer, job("db", "t")).await;
    }
    let mut stream = open(&server, opening(&["db"], 50)).await.expect("opened");
    let (held, _) = stream.jobs(2).await;
    assert_eq!(held.len(), 2, "fifty credits, two allowed in flight");
    // The stream's next reserve waits behind the limit.
    server.wait_parked(1).await;
    let mut other = server.raw_client().await;
    let mut peek = reserve(&["db"], 60_000);
    peek.max_jobs = Some(10);
    assert!(other.reserve(peek).await.unwrap().into_inner().jobs.is_empty(), "the limit holds for everyone");
    // One ack frees one slot: exactly one more job is pushed.
    stream.send(settles(0, vec![ack(1, &held[0])])).await;
    let (more, results) = stream.jobs(1).await;
    assert_eq!(more.len(), 1, "{more:?}");
    assert!(results.len() <= 1);
}

#[tokio::test]
async fn a_cancel_is_pushed_to_the_stream_that_holds_the_job() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("");
    let mut producer = server.raw_client().await;
    let id = enqueue_one(&mut producer, job("c", "t")).await;
    let mut stream = open(&server, opening(&["c"], 1)).await.expect("opened");
    let (jobs, _) = stream.jobs(1).await;
    let cancelled = producer
        .cancel_job(pb::CancelJobRequest { job_id: id.clone(), reason: Some("not needed".into()) })
        .await
        .unwrap()
        .into_inner();
    assert!(cancelled.was_leased);
    let told = stream.next().await;
    assert_eq!(told.cancelled, vec![id.clone()], "{told:?}");
    // Its worker's ack then fails as the unary Ack of a cancelled lease does.
    stream.send(settles(0, vec![ack(7, &jobs[0])])).await;
    let results = stream.results(1).await;
    let status = error(&results[0]).expect("the ack of a cancelled job fails");
    assert_eq!(status.code, Code::NotFound as i32);
    assert!(status.cancelled, "{status:?}");
}

#[tokio::test]
async fn bad_openings_and_too_many_credits_end_the_stream_invalid_argument() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("");
    let no_open = open(&server, settles(1, Vec::new())).await.err().expect("refused");
    assert_eq!(no_open.code(), Code::InvalidArgument, "{no_open:?}");
    let no_queues = open(&server, opening(&[], 1)).await.err().expect("refused");
    assert_eq!(no_queues.code(), Code::InvalidArgument, "{no_queues:?}");
    let too_many = open(&server, opening(&["q"], 10_001)).await.err().expect("refused");
    assert_eq!(too_many.code(), Code::InvalidArgument, "{too_many:?}");
    assert!(too_many.message().contains("max_consume_credits"), "{too_many:?}");

    let stream = open(&server, opening(&["q"], 10_000)).await.expect("the limit itself is allowed");
    stream.send(settles(1, Vec::new())).await;
    let status = stream.end().await.expect_err("one credit past the limit");
    assert_eq!(status.code(), Code::InvalidArgument);

    let stream = open(&server, opening(&["q"], 1)).await.expect("opened");
    stream.send(opening(&["q"], 1)).await;
    let status = stream.end().await.expect_err("a second opening");
    assert_eq!(status.code(), Code::InvalidArgument);
}

#[tokio::test]
async fn a_half_closed_stream_answers_its_settles_and_ends_and_its_leases_stay_leased() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("");
    let mut producer = server.raw_client().await;
    for _ in 0..2 {
        enqueue_one(&mut producer, job("h", "t")).await;
    }
    let mut stream = open(&server, opening(&["h"], 2)).await.expect("opened");
    let (jobs, _) = stream.jobs(2).await;
    stream.send(settles(0, vec![ack(1, &jobs[0])])).await;
    let Stream { requests, mut answers } = stream;
    drop(requests);
    let mut results = Vec::new();
    while let Some(message) = tokio::time::timeout(WAIT, answers.message()).await.unwrap().expect("ends cleanly") {
        results.extend(message.results);
    }
    assert_eq!(results.len(), 1);
    assert!(error(&results[0]).is_none(), "{results:?}");
    // The other lease is still held: its worker may still settle it with a unary call.
    producer
        .ack(pb::AckRequest { job_id: jobs[1].id.clone(), attempt: jobs[1].attempt, worker_id: None })
        .await
        .expect("the lease outlives the stream");
}

#[tokio::test]
async fn a_shutdown_ends_the_stream_unavailable_and_the_server_stops() {
    if is_reference() {
        return;
    }
    let mut server = TestServer::start(&watching_parked(""));
    let stream = open(&server, opening(&["s"], 1)).await.expect("opened");
    server.wait_parked(1).await;
    server.sigterm();
    let status = stream.end().await.expect_err("a shutdown ends the stream");
    assert_eq!(status.code(), Code::Unavailable, "{status:?}");
    assert!(server.wait_exit(WAIT).success());
}
