//! Helpers of the admin API tests: a server with its admin listener on and a key of each role,
//! and a small JSON client around reqwest.

#![allow(dead_code)]

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::common::*;

pub const ADMIN_KEY: &str = "root-admin-key-0001";
pub const OPERATOR_KEY: &str = "ops-operator-key-0002";
pub const VIEWER_KEY: &str = "watch-viewer-key-0003";

/// The `[admin]` section with a key of each role, dead-letter retention on.
pub const WITH_KEYS: &str = r#"
[admin]
enabled = true
listen_addr = "127.0.0.1:0"
keys = [
  { name = "root", key = "root-admin-key-0001", role = "admin" },
  { name = "ops", key = "ops-operator-key-0002", role = "operator" },
  { name = "watch", key = "watch-viewer-key-0003", role = "viewer" },
]

[storage]
dead_letter_retention_ms = 3600000
"#;

/// The `[admin]` section without keys (the `local` admin).
pub const KEYLESS: &str = r#"
[admin]
enabled = true
listen_addr = "127.0.0.1:0"

[storage]
dead_letter_retention_ms = 3600000
"#;

/// A running server and a client of its admin API.
pub struct AdminServer {
    pub server: TestServer,
    pub url: String,
    pub http: reqwest::Client,
}

/// An answer: status, headers and the body (JSON when it parses, else `Value::String`).
pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Reply {
    #[track_caller]
    pub fn expect(self, status: StatusCode) -> Value {
        assert_eq!(self.status, status, "body: {}", self.body);
        self.body
    }

    /// Asserts the error envelope: `status` and `code`.
    #[track_caller]
    pub fn expect_error(self, status: StatusCode, code: &str) -> Value {
        assert_eq!(self.status, status, "body: {}", self.body);
        assert_eq!(self.body["code"], code, "body: {}", self.body);
        assert!(self.body["error"].is_string(), "an error message: {}", self.body);
        self.body
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().build().expect("an HTTP client")
}

impl AdminServer {
    /// A server with the three keys plus `extra` TOML.
    pub fn start(extra: &str) -> AdminServer {
        AdminServer::from(TestServer::start(&format!("{WITH_KEYS}\n{extra}")))
    }

    pub fn keyless(extra: &str) -> AdminServer {
        AdminServer::from(TestServer::start(&format!("{KEYLESS}\n{extra}")))
    }

    pub fn from(server: TestServer) -> AdminServer {
        let url = server.admin_url();
        AdminServer { server, url, http: client() }
    }

    /// After a restart of the server (its admin port changes).
    pub fn refresh_url(&mut self) {
        self.url = self.server.admin_url();
    }

    pub fn api(&self, path: &str) -> String {
        format!("{}/admin/api/v1{path}", self.url)
    }

    /// Sends a request with `key` as bearer token (none when `None`) and a JSON body.
    pub async fn call(&self, method: Method, path: &str, key: Option<&str>, body: Option<Value>) -> Reply {
        let mut request = self.http.request(method, self.api(path));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        reply(request.send().await.expect("the admin listener answers")).await
    }

    pub async fn get(&self, path: &str, key: &str) -> Reply {
        self.call(Method::GET, path, Some(key), None).await
    }

    pub async fn post(&self, path: &str, key: &str, body: Value) -> Reply {
        self.call(Method::POST, path, Some(key), Some(body)).await
    }

    pub async fn put(&self, path: &str, key: &str, body: Value) -> Reply {
        self.call(Method::PUT, path, Some(key), Some(body)).await
    }

    /// A DELETE with `If-Match` when given.
    pub async fn delete(&self, path: &str, key: &str, if_match: Option<&str>) -> Reply {
        let mut request = self.http.delete(self.api(path)).bearer_auth(key);
        if let Some(etag) = if_match {
            request = request.header("if-match", etag);
        }
        reply(request.send().await.expect("the admin listener answers")).await
    }

    /// The config file's etag.
    pub async fn etag(&self) -> String {
        self.get("/config", ADMIN_KEY).await.expect(StatusCode::OK)["etag"].as_str().expect("an etag").to_owned()
    }

    /// Enqueues a job through the API and returns its id.
    pub async fn enqueue(&self, queue: &str, body: Value) -> String {
        let answer = self.post(&format!("/queues/{queue}/jobs"), OPERATOR_KEY, body).await.expect(StatusCode::OK);
        answer["job_id"].as_str().expect("a job id").to_owned()
    }

    /// A page of `queue`'s jobs in `state` (with extra query parameters).
    pub async fn peek(&self, queue: &str, state: &str, extra: &str) -> Value {
        self.get(&format!("/queues/{queue}/jobs?state={state}{extra}"), VIEWER_KEY).await.expect(StatusCode::OK)
    }

    /// The handles of a page.
    pub fn keys(page: &Value) -> Vec<String> {
        page["jobs"].as_array().expect("jobs").iter().map(|job| job["key_b64"].as_str().unwrap().to_owned()).collect()
    }

    /// Signs in and returns the session cookie (`sepp_admin=<token>`).
    pub async fn login(&self, name: &str, key: &str) -> String {
        let response = self
            .http
            .post(self.api("/session"))
            .json(&json!({ "name": name, "key": key }))
            .send()
            .await
            .expect("login answers");
        assert_eq!(response.status(), StatusCode::OK);
        let cookie = response.headers()["set-cookie"].to_str().unwrap().to_owned();
        cookie.split(';').next().unwrap().to_owned()
    }

    /// A GET with a session cookie.
    pub async fn get_with_cookie(&self, path: &str, cookie: &str) -> Reply {
        let request = self.http.get(self.api(path)).header("cookie", cookie);
        reply(request.send().await.expect("the admin listener answers")).await
    }

    /// Waits until the config watcher has reloaded `count` more times than `mark` says.
    pub async fn wait_for_reload(&self, mark: usize) {
        let found = self.server.wait_for_log_since(mark, "configuration reloaded", Duration::from_secs(15)).await;
        assert!(found.is_some(), "the config was not reloaded\n{}", self.server.logs());
    }
}

pub async fn reply(response: reqwest::Response) -> Reply {
    let status = response.status();
    let headers = response.headers().clone();
    let text = response.text().await.expect("a body");
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    Reply { status, headers, body }
}

/// A gRPC client of the same server.
pub async fn grpc(admin: &AdminServer) -> QueueServiceClient<tonic::transport::Channel> {
    admin.server.raw_client().await
}
