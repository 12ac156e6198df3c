//! Runs the 0.1-style program against the real server, through the sepp-client test harness.

// The harness names the client `sepp_client`; here it is only known as `sepp_rs`.
extern crate sepp_rs as sepp_client;

#[path = "../../tests/common/mod.rs"]
mod common;

#[tokio::test]
async fn code_written_for_sepp_rs_0_1_runs_against_sepp_client() {
    let server = common::Server::start();
    let report = sepp_client_compat_test::run(&server.url()).await.expect("the 0.1-style program runs");
    assert!(report.handled >= 1);
    assert_eq!(report.drained, 1);
    assert!(!report.server_version.is_empty());
}

#[test]
fn values_build_without_a_server() {
    let (requests, options, policy) = sepp_client_compat_test::build_values().unwrap();
    assert_eq!(requests.len(), 3);
    assert_eq!(options.wait_timeout(), std::time::Duration::from_secs(5));
    assert_eq!(policy.max_attempts(), 3);
    let builder = sepp_client_compat_test::tls_builder(b"-----BEGIN CERTIFICATE-----");
    assert!(format!("{builder:?}").contains("tls: true"));
}
