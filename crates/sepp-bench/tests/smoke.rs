//! The CI smoke run: every phase of the harness, with a few hundred jobs, against our freshly
//! built server (sync_all and buffer) and the gRPC ceiling. It checks that the harness works
//! end to end and writes its outputs; it asserts no speed.

use std::path::PathBuf;
use std::process::Command;

/// Our server as built beside this crate's binary by a workspace build; when it is missing
/// (`cargo test -p sepp-bench` alone), `sepp-bench smoke` builds it with cargo.
fn ours_bin() -> Option<PathBuf> {
    let path = PathBuf::from(env!("CARGO_BIN_EXE_sepp-bench")).with_file_name("sepp");
    path.exists().then_some(path)
}

#[test]
fn the_smoke_run_completes_every_phase_and_writes_tables_and_chart() {
    let out = tempfile::tempdir().unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_sepp-bench"));
    command.arg("smoke").arg("--out").arg(out.path());
    if let Some(ours_bin) = ours_bin() {
        command.arg("--ours-bin").arg(ours_bin);
    }
    let output = command.output().expect("sepp-bench runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "smoke failed: {stderr}");
    assert!(stderr.contains("smoke: every phase completed"), "{stderr}");

    let tables = std::fs::read_to_string(out.path().join("results.md")).unwrap();
    for heading in ["### Throughput", "### Server CPU per job", "### Latency", "### Large backlog"] {
        assert!(tables.contains(heading), "missing {heading} in:\n{tables}");
    }
    for scenario in ["single/1", "single/8", "single/50", "single/256", "batch16/8", "batch64/8", "batch256/8"] {
        assert!(tables.contains(&format!("| {scenario} | enqueue |")), "missing {scenario} in:\n{tables}");
    }
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.path().join("results.json")).unwrap()).unwrap();
    assert_eq!(
        results["targets"],
        serde_json::json!([
            "ours sync_all",
            "ours sync_all via sepp-rs",
            "ours buffer",
            "ours buffer via sepp-rs",
            "ceiling"
        ])
    );
    // The official 0.1 client drove every scenario too.
    assert!(tables.contains("ours sync_all via sepp-rs"), "{tables}");
    assert_eq!(results["backlog"].as_array().unwrap().len(), 1, "the backlog runs against ours sync_all");
    let backlog = &results["backlog"][0];
    assert_eq!(backlog["churn_jobs"], 300, "as many jobs pass through the loaded backlog as it holds");
    assert!(backlog["churn_peak_rss_bytes"].as_u64().is_some_and(|bytes| bytes > 0), "{backlog}");
    assert!(backlog["churn_slowest_round_trip_seconds"].as_f64().is_some_and(|seconds| seconds > 0.0), "{backlog}");
    assert!(tables.contains("| peak RSS while they pass | MB |"), "{tables}");
    let svg = std::fs::read_to_string(out.path().join("throughput.svg")).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
}
