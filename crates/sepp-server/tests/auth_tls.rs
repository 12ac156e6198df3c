//! API keys (docs/protocol.md#authentication) and gRPC TLS (#transport) against the real binary.

mod common;

use std::time::Duration;

use common::*;
use sepp_server::proto::v1 as pb;
use tempfile::TempDir;
use tonic::transport::{Certificate, Channel, ClientTlsConfig};
use tonic::{Code, Request};

const MISSING: &str = "missing API key; expected an `authorization: Bearer <key>` header";
const INVALID: &str = "invalid API key";
const KEYS: &str = r#"
[auth]
api_keys = [{ name = "ci", key = "s3cret" }, { name = "ops", key = "0ther-Key!" }]
"#;

/// A request carrying `authorization: <header>` when given.
fn authorized<T>(message: T, header: Option<&str>) -> Request<T> {
    let mut request = Request::new(message);
    if let Some(header) = header {
        request.metadata_mut().insert("authorization", header.parse().expect("ASCII header"));
    }
    request
}

async fn server_info(
    client: &mut QueueServiceClient<Channel>,
    header: Option<&str>,
) -> Result<pb::GetServerInfoResponse, tonic::Status> {
    client.get_server_info(authorized(pb::GetServerInfoRequest {}, header)).await.map(tonic::Response::into_inner)
}

#[tokio::test]
async fn a_listed_key_is_accepted() {
    let server = TestServer::start(KEYS);
    let mut client = server.raw_client().await;
    assert_eq!(
        server_info(&mut client, Some("Bearer s3cret")).await.expect("first key").server_version,
        server_version()
    );
    server_info(&mut client, Some("Bearer 0ther-Key!")).await.expect("second key");
    // A whole round trip with the key.
    let queue = unique("authed");
    let header = Some("Bearer s3cret");
    let response = client.enqueue_batch(authorized(batch(vec![job(&queue, "t")]), header)).await.expect("enqueue");
    assert_eq!(response.into_inner().results.len(), 1);
    let jobs = client.reserve(authorized(reserve(&[&queue], 30_000), header)).await.expect("reserve").into_inner().jobs;
    let ack = pb::AckRequest { job_id: jobs[0].id.clone(), attempt: 1, worker_id: None };
    client.ack(authorized(ack, header)).await.expect("ack");
}

#[tokio::test]
async fn a_missing_or_malformed_header_is_unauthenticated() {
    let server = TestServer::start(KEYS);
    let mut client = server.raw_client().await;
    assert_status(server_info(&mut client, None).await, Code::Unauthenticated, MISSING);
    for header in ["s3cret", "bearer s3cret", "BEARER s3cret", "Basic s3cret", "Bearer", "Token s3cret"] {
        let result = server_info(&mut client, Some(header)).await;
        assert_status(result, Code::Unauthenticated, MISSING);
    }
}

#[tokio::test]
async fn a_wrong_key_is_an_invalid_api_key() {
    let server = TestServer::start(KEYS);
    let mut client = server.raw_client().await;
    for header in ["Bearer wrong", "Bearer S3CRET", "Bearer s3cret ", "Bearer  s3cret", "Bearer s3cre", "Bearer "] {
        let result = server_info(&mut client, Some(header)).await;
        assert_status(result, Code::Unauthenticated, INVALID);
    }
}

#[tokio::test]
async fn every_queue_service_rpc_checks_the_key_before_the_request() {
    let server = TestServer::start(KEYS);
    let mut client = server.raw_client().await;
    // Every body below is malformed, so a call that skipped auth would be INVALID_ARGUMENT.
    let none = None;
    assert_status(client.enqueue_batch(authorized(batch(vec![]), none)).await, Code::Unauthenticated, MISSING);
    assert_status(client.enqueue_atomic(authorized(batch(vec![]), none)).await, Code::Unauthenticated, MISSING);
    let empty_reserve = pb::ReserveRequest::default();
    assert_status(client.reserve(authorized(empty_reserve, none)).await, Code::Unauthenticated, MISSING);
    let bad_ack = pb::AckRequest { job_id: "x".into(), attempt: 0, worker_id: None };
    assert_status(client.ack(authorized(bad_ack, none)).await, Code::Unauthenticated, MISSING);
    let bad_nack = pb::NackRequest { job_id: "x".into(), ..Default::default() };
    assert_status(client.nack(authorized(bad_nack, none)).await, Code::Unauthenticated, MISSING);
    let bad_extend = pb::ExtendRequest { job_id: "x".into(), ..Default::default() };
    let wrong = Some("Bearer nope");
    assert_status(client.extend(authorized(bad_extend, wrong)).await, Code::Unauthenticated, INVALID);
    let bad_drain = pb::DrainDeadLettersRequest { queue: Some(String::new()), max: Some(0) };
    assert_status(client.drain_dead_letters(authorized(bad_drain, wrong)).await, Code::Unauthenticated, INVALID);
    assert_status(server_info(&mut client, wrong).await, Code::Unauthenticated, INVALID);
    // With the key, the same malformed body reaches validation.
    let right = Some("Bearer s3cret");
    assert_code(client.enqueue_batch(authorized(batch(vec![]), right)).await, Code::InvalidArgument);
}

#[tokio::test]
async fn an_empty_key_list_denies_every_call() {
    let server = TestServer::start("[auth]\napi_keys = []\n");
    let mut client = server.raw_client().await;
    assert_status(server_info(&mut client, None).await, Code::Unauthenticated, MISSING);
    for header in ["Bearer ", "Bearer anything", "Bearer s3cret"] {
        assert_code(server_info(&mut client, Some(header)).await, Code::Unauthenticated);
    }
    assert_code(
        client.enqueue_batch(authorized(batch(vec![job("q", "t")]), Some("Bearer x"))).await,
        Code::Unauthenticated,
    );
}

#[tokio::test]
async fn without_keys_every_caller_is_allowed_and_a_header_is_ignored() {
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    server_info(&mut client, None).await.expect("no header");
    server_info(&mut client, Some("Bearer whatever")).await.expect("an ignored header");
}

#[tokio::test]
async fn sepp_rs_sends_its_api_key() {
    use sepp_rs::client::{ClientError, SeppClient};
    let server = TestServer::start(KEYS);
    let client = SeppClient::builder(server.addr()).api_key("s3cret").connect().await.expect("connect");
    assert_eq!(client.get_server_info().await.expect("server info").version, server_version());

    let wrong = SeppClient::builder(server.addr()).api_key("wrong").connect().await.expect("connect");
    match wrong.get_server_info().await {
        Err(ClientError::Unauthenticated(message)) => {
            assert!(message.contains(INVALID), "{message}")
        }
        other => panic!("expected Unauthenticated, got {other:?}"),
    }
    let keyless = SeppClient::connect(server.addr()).await.expect("connect");
    match keyless.get_server_info().await {
        Err(ClientError::Unauthenticated(message)) => {
            assert!(message.contains("missing API key"), "{message}")
        }
        other => panic!("expected Unauthenticated, got {other:?}"),
    }
}

// ---- TLS -----------------------------------------------------------------------------------

/// A directory holding a fresh self-signed certificate for `localhost` / `127.0.0.1` and its
/// key; returns the directory and the certificate PEM (the client's trust anchor).
fn tls_dir() -> (TempDir, String) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()])
        .expect("generate a certificate");
    let cert_pem = certified.cert.pem();
    let dir = TempDir::new().expect("temporary directory");
    std::fs::write(dir.path().join("cert.pem"), &cert_pem).expect("write cert");
    std::fs::write(dir.path().join("key.pem"), certified.signing_key.serialize_pem()).expect("write key");
    (dir, cert_pem)
}

const TLS: &str = r#"
[server]
tls_cert_path = "{dir}/cert.pem"
tls_key_path = "{dir}/key.pem"
"#;

async fn tls_channel(server: &TestServer, ca_pem: &str) -> Channel {
    let tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca_pem)).domain_name("localhost");
    Channel::from_shared(format!("https://127.0.0.1:{}", server.port()))
        .expect("uri")
        .tls_config(tls)
        .expect("tls config")
        .connect()
        .await
        .expect("TLS connect")
}

#[tokio::test]
async fn a_tls_client_trusting_the_certificate_is_served() {
    let (dir, ca_pem) = tls_dir();
    let server = TestServer::start_in(dir, TLS);
    let mut client = QueueServiceClient::new(tls_channel(&server, &ca_pem).await);
    let info = client.get_server_info(pb::GetServerInfoRequest {}).await.expect("server info over TLS").into_inner();
    assert_eq!(info.server_version, server_version());
    let queue = unique("tls");
    let id = enqueue_one(&mut client, job(&queue, "t")).await;
    assert_eq!(reserve_now(&mut client, &[&queue], 30_000).await[0].id, id);
    // Health is served on the same TLS port.
    let mut health = tonic_health::pb::health_client::HealthClient::new(tls_channel(&server, &ca_pem).await);
    let status = health.check(tonic_health::pb::HealthCheckRequest { service: String::new() }).await.expect("health");
    assert_eq!(status.into_inner().status, tonic_health::pb::health_check_response::ServingStatus::Serving as i32);
}

#[tokio::test]
async fn a_plaintext_client_cannot_call_a_tls_server() {
    let (dir, _) = tls_dir();
    let server = TestServer::start_in(dir, TLS);
    let attempt = async {
        let channel = Channel::from_shared(server.addr()).expect("uri").connect().await?;
        let mut client = QueueServiceClient::new(channel);
        let response = client.get_server_info(pb::GetServerInfoRequest {}).await?;
        Ok::<_, Box<dyn std::error::Error>>(response.into_inner())
    };
    // Failing fast or never answering both mean the call cannot complete.
    if let Ok(Ok(info)) = tokio::time::timeout(Duration::from_secs(10), attempt).await {
        panic!("a plaintext call to a TLS listener succeeded: {info:?}");
    }
}

#[tokio::test]
async fn a_tls_client_with_an_unrelated_ca_is_refused() {
    let (dir, _) = tls_dir();
    let server = TestServer::start_in(dir, TLS);
    let (_, other_ca) = tls_dir();
    let tls = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(other_ca)).domain_name("localhost");
    let attempt = async {
        let channel =
            Channel::from_shared(format!("https://127.0.0.1:{}", server.port()))?.tls_config(tls)?.connect().await?;
        let response = QueueServiceClient::new(channel).get_server_info(pb::GetServerInfoRequest {}).await?;
        Ok::<_, Box<dyn std::error::Error>>(response.into_inner())
    };
    if let Ok(Ok(info)) = tokio::time::timeout(Duration::from_secs(10), attempt).await {
        panic!("a client that does not trust the certificate got an answer: {info:?}");
    }
}

#[tokio::test]
async fn sepp_rs_connects_over_tls_with_an_api_key() {
    use sepp_rs::client::SeppClient;
    let (dir, ca_pem) = tls_dir();
    let server = TestServer::start_in(dir, &format!("{TLS}\n{KEYS}"));
    let client = SeppClient::builder(format!("https://127.0.0.1:{}", server.port()))
        .tls_ca_certificate(ca_pem.as_bytes())
        .tls_domain("localhost")
        .api_key("s3cret")
        .connect()
        .await
        .expect("sepp-rs connects over TLS");
    let queue = unique("tls-rs");
    let request = sepp_rs::EnqueueRequest::new(queue.as_str(), "t").expect("request");
    let ack = client.enqueue(request).await.expect("enqueue over TLS");
    assert!(!ack.deduplicated);
}
