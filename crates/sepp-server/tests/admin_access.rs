//! The admin listener's URL space and who may use it: the UI shell and its caching, JSON 404s,
//! keys, roles, sessions (login, logout, key rotation), the keyless `local` admin, and the
//! overview and server-info endpoints.

mod admin_support;
mod common;

use std::time::Duration;

use admin_support::*;
use common::*;
use reqwest::{Method, StatusCode};
use serde_json::json;

#[tokio::test]
async fn the_root_redirects_to_the_ui_and_ui_routes_serve_the_shell_without_credentials() {
    let admin = AdminServer::start("");
    let no_redirects =
        reqwest::Client::builder().no_proxy().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let root = no_redirects.get(format!("{}/", admin.url)).send().await.unwrap();
    assert_eq!(root.status(), StatusCode::TEMPORARY_REDIRECT);
    assert_eq!(root.headers()["location"], "/admin/");
    for path in ["/admin/", "/admin", "/admin/queues/emails/jobs", "/admin/audit", "/admin/login"] {
        let response = admin.http.get(format!("{}{path}", admin.url)).send().await.unwrap();
        assert_eq!(response.status(), StatusCode::OK, "{path}");
        assert_eq!(response.headers()["content-type"], "text/html; charset=utf-8", "{path}");
        assert_eq!(response.headers()["cache-control"], "no-cache", "{path}");
        let csp = response.headers()["content-security-policy"].to_str().unwrap().to_owned();
        assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-eval"), "{csp}");
        assert!(!csp.split(';').any(|part| part.contains("script-src") && part.contains("unsafe-inline")), "{csp}");
        assert!(response.text().await.unwrap().contains("<html"), "{path}");
    }
}

#[tokio::test]
async fn unknown_api_and_other_paths_are_json_404s_and_a_missing_asset_is_not_the_shell() {
    let admin = AdminServer::start("");
    for path in ["/admin/api/v1/nope", "/admin/api/v2/queues", "/elsewhere", "/admin/assets/missing-abc.js"] {
        let reply =
            reply(admin.http.get(format!("{}{path}", admin.url)).bearer_auth(ADMIN_KEY).send().await.unwrap()).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{path}");
        assert_eq!(reply.body, json!({ "error": "not found", "code": "not_found" }), "{path}");
    }
}

#[tokio::test]
async fn each_key_acts_with_its_role_and_a_wrong_key_is_refused() {
    let admin = AdminServer::start("");
    for (key, name, role) in
        [(ADMIN_KEY, "root", "admin"), (OPERATOR_KEY, "ops", "operator"), (VIEWER_KEY, "watch", "viewer")]
    {
        let session = admin.get("/session", key).await.expect(StatusCode::OK);
        assert_eq!(session, json!({ "name": name, "role": role, "auth_enabled": true }));
    }
    let body = admin.get("/session", "not-a-key").await.expect_error(StatusCode::UNAUTHORIZED, "unauthorized");
    assert_eq!(body["error"], "authentication required");
    let body =
        admin.call(Method::GET, "/queues", None, None).await.expect_error(StatusCode::UNAUTHORIZED, "unauthorized");
    assert_eq!(body["error"], "authentication required");
}

/// Each mutation with the least role it needs, and a body it would accept past the role check.
fn mutations() -> Vec<(Method, &'static str, &'static str)> {
    vec![
        (Method::POST, "/queues/q/jobs", "operator"),
        (Method::POST, "/queues/q/jobs:dead-letter", "operator"),
        (Method::POST, "/queues/q/jobs:bulk", "operator"),
        (Method::POST, "/queues/q/dead-letters:requeue", "operator"),
        (Method::POST, "/queues/q/dead-letters:delete", "operator"),
        (Method::PUT, "/queues/q", "admin"),
        (Method::DELETE, "/queues/q", "admin"),
        (Method::PUT, "/config", "admin"),
        (Method::POST, "/auth/keys", "admin"),
        (Method::DELETE, "/auth/keys/k", "admin"),
        (Method::DELETE, "/auth/keys", "admin"),
        (Method::GET, "/audit", "admin"),
    ]
}

#[tokio::test]
async fn a_role_below_the_one_an_endpoint_needs_is_refused_before_the_body_is_read() {
    let admin = AdminServer::start("");
    for (method, path, needed) in mutations() {
        let lower: &[&str] = if needed == "admin" { &[VIEWER_KEY, OPERATOR_KEY] } else { &[VIEWER_KEY] };
        for key in lower {
            // The body is not even JSON: the role check comes first.
            let request = admin
                .http
                .request(method.clone(), admin.api(path))
                .bearer_auth(key)
                .header("content-type", "application/json")
                .body("{nope");
            let reply = reply(request.send().await.unwrap()).await;
            let body = reply.expect_error(StatusCode::FORBIDDEN, "forbidden");
            assert_eq!(body["error"], format!("this action requires the {needed} role"), "{method} {path}");
        }
    }
    // Reads need only a viewer.
    for path in
        ["/overview", "/server-info", "/queues", "/queues/q", "/queues/q/jobs?state=ready", "/config", "/workers"]
    {
        admin.get(path, VIEWER_KEY).await.expect(StatusCode::OK);
    }
}

#[tokio::test]
async fn login_sets_a_strict_http_only_session_cookie_and_logout_ends_it() {
    let admin = AdminServer::start("");
    let response = admin
        .http
        .post(admin.api("/session"))
        .json(&json!({ "name": "ops", "key": OPERATOR_KEY }))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let cookie_header = response.headers()["set-cookie"].to_str().unwrap().to_owned();
    let body = reply(response).await.body;
    assert_eq!((body["name"].as_str(), body["role"].as_str()), (Some("ops"), Some("operator")));
    assert!(body["expires_at_ms"].as_i64().unwrap() > now_ms() + 43_000_000);
    let token = cookie_header.strip_prefix("sepp_admin=").unwrap().split(';').next().unwrap();
    assert_eq!(token.len(), 64);
    assert!(token.bytes().all(|byte| byte.is_ascii_hexdigit()));
    assert!(
        cookie_header.contains("; HttpOnly")
            && cookie_header.contains("; SameSite=Strict")
            && cookie_header.contains("; Path=/")
    );
    assert!(!cookie_header.contains("Secure"), "no Secure flag without TLS on the admin listener");
    let cookie = format!("sepp_admin={token}");
    let whoami = admin.get_with_cookie("/session", &cookie).await.expect(StatusCode::OK);
    assert_eq!(whoami["name"], "ops");

    let logout = admin.http.delete(admin.api("/session")).header("cookie", &cookie).send().await.unwrap();
    assert_eq!(logout.status(), StatusCode::NO_CONTENT);
    assert!(logout.headers()["set-cookie"].to_str().unwrap().contains("Max-Age=0"));
    admin.get_with_cookie("/session", &cookie).await.expect_error(StatusCode::UNAUTHORIZED, "unauthorized");

    let audit = admin.get("/audit?limit=10", ADMIN_KEY).await.expect(StatusCode::OK);
    let actions: Vec<&str> =
        audit["entries"].as_array().unwrap().iter().map(|entry| entry["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["session.logout", "session.login"]);
}

#[tokio::test]
async fn a_failed_login_is_refused_logged_and_not_audited() {
    let admin = AdminServer::start("");
    for (name, key) in [("ops", "wrong"), ("root", OPERATOR_KEY), ("nobody", ADMIN_KEY)] {
        let reply = admin.call(Method::POST, "/session", None, Some(json!({ "name": name, "key": key }))).await;
        let body = reply.expect_error(StatusCode::UNAUTHORIZED, "unauthorized");
        assert_eq!(body["error"], "invalid name or key");
    }
    assert!(admin.server.wait_for_log("session.login_failed", Duration::from_secs(5)).await.is_some());
    let audit = admin.get("/audit", ADMIN_KEY).await.expect(StatusCode::OK);
    assert_eq!(audit["entries"], json!([]));
}

#[tokio::test]
async fn rotating_or_removing_a_key_signs_its_sessions_out_and_role_edits_apply_at_once() {
    let admin = AdminServer::start("");
    let ops = admin.login("ops", OPERATOR_KEY).await;
    let watch = admin.login("watch", VIEWER_KEY).await;
    assert_eq!(admin.get_with_cookie("/session", &watch).await.expect(StatusCode::OK)["role"], "viewer");
    // ops gets new key material; watch is promoted to operator under the same key.
    let mark = admin.server.log_mark();
    admin.server.write_config(&WITH_KEYS.replace("ops-operator-key-0002", "ops-rotated-key-0099").replace(
        r#"key = "watch-viewer-key-0003", role = "viewer""#,
        r#"key = "watch-viewer-key-0003", role = "operator""#,
    ));
    admin.wait_for_reload(mark).await;
    admin.get_with_cookie("/session", &ops).await.expect_error(StatusCode::UNAUTHORIZED, "unauthorized");
    assert_eq!(admin.get_with_cookie("/session", &watch).await.expect(StatusCode::OK)["role"], "operator");
    // Removing watch's key signs it out too.
    let mark = admin.server.log_mark();
    admin.server.write_config(
        r#"
[admin]
enabled = true
listen_addr = "127.0.0.1:0"
keys = [{ name = "root", key = "root-admin-key-0001", role = "admin" }]
"#,
    );
    admin.wait_for_reload(mark).await;
    admin.get_with_cookie("/session", &watch).await.expect_error(StatusCode::UNAUTHORIZED, "unauthorized");
}

#[tokio::test]
async fn without_keys_a_loopback_listener_acts_as_the_local_admin_and_login_always_fails() {
    let admin = AdminServer::keyless("");
    let session = admin.call(Method::GET, "/session", None, None).await.expect(StatusCode::OK);
    assert_eq!(session, json!({ "name": null, "role": "admin", "auth_enabled": false }));
    admin.call(Method::GET, "/audit", None, None).await.expect(StatusCode::OK);
    let login = admin.call(Method::POST, "/session", None, Some(json!({ "name": "x", "key": "y" }))).await;
    login.expect_error(StatusCode::UNAUTHORIZED, "unauthorized");
    let job_id = admin.enqueue("q", json!({ "job_type": "t" })).await;
    let audit = admin.call(Method::GET, "/audit", None, None).await.expect(StatusCode::OK);
    assert_eq!(audit["entries"][0]["actor"], "local");
    assert_eq!(audit["entries"][0]["details"]["job_id"], job_id.as_str());
}

#[tokio::test]
async fn keys_removed_at_runtime_from_a_non_loopback_listener_lock_it_until_a_restart() {
    let with_keys = WITH_KEYS.replace("127.0.0.1:0", "0.0.0.0:0");
    let admin = AdminServer::from(TestServer::start(&with_keys));
    assert!(admin.server.logs().contains("admin UI listening at http://localhost:"), "{}", admin.server.logs());
    admin.get("/session", ADMIN_KEY).await.expect(StatusCode::OK);
    let mark = admin.server.log_mark();
    admin.server.write_config("[admin]\nenabled = true\nlisten_addr = \"0.0.0.0:0\"\n");
    // Validation refuses a keyless non-loopback config, so the running one stays.
    assert!(admin.server.wait_for_log_since(mark, "config reload failed", Duration::from_secs(15)).await.is_some());
    admin.get("/session", ADMIN_KEY).await.expect(StatusCode::OK);
    // Turning the listener off in the file (restart-only) makes keys optional: they go.
    let mark = admin.server.log_mark();
    admin.server.write_config("[admin]\nenabled = false\nlisten_addr = \"0.0.0.0:0\"\n");
    admin.wait_for_reload(mark).await;
    let body = admin.get("/session", ADMIN_KEY).await.expect_error(StatusCode::UNAUTHORIZED, "unauthorized");
    assert_eq!(body["error"], "admin keys were removed at runtime; restart required");
}

#[tokio::test]
async fn a_non_loopback_bind_without_keys_does_not_start() {
    let dir = tempfile::TempDir::new().unwrap();
    let path = dir.path().join("sepp.toml");
    std::fs::write(&path, render_config(dir.path(), "[admin]\nenabled = true\nlisten_addr = \"0.0.0.0:0\"\n")).unwrap();
    let run = run_to_exit(&["--config", path.to_str().unwrap()], dir.path(), &[]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stdout);
    assert!(run.stderr.contains("admin.keys must be set"), "{}", run.stderr);
    assert!(!run.stdout.contains("admin UI listening"));
}

#[tokio::test]
async fn overview_and_server_info_describe_the_running_server() {
    let admin = AdminServer::start("[[queues]]\nname = \"declared\"\n");
    let info = admin.get("/server-info", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(info["version"], sepp_server::service::SERVER_VERSION);
    assert_eq!(info["listen_addr"], "127.0.0.1:0", "the configured address");
    assert_eq!(
        (info["tls"].as_bool(), info["auth_enforcing"].as_bool(), info["strict_queues"].as_bool()),
        (Some(false), Some(false), Some(false))
    );
    assert!(info["db_path"].as_str().unwrap().ends_with("db"));
    let started_at_ms = info["started_at_ms"].as_i64().unwrap();
    assert!(started_at_ms <= now_ms());

    admin.enqueue("work", json!({ "job_type": "t" })).await;
    let overview = eventually("the frame lists the new queue", Duration::from_secs(10), || async {
        let overview = admin.get("/overview", VIEWER_KEY).await.expect(StatusCode::OK);
        overview["frame"]["queues"]["work"]["ready"].as_u64().filter(|ready| *ready == 1).map(|_| overview)
    })
    .await;
    let server = &overview["server"];
    assert_eq!(server["version"], sepp_server::service::SERVER_VERSION);
    assert_eq!(server["started_at_ms"], started_at_ms);
    assert_eq!(server["dead_letter_retention_ms"], 3_600_000);
    assert!(server["now_ms"].as_i64().unwrap() >= started_at_ms);
    assert!(server["command_queue_len"].is_u64());
    let frame = &overview["frame"];
    assert!(frame["seq"].as_u64().unwrap() >= 1 && frame["ts_ms"].is_i64());
    assert!(frame["queues"]["declared"].is_object(), "declared queues are always listed");
    let work = &frame["queues"]["work"];
    assert_eq!(work["totals"]["enqueued"], 1);
    for rate in ["enqueued", "acked", "nacked", "dead_lettered"] {
        assert!(work["rates"][rate].is_f64(), "{rate}: {work}");
    }
    assert_eq!(frame["queue_count"], 2);
    assert_eq!(frame["truncated"], false);
    assert_eq!(frame["total"]["ready"], 1, "{}", frame["total"]);
    assert_eq!(frame["total"]["totals"]["enqueued"], 1);
    let history = &overview["history"];
    assert!(history["queues"]["work"].is_array(), "{history}");
    assert!(history["other"].is_array() && history["total"].is_array(), "{history}");
    let info = &overview["history_info"];
    assert_eq!((info["budget_bytes"].as_u64(), info["seconds"].as_u64()), (Some(16 << 20), Some(3_600)), "{info}");
    assert_eq!((info["queues_tracked"].as_u64(), info["queues_folded"].as_u64()), (Some(2), Some(0)), "{info}");
    let without = admin.get("/overview?history=false", VIEWER_KEY).await.expect(StatusCode::OK);
    assert!(without.get("history").is_none(), "the history key is left out entirely");
    assert!(without["history_info"].is_object());

    let own = admin.get("/queues/work/history", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!((&own["name"], &own["tracked"], &own["seconds"]), (&json!("work"), &json!(true), &json!(3_600)));
    let samples = own["samples"].as_array().unwrap();
    assert!(!samples.is_empty() && samples.iter().all(|sample| sample["ts_ms"].is_i64() && sample["acked"].is_f64()));
    let unknown = admin.get("/queues/never-seen/history", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!((&unknown["tracked"], &unknown["samples"]), (&json!(false), &json!([])));
}
