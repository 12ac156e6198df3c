//! The command line's HTTP client: one request per connection to the admin listener, over plain
//! HTTP/1.1 or HTTPS (trusting the certificate given with `--ca-cert`).

use std::sync::Arc;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, IF_MATCH};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::rustls;

/// Where the admin listener is and how to talk to it.
pub struct Client {
    host: String,
    port: u16,
    /// The path prefix before `/admin/api/v1` (normally empty).
    base_path: String,
    key: Option<String>,
    tls: Option<tokio_rustls::TlsConnector>,
}

/// An answer of the API.
pub struct Answer {
    pub status: StatusCode,
    pub body: Value,
    /// The body as text when it was not JSON (framework errors are plain text).
    pub text: String,
}

impl Client {
    pub fn new(url: &str, key: Option<String>, ca_cert: Option<&std::path::Path>) -> Result<Client, String> {
        let uri: Uri = url.parse().map_err(|error| format!("--url {url:?} is not a URL: {error}"))?;
        let scheme_https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(format!("--url {url:?} must start with http:// or https://")),
        };
        let host =
            uri.host().ok_or_else(|| format!("--url {url:?} names no host"))?.trim_matches(['[', ']']).to_owned();
        let port = uri.port_u16().unwrap_or(if scheme_https { 443 } else { 80 });
        let base_path = uri.path().trim_end_matches('/').to_owned();
        let tls = if scheme_https {
            let Some(ca_cert) = ca_cert else {
                return Err("an https:// --url needs --ca-cert with the certificate to trust".into());
            };
            let pem = std::fs::read(ca_cert).map_err(|error| format!("cannot read {}: {error}", ca_cert.display()))?;
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|error| format!("{}: {error}", ca_cert.display()))?;
                roots.add(cert).map_err(|error| format!("{}: {error}", ca_cert.display()))?;
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|error| error.to_string())?
                .with_root_certificates(roots)
                .with_no_client_auth();
            Some(tokio_rustls::TlsConnector::from(Arc::new(config)))
        } else {
            None
        };
        Ok(Client { host, port, base_path, key, tls })
    }

    /// Sends one request to `/admin/api/v1{path}`.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        if_match: Option<&str>,
    ) -> Result<Answer, String> {
        let authority = if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        };
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}/admin/api/v1{path}", self.base_path))
            .header(HOST, &authority);
        if let Some(key) = &self.key {
            request = request.header(AUTHORIZATION, format!("Bearer {key}"));
        }
        if let Some(etag) = if_match {
            request = request.header(IF_MATCH, etag);
        }
        let payload = match body {
            Some(body) => {
                request = request.header(CONTENT_TYPE, "application/json");
                Bytes::from(body.to_string())
            }
            None => Bytes::new(),
        };
        let request = request.body(Full::new(payload)).map_err(|error| error.to_string())?;
        let stream = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|error| format!("cannot connect to {authority}: {error}"))?;
        let (status, bytes) = match &self.tls {
            None => exchange(stream, request).await?,
            Some(connector) => {
                let name = ServerName::try_from(self.host.clone()).map_err(|error| error.to_string())?;
                let stream = connector
                    .connect(name, stream)
                    .await
                    .map_err(|error| format!("TLS with {authority} failed: {error}"))?;
                exchange(stream, request).await?
            }
        };
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok(Answer { status, body, text })
    }
}

async fn exchange<IO>(io: IO, request: Request<Full<Bytes>>) -> Result<(StatusCode, Bytes), String>
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(TokioIo::new(io)).await.map_err(|error| error.to_string())?;
    tokio::spawn(connection);
    let response = sender.send_request(request).await.map_err(|error| format!("the request failed: {error}"))?;
    let status = response.status();
    let bytes = response.into_body().collect().await.map_err(|error| error.to_string())?.to_bytes();
    Ok((status, bytes))
}
