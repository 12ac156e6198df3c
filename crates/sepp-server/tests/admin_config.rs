//! Config through the admin API: the redacted view with its etag and pins, edits of the file
//! (applied by the watcher, comments kept, validation, refusals), and the gRPC API keys.

mod admin_support;
mod common;

use std::process::Stdio;
use std::time::Duration;

use admin_support::*;
use common::*;
use reqwest::StatusCode;
use sepp_server::proto::v1 as pb;
use serde_json::{Value, json};
use sha2::Digest;

fn file_etag(admin: &AdminServer) -> String {
    let bytes = std::fs::read(admin.server.config_path()).unwrap();
    sha2::Sha256::digest(&bytes).iter().map(|byte| format!("{byte:02x}")).collect()
}

fn change(etag: &str, path: &str, value: Value) -> Value {
    json!({ "etag": etag, "changes": [{ "path": path, "value": value }] })
}

#[tokio::test]
async fn the_config_view_is_redacted_and_its_etag_is_the_files_hash() {
    let admin = AdminServer::start("[auth]\napi_keys = [{ name = \"worker\", key = \"worker-secret-key\" }]\n");
    let view = admin.get("/config", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(view["etag"], file_etag(&admin));
    assert_eq!(view["effective"]["auth"]["api_keys"], json!([{ "name": "worker" }]));
    assert_eq!(view["effective"]["admin"]["keys"][1], json!({ "name": "ops", "role": "operator" }));
    let text = view.to_string();
    for secret in ["worker-secret-key", ADMIN_KEY, OPERATOR_KEY, VIEWER_KEY] {
        assert!(!text.contains(secret), "key material in the config view");
    }
    assert_eq!(view["effective"]["storage"]["persist_mode"], "sync_all");
    assert_eq!(view["effective"]["limits"]["retry_backoff"], "none");
    assert!(view["effective"]["server"]["listen_addr"].is_string());
    assert_eq!(view["env_pinned"], json!([]));
    assert_eq!(view["pending_restart"], json!([]));
    let restart_only: Vec<&str> =
        view["restart_only"].as_array().unwrap().iter().map(|field| field.as_str().unwrap()).collect();
    assert!(restart_only.contains(&"server.listen_addr") && restart_only.contains(&"queues[].dedup_window_ms"));
}

#[tokio::test]
async fn a_config_edit_is_applied_by_the_watcher_keeps_comments_and_reports_restart_only_fields() {
    let admin = AdminServer::start("");
    let original = std::fs::read_to_string(admin.server.config_path()).unwrap();
    admin.server.write_raw_config(&format!("# keep me\n{original}\n[limits]\n# the default\ndefault_priority = 1\n"));
    let etag = eventually("the comment is in the file's etag", Duration::from_secs(15), || async {
        let etag = admin.etag().await;
        (etag == file_etag(&admin)).then_some(etag)
    })
    .await;
    let written = admin
        .put("/config", ADMIN_KEY, change(&etag, "limits.default_priority", json!(6)))
        .await
        .expect(StatusCode::OK);
    assert_eq!((written["applied"].as_bool(), written["requires_restart"].clone()), (Some(true), json!([])));
    assert_eq!(written["etag"], file_etag(&admin));
    let file = std::fs::read_to_string(admin.server.config_path()).unwrap();
    assert!(
        file.contains("# keep me") && file.contains("# the default") && file.contains("default_priority = 6"),
        "{file}"
    );
    let id = admin.enqueue("q", json!({ "job_type": "t" })).await;
    assert_eq!(
        admin.get(&format!("/jobs/{id}"), VIEWER_KEY).await.expect(StatusCode::OK)["priority"],
        6,
        "applied before the answer"
    );

    let body = json!({ "etag": written["etag"], "changes": [
        { "path": "storage.sweep_limit", "value": 500 },
        { "path": "queues.fresh.max_queue_depth", "value": 3 },
    ] });
    let written = admin.put("/config", ADMIN_KEY, body).await.expect(StatusCode::OK);
    assert_eq!(written["requires_restart"], json!(["storage.sweep_limit"]));
    let view = admin.get("/config", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(view["pending_restart"], json!(["storage.sweep_limit"]));
    assert_eq!(admin.get("/queues/fresh", VIEWER_KEY).await.expect(StatusCode::OK)["declared"], true);
    // null removes a key.
    let written = admin
        .put("/config", ADMIN_KEY, change(written["etag"].as_str().unwrap(), "storage.sweep_limit", Value::Null))
        .await
        .expect(StatusCode::OK);
    assert_eq!(written["requires_restart"], json!([]));
    let audit = admin.get("/audit?action_prefix=config", ADMIN_KEY).await.expect(StatusCode::OK);
    assert_eq!(
        audit["entries"][1]["details"],
        json!({ "paths": ["storage.sweep_limit", "queues.fresh.max_queue_depth"] })
    );
}

#[tokio::test]
async fn config_edits_that_cannot_be_made_are_refused_with_their_code() {
    let admin = AdminServer::start("");
    let etag = admin.etag().await;
    let cases = [
        ("admin.keys", json!([]), StatusCode::BAD_REQUEST, "admin_keys_immutable"),
        ("admin.keys.0.role", json!("viewer"), StatusCode::BAD_REQUEST, "admin_keys_immutable"),
        ("auth.api_keys", json!([]), StatusCode::BAD_REQUEST, "api_keys_immutable"),
        ("limits", json!(1), StatusCode::BAD_REQUEST, "invalid_change"),
        ("nowhere.key", json!(1), StatusCode::BAD_REQUEST, "invalid_change"),
        ("limits.default_priority", json!({ "a": 1 }), StatusCode::BAD_REQUEST, "invalid_change"),
        ("queues.q.bogus", json!(1), StatusCode::BAD_REQUEST, "invalid_change"),
        ("limits.default_priority", json!(99), StatusCode::UNPROCESSABLE_ENTITY, "invalid"),
    ];
    for (path, value, status, code) in cases {
        let reply = admin.put("/config", ADMIN_KEY, change(&etag, path, value)).await;
        assert_eq!((reply.status, reply.body["code"].as_str()), (status, Some(code)), "{path}: {}", reply.body);
    }
    admin
        .put("/config", ADMIN_KEY, change("stale", "limits.default_priority", json!(1)))
        .await
        .expect_error(StatusCode::PRECONDITION_FAILED, "etag_mismatch");
    assert_eq!(admin.etag().await, etag, "nothing was written");
    // A file that is not TOML: refused without quoting it.
    admin.server.write_raw_config("[server\nsecret_line = \"do-not-echo\"\n");
    let etag = eventually("the broken file's etag", Duration::from_secs(10), || async {
        let etag = admin.etag().await;
        (etag == file_etag(&admin)).then_some(etag)
    })
    .await;
    let body = admin
        .put("/config", ADMIN_KEY, change(&etag, "limits.default_priority", json!(1)))
        .await
        .expect_error(StatusCode::UNPROCESSABLE_ENTITY, "invalid");
    assert!(!body.to_string().contains("do-not-echo"), "{body}");
}

#[tokio::test]
async fn a_key_set_by_the_environment_is_pinned() {
    let dir = tempfile::TempDir::new().unwrap();
    let contents = render_config(dir.path(), WITH_KEYS);
    let env =
        [("SEPP_LIMITS__MAX_PAYLOAD_BYTES", "2048"), ("SEPP_AUTH__API_KEYS", "[{name=\"w\",key=\"env-secret\"}]")];
    let admin = AdminServer::from(TestServer::start_raw(dir, &contents, &env));
    let view = admin.get("/config", VIEWER_KEY).await.expect(StatusCode::OK);
    assert_eq!(view["env_pinned"], json!(["auth.api_keys", "limits.max_payload_bytes"]));
    assert_eq!(view["effective"]["limits"]["max_payload_bytes"], 2048);
    let etag = view["etag"].as_str().unwrap().to_owned();
    let body = admin
        .put("/config", ADMIN_KEY, change(&etag, "limits.max_payload_bytes", json!(10)))
        .await
        .expect_error(StatusCode::BAD_REQUEST, "env_pinned");
    assert!(body["error"].as_str().unwrap().contains("SEPP_LIMITS__MAX_PAYLOAD_BYTES"));
    let add = json!({ "etag": etag, "name": "x", "key": "y" });
    admin.post("/auth/keys", ADMIN_KEY, add).await.expect_error(StatusCode::BAD_REQUEST, "env_pinned");
    admin.delete("/auth/keys/w", ADMIN_KEY, Some(&etag)).await.expect_error(StatusCode::BAD_REQUEST, "env_pinned");
    assert!(!admin.server.logs().contains("env-secret"));
}

#[tokio::test]
async fn without_a_config_file_at_boot_an_edit_is_written_but_not_applied() {
    let dir = tempfile::TempDir::new().unwrap();
    let mut child = sepp_command()
        .current_dir(dir.path())
        .env("SEPP_SERVER__LISTEN_ADDR", "127.0.0.1:0")
        .env("SEPP_SERVER__DB_PATH", dir.path().join("db"))
        .env("SEPP_ADMIN__LISTEN_ADDR", "127.0.0.1:0")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = Lines::drain(child.stdout.take().unwrap());
    let line = stdout.wait_for("admin UI listening", STARTUP_TIMEOUT).unwrap_or_else(|| panic!("{}", stdout.text()));
    let url = format!("http://127.0.0.1:{}/admin/api/v1", loopback_port(&line).unwrap());
    let http = client();
    let view: Value = http.get(format!("{url}/config")).send().await.unwrap().json().await.unwrap();
    assert_eq!(
        view["etag"], "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        "a missing file hashes as empty"
    );
    let response = http
        .put(format!("{url}/config"))
        .json(&change(view["etag"].as_str().unwrap(), "limits.default_priority", json!(4)))
        .send()
        .await
        .unwrap();
    let written: Value = response.json().await.unwrap();
    assert_eq!(written["applied"], false);
    assert!(std::fs::read_to_string(dir.path().join("sepp.toml")).unwrap().contains("default_priority = 4"));
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn api_keys_can_be_added_revoked_and_turned_off_and_take_effect_on_grpc() {
    let admin = AdminServer::start("");
    let mut open = grpc(&admin).await;
    open.get_server_info(pb::GetServerInfoRequest {}).await.expect("no auth yet");
    admin
        .delete("/auth/keys", ADMIN_KEY, Some(&admin.etag().await))
        .await
        .expect_error(StatusCode::NOT_FOUND, "not_found");
    let written = admin
        .post("/auth/keys", ADMIN_KEY, json!({ "etag": admin.etag().await, "name": "w1", "key": "grpc-key-1" }))
        .await
        .expect(StatusCode::OK);
    assert_eq!(written["applied"], true);
    let refused = open.enqueue_batch(batch(vec![job("q", "t")])).await;
    assert_code(refused, tonic::Code::Unauthenticated);
    let channel = admin.server.channel().await;
    let mut keyed = QueueServiceClient::with_interceptor(channel, |mut request: tonic::Request<()>| {
        request.metadata_mut().insert("authorization", "Bearer grpc-key-1".parse().unwrap());
        Ok(request)
    });
    keyed.enqueue_batch(batch(vec![job("q", "t")])).await.expect("the new key works");
    let file = std::fs::read_to_string(admin.server.config_path()).unwrap();
    assert!(file.contains("name = \"w1\""), "{file}");
    assert_eq!(admin.get("/server-info", VIEWER_KEY).await.expect(StatusCode::OK)["auth_enforcing"], true);

    let etag = admin.etag().await;
    let duplicate_name =
        admin.post("/auth/keys", ADMIN_KEY, json!({ "etag": etag, "name": "w1", "key": "other" })).await;
    duplicate_name.expect_error(StatusCode::BAD_REQUEST, "invalid_change");
    let duplicate_key =
        admin.post("/auth/keys", ADMIN_KEY, json!({ "etag": etag, "name": "w2", "key": "grpc-key-1" })).await;
    duplicate_key.expect_error(StatusCode::BAD_REQUEST, "invalid_change");
    for (name, key) in [("", "k"), ("..", "k"), ("a/b", "k"), ("ok", "has space"), ("ok", "")] {
        let reply = admin.post("/auth/keys", ADMIN_KEY, json!({ "etag": etag, "name": name, "key": key })).await;
        reply.expect_error(StatusCode::BAD_REQUEST, "invalid_argument");
    }
    admin.delete("/auth/keys/w1", ADMIN_KEY, None).await.expect_error(StatusCode::BAD_REQUEST, "if_match_required");
    admin.delete("/auth/keys/nobody", ADMIN_KEY, Some(&etag)).await.expect_error(StatusCode::NOT_FOUND, "not_found");
    admin.delete("/auth/keys/w1", ADMIN_KEY, Some(&etag)).await.expect(StatusCode::OK);
    // An empty list denies every call.
    assert_code(keyed.enqueue_batch(batch(vec![job("q", "t")])).await, tonic::Code::Unauthenticated);
    admin.delete("/auth/keys", ADMIN_KEY, Some(&admin.etag().await)).await.expect(StatusCode::OK);
    open.enqueue_batch(batch(vec![job("q", "t")])).await.expect("auth is off again");
    let body = admin
        .delete("/auth/keys", ADMIN_KEY, Some(&admin.etag().await))
        .await
        .expect_error(StatusCode::NOT_FOUND, "not_found");
    assert_eq!(body["error"], "gRPC auth is already off");
    let audit = admin.get("/audit?action_prefix=auth", ADMIN_KEY).await.expect(StatusCode::OK);
    let actions: Vec<&str> =
        audit["entries"].as_array().unwrap().iter().map(|entry| entry["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["auth.disable", "auth_key.revoke", "auth_key.add"]);
    assert!(!audit.to_string().contains("grpc-key-1"), "the audit log names keys, never their material");
}
