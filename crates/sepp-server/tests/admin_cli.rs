//! `sepp admin <verb>` against a running server: tables for people, `--json` for scripts, the
//! key from `SEPP_ADMIN_KEY`, and a clear error with exit code 1 when the API refuses.

mod admin_support;
mod common;

use admin_support::*;
use common::*;
use serde_json::{Value, json};

/// Runs `sepp admin --url <admin> <args>` with `key` in `SEPP_ADMIN_KEY`.
async fn sepp_admin(admin: &AdminServer, key: &str, args: &[&str]) -> Finished {
    let mut all: Vec<String> = vec!["admin".into(), "--url".into(), admin.url.clone()];
    all.extend(args.iter().map(|arg| arg.to_string()));
    let dir = admin.server.dir().to_path_buf();
    let key = key.to_owned();
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = all.iter().map(String::as_str).collect();
        run_to_exit(&args, &dir, &[("SEPP_ADMIN_KEY", &key)])
    })
    .await
    .unwrap()
}

#[track_caller]
fn succeeded(run: &Finished) -> &str {
    assert!(run.status.success(), "exit {:?}\nstdout: {}\nstderr: {}", run.status, run.stdout, run.stderr);
    &run.stdout
}

fn json_of(run: &Finished) -> Value {
    serde_json::from_str(succeeded(run)).unwrap_or_else(|error| panic!("not JSON ({error}): {}", run.stdout))
}

#[tokio::test]
async fn enqueue_queues_peek_and_job_show_tables_and_json() {
    let admin = AdminServer::start("");
    let run = sepp_admin(
        &admin,
        OPERATOR_KEY,
        &[
            "enqueue",
            "mail",
            "--type",
            "email",
            "--data",
            "{\"to\":\"ana\"}",
            "--encoding",
            "application/json",
            "--priority",
            "4",
            "--custom",
            "tenant=7",
            "--custom",
            "vip=true",
        ],
    )
    .await;
    let job_id = succeeded(&run).trim().to_owned();
    assert_eq!(job_id.len(), 36, "{job_id}");

    // Depths come from the stats the committer publishes every 250 ms.
    eventually("the queue is listed", std::time::Duration::from_secs(10), || async {
        let queues = admin.get("/queues", VIEWER_KEY).await.body;
        queues.as_array().is_some_and(|queues| !queues.is_empty()).then_some(())
    })
    .await;
    let run = sepp_admin(&admin, VIEWER_KEY, &["queues"]).await;
    let table = succeeded(&run);
    assert!(table.lines().next().unwrap().starts_with("QUEUE"), "{table}");
    assert!(
        table.lines().any(|line| line.split_whitespace().collect::<Vec<_>>() == ["mail", "1", "0", "0", "0", "no"]),
        "{table}"
    );

    let run = sepp_admin(&admin, VIEWER_KEY, &["peek", "mail"]).await;
    assert!(succeeded(&run).contains(&job_id), "{}", run.stdout);
    let page = json_of(&sepp_admin(&admin, VIEWER_KEY, &["--json", "peek", "mail", "--custom", "tenant=7"]).await);
    assert_eq!(page["jobs"][0]["custom"], json!({ "tenant": 7, "vip": true }));
    let none = json_of(&sepp_admin(&admin, VIEWER_KEY, &["--json", "peek", "mail", "--job-type", "sms"]).await);
    assert_eq!(none["jobs"], json!([]));

    let run = sepp_admin(&admin, VIEWER_KEY, &["job", &job_id]).await;
    let shown = succeeded(&run);
    assert!(shown.contains("{\"to\":\"ana\"}") && shown.contains("mail") && shown.contains("ready"), "{shown}");
    let detail = json_of(&sepp_admin(&admin, VIEWER_KEY, &["--json", "job", &job_id]).await);
    assert_eq!((detail["priority"].as_u64(), detail["state"].as_str()), (Some(4), Some("ready")));
}

#[tokio::test]
async fn dead_letters_are_listed_requeued_and_deleted_by_key_or_all_at_once() {
    let admin = AdminServer::start("");
    for job_type in ["a", "a", "b"] {
        admin.enqueue("q", json!({ "job_type": job_type })).await;
    }
    let keys = AdminServer::keys(&admin.peek("q", "ready", "").await);
    admin
        .post("/queues/q/jobs:dead-letter", OPERATOR_KEY, json!({ "state": "ready", "keys_b64": keys }))
        .await
        .expect(reqwest::StatusCode::OK);
    let listed = json_of(&sepp_admin(&admin, VIEWER_KEY, &["--json", "dead-letters", "list", "q"]).await);
    let jobs = listed["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 3);
    let a_key = jobs.iter().find(|job| job["job_type"] == "a").unwrap()["key_b64"].as_str().unwrap().to_owned();

    let run = sepp_admin(&admin, OPERATOR_KEY, &["dead-letters", "requeue", "q", &a_key, "--reason", "fixed"]).await;
    assert_eq!(succeeded(&run).trim(), "requeued 1, missing 0");
    let run = sepp_admin(&admin, OPERATOR_KEY, &["dead-letters", "delete", "q", "--all", "--job-type", "b"]).await;
    assert_eq!(succeeded(&run).trim(), "deleted 1");
    let left = json_of(&sepp_admin(&admin, VIEWER_KEY, &["--json", "dead-letters", "list", "q"]).await);
    assert_eq!(left["jobs"].as_array().unwrap().len(), 1);
    let audit = json_of(&sepp_admin(&admin, ADMIN_KEY, &["--json", "audit", "--action-prefix", "dead_letters"]).await);
    assert_eq!(audit["entries"].as_array().unwrap().len(), 2);
    let run = sepp_admin(&admin, ADMIN_KEY, &["audit", "--limit", "1"]).await;
    assert!(succeeded(&run).contains("dead_letters.delete") && run.stdout.contains("more: --before"), "{}", run.stdout);
}

#[tokio::test]
async fn purge_asks_for_confirmation_and_refusals_exit_with_the_api_error() {
    let admin = AdminServer::start("");
    admin.enqueue("q", json!({ "job_type": "t" })).await;
    let unconfirmed = sepp_admin(&admin, ADMIN_KEY, &["purge", "q"]).await;
    assert_eq!(unconfirmed.status.code(), Some(1));
    assert!(unconfirmed.stderr.contains("--yes"), "{}", unconfirmed.stderr);
    let forbidden = sepp_admin(&admin, OPERATOR_KEY, &["purge", "q", "--yes"]).await;
    assert_eq!(forbidden.status.code(), Some(1));
    assert!(
        forbidden.stderr.contains("this action requires the admin role (forbidden) [HTTP 403]"),
        "{}",
        forbidden.stderr
    );
    let purged = json_of(&sepp_admin(&admin, ADMIN_KEY, &["--json", "purge", "q", "--yes"]).await);
    assert_eq!(purged["purged"], 1);
    let wrong_key = sepp_admin(&admin, "not-a-key", &["queues"]).await;
    assert_eq!(wrong_key.status.code(), Some(1));
    assert!(wrong_key.stderr.contains("authentication required"), "{}", wrong_key.stderr);
    assert!(wrong_key.stderr.contains("the key in SEPP_ADMIN_KEY is not one of"), "{}", wrong_key.stderr);
    // Without a key at all, the error says where one goes.
    let no_key = sepp_admin(&admin, "", &["queues"]).await;
    assert_eq!(no_key.status.code(), Some(1));
    assert!(no_key.stderr.contains("set SEPP_ADMIN_KEY to one of the server's admin.keys"), "{}", no_key.stderr);
    let rejected = sepp_admin(&admin, OPERATOR_KEY, &["--json", "enqueue", "q", "--type", ""]).await;
    assert_eq!(rejected.status.code(), Some(1));
    let body: Value = serde_json::from_str(&rejected.stdout).unwrap();
    assert_eq!(body["code"], "rejected", "scripts get the API's JSON");
}

#[tokio::test]
async fn workers_are_listed() {
    let admin = AdminServer::start("");
    let mut client = grpc(&admin).await;
    enqueue_one(&mut client, job("q", "t")).await;
    let mut request = reserve(&["q"], 60_000);
    request.worker_id = Some("box-7".into());
    client.reserve(request).await.unwrap();
    let run = sepp_admin(&admin, VIEWER_KEY, &["workers"]).await;
    let line = succeeded(&run)
        .lines()
        .find(|line| line.starts_with("box-7"))
        .unwrap_or_else(|| panic!("{}", run.stdout))
        .to_owned();
    assert!(line.ends_with("q=1"), "{line}");
}

#[tokio::test]
async fn pause_resume_and_pauses_manage_queue_pauses() {
    let admin = AdminServer::start("");
    let run = sepp_admin(&admin, OPERATOR_KEY, &["pause", "mail", "--reason", "migration"]).await;
    assert_eq!(succeeded(&run).trim(), "paused queue \"mail\" until resumed");
    let run = sepp_admin(&admin, OPERATOR_KEY, &["pause", "--all", "--for", "3600"]).await;
    let until = succeeded(&run).trim().strip_prefix("paused every queue until ").expect("the end").to_owned();
    // UTC in RFC 3339, such as 2026-12-04T15:04:05.123Z, not milliseconds since the epoch.
    let bytes = until.as_bytes();
    assert!(
        until.len() == 24 && bytes[4] == b'-' && bytes[10] == b'T' && bytes[13] == b':' && until.ends_with('Z'),
        "{until}"
    );
    let listing = succeeded(&sepp_admin(&admin, VIEWER_KEY, &["pauses"]).await).to_owned();
    assert!(listing.contains(&until), "{listing}");
    let run = sepp_admin(&admin, VIEWER_KEY, &["pauses"]).await;
    let listing = succeeded(&run);
    assert!(listing.contains("(every queue)") && listing.contains("mail"), "{listing}");
    let listed = json_of(&sepp_admin(&admin, VIEWER_KEY, &["--json", "pauses"]).await);
    assert_eq!(listed["queues"], json!([{ "queue": "mail", "until_ms": null }]));
    assert!(listed["all_queues"]["until_ms"].as_i64().is_some());

    let run = sepp_admin(&admin, OPERATOR_KEY, &["resume", "--all"]).await;
    assert_eq!(succeeded(&run).trim(), "resumed every queue");
    let run = sepp_admin(&admin, OPERATOR_KEY, &["resume", "mail"]).await;
    assert_eq!(succeeded(&run).trim(), "resumed queue \"mail\"");
    let run = sepp_admin(&admin, OPERATOR_KEY, &["resume", "mail"]).await;
    assert_eq!(succeeded(&run).trim(), "queue \"mail\" was not paused");
    assert_eq!(succeeded(&sepp_admin(&admin, VIEWER_KEY, &["pauses"]).await).trim(), "no queue is paused");

    // A viewer may look but not pause: the API's refusal, exit 1.
    let refused = sepp_admin(&admin, VIEWER_KEY, &["pause", "mail"]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", refused.stdout);
    assert!(refused.stderr.contains("forbidden"), "{}", refused.stderr);
    // Neither a queue nor --all: clap says what is missing.
    let usage = sepp_admin(&admin, OPERATOR_KEY, &["pause"]).await;
    assert_eq!(usage.status.code(), Some(2), "{}", usage.stderr);
}

#[tokio::test]
async fn cancel_removes_a_queued_job_and_marks_a_running_one() {
    if is_reference() {
        return; // 0.1 has no cancel.
    }
    let admin = AdminServer::start("");
    let mut client = grpc(&admin).await;
    let queued = enqueue_one(&mut client, job("mail", "t")).await;
    let run = sepp_admin(&admin, OPERATOR_KEY, &["cancel", &queued, "--reason", "sent twice"]).await;
    assert_eq!(succeeded(&run).trim(), format!("cancelled job {queued}: it was queued and is now a dead letter"));

    let running = enqueue_one(&mut client, job("mail", "t")).await;
    assert_eq!(reserve_now(&mut client, &["mail"], 60_000).await.len(), 1);
    let run = sepp_admin(&admin, OPERATOR_KEY, &["cancel", &running]).await;
    assert!(succeeded(&run).contains("its worker learns it at its next extend, ack or nack"), "{}", run.stdout);
    let again = json_of(&sepp_admin(&admin, OPERATOR_KEY, &["--json", "cancel", &running]).await);
    assert_eq!(again["outcome"], "already_cancelled");

    let missing = sepp_admin(&admin, OPERATOR_KEY, &["cancel", "0190a6e2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"]).await;
    assert_eq!(missing.status.code(), Some(1), "{}", missing.stdout);
    assert!(missing.stderr.contains("job not found"), "{}", missing.stderr);
}

#[tokio::test]
async fn sepp_admin_schedules_sets_lists_and_deletes() {
    if is_reference() {
        return;
    }
    let admin = AdminServer::start("");
    let run = sepp_admin(
        &admin,
        OPERATOR_KEY,
        &[
            "schedules",
            "set",
            "nightly",
            "--cron",
            "30 2 * * *",
            "--tz",
            "Europe/Berlin",
            "--queue",
            "maint",
            "--type",
            "vacuum",
        ],
    )
    .await;
    assert!(succeeded(&run).starts_with("schedule nightly set; it fires next at "), "{}", run.stdout);
    let listing = succeeded(&sepp_admin(&admin, VIEWER_KEY, &["schedules", "list"]).await).to_owned();
    assert!(listing.contains("nightly") && listing.contains("30 2 * * * (Europe/Berlin)"), "{listing}");
    let listed = json_of(&sepp_admin(&admin, VIEWER_KEY, &["--json", "schedules", "list"]).await);
    assert_eq!(listed["schedules"][0]["queue"], "maint");
    let run = sepp_admin(&admin, OPERATOR_KEY, &["schedules", "delete", "nightly"]).await;
    assert_eq!(succeeded(&run).trim(), "schedule nightly deleted");
    assert_eq!(succeeded(&sepp_admin(&admin, VIEWER_KEY, &["schedules", "list"]).await).trim(), "no schedules");
}

#[tokio::test]
async fn settings_show_a_queues_limits_and_set_and_unset_its_fields() {
    if is_reference() {
        return; // 0.1 has no limits and no settings verb.
    }
    let admin = AdminServer::start("");
    let args = [
        "settings",
        "hooks",
        "--set",
        "limit_key=tenant",
        "--set",
        "key_max_in_flight=2",
        "--set",
        r#"key_overrides={"acme":{"max_in_flight":8}}"#,
        "--set",
        "max_in_flight=10",
    ];
    let listing = succeeded(&sepp_admin(&admin, ADMIN_KEY, &args).await).to_owned();
    let row = |field: &str| {
        listing.lines().find(|line| line.starts_with(field)).unwrap_or_else(|| panic!("{listing}")).to_owned()
    };
    assert!(row("limit_key").contains("\"tenant\"") && row("limit_key").ends_with("queue"), "{listing}");
    assert!(row("key_max_in_flight").contains('2'), "{listing}");
    assert!(row("max_lease_duration_ms").ends_with("default"), "{listing}");
    let file = std::fs::read_to_string(admin.server.config_path()).unwrap();
    assert!(file.contains("key_overrides = { acme = { max_in_flight = 8 } }"), "{file}");

    let shown = json_of(&sepp_admin(&admin, VIEWER_KEY, &["--json", "settings", "hooks"]).await);
    assert_eq!(shown["effective"]["key_overrides"]["acme"]["max_in_flight"], 8);
    let unset = ["--json", "settings", "hooks", "--unset", "max_in_flight"];
    assert_eq!(json_of(&sepp_admin(&admin, ADMIN_KEY, &unset).await)["effective"]["max_in_flight"], Value::Null);

    // A bad value is the API's refusal, naming the key; a viewer may look but not change.
    let refused = sepp_admin(&admin, ADMIN_KEY, &["settings", "hooks", "--set", "key_max_in_flight=0"]).await;
    assert_eq!(refused.status.code(), Some(1), "{}", refused.stdout);
    assert!(refused.stderr.contains("queues.hooks.key_max_in_flight must be at least 1"), "{}", refused.stderr);
    let refused = sepp_admin(&admin, VIEWER_KEY, &["settings", "hooks", "--set", "max_in_flight=3"]).await;
    assert!(refused.stderr.contains("forbidden"), "{}", refused.stderr);
    let malformed = sepp_admin(&admin, ADMIN_KEY, &["settings", "hooks", "--set", "max_in_flight"]).await;
    assert!(malformed.stderr.contains("is not field=value"), "{}", malformed.stderr);
}

#[tokio::test]
async fn queues_lists_every_queue_however_many_pages_they_take() {
    let admin = AdminServer::start("");
    let mut client = grpc(&admin).await;
    let names: Vec<String> = (0..1_203).map(|n| format!("q{n:04}")).collect();
    for chunk in names.chunks(256) {
        client.enqueue_batch(batch(chunk.iter().map(|name| job(name, "t")).collect())).await.unwrap();
    }
    eventually("every queue is counted", std::time::Duration::from_secs(10), || async {
        let page = admin.http.get(admin.api("/queues?limit=1")).bearer_auth(VIEWER_KEY).send().await.unwrap();
        (page.headers()["sepp-queue-count"] == "1203").then_some(())
    })
    .await;
    let listed = json_of(&sepp_admin(&admin, VIEWER_KEY, &["queues", "--json"]).await);
    let listed: Vec<&str> = listed.as_array().unwrap().iter().map(|queue| queue["name"].as_str().unwrap()).collect();
    assert_eq!(listed, names, "two full pages and the rest, in order");
}
