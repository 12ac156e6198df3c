//! TLS against the real server (cargo feature `tls`): a private CA with a domain override, an
//! `https://` address or a TLS option turning TLS on, a complete `ClientTlsConfig`, API keys
//! over TLS, and refusals (an untrusted certificate, a plaintext client).
#![cfg(feature = "tls")]

mod common;

use common::{Server, unique};
use sepp_client::EnqueueRequest;
use sepp_client::client::{ClientError, SeppClient};
use tempfile::TempDir;
use tonic::transport::{Certificate, ClientTlsConfig};

/// A server with a fresh self-signed certificate for `localhost` and `127.0.0.1`; returns it,
/// the certificate PEM (the client's trust anchor) and the directory that must outlive it.
fn tls_server(tail: &str) -> (Server, String, TempDir) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
        .expect("generate a certificate");
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.signing_key.serialize_pem()).unwrap();
    let server = Server::start_with(&format!("tls_cert_path = {cert:?}\ntls_key_path = {key:?}"), tail);
    (server, certified.cert.pem(), dir)
}

#[tokio::test]
async fn an_https_address_with_a_private_ca_and_a_domain_override_connects() {
    let (server, ca, _dir) = tls_server("");
    let client = SeppClient::builder(format!("https://{}", server.host_port()))
        .tls_ca_certificate(&ca)
        .tls_domain("localhost")
        .connect()
        .await
        .unwrap();
    let queue = unique("tls");
    client.enqueue(EnqueueRequest::new(&queue, "t").unwrap()).await.unwrap();
    assert!(client.get_server_info().await.is_ok());
}

#[tokio::test]
async fn a_tls_option_turns_tls_on_for_a_bare_address() {
    let (server, ca, _dir) = tls_server("");
    // No scheme, no domain override: the certificate names 127.0.0.1.
    let client = SeppClient::builder(server.host_port()).tls_ca_certificate(ca.as_bytes()).connect().await.unwrap();
    assert!(client.get_server_info().await.is_ok());
    let config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(&ca)).domain_name("localhost");
    let client = SeppClient::builder(server.url()).tls_config(config).connect().await.unwrap();
    assert!(client.get_server_info().await.is_ok());
}

#[tokio::test]
async fn api_keys_work_over_tls() {
    let (server, ca, _dir) = tls_server("[auth]\napi_keys = [{ name = \"t\", key = \"tls-key\" }]\n");
    let client = SeppClient::builder(format!("https://{}", server.host_port()))
        .tls_ca_certificate(&ca)
        .api_key("tls-key")
        .connect()
        .await
        .unwrap();
    assert!(client.get_server_info().await.is_ok());
}

#[tokio::test]
async fn an_untrusted_certificate_or_a_plaintext_client_is_refused() {
    let (server, _ca, _dir) = tls_server("");
    // The platform roots do not know the test certificate.
    let untrusted = async {
        let client = SeppClient::builder(server.host_port()).tls().connect().await?;
        client.get_server_info().await.map(drop)
    };
    let error: ClientError = untrusted.await.unwrap_err();
    assert!(error.to_string().to_lowercase().contains("certificate"), "{error}");
    let plaintext = async {
        let client = SeppClient::connect(server.url()).await?;
        client.get_server_info().await.map(drop)
    };
    let result: Result<(), ClientError> = plaintext.await;
    assert!(result.is_err());
}
