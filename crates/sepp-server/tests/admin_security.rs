//! The admin listener's security: nothing but login answers without credentials, cross-site
//! mutations are refused, payloads are data (never markup), asset paths cannot leave the
//! bundle, no response or log line holds key material, and TLS speaks h2 and HTTP/1.1.

mod admin_support;
mod common;

use std::io::{Read, Write};
use std::time::Duration;

use admin_support::*;
use common::*;
use reqwest::{Method, StatusCode};
use serde_json::json;
use tempfile::TempDir;

/// Every API route, with a path that exists.
fn routes() -> Vec<(Method, &'static str)> {
    vec![
        (Method::GET, "/session"),
        (Method::DELETE, "/session"),
        (Method::GET, "/overview"),
        (Method::GET, "/server-info"),
        (Method::GET, "/queues"),
        (Method::GET, "/queues/q"),
        (Method::PUT, "/queues/q"),
        (Method::DELETE, "/queues/q"),
        (Method::GET, "/queues/q/jobs?state=ready"),
        (Method::POST, "/queues/q/jobs"),
        (Method::GET, "/queues/q/jobs:count?state=ready"),
        (Method::POST, "/queues/q/jobs:dead-letter"),
        (Method::POST, "/queues/q/jobs:bulk"),
        (Method::GET, "/queues/q/dead-letters/AAAA"),
        (Method::POST, "/queues/q/dead-letters:requeue"),
        (Method::POST, "/queues/q/dead-letters:delete"),
        (Method::GET, "/jobs/3ac15610-3abe-4807-bec3-3c8fdc08d418"),
        (Method::GET, "/audit"),
        (Method::GET, "/config"),
        (Method::PUT, "/config"),
        (Method::POST, "/auth/keys"),
        (Method::DELETE, "/auth/keys/k"),
        (Method::DELETE, "/auth/keys"),
        (Method::GET, "/workers"),
        (Method::GET, "/events"),
    ]
}

#[tokio::test]
async fn no_endpoint_but_login_answers_without_credentials() {
    let admin = AdminServer::start("");
    for (method, path) in routes() {
        let request =
            admin.http.request(method.clone(), admin.api(path)).header("content-type", "application/json").body("{}");
        let reply = reply(request.send().await.unwrap()).await;
        let body = reply.expect_error(StatusCode::UNAUTHORIZED, "unauthorized");
        assert_eq!(body["error"], "authentication required", "{method} {path}");
    }
    let login = admin.call(Method::POST, "/session", None, Some(json!({ "name": "root", "key": ADMIN_KEY }))).await;
    login.expect(StatusCode::OK);
}

#[tokio::test]
async fn cross_site_mutations_are_refused() {
    let admin = AdminServer::start("");
    let cookie = admin.login("ops", OPERATOR_KEY).await;
    let body = r#"{"job_type":"t"}"#;
    let send = |origin: Option<&str>, site: Option<&str>, content_type: &str| {
        let mut request = admin
            .http
            .post(admin.api("/queues/q/jobs"))
            .header("cookie", &cookie)
            .header("content-type", content_type)
            .body(body);
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        if let Some(site) = site {
            request = request.header("sec-fetch-site", site);
        }
        async move { reply(request.send().await.unwrap()).await }
    };
    // A form on another site posting to this one, as a browser sends it.
    let forged = send(Some("http://evil.example"), Some("cross-site"), "application/x-www-form-urlencoded").await;
    forged.expect_error(StatusCode::FORBIDDEN, "forbidden");
    send(Some("http://evil.example"), None, "application/json").await.expect_error(StatusCode::FORBIDDEN, "forbidden");
    send(None, Some("same-site"), "application/json").await.expect_error(StatusCode::FORBIDDEN, "forbidden");
    send(Some("null"), None, "application/json").await.expect_error(StatusCode::FORBIDDEN, "forbidden");
    // Same origin, but not JSON: no form can send JSON.
    assert_eq!(
        send(Some(&admin.url), Some("same-origin"), "text/plain").await.status,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    assert_eq!(admin.peek("q", "ready", "").await["jobs"], json!([]), "nothing got in");
    send(Some(&admin.url), Some("same-origin"), "application/json").await.expect(StatusCode::OK);
    // Login is a mutation too.
    let login = admin
        .http
        .post(admin.api("/session"))
        .header("origin", "http://evil.example")
        .json(&json!({ "name": "root", "key": ADMIN_KEY }));
    assert_eq!(login.send().await.unwrap().status(), StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn markup_in_payloads_and_names_comes_back_as_json_text() {
    let admin = AdminServer::start("");
    let script = "<script>alert('x')</script>";
    let id = admin.enqueue("q", json!({ "job_type": "<img src=x onerror=alert(1)>", "payload": { "encoding": "text/html", "data_text": script } })).await;
    let response = admin.http.get(admin.api(&format!("/jobs/{id}"))).bearer_auth(VIEWER_KEY).send().await.unwrap();
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(response.headers()["x-content-type-options"], "nosniff");
    assert!(response.headers().contains_key("content-security-policy"));
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["job_type"], "<img src=x onerror=alert(1)>");
    let shell =
        admin.http.get(format!("{}/admin/queues/%3Cscript%3Ealert(1)%3C%2Fscript%3E", admin.url)).send().await.unwrap();
    assert!(!shell.text().await.unwrap().contains("<script>alert"), "the shell does not reflect its path");
}

/// Sends `path` exactly as written (no client normalizes it) and returns status and body.
fn raw_get(url: &str, path: &str) -> (u16, String) {
    let addr = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split(' ').nth(1).unwrap().parse().unwrap();
    (status, response)
}

#[tokio::test]
async fn asset_paths_cannot_leave_the_bundle() {
    let admin = AdminServer::start("");
    for path in [
        "/admin/../../../../etc/passwd",
        "/admin/assets/../../../../etc/passwd",
        "/admin/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/admin/..%2f..%2f..%2fetc%2fpasswd",
        "/admin/assets/..%5c..%5cCargo.toml",
        "/admin/./index.html",
    ] {
        let (status, response) = raw_get(&admin.url, path);
        assert!(status == 400 || status == 404, "{path}: {status}");
        assert!(!response.contains("root:") && !response.contains("<html"), "{path}: {response}");
    }
}

#[tokio::test]
async fn no_response_or_log_line_holds_key_material() {
    let grpc_key = "grpc-worker-secret-0004";
    let admin = AdminServer::start(&format!("[auth]\napi_keys = [{{ name = \"worker\", key = \"{grpc_key}\" }}]\n"));
    let mut seen = String::new();
    let cookie = admin.login("root", ADMIN_KEY).await;
    for (method, path) in routes() {
        for key in [ADMIN_KEY, VIEWER_KEY] {
            let request = admin
                .http
                .request(method.clone(), admin.api(path))
                .bearer_auth(key)
                .header("content-type", "application/json")
                .body("{}");
            let response = tokio::time::timeout(Duration::from_secs(5), request.send()).await;
            let Ok(Ok(response)) = response else { continue };
            seen.push_str(&format!("{:?}", response.headers()));
            if path != "/events" {
                seen.push_str(&response.text().await.unwrap_or_default());
            }
        }
    }
    seen.push_str(&admin.get_with_cookie("/config", &cookie).await.body.to_string());
    let add = json!({ "etag": admin.etag().await, "name": "second", "key": "grpc-second-secret-0005" });
    seen.push_str(&admin.post("/auth/keys", ADMIN_KEY, add).await.body.to_string());
    seen.push_str(&admin.get("/audit", ADMIN_KEY).await.body.to_string());
    admin.call(Method::POST, "/session", None, Some(json!({ "name": "root", "key": "typo-of-a-key" }))).await;
    assert!(admin.server.wait_for_log("session.login_failed", Duration::from_secs(5)).await.is_some());
    let logs = format!("{}\n{}", admin.server.logs(), admin.server.stderr().text());
    for secret in [ADMIN_KEY, OPERATOR_KEY, VIEWER_KEY, grpc_key, "grpc-second-secret-0005", "typo-of-a-key"] {
        assert!(!seen.contains(secret), "a response holds {secret}");
        assert!(!logs.contains(secret), "a log line holds {secret}");
    }
    let token = cookie.trim_start_matches("sepp_admin=");
    assert!(!logs.contains(token), "a log line holds a session token");
}

/// A self-signed certificate for 127.0.0.1 in a temporary directory, and its PEM.
fn certificate() -> (TempDir, String) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string(), "127.0.0.1".to_string()]).unwrap();
    let cert_pem = certified.cert.pem();
    let dir = TempDir::new().unwrap();
    std::fs::write(dir.path().join("cert.pem"), &cert_pem).unwrap();
    std::fs::write(dir.path().join("key.pem"), certified.signing_key.serialize_pem()).unwrap();
    (dir, cert_pem)
}

#[tokio::test]
async fn a_tls_admin_listener_speaks_h2_and_http_1_1_and_sets_secure_cookies() {
    let (dir, cert_pem) = certificate();
    let extra = WITH_KEYS
        .replace("[admin]\n", "[admin]\ntls_cert_path = \"{dir}/cert.pem\"\ntls_key_path = \"{dir}/key.pem\"\n");
    let server = TestServer::start_in(dir, &extra);
    let url = server.admin_url();
    assert!(server.logs().contains("admin UI listening at https://127.0.0.1:"), "{}", server.logs());
    assert!(url.starts_with("https://"));
    let root = reqwest::Certificate::from_pem(cert_pem.as_bytes()).unwrap();
    let h2 = reqwest::Client::builder().no_proxy().add_root_certificate(root.clone()).build().unwrap();
    let response = h2.get(format!("{url}/admin/api/v1/session")).bearer_auth(VIEWER_KEY).send().await.unwrap();
    assert_eq!((response.status(), response.version()), (StatusCode::OK, reqwest::Version::HTTP_2));
    let h1 = reqwest::Client::builder().no_proxy().add_root_certificate(root).http1_only().build().unwrap();
    let login = h1
        .post(format!("{url}/admin/api/v1/session"))
        .json(&json!({ "name": "root", "key": ADMIN_KEY }))
        .send()
        .await
        .unwrap();
    assert_eq!((login.status(), login.version()), (StatusCode::OK, reqwest::Version::HTTP_11));
    assert!(login.headers()["set-cookie"].to_str().unwrap().ends_with("; Secure"));
    let plain = client().get(format!("{}/admin/api/v1/session", url.replace("https://", "http://"))).send().await;
    assert!(plain.map(|response| !response.status().is_success()).unwrap_or(true), "plain HTTP is not served");
}
