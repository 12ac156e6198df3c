//! Bounded, reaped connections on every listener (docs/operations.md#connections), against the
//! real binary: a flood of idle connections past the descriptor limit leaves the server serving
//! (storage not poisoned, accepting again afterwards; the pause after `EMFILE` is a unit test in
//! `net.rs`); a
//! connection that never completes its handshake is closed after the deadline; the admin
//! listener closes a request whose headers never end and a connection that stays silent;
//! connections past a listener's maximum are closed at once and counted; and a server killed
//! with connections open restarts at once on the same ports.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use common::{QueueServiceClient, TestServer, is_reference, job, loopback_port, reserve, with_payload};
use sepp_server::proto::v1 as pb;

const WAIT: Duration = Duration::from_secs(30);

/// `future`, or a failure naming `what` if it takes longer than `WAIT` (a server that stopped
/// answering fails the test instead of hanging it).
async fn within<T>(what: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, future).await.unwrap_or_else(|_| panic!("no answer to {what} within {WAIT:?}"))
}

/// Whether the peer closed `stream`: a read ends (EOF or a reset) before `WAIT`.
fn closed_by_peer(stream: &mut TcpStream) -> bool {
    stream.set_read_timeout(Some(WAIT)).expect("read timeout");
    let mut buffer = [0u8; 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(error) if matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                return false;
            }
            Err(_) => return true,
        }
    }
}

fn prometheus_url(server: &TestServer) -> String {
    let line = server.stdout().wait_for("prometheus metrics endpoint listening", WAIT).expect("the endpoint's line");
    let port = loopback_port(&line).unwrap_or_else(|| panic!("no port in {line:?}"));
    format!("http://127.0.0.1:{port}/metrics")
}

/// The value of the sample `name{labels}` in a Prometheus exposition.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines().filter(|line| !line.starts_with('#')).find_map(|line| {
        let (series, value) = line.rsplit_once(' ')?;
        let (series_name, rest) = series.split_once('{').unwrap_or((series, ""));
        let matches =
            series_name == name && labels.iter().all(|(key, value)| rest.contains(&format!("{key}=\"{value}\"")));
        matches.then(|| value.parse().ok()).flatten()
    })
}

/// Scrapes until `name{labels}` is at least `at_least`.
async fn wait_for_sample(url: &str, name: &str, labels: &[(&str, &str)], at_least: f64) -> String {
    common::eventually(&format!("{name}{labels:?} >= {at_least}"), WAIT, || async {
        let text = reqwest::get(url).await.ok()?.text().await.ok()?;
        sample(&text, name, labels).filter(|value| *value >= at_least).map(|_| text)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_flood_past_the_descriptor_limit_leaves_the_server_serving() {
    // 128 descriptors in all, as `prlimit --nofile=128:128` gives: connections may take 64, the
    // rest is storage's and the runtime's. Idle connections are kept for a minute.
    let server = TestServer::start_with_descriptor_limit("[server]\nhandshake_timeout_ms = 60000\n", 128);
    let mut client = server.raw_client().await;
    common::enqueue_one(&mut client, job("flood", "t")).await;

    let flood: Vec<TcpStream> =
        (0..300).filter_map(|_| TcpStream::connect(("127.0.0.1", server.port())).ok()).collect();
    assert!(flood.len() >= 200, "the kernel accepted the flood's connections ({})", flood.len());

    // Large payloads through the earlier connection: new log segments (4 and 8 MB) are opened
    // while the flood holds every descriptor connections may have.
    let payload = vec![7u8; 500 * 1024];
    for _ in 0..30 {
        let request = with_payload(job("flood", "big"), &payload, "application/octet-stream");
        within("a large enqueue during the flood", common::enqueue_one(&mut client, request)).await;
    }
    // Reserves that wait on an empty queue still end during the flood.
    for _ in 0..10 {
        let mut waiting = reserve(&["flood-empty"], 1_000);
        waiting.wait_timeout = Some(common::ms(100));
        let jobs = within("a reserve during the flood", client.reserve(waiting))
            .await
            .expect("reserve while flooded")
            .into_inner()
            .jobs;
        assert!(jobs.is_empty());
    }
    assert!(server.is_running());
    assert!(!server.logs().contains("poisoned"), "storage must not be poisoned:\n{}", server.logs());

    // After the flood, new connections are served again.
    drop(flood);
    let mut fresh = common::eventually("a new connection served after the flood", WAIT, || async {
        let mut fresh = QueueServiceClient::connect(server.addr()).await.ok()?;
        fresh.get_server_info(pb::GetServerInfoRequest {}).await.ok()?;
        Some(fresh)
    })
    .await;
    let jobs = fresh.reserve(reserve(&["flood"], 60_000)).await.expect("reserve").into_inner().jobs;
    assert_eq!(jobs.len(), 1, "the first job is there");
    assert!(!server.logs().contains("poisoned"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_stops_in_the_http2_preface_is_closed_and_counted() {
    let server = TestServer::start(
        "[server]\nhandshake_timeout_ms = 300\n\n[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = \"127.0.0.1:0\"\n",
    );
    let url = prometheus_url(&server);
    let mut silent = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
    let mut half = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
    half.write_all(b"PRI * HTTP/2.0\r\n").expect("half a preface");
    assert!(closed_by_peer(&mut silent), "a connection that sends nothing is closed after the deadline");
    assert!(closed_by_peer(&mut half), "a connection that sends half the preface is closed after the deadline");
    wait_for_sample(&url, "sepp_connections_refused_total", &[("listener", "queue"), ("reason", "handshake")], 2.0)
        .await;
    // A client that completes its handshake in time is served as before.
    let mut client = server.raw_client().await;
    client.get_server_info(pb::GetServerInfoRequest {}).await.expect("served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_listener_closes_unfinished_headers_and_silent_connections() {
    let server = TestServer::start(
        "[admin]\nenabled = true\nlisten_addr = \"127.0.0.1:0\"\nhandshake_timeout_ms = 300\nidle_timeout_ms = 400\n",
    );
    let admin = server.admin_url();
    let addr: SocketAddr = admin.trim_start_matches("http://").parse().expect("admin address");
    let mut headers = TcpStream::connect(addr).expect("connect");
    headers.write_all(b"GET /admin/api/v1/overview HTTP/1.1\r\nHost: 127.0.0.1\r\n").expect("half the headers");
    let mut silent = TcpStream::connect(addr).expect("connect");
    assert!(closed_by_peer(&mut headers), "a request whose headers never end is closed");
    assert!(closed_by_peer(&mut silent), "a connection that never sends a request is closed");
    // An ordinary request is answered.
    let answer = reqwest::get(format!("{admin}/admin/api/v1/server-info")).await.expect("admin request");
    assert!(answer.status().as_u16() < 500, "{}", answer.status());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_max_connections_are_closed_at_once_and_counted() {
    let server = TestServer::start(
        "[server]\nmax_connections = 2\n\n[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = \"127.0.0.1:0\"\n",
    );
    let url = prometheus_url(&server);
    let held: Vec<TcpStream> =
        (0..2).map(|_| TcpStream::connect(("127.0.0.1", server.port())).expect("connect")).collect();
    wait_for_sample(&url, "sepp_connections_open", &[("listener", "queue")], 2.0).await;
    let mut third = TcpStream::connect(("127.0.0.1", server.port())).expect("connect");
    assert!(closed_by_peer(&mut third), "the connection past the maximum is closed");
    let text =
        wait_for_sample(&url, "sepp_connections_refused_total", &[("listener", "queue"), ("reason", "limit")], 1.0)
            .await;
    assert_eq!(sample(&text, "sepp_connections_open", &[("listener", "queue")]), Some(2.0), "{text}");
    // Once one closes, a client is served again.
    drop(held);
    common::eventually("a client served once the held connections closed", WAIT, || async {
        let mut client = QueueServiceClient::connect(server.addr()).await.ok()?;
        client.get_server_info(pb::GetServerInfoRequest {}).await.ok()
    })
    .await;
}

/// Four distinct free ports: every listener is held until all are bound, so the system never
/// hands out one twice.
fn free_ports() -> (u16, u16, u16, u16) {
    let bound: Vec<TcpListener> = (0..4).map(|_| TcpListener::bind("127.0.0.1:0").expect("bind port 0")).collect();
    let port = |index: usize| bound[index].local_addr().expect("address").port();
    (port(0), port(1), port(2), port(3))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_server_restarts_at_once_on_the_same_ports() {
    let (queue, admin, metrics, cluster) = free_ports();
    let mut server = TestServer::start(&format!(
        "[server]\nlisten_addr = \"127.0.0.1:{queue}\"\n\n\
         [admin]\nenabled = true\nlisten_addr = \"127.0.0.1:{admin}\"\n\n\
         [metrics]\nprometheus_enabled = true\nprometheus_listen_addr = \"127.0.0.1:{metrics}\"\n\n\
         [cluster]\nnode_id = 1\nlisten_addr = \"127.0.0.1:{cluster}\"\n"
    ));
    for round in 0..4 {
        assert_eq!(server.port(), queue);
        // Connections open on every listener, with bytes exchanged, when the server dies: its
        // side of each is left in TIME_WAIT.
        let mut client = server.raw_client().await;
        client.get_server_info(pb::GetServerInfoRequest {}).await.expect("served");
        reqwest::get(format!("http://127.0.0.1:{metrics}/metrics")).await.expect("scrape");
        reqwest::get(format!("http://127.0.0.1:{admin}/admin/api/v1/server-info")).await.expect("admin");
        let open: Vec<TcpStream> = [queue, admin, metrics, cluster]
            .iter()
            .map(|port| TcpStream::connect(("127.0.0.1", *port)).expect("connect"))
            .collect();
        server.sigkill_and_wait();
        drop(open);
        drop(client);
        server.start_again();
        assert!(
            server.stdout().wait_for("cluster node listening", WAIT).is_some(),
            "round {round}: the cluster listener is back\n{}",
            server.logs()
        );
    }
}

/// One connection carries at most 1,024 calls at once: the server says so in its HTTP/2
/// settings, so a client's transport holds further calls back rather than the server taking
/// unbounded streams (a Consume stream each holds a task).
#[tokio::test]
async fn a_connection_is_told_how_many_calls_it_may_have_open() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("");
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", server.port())).await.expect("connect");
    let (mut client, mut connection) = h2::client::handshake(tcp).await.expect("HTTP/2 handshake");
    // The server's SETTINGS frame is read by the time a request is answered.
    let request = http::Request::post(format!("http://127.0.0.1:{}/sepp.v1.QueueService/GetServerInfo", server.port()))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .unwrap();
    let (response, mut body) = client.send_request(request, false).expect("request sent");
    body.send_data(bytes::Bytes::from_static(&[0, 0, 0, 0, 0]), true).expect("empty message sent");
    let answered = async {
        let response = response.await.expect("answered");
        let mut data = response.into_body();
        while data.data().await.is_some() {}
    };
    tokio::select! {
        () = answered => {}
        result = &mut connection => panic!("the connection ended first: {result:?}"),
    }
    assert_eq!(connection.max_concurrent_send_streams(), 1024);
}
