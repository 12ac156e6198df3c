//! Following a cluster's leader, against in-process stub nodes (tonic servers of the generated
//! `sepp.v1` QueueService on 127.0.0.1:0, from `$OUT_DIR/stub`): a node that is not the leader
//! answers UNAVAILABLE naming the leader in `sepp-leader`, and each stub counts the calls it
//! got. No test sleeps: they wait for what the stubs record, or for a worker's handler.

use std::collections::VecDeque;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use sepp_client::client::{ClientError, EnqueueError, ReserveError, RetryPolicy, SeppClient};
use sepp_client::worker::Worker;
use sepp_client::{EnqueueRequest, JobCtx, Payload, ReserveOptions};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};
use tonic::codegen::tokio_stream;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status};

#[allow(clippy::all, clippy::pedantic, dead_code, missing_docs)]
mod pb {
    include!(concat!(env!("OUT_DIR"), "/stub/sepp.v1.rs"));
}

use pb::queue_service_server::{QueueService, QueueServiceServer};

/// How long a test waits for something a stub or handler signals before it fails.
const WAIT: Duration = Duration::from_secs(30);
const LEASE: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------------
// Stub nodes
// ---------------------------------------------------------------------------------------------

/// What a stub node answers every call with.
#[derive(Clone, Debug)]
enum Answer {
    /// Serves the call, as the leader does.
    Serve,
    /// UNAVAILABLE naming this leader address, as a follower does.
    Redirect(String),
    /// UNAVAILABLE naming no leader (an election is running, or the node lost its leadership).
    Unavailable,
}

/// One call a stub got.
#[derive(Clone, Debug)]
struct Call {
    method: &'static str,
    authorization: Option<String>,
}

#[derive(Debug)]
struct State {
    answer: Answer,
    calls: Vec<Call>,
    /// Handed out by the next reserve that is served, or when a Consume stream opens.
    jobs: VecDeque<pb::Job>,
    /// Answers Consume UNIMPLEMENTED, as a server older than the stream does.
    no_consume: bool,
}

#[derive(Clone)]
struct Stub {
    state: Arc<Mutex<State>>,
    events: mpsc::UnboundedSender<&'static str>,
}

impl Stub {
    fn answer<T>(
        &self,
        method: &'static str,
        metadata: &MetadataMap,
        serve: impl FnOnce(&mut State) -> T,
    ) -> Result<Response<T>, Status> {
        let mut state = self.state.lock().unwrap();
        let authorization = metadata.get("authorization").map(|value| value.to_str().unwrap().to_owned());
        state.calls.push(Call { method, authorization });
        let _ = self.events.send(method);
        match state.answer.clone() {
            Answer::Serve => Ok(Response::new(serve(&mut state))),
            Answer::Redirect(leader) => {
                let mut status =
                    Status::unavailable(format!("this node is not the cluster's leader; the leader is at {leader}"));
                status.metadata_mut().insert("sepp-leader", leader.parse().unwrap());
                Err(status)
            }
            Answer::Unavailable => Err(Status::unavailable("this node knows no leader (an election is running)")),
        }
    }
}

#[tonic::async_trait]
impl QueueService for Stub {
    async fn enqueue_batch(
        &self,
        request: Request<pb::EnqueueBatchRequest>,
    ) -> Result<Response<pb::EnqueueBatchResponse>, Status> {
        let jobs = request.get_ref().jobs.len();
        self.answer("EnqueueBatch", request.metadata(), |_| pb::EnqueueBatchResponse {
            results: (0..jobs)
                .map(|index| pb::JobResult {
                    outcome: Some(pb::job_result::Outcome::Success(pb::EnqueueResponse {
                        job_id: format!("job-{index}"),
                        deduplicated: false,
                    })),
                })
                .collect(),
        })
    }

    async fn reserve(&self, request: Request<pb::ReserveRequest>) -> Result<Response<pb::ReserveResponse>, Status> {
        self.answer("Reserve", request.metadata(), |state| pb::ReserveResponse { jobs: state.jobs.drain(..).collect() })
    }

    async fn ack(&self, request: Request<pb::AckRequest>) -> Result<Response<pb::AckResponse>, Status> {
        let job_id = request.get_ref().job_id.clone();
        self.answer("Ack", request.metadata(), |_| pb::AckResponse { job_id })
    }

    /// The stream of a leader: pushes the jobs given when it is opened and answers acks; a
    /// follower's (or a node in an election) opens and then ends UNAVAILABLE, as sepp does.
    async fn consume(
        &self,
        request: Request<tonic::Streaming<pb::ConsumeRequest>>,
    ) -> Result<Response<tonic::codegen::BoxStream<pb::ConsumeResponse>>, Status> {
        let metadata = request.metadata().clone();
        if self.state.lock().unwrap().no_consume {
            return Err(Status::unimplemented("Consume"));
        }
        if let Err(status) = self.answer("Consume", &metadata, |_| ()) {
            return Ok(Response::new(Box::pin(tokio_stream::once(Err(status)))));
        }
        let mut inbound = request.into_inner();
        let stub = self.clone();
        let (responses, stream) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(message)) = inbound.message().await {
                let mut response = pb::ConsumeResponse::default();
                if message.open.is_some() {
                    response.jobs = stub.state.lock().unwrap().jobs.drain(..).collect();
                }
                for settle in message.settles {
                    if let Some(pb::consume_settle::Op::Ack(ack)) = settle.op {
                        let _ = stub.answer("ConsumeAck", &metadata, |_| ());
                        let outcome = pb::consume_result::Outcome::Ack(pb::AckResponse { job_id: ack.job_id });
                        response.results.push(pb::ConsumeResult { id: settle.id, outcome: Some(outcome) });
                    }
                }
                if responses.send(Ok(response)).is_err() {
                    break;
                }
            }
        });
        Ok(Response::new(Box::pin(tokio_stream::wrappers::UnboundedReceiverStream::new(stream))))
    }

    async fn drain_dead_letters(
        &self,
        request: Request<pb::DrainDeadLettersRequest>,
    ) -> Result<Response<pb::DrainDeadLettersResponse>, Status> {
        self.answer("DrainDeadLetters", request.metadata(), |_| pb::DrainDeadLettersResponse { records: Vec::new() })
    }
}

/// A running stub node; stopped when dropped.
struct Node {
    /// `127.0.0.1:<port>`.
    addr: String,
    stub: Stub,
    events: mpsc::UnboundedReceiver<&'static str>,
    _stop: oneshot::Sender<()>,
}

impl Node {
    async fn start(answer: Answer) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (events_tx, events) = mpsc::unbounded_channel();
        let state = State { answer, calls: Vec::new(), jobs: VecDeque::new(), no_consume: false };
        let stub = Stub { state: Arc::new(Mutex::new(state)), events: events_tx };
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tonic::transport::Server::builder().add_service(QueueServiceServer::new(stub.clone()));
        tokio::spawn(server.serve_with_incoming_shutdown(
            tonic::transport::server::TcpIncoming::from(listener),
            async move {
                let _ = stopped.await;
            },
        ));
        Self { addr, stub, events, _stop: stop }
    }

    fn set(&self, answer: Answer) {
        self.stub.state.lock().unwrap().answer = answer;
    }

    fn give(&self, job: pb::Job) {
        self.stub.state.lock().unwrap().jobs.push_back(job);
    }

    fn calls(&self) -> Vec<Call> {
        self.stub.state.lock().unwrap().calls.clone()
    }

    fn methods(&self) -> Vec<&'static str> {
        self.calls().iter().map(|call| call.method).collect()
    }

    /// `http://127.0.0.1:<port>`.
    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Waits until this node got a call of `method`.
    async fn called(&mut self, method: &str) {
        loop {
            match tokio::time::timeout(WAIT, self.events.recv()).await {
                Ok(Some(got)) if got == method => return,
                Ok(Some(_)) => continue,
                Ok(None) => panic!("{}: the stub is gone", self.addr),
                Err(_) => panic!("{}: no {method} call arrived", self.addr),
            }
        }
    }
}

/// A TCP proxy in front of a node, standing for it: `stop` makes the address refuse
/// connections, as a node that died does, and returns once the client has closed every
/// connection it had open (so its next call dials, and is refused).
struct Proxy {
    addr: String,
    stop: watch::Sender<bool>,
    accepting: JoinHandle<JoinSet<()>>,
}

impl Proxy {
    async fn start(upstream: String) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (stop, stopped) = watch::channel(false);
        let accepting = tokio::spawn(async move {
            let mut pipes = JoinSet::new();
            let mut stopping = stopped.clone();
            loop {
                tokio::select! {
                    _ = stopping.wait_for(|stop| *stop) => break,
                    accepted = listener.accept() => {
                        let (client, _) = accepted.unwrap();
                        pipes.spawn(pipe(client, upstream.clone(), stopped.clone()));
                    }
                }
            }
            pipes // the listener is dropped here: new connections are refused
        });
        Self { addr, stop, accepting }
    }

    async fn stop(self) {
        self.stop.send_replace(true);
        let mut pipes = tokio::time::timeout(WAIT, self.accepting).await.unwrap().unwrap();
        tokio::time::timeout(WAIT, async { while pipes.join_next().await.is_some() {} })
            .await
            .expect("the client closes its connections");
    }
}

/// Forwards one connection until stopped; then closes it and waits for the client to close its
/// end (its HTTP/2 connection is then gone).
async fn pipe(mut client: TcpStream, upstream: String, mut stop: watch::Receiver<bool>) {
    let mut server = TcpStream::connect(upstream).await.unwrap();
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
        _ = stop.wait_for(|stop| *stop) => {}
    }
    drop(server);
    let _ = client.shutdown().await;
    let mut buffer = [0; 4096];
    while let Ok(read) = client.read(&mut buffer).await {
        if read == 0 {
            break;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Every `tracing` event of the test process, formatted, for tests that look for a log line.
fn logs() -> &'static Mutex<Vec<u8>> {
    static LOGS: OnceLock<&'static Mutex<Vec<u8>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs: &'static Mutex<Vec<u8>> = Box::leak(Box::new(Mutex::new(Vec::new())));
        struct Writer(&'static Mutex<Vec<u8>>);
        impl Write for Writer {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || Writer(logs))
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("no other subscriber");
        logs
    })
}

fn logged(parts: &[&str]) -> bool {
    let logs = String::from_utf8_lossy(&logs().lock().unwrap()).into_owned();
    logs.lines().any(|line| parts.iter().all(|part| line.contains(part)))
}

fn job(queue: &str) -> EnqueueRequest {
    EnqueueRequest::new(queue, "send").unwrap().with_payload(Payload::new(b"hi".to_vec(), "text/plain"))
}

fn now_options() -> ReserveOptions {
    ReserveOptions::new(["emails"], LEASE).unwrap().with_wait_timeout(Duration::ZERO)
}

fn timestamp(at: SystemTime) -> prost_types::Timestamp {
    let since = at.duration_since(SystemTime::UNIX_EPOCH).unwrap();
    prost_types::Timestamp { seconds: since.as_secs() as i64, nanos: since.subsec_nanos() as i32 }
}

fn wire_job(id: &str) -> pb::Job {
    pb::Job {
        id: id.to_owned(),
        job_type: "send".to_owned(),
        queue: "emails".to_owned(),
        priority: 5,
        attempt: 1,
        max_attempts: 3,
        enqueued_at: Some(timestamp(SystemTime::now())),
        lease_expires_at: Some(timestamp(SystemTime::now() + LEASE)),
        ..Default::default()
    }
}

fn is_unavailable_transport(error: &ClientError) -> bool {
    matches!(error, ClientError::Transport(message) if message.contains("leader"))
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn an_enqueue_is_sent_to_the_leader_a_follower_names_and_later_calls_go_straight_there() {
    let _ = logs();
    let b = Node::start(Answer::Serve).await;
    let a = Node::start(Answer::Redirect(b.addr.clone())).await;
    let client = SeppClient::builder(a.url()).api_key("k3y").connect().await.unwrap();
    assert_eq!(client.retry_policy().max_attempts(), 1, "the default policy follows redirects too");

    let ack = client.enqueue(job("emails")).await.unwrap();
    assert_eq!(ack.job_id, "job-0");
    assert_eq!(a.methods(), ["EnqueueBatch"]);
    let calls = b.calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].method, "EnqueueBatch");
    // The leader's channel has the configured settings: the API key is still sent.
    assert_eq!(calls[0].authorization.as_deref(), Some("Bearer k3y"));
    assert!(
        logged(&["following the cluster leader", &format!("to={}", b.addr), &format!("from={}", a.addr)]),
        "the switch is logged at info"
    );

    // The next call, and a clone's, go to the leader directly.
    client.enqueue(job("emails")).await.unwrap();
    client.clone().enqueue(job("emails")).await.unwrap();
    assert_eq!(a.methods(), ["EnqueueBatch"], "the follower sees no second call");
    assert_eq!(b.methods(), ["EnqueueBatch"; 3]);
}

#[tokio::test]
async fn a_reserve_and_a_dead_letter_drain_follow_the_redirect_although_never_retried() {
    let b = Node::start(Answer::Serve).await;
    let a = Node::start(Answer::Redirect(b.addr.clone())).await;
    b.give(wire_job("j-1"));
    let client = SeppClient::connect(a.addr.clone()).await.unwrap();

    let jobs = client.reserve(&now_options()).await.unwrap().expect("the leader's job");
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].ctx.id, "j-1");
    // The job's lease is settled with the leader too.
    client.ack(&jobs[0].ctx).await.unwrap();
    assert_eq!(a.methods(), ["Reserve"]);
    assert_eq!(b.methods(), ["Reserve", "Ack"]);

    let drains = SeppClient::connect(a.addr.clone()).await.unwrap();
    assert!(drains.drain_dead_letters(None, 10).await.unwrap().is_empty());
    assert_eq!(a.methods(), ["Reserve", "DrainDeadLetters"]);
    assert_eq!(b.methods(), ["Reserve", "Ack", "DrainDeadLetters"]);
}

#[tokio::test]
async fn a_redirect_loop_gives_up_after_three_redirects_with_the_transport_error() {
    let a = Node::start(Answer::Serve).await;
    let b = Node::start(Answer::Redirect(a.addr.clone())).await;
    a.set(Answer::Redirect(b.addr.clone()));
    // Without a failover window: with one, the call would ride the loop as a failover.
    let no_failover = RetryPolicy::default().with_failover_window(Duration::ZERO);
    let client = SeppClient::builder(a.url()).retry_policy(no_failover).connect().await.unwrap();

    let error = client.enqueue(job("emails")).await.unwrap_err();
    assert!(matches!(&error, EnqueueError::Client(e) if is_unavailable_transport(e)), "{error:?}");
    // A, B, A, B: the first send and three redirects.
    assert_eq!(a.methods().len(), 2);
    assert_eq!(b.methods().len(), 2);

    // A reserve (not retried by the policy) gives up the same way.
    let error = client.reserve(&now_options()).await.unwrap_err();
    assert!(matches!(&error, ReserveError::Client(e) if is_unavailable_transport(e)), "{error:?}");
    assert_eq!(a.methods().len() + b.methods().len(), 8);

    // With retries, each attempt may follow three redirects again.
    let retrying = SeppClient::builder(a.url())
        .retry_policy(
            RetryPolicy::default()
                .with_max_attempts(2)
                .with_initial_backoff(Duration::from_millis(1))
                .with_failover_window(Duration::ZERO),
        )
        .connect()
        .await
        .unwrap();
    assert!(retrying.enqueue(job("emails")).await.is_err());
    assert_eq!(a.methods().len() + b.methods().len(), 16);
}

#[tokio::test]
async fn after_the_followed_leader_stops_the_next_attempt_asks_the_configured_node_again() {
    let b = Node::start(Answer::Serve).await;
    let proxy = Proxy::start(b.addr.clone()).await;
    let a = Node::start(Answer::Redirect(proxy.addr.clone())).await;
    let client = SeppClient::builder(a.url())
        .retry_policy(RetryPolicy::default().with_max_attempts(2).with_initial_backoff(Duration::from_millis(1)))
        .connect()
        .await
        .unwrap();
    client.enqueue(job("emails")).await.unwrap();
    assert_eq!(b.methods(), ["EnqueueBatch"]);

    // The leader dies; A has become the leader.
    proxy.stop().await;
    a.set(Answer::Serve);
    // The first attempt is refused by the dead leader, the retry goes to A.
    client.enqueue(job("emails")).await.unwrap();
    assert_eq!(a.methods(), ["EnqueueBatch"; 2]);
    assert_eq!(b.methods(), ["EnqueueBatch"], "the dead leader got nothing");
    // And the calls after it stay with A.
    client.enqueue(job("emails")).await.unwrap();
    assert_eq!(a.methods(), ["EnqueueBatch"; 3]);
}

#[tokio::test]
async fn a_followed_leader_that_names_no_leader_sends_the_next_call_to_the_configured_node() {
    let b = Node::start(Answer::Serve).await;
    let a = Node::start(Answer::Redirect(b.addr.clone())).await;
    let no_failover = RetryPolicy::default().with_failover_window(Duration::ZERO);
    let client = SeppClient::builder(a.url()).retry_policy(no_failover).connect().await.unwrap();
    client.enqueue(job("emails")).await.unwrap();

    // B lost its leadership and knows no leader yet: without a failover window the call fails.
    b.set(Answer::Unavailable);
    let error = client.enqueue(job("emails")).await.unwrap_err();
    assert!(matches!(&error, EnqueueError::Client(ClientError::Transport(_))), "{error:?}");
    assert_eq!(b.methods().len(), 2);
    // The next call asks A, which now names B again.
    b.set(Answer::Serve);
    client.enqueue(job("emails")).await.unwrap();
    assert_eq!(a.methods(), ["EnqueueBatch"; 2]);
    assert_eq!(b.methods().len(), 3);
}

/// With the default policy, a client that has met the cluster rides a failover: a call that
/// meets a leader that lost its leadership (a plain UNAVAILABLE) goes again, back through the
/// configured node, until a leader serves it; the application sees only the success.
#[tokio::test]
async fn the_default_policy_rides_a_failover_until_a_leader_serves() {
    let mut b = Node::start(Answer::Serve).await;
    let a = Node::start(Answer::Redirect(b.addr.clone())).await;
    let client = SeppClient::connect(a.url()).await.unwrap();
    client.enqueue(job("emails")).await.unwrap();
    assert_eq!(b.events.recv().await, Some("EnqueueBatch"));

    b.set(Answer::Unavailable);
    let call = tokio::spawn(async move { client.enqueue(job("emails")).await });
    for _ in 0..2 {
        let refused = tokio::time::timeout(WAIT, b.events.recv()).await.expect("B is asked again");
        assert_eq!(refused, Some("EnqueueBatch"));
    }
    b.set(Answer::Serve);
    let ack = tokio::time::timeout(WAIT, call).await.expect("the call ends").unwrap();
    assert!(ack.is_ok(), "{ack:?}");
    assert!(a.methods().len() >= 2, "the retries went back through the configured node: {:?}", a.methods());
}

#[tokio::test]
async fn a_plain_unavailable_from_the_configured_node_is_left_to_the_retry_policy() {
    let a = Node::start(Answer::Unavailable).await;
    let client = SeppClient::builder(a.url())
        .retry_policy(RetryPolicy::default().with_max_attempts(2).with_initial_backoff(Duration::from_millis(1)))
        .connect()
        .await
        .unwrap();
    let error = client.enqueue(job("emails")).await.unwrap_err();
    assert!(matches!(&error, EnqueueError::Client(ClientError::Transport(_))), "{error:?}");
    assert_eq!(a.methods().len(), 2, "an election's UNAVAILABLE is retried by the policy");
}

#[tokio::test]
async fn concurrent_calls_redirected_at_once_all_end_at_the_leader() {
    let b = Node::start(Answer::Serve).await;
    let a = Node::start(Answer::Redirect(b.addr.clone())).await;
    // Sixteen calls of their own (coalesced, they would share one).
    let client = SeppClient::builder(a.url()).coalesce_enqueues(false).connect().await.unwrap();
    let mut calls = JoinSet::new();
    for _ in 0..16 {
        let client = client.clone();
        calls.spawn(async move { client.enqueue(job("emails")).await });
    }
    while let Some(result) = calls.join_next().await {
        result.unwrap().unwrap();
    }
    assert_eq!(b.methods().len(), 16);
    client.enqueue(job("emails")).await.unwrap();
    assert_eq!(b.methods().len(), 17);
    assert!(a.methods().len() <= 16, "no call went to A twice");
}

#[tokio::test]
async fn a_client_on_a_given_channel_surfaces_the_redirect() {
    let b = Node::start(Answer::Serve).await;
    let a = Node::start(Answer::Redirect(b.addr.clone())).await;
    let channel = tonic::transport::Endpoint::from_shared(a.url()).unwrap().connect().await.unwrap();
    let client = SeppClient::from_channel(channel);
    let error = client.enqueue(job("emails")).await.unwrap_err();
    match &error {
        EnqueueError::Client(ClientError::Transport(message)) => assert!(message.contains(&b.addr), "{message}"),
        other => panic!("expected the transport error, got {other:?}"),
    }
    assert_eq!(a.methods(), ["EnqueueBatch"]);
    assert!(b.methods().is_empty());
}

#[tokio::test]
async fn the_worker_processes_a_job_whose_reserve_was_redirected() {
    let mut b = Node::start(Answer::Serve).await;
    let a = Node::start(Answer::Redirect(b.addr.clone())).await;
    b.give(wire_job("j-7"));
    let client = SeppClient::connect(a.url()).await.unwrap();
    let (handled_tx, mut handled) = mpsc::unbounded_channel();
    let worker = Worker::new(client, ["emails"], LEASE)
        .unwrap()
        .with_streaming(false)
        .handle("send", move |payload: Option<Payload>, ctx: Arc<JobCtx>| {
            let handled = handled_tx.clone();
            async move {
                let _ = handled.send((ctx.id.clone(), payload));
                Ok(())
            }
        })
        .unwrap();
    let shutdown = worker.shutdown_handle();
    let running = tokio::spawn(worker.run());

    let (id, _) = tokio::time::timeout(WAIT, handled.recv()).await.expect("the job is handled").unwrap();
    assert_eq!(id, "j-7");
    b.called("Ack").await;
    shutdown.shutdown();
    tokio::time::timeout(WAIT, running).await.expect("the worker stops").unwrap();
    assert_eq!(a.methods(), ["Reserve"], "only the first reserve went to the follower");
    assert!(b.methods().contains(&"Ack"));
}

#[tokio::test]
async fn a_streaming_worker_reopens_its_stream_at_the_leader_a_follower_names() {
    let mut b = Node::start(Answer::Serve).await;
    let a = Node::start(Answer::Redirect(b.addr.clone())).await;
    b.give(wire_job("j-9"));
    let client = SeppClient::connect(a.url()).await.unwrap();
    let (handled_tx, mut handled) = mpsc::unbounded_channel();
    let worker = Worker::new(client, ["emails"], LEASE)
        .unwrap()
        .handle("send", move |_: Option<Payload>, ctx: Arc<JobCtx>| {
            let handled = handled_tx.clone();
            async move {
                let _ = handled.send(ctx.id.clone());
                Ok(())
            }
        })
        .unwrap();
    let shutdown = worker.shutdown_handle();
    let running = tokio::spawn(worker.run());

    let id = tokio::time::timeout(WAIT, handled.recv()).await.expect("the job is handled").unwrap();
    assert_eq!(id, "j-9");
    b.called("ConsumeAck").await;
    shutdown.shutdown();
    tokio::time::timeout(WAIT, running).await.expect("the worker stops").unwrap();
    assert_eq!(a.methods(), ["Consume"], "the follower's stream ended, naming the leader");
    assert_eq!(b.methods(), ["Consume", "ConsumeAck"], "the ack travelled on the leader's stream");
}

#[tokio::test]
async fn a_streaming_worker_reopens_its_stream_after_it_ended_unavailable() {
    // A node in an election (or shutting down) ends the stream UNAVAILABLE naming no leader.
    let mut a = Node::start(Answer::Unavailable).await;
    a.give(wire_job("j-5"));
    let client = SeppClient::connect(a.url()).await.unwrap();
    let (handled_tx, mut handled) = mpsc::unbounded_channel();
    let worker = Worker::new(client, ["emails"], LEASE)
        .unwrap()
        .with_reserve_error_backoff(Duration::from_millis(10))
        .handle("send", move |_: Option<Payload>, ctx: Arc<JobCtx>| {
            let handled = handled_tx.clone();
            async move {
                let _ = handled.send(ctx.id.clone());
                Ok(())
            }
        })
        .unwrap();
    let shutdown = worker.shutdown_handle();
    let running = tokio::spawn(worker.run());
    a.called("Consume").await;
    a.set(Answer::Serve);
    let id = tokio::time::timeout(WAIT, handled.recv()).await.expect("the job is handled").unwrap();
    assert_eq!(id, "j-5");
    a.called("ConsumeAck").await;
    shutdown.shutdown();
    tokio::time::timeout(WAIT, running).await.expect("the worker stops").unwrap();
    assert!(!a.methods().contains(&"Reserve"), "it stayed on the stream: {:?}", a.methods());
}

#[tokio::test]
async fn a_worker_reserves_with_calls_when_the_server_has_no_consume() {
    // This stub answers Consume UNIMPLEMENTED (as sepp 0.1 does) and serves reserve calls.
    let mut a = Node::start(Answer::Serve).await;
    a.give(wire_job("j-3"));
    a.stub.state.lock().unwrap().no_consume = true;
    let client = SeppClient::connect(a.url()).await.unwrap();
    let (handled_tx, mut handled) = mpsc::unbounded_channel();
    let worker = Worker::new(client, ["emails"], LEASE)
        .unwrap()
        .handle("send", move |_: Option<Payload>, ctx: Arc<JobCtx>| {
            let handled = handled_tx.clone();
            async move {
                let _ = handled.send(ctx.id.clone());
                Ok(())
            }
        })
        .unwrap();
    let shutdown = worker.shutdown_handle();
    let running = tokio::spawn(worker.run());
    let id = tokio::time::timeout(WAIT, handled.recv()).await.expect("the job is handled").unwrap();
    assert_eq!(id, "j-3");
    a.called("Ack").await;
    shutdown.shutdown();
    tokio::time::timeout(WAIT, running).await.expect("the worker stops").unwrap();
    let methods = a.methods();
    assert_eq!(methods[0], "Reserve", "{methods:?}");
}

/// TLS with a private CA: the leader is dialed over TLS with the same trust anchor.
#[cfg(feature = "tls")]
#[tokio::test]
async fn the_leader_is_dialed_with_the_configured_tls() {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()]).unwrap();
    let identity = tonic::transport::Identity::from_pem(certified.cert.pem(), certified.signing_key.serialize_pem());
    let start = |answer: Answer| {
        let identity = identity.clone();
        async move {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap().to_string();
            let (events, _) = mpsc::unbounded_channel();
            let state = State { answer, calls: Vec::new(), jobs: VecDeque::new(), no_consume: false };
            let stub = Stub { state: Arc::new(Mutex::new(state)), events };
            let server = tonic::transport::Server::builder()
                .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))
                .unwrap()
                .add_service(QueueServiceServer::new(stub.clone()));
            tokio::spawn(server.serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)));
            (addr, stub)
        }
    };
    let (b_addr, b) = start(Answer::Serve).await;
    let (a_addr, a) = start(Answer::Redirect(b_addr)).await;
    let client = SeppClient::builder(format!("https://{a_addr}"))
        .tls_ca_certificate(certified.cert.pem())
        .connect()
        .await
        .unwrap();
    client.enqueue(job("emails")).await.unwrap();
    assert_eq!(a.state.lock().unwrap().calls.len(), 1);
    assert_eq!(b.state.lock().unwrap().calls.len(), 1);
}
