//! Protections against hostile clients, against the real binary
//! (docs/operations.md#limits-and-protections): the admin listener answers only its own names
//! (DNS rebinding), and failed authentication is throttled per client address on both
//! listeners.

mod admin_support;
mod common;

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use admin_support::*;
use common::*;
use reqwest::header::{HOST, ORIGIN, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use sepp_server::proto::v1 as pb;
use serde_json::{Value, json};
use tonic::Code;
use tonic::transport::{Channel, Endpoint};

const WAIT: Duration = Duration::from_secs(15);
const PROMETHEUS: &str = "[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = \"127.0.0.1:0\"\n";
/// A second client address on the loopback network.
const OTHER_CLIENT: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

fn admin_port(admin: &AdminServer) -> u16 {
    admin.url.rsplit(':').next().and_then(|port| port.parse().ok()).expect("a port in the admin URL")
}

/// Sends `method path` with `host` as `Host`, `origin` as `Origin` (when given) and the headers
/// a browser sends for a same-origin fetch, with `key` as bearer token when given.
async fn send_as(
    admin: &AdminServer,
    method: Method,
    path: &str,
    host: &str,
    origin: Option<&str>,
    key: Option<&str>,
    body: Option<Value>,
) -> Reply {
    let mut request =
        admin.http.request(method, admin.api(path)).header(HOST, host).header("sec-fetch-site", "same-origin");
    if let Some(origin) = origin {
        request = request.header(ORIGIN, origin);
    }
    if let Some(key) = key {
        request = request.bearer_auth(key);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    reply(request.send().await.expect("the admin listener answers")).await
}

#[tokio::test]
async fn a_rebinding_page_reaches_nothing_of_the_admin_api() {
    // The default listener: loopback, no keys (every request is the `local` admin).
    let admin = AdminServer::keyless("");
    let port = admin_port(&admin);
    let evil_host = format!("rebind.evil.example:{port}");
    let evil_origin = format!("http://{evil_host}");
    let attempts = [
        (Method::GET, "/config", None),
        (Method::POST, "/queues/x/jobs", Some(json!({ "payload": "aGk=" }))),
        (Method::POST, "/queues:pause", Some(json!({}))),
        (Method::DELETE, "/auth/keys", None),
    ];
    for (method, path, body) in attempts {
        let answer = send_as(&admin, method.clone(), path, &evil_host, Some(&evil_origin), None, body).await;
        let error = answer.expect_error(StatusCode::MISDIRECTED_REQUEST, "misdirected_request");
        assert!(error["error"].as_str().unwrap().contains("admin.allowed_hosts"), "{method} {path}: {error}");
    }
    // The UI bundle is refused as well.
    let shell = admin.http.get(format!("{}/admin/", admin.url)).header(HOST, &evil_host).send().await.unwrap();
    assert_eq!(shell.status(), StatusCode::MISDIRECTED_REQUEST);
    // Nothing happened: no job, no pause.
    let local = format!("127.0.0.1:{port}");
    let pauses = send_as(&admin, Method::GET, "/pauses", &local, None, None, None).await.expect(StatusCode::OK);
    assert_eq!((&pauses["all_queues"], &pauses["queues"]), (&Value::Null, &json!([])), "{pauses}");
    let count = send_as(&admin, Method::GET, "/queues/x/jobs:count?state=ready", &local, None, None, None).await;
    assert_eq!(count.expect(StatusCode::OK)["count"], 0);
}

#[tokio::test]
async fn the_listeners_own_names_and_allowed_hosts_are_answered() {
    let admin = AdminServer::from(TestServer::start(
        "[admin]\nenabled = true\nlisten_addr = \"127.0.0.1:0\"\n\
         allowed_hosts = [\"sepp.example.com\", \"proxy.example.com:8443\"]\n",
    ));
    let port = admin_port(&admin);
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("sepp.example.com:{port}"),
        "sepp.example.com".to_owned(),
        "proxy.example.com:8443".to_owned(),
    ] {
        let answer = send_as(&admin, Method::GET, "/server-info", &host, None, None, None).await;
        assert_eq!(answer.status, StatusCode::OK, "{host}: {}", answer.body);
    }
    for host in [format!("proxy.example.com:{port}"), "localhost:1".to_owned(), format!("other.example.com:{port}")] {
        let answer = send_as(&admin, Method::GET, "/server-info", &host, None, None, None).await;
        answer.expect_error(StatusCode::MISDIRECTED_REQUEST, "misdirected_request");
    }
}

#[tokio::test]
async fn a_change_from_an_origin_that_is_not_among_the_names_is_refused() {
    let admin = AdminServer::keyless("");
    let port = admin_port(&admin);
    let host = format!("127.0.0.1:{port}");
    for origin in
        [format!("http://evil.example:{port}"), format!("http://localhost:{}", port.wrapping_add(1)), "null".into()]
    {
        let answer = send_as(&admin, Method::POST, "/queues:pause", &host, Some(&origin), None, Some(json!({}))).await;
        answer.expect_error(StatusCode::FORBIDDEN, "forbidden");
    }
    // Another of the listener's names than the Host is the same listener.
    let origin = format!("http://localhost:{port}");
    let answer = send_as(&admin, Method::POST, "/queues:pause", &host, Some(&origin), None, Some(json!({}))).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
}

/// The value of the sample of `name` whose labels include every one of `labels`.
fn sample(text: &str, name: &str, labels: &[&str]) -> Option<f64> {
    text.lines()
        .filter(|line| line.starts_with(&format!("{name}{{")))
        .find(|line| labels.iter().all(|label| line.contains(label)))
        .and_then(|line| line.rsplit(' ').next()?.parse().ok())
}

/// Scrapes the Prometheus endpoint until `name` with `labels` reaches `expected`.
async fn wait_for_sample(server: &TestServer, name: &str, labels: &[&str], expected: f64) {
    let line = server.stdout().wait_for("prometheus metrics endpoint listening", WAIT).expect("the endpoint's line");
    let port = loopback_port(&line).expect("a port");
    let url = format!("http://127.0.0.1:{port}/metrics");
    eventually(&format!("{name} {labels:?} to reach {expected}"), WAIT, || async {
        let text = reqwest::get(&url).await.expect("scrape").text().await.expect("body");
        (sample(&text, name, labels) == Some(expected)).then_some(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_key_guessing_is_throttled_for_the_guessing_address_only() {
    let admin = AdminServer::start(PROMETHEUS);
    // Five failures are answered at once, four more after a delay, the tenth blocks.
    for attempt in 1..10 {
        let answer = admin.get("/server-info", "guess").await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "attempt {attempt}: {}", answer.body);
    }
    let blocked = admin.get("/server-info", "guess").await;
    let retry_after: u64 = blocked.headers[RETRY_AFTER].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    blocked.expect_error(StatusCode::TOO_MANY_REQUESTS, "auth_throttled");
    // Blocked: even the right key and a login are refused, unchecked.
    admin.get("/server-info", ADMIN_KEY).await.expect_error(StatusCode::TOO_MANY_REQUESTS, "auth_throttled");
    let login = admin.call(Method::POST, "/session", None, Some(json!({ "name": "root", "key": ADMIN_KEY }))).await;
    login.expect_error(StatusCode::TOO_MANY_REQUESTS, "auth_throttled");
    // Another address is served as usual.
    let other = reqwest::Client::builder().no_proxy().local_address(OTHER_CLIENT).build().unwrap();
    let from_other = other.get(admin.api("/server-info")).bearer_auth(ADMIN_KEY).send().await.unwrap();
    assert_eq!(from_other.status(), StatusCode::OK);
    let wrong_from_other = other.get(admin.api("/server-info")).bearer_auth("guess").send().await.unwrap();
    assert_eq!(wrong_from_other.status(), StatusCode::UNAUTHORIZED);
    // Counted, and logged once for the address.
    wait_for_sample(&admin.server, "sepp_auth_failures_total", &["listener=\"admin\""], 11.0).await;
    wait_for_sample(&admin.server, "sepp_auth_throttled_total", &["listener=\"admin\"", "action=\"delayed\""], 4.0)
        .await;
    wait_for_sample(&admin.server, "sepp_auth_throttled_total", &["listener=\"admin\"", "action=\"refused\""], 3.0)
        .await;
    let logs = admin.server.logs();
    assert_eq!(logs.matches("too many failed authentication attempts from one client").count(), 1, "{logs}");
    assert!(logs.contains("127.0.0.1"), "{logs}");
}

async fn channel_from(server: &TestServer, local: Option<IpAddr>) -> QueueServiceClient<Channel> {
    let channel = Endpoint::from_shared(server.addr()).unwrap().local_address(local).connect().await.unwrap();
    QueueServiceClient::new(channel)
}

async fn server_info(client: &mut QueueServiceClient<Channel>, key: &str) -> Result<(), tonic::Status> {
    let mut request = tonic::Request::new(pb::GetServerInfoRequest {});
    request.metadata_mut().insert("authorization", format!("Bearer {key}").parse().unwrap());
    client.get_server_info(request).await.map(drop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_key_guessing_is_throttled_with_resource_exhausted() {
    let server =
        TestServer::start(&format!("[auth]\napi_keys = [{{ name = \"ci\", key = \"s3cret\" }}]\n{PROMETHEUS}"));
    let mut client = channel_from(&server, None).await;
    for attempt in 1..10 {
        let status = server_info(&mut client, "guess").await.expect_err("a wrong key");
        assert_eq!(status.code(), Code::Unauthenticated, "attempt {attempt}: {status:?}");
    }
    let status = server_info(&mut client, "guess").await.expect_err("blocked");
    assert_eq!(status.code(), Code::ResourceExhausted, "{status:?}");
    let retry_after: u64 = status.metadata().get("retry-after").unwrap().to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry_after), "{retry_after}");
    assert!(status.message().contains("retry after"), "{status:?}");
    let status = server_info(&mut client, "s3cret").await.expect_err("blocked, even with the key");
    assert_eq!(status.code(), Code::ResourceExhausted);
    let mut other = channel_from(&server, Some(OTHER_CLIENT)).await;
    server_info(&mut other, "s3cret").await.expect("another address is served");
    wait_for_sample(&server, "sepp_auth_failures_total", &["listener=\"grpc\""], 10.0).await;
    wait_for_sample(&server, "sepp_auth_throttled_total", &["listener=\"grpc\"", "action=\"refused\""], 2.0).await;
}

#[tokio::test]
async fn a_listener_on_every_address_says_which_names_it_answers_and_serves_its_own() {
    let server = TestServer::start(
        "[admin]\nenabled = true\nlisten_addr = \"0.0.0.0:0\"\n\
         keys = [{ name = \"root\", key = \"root-admin-key-0001\" }]\n",
    );
    let admin = AdminServer::from(server);
    let port = admin_port(&admin);
    let warning =
        admin.server.wait_for_log("admin.allowed_hosts is empty on a non-loopback admin listener", WAIT).await;
    assert!(warning.is_some(), "{}", admin.server.logs());
    assert!(admin.server.logs().contains("the admin listener answers only requests whose Host is"));
    admin.get("/server-info", ADMIN_KEY).await.expect(StatusCode::OK);
    let by_name =
        send_as(&admin, Method::GET, "/server-info", &format!("sepp.example.com:{port}"), None, Some(ADMIN_KEY), None)
            .await;
    by_name.expect_error(StatusCode::MISDIRECTED_REQUEST, "misdirected_request");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guesses_in_parallel_are_throttled_like_guesses_in_a_row() {
    let admin = AdminServer::start("");
    let guesses = (0..64).map(|n| {
        let admin = &admin;
        async move { admin.get("/server-info", &format!("guess-{n}")).await.status }
    });
    let statuses = futures_util::future::join_all(guesses).await;
    let refused = statuses.iter().filter(|status| **status == StatusCode::UNAUTHORIZED).count();
    let throttled = statuses.iter().filter(|status| **status == StatusCode::TOO_MANY_REQUESTS).count();
    // The first nine failures are answered as failures; every later one is refused.
    assert_eq!((refused, throttled), (9, 55), "{statuses:?}");
}

#[tokio::test]
async fn allowed_hosts_apply_on_reload() {
    let admin = AdminServer::keyless("");
    let port = admin_port(&admin);
    let name = format!("sepp.example.com:{port}");
    let before = send_as(&admin, Method::GET, "/server-info", &name, None, None, None).await;
    before.expect_error(StatusCode::MISDIRECTED_REQUEST, "misdirected_request");
    let mark = admin.server.log_mark();
    admin.server.write_config(&KEYLESS.replace("[admin]\n", "[admin]\nallowed_hosts = [\"sepp.example.com\"]\n"));
    admin.wait_for_reload(mark).await;
    let after = send_as(&admin, Method::GET, "/server-info", &name, None, None, None).await;
    assert_eq!(after.status, StatusCode::OK, "{}", after.body);
}
