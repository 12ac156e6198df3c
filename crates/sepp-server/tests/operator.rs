//! What an operator meets around the queue itself: unknown config keys refused, `sepp
//! config check`, log lines a client cannot inflate, colour only on a terminal, storage errors
//! that name the problem, and gRPC reflection for generic tools.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use common::*;
use prost::Message;
use sepp_server::proto::v1 as pb;
use tempfile::TempDir;
use tonic::Code;
use tonic_reflection::pb::v1 as reflection;

const WAIT: Duration = Duration::from_secs(15);

fn write_config(dir: &TempDir, extra: &str) -> String {
    let path = dir.path().join("sepp.toml");
    std::fs::write(&path, render_config(dir.path(), extra)).unwrap();
    path.display().to_string()
}

// ---- unknown keys and `config check` ------------------------------------------------------

#[test]
fn a_typo_in_a_key_refuses_to_start_naming_the_file_and_the_nearest_key() {
    if is_reference() {
        return; // 0.1 ignores unknown keys silently.
    }
    let dir = TempDir::new().unwrap();
    let config = write_config(&dir, "[server]\nlisten_adr = \"127.0.0.1:6001\"\n");
    let run = run_to_exit(&["--config", &config], dir.path(), &[]);
    assert_eq!(run.status.code(), Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "error: invalid configuration in {config}: server.listen_adr is not a known key; did you mean server.listen_addr?"
        )),
        "{}",
        run.stderr
    );
    assert!(!run.stdout.contains("listening"), "{}", run.stdout);
    // So does a mistyped environment variable, named as such.
    let config = write_config(&dir, "");
    let run = run_to_exit(&["--config", &config], dir.path(), &[("SEPP_STORAGE__PERSIST_MOD", "buffer")]);
    assert_eq!(run.status.code(), Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(
            "environment variable SEPP_STORAGE__PERSIST_MOD: storage.persist_mod is not a known key; did you mean storage.persist_mode?"
        ),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn a_reload_with_a_typo_keeps_the_running_configuration() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("");
    server.wait_for_log("watching config file for hot reload", WAIT).await.expect("watching");
    let mark = server.stdout().len();
    server.write_config("[servr]\nstrict_queues = true\n");
    let line = server.wait_for_log_since(mark, "config reload failed", WAIT).await.expect("the reload is refused");
    assert!(line.contains("servr is not a known key; did you mean server?"), "{line}");
}

#[tokio::test]
async fn a_host_name_in_a_listen_address_is_resolved() {
    let server = TestServer::start("[server]\nlisten_addr = \"localhost:0\"\n");
    let mut client = server.raw_client().await;
    client.enqueue_batch(batch(vec![job("q", "t")])).await.expect("enqueue through a server listening on localhost");
    let dir = TempDir::new().unwrap();
    let config = write_config(&dir, "[server]\nlisten_addr = \"no-such-host.invalid:6001\"\n");
    let run = run_to_exit(&["config", "check", "--config", &config], dir.path(), &[]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stdout);
    assert!(run.stdout.contains("server.listen_addr"), "{}", run.stdout);
    assert!(
        run.stdout.contains("could not be resolved") && run.stdout.contains("give an IP address"),
        "{}",
        run.stdout
    );
}

#[test]
fn config_check_reports_an_unknown_key_as_an_error() {
    if is_reference() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let config = write_config(&dir, "[server]\nlisten_adr = \"127.0.0.1:6001\"\n");
    let run = run_to_exit(&["config", "check", "--config", &config], dir.path(), &[]);
    assert_eq!(run.status.code(), Some(1), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains("error: ") && run.stdout.contains("did you mean server.listen_addr?"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains(": 1 error(s)"), "{}", run.stdout);
    // It checks; it does not start a server.
    assert!(!run.stdout.contains("queue server listening"));
}

#[test]
fn config_check_reports_every_error_with_the_environment_applied_and_exits_1() {
    if is_reference() {
        return;
    }
    let dir = TempDir::new().unwrap();
    let config = write_config(&dir, "[limits]\ndefault_priority = 12\n");
    let env = [("SEPP_STORAGE__SWEEP_LIMIT", "0")];
    let run = run_to_exit(&["config", "check", "--config", &config], dir.path(), &env);
    assert_eq!(run.status.code(), Some(1), "{}", run.stdout);
    assert!(run.stdout.contains("limits.default_priority"), "{}", run.stdout);
    assert!(
        run.stdout.contains("SEPP_STORAGE__SWEEP_LIMIT"),
        "the environment overlay was not checked: {}",
        run.stdout
    );
    assert!(run.stdout.contains("2 error(s)"), "{}", run.stdout);
    // A file that does not exist, named explicitly, is an error too.
    let missing = dir.path().join("missing.toml").display().to_string();
    let run = run_to_exit(&["config", "check", "--config", &missing], dir.path(), &[]);
    assert_eq!(run.status.code(), Some(1), "{}", run.stdout);
    assert!(run.stdout.contains("config file not found"), "{}", run.stdout);
}

// ---- log lines ----------------------------------------------------------------------------

#[tokio::test]
async fn a_huge_queue_name_adds_under_a_kilobyte_of_log() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let before = server.stdout().bytes();
    let mark = server.stdout().len();
    let response = client.enqueue_batch(batch(vec![job(&"q".repeat(10_000), "t")])).await.expect("batch");
    assert!(results(response.into_inner())[0].is_err());
    server.wait_for_log_since(mark, "enqueue rejected", WAIT).await.expect("the rejection is logged");
    let added = server.stdout().bytes() - before;
    assert!(added < 1024, "one rejected job added {added} bytes of log:\n{}", server.logs());
    assert!(server.logs().contains("(10000 bytes)"), "the line does not say how long the name was");
}

#[tokio::test]
async fn a_batch_of_rejected_jobs_logs_a_few_lines_and_a_count() {
    if is_reference() {
        return;
    }
    let server = TestServer::start("");
    let mut client = server.raw_client().await;
    let before = server.stdout().bytes();
    let mark = server.stdout().len();
    let jobs: Vec<_> = (0..256).map(|index| job(&format!("{index}{}", "q".repeat(10_000)), "t")).collect();
    client.enqueue_batch(batch(jobs)).await.expect("batch");
    let line = server.wait_for_log_since(mark, "more jobs of this call were rejected", WAIT).await.expect("a summary");
    assert!(line.contains("more=253"), "{line}");
    let added = server.stdout().bytes() - before;
    assert!(added < 4096, "256 rejected jobs (2.5 MB of names) added {added} bytes of log");
}

#[tokio::test]
async fn text_logs_are_plain_when_piped_and_coloured_when_forced() {
    if is_reference() {
        return; // 0.1 colours piped output.
    }
    let piped = TestServer::start("");
    piped.wait_for_log("queue server listening", WAIT).await.expect("started");
    assert_eq!(piped.stdout().coloured(), 0, "piped output carries colour codes");
    let forced = TestServer::start_with_env("", &[("FORCE_COLOR", "1")]);
    forced.wait_for_log("queue server listening", WAIT).await.expect("started");
    assert!(forced.stdout().coloured() > 0, "FORCE_COLOR=1 gave no colour");
}

// ---- storage errors -----------------------------------------------------------------------

/// Runs the server on `config` until it exits, expecting it to refuse to start.
fn refused(dir: &TempDir, config: &str) -> Finished {
    let run = run_to_exit(&["--config", config], dir.path(), &[]);
    assert_eq!(run.status.code(), Some(1), "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    run
}

#[test]
fn a_data_directory_that_is_a_file_is_named_as_such() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("afile");
    std::fs::write(&file, "not a directory").unwrap();
    let config = write_config(&dir, &format!("[server]\ndb_path = {:?}\n", file.display().to_string()));
    let run = refused(&dir, &config);
    if !is_reference() {
        let expected = format!("the data directory {} is a file, not a directory", file.display());
        assert!(run.stderr.contains(&expected), "{}", run.stderr);
    }
}

#[test]
fn a_data_directory_below_a_file_names_the_file_in_the_way() {
    let dir = TempDir::new().unwrap();
    let file = dir.path().join("afile");
    std::fs::write(&file, "not a directory").unwrap();
    let data = file.join("data");
    let config = write_config(&dir, &format!("[server]\ndb_path = {:?}\n", data.display().to_string()));
    let run = refused(&dir, &config);
    if !is_reference() {
        let expected = format!(
            "cannot create the data directory {}: {} is a file, not a directory",
            data.display(),
            file.display()
        );
        assert!(run.stderr.contains(&expected), "{}", run.stderr);
    }
}

#[test]
fn a_data_directory_that_is_not_writable_is_named_as_such() {
    if is_reference() {
        return;
    }
    // Root writes anywhere, so as root the server runs as `nobody`, from a copy of the binary it
    // may execute, in a directory it may enter.
    // SAFETY: geteuid has no preconditions and touches no memory.
    let root = unsafe { libc::geteuid() } == 0;
    let dir = TempDir::new().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o555)).unwrap();
    let config = write_config(&dir, &format!("[server]\ndb_path = {:?}\n", data.display().to_string()));
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o644)).unwrap();
    let binary = dir.path().join("sepp");
    std::fs::copy(sepp_bin(), &binary).unwrap();
    let mut command = if root {
        let mut setpriv = std::process::Command::new("setpriv");
        setpriv.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(&binary);
        setpriv
    } else {
        std::process::Command::new(&binary)
    };
    let run = command.args(["--config", &config]).current_dir(dir.path()).output().expect("run the server");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{stderr}");
    let expected = format!("the data directory {} is not writable", data.display());
    assert!(stderr.contains(&expected), "{stderr}");
}

// ---- reflection ---------------------------------------------------------------------------

/// Sends one reflection request and returns its answer.
async fn reflect(
    client: &mut reflection::server_reflection_client::ServerReflectionClient<tonic::transport::Channel>,
    request: reflection::server_reflection_request::MessageRequest,
    key: Option<&str>,
) -> Result<reflection::server_reflection_response::MessageResponse, tonic::Status> {
    let message = reflection::ServerReflectionRequest { host: String::new(), message_request: Some(request) };
    let mut request = tonic::Request::new(tokio_stream::once(message));
    if let Some(key) = key {
        request.metadata_mut().insert("authorization", format!("Bearer {key}").parse().unwrap());
    }
    let mut answers = client.server_reflection_info(request).await?.into_inner();
    let answer = answers.message().await?.expect("one answer");
    Ok(answer.message_response.expect("an answer body"))
}

#[tokio::test]
async fn reflection_lists_and_describes_the_queue_service() {
    if is_reference() {
        return; // 0.1 has no reflection service.
    }
    use reflection::server_reflection_request::MessageRequest;
    use reflection::server_reflection_response::MessageResponse;
    let server = TestServer::start("");
    let mut client = reflection::server_reflection_client::ServerReflectionClient::new(server.channel().await);
    let MessageResponse::ListServicesResponse(list) =
        reflect(&mut client, MessageRequest::ListServices(String::new()), None).await.expect("list")
    else {
        panic!("not a list of services");
    };
    let names: Vec<&str> = list.service.iter().map(|service| service.name.as_str()).collect();
    assert!(names.contains(&"sepp.v1.QueueService") && names.contains(&"grpc.health.v1.Health"), "{names:?}");

    let symbol = MessageRequest::FileContainingSymbol("sepp.v1.QueueService".into());
    let MessageResponse::FileDescriptorResponse(files) = reflect(&mut client, symbol, None).await.expect("describe")
    else {
        panic!("not a file descriptor");
    };
    let file = files
        .file_descriptor_proto
        .iter()
        .map(|bytes| prost_types::FileDescriptorProto::decode(bytes.as_slice()).expect("a file descriptor"))
        .find(|file| file.package() == "sepp.v1")
        .expect("the contract's file");
    let service = file.service.iter().find(|service| service.name() == "QueueService").expect("the service");
    let methods: Vec<&str> = service.method.iter().map(|method| method.name()).collect();
    let mut expected =
        vec!["EnqueueBatch", "EnqueueAtomic", "Reserve", "Ack", "Nack", "Extend", "DrainDeadLetters", "GetServerInfo"];
    if !is_reference() {
        // The calls this server adds to 0.1's.
        expected.extend([
            "AckBatch",
            "CancelJob",
            "UpsertSchedule",
            "DeleteSchedule",
            "ListSchedules",
            "PauseQueue",
            "ResumeQueue",
            "ListPauses",
            "Consume",
        ]);
    }
    assert_eq!(methods, expected);
    // Generic tools can build a call from it: the request type is described too.
    assert!(file.message_type.iter().any(|message| message.name() == "EnqueueRequest"));
    let _ = pb::GetServerInfoRequest {};
}

#[tokio::test]
async fn reflection_needs_the_same_api_key_as_the_queue_service() {
    if is_reference() {
        return;
    }
    use reflection::server_reflection_request::MessageRequest;
    let server = TestServer::start("[auth]\napi_keys = [{ name = \"ops\", key = \"s3cret\" }]\n");
    let mut client = reflection::server_reflection_client::ServerReflectionClient::new(server.channel().await);
    let refused = reflect(&mut client, MessageRequest::ListServices(String::new()), None).await.expect_err("no key");
    assert_eq!(refused.code(), Code::Unauthenticated);
    let wrong = reflect(&mut client, MessageRequest::ListServices(String::new()), Some("nope")).await.expect_err("bad");
    assert_eq!(wrong.code(), Code::Unauthenticated);
    reflect(&mut client, MessageRequest::ListServices(String::new()), Some("s3cret")).await.expect("with the key");
}
