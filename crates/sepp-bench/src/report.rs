//! Turns [`Results`] into the Markdown tables of `docs/benchmarks.md`.
//!
//! Every figure is a median over rounds. Every ratio is taken within one round (both targets
//! measured minutes apart on the same machine) and then the median of those is shown, so a
//! noisy neighbour that slowed one round does not skew a comparison.

use std::fmt::Write;

use crate::client::LoadClient;
use crate::compare::{CLUSTER3, client_suffix};
use crate::results::{Results, ThroughputRun};

pub const OURS: &str = "ours";
pub const REFERENCE: &str = "0.1.1";
pub const CEILING: &str = "ceiling";
pub const MODES: [&str; 2] = ["sync_all", "buffer"];

/// The median of `values` (the mean of the middle two for an even count); `None` when empty.
pub fn median(mut values: Vec<f64>) -> Option<f64> {
    values.retain(|value| value.is_finite());
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    Some(if values.len() % 2 == 1 { values[middle] } else { (values[middle - 1] + values[middle]) / 2.0 })
}

/// Which number of a run a table shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Enqueue,
    Drain,
    CpuPerJob,
    /// A cluster leader's own CPU per job.
    LeaderCpuPerJob,
}

impl Metric {
    pub fn of(self, run: &ThroughputRun) -> Option<f64> {
        match self {
            Metric::Enqueue => Some(run.enqueue_jobs_per_second()),
            Metric::Drain => Some(run.drain_jobs_per_second()),
            Metric::CpuPerJob => run.cpu_us_per_job(),
            Metric::LeaderCpuPerJob => run.leader_cpu_us_per_job(),
        }
    }
}

/// A view over the results with the lookups the tables need.
pub struct Summary<'a> {
    pub results: &'a Results,
}

impl<'a> Summary<'a> {
    pub fn new(results: &'a Results) -> Self {
        Summary { results }
    }

    /// Scenario names in the order they were run.
    pub fn scenarios(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        for run in &self.results.throughput {
            if !names.contains(&run.scenario.name) {
                names.push(run.scenario.name.clone());
            }
        }
        names
    }

    pub fn has_target(&self, target: &str) -> bool {
        self.results.targets.iter().any(|name| name == target)
    }

    fn runs(&self, scenario: &str, target: &str) -> impl Iterator<Item = &'a ThroughputRun> {
        let (scenario, target) = (scenario.to_string(), target.to_string());
        self.results.throughput.iter().filter(move |run| run.scenario.name == scenario && run.target == target)
    }

    /// Median of `metric` over the rounds of `scenario` against `target`.
    pub fn value(&self, scenario: &str, target: &str, metric: Metric) -> Option<f64> {
        median(self.runs(scenario, target).filter_map(|run| metric.of(run)).collect())
    }

    /// Median over rounds of `metric(numerator) / metric(denominator)` within each round.
    pub fn ratio(&self, scenario: &str, numerator: &str, denominator: &str, metric: Metric) -> Option<f64> {
        self.ratio_of(scenario, (numerator, metric), (denominator, metric))
    }

    /// Median over rounds of one target's metric over another's (each its own metric) within
    /// each round.
    pub fn ratio_of(&self, scenario: &str, numerator: (&str, Metric), denominator: (&str, Metric)) -> Option<f64> {
        let ratios = self
            .runs(scenario, numerator.0)
            .filter_map(|top| {
                let bottom = self.runs(scenario, denominator.0).find(|bottom| bottom.round == top.round)?;
                Some(numerator.1.of(top)? / denominator.1.of(bottom)?)
            })
            .collect();
        median(ratios)
    }

    /// The comparisons that make sense for the targets present: ours against 0.1.1 in each
    /// mode, the three-node cluster against one node of ours, and each sepp target against the
    /// ceiling.
    pub fn ratio_columns(&self) -> Vec<(String, String)> {
        let mut columns = Vec::new();
        for mode in MODES {
            for client in [LoadClient::Ours, LoadClient::SeppRs] {
                let suffix = client_suffix(client);
                let ours = format!("{OURS} {mode}{suffix}");
                let reference = format!("{REFERENCE} {mode}{suffix}");
                if self.has_target(&ours) && self.has_target(&reference) {
                    columns.push((ours, reference));
                }
            }
        }
        columns.extend(self.cluster_columns());
        for mode in MODES {
            for family in [OURS, REFERENCE] {
                let target = format!("{family} {mode}");
                if self.has_target(&target) && self.has_target(CEILING) {
                    columns.push((target, CEILING.to_string()));
                }
            }
        }
        columns
    }

    /// Each three-node cluster against one node of ours in the same mode, loaded by the same
    /// client: what replication costs.
    pub fn cluster_columns(&self) -> Vec<(String, String)> {
        let mut columns = Vec::new();
        for mode in MODES {
            for client in [LoadClient::Ours, LoadClient::SeppRs] {
                let suffix = client_suffix(client);
                let cluster = format!("{CLUSTER3} {mode}{suffix}");
                let ours = format!("{OURS} {mode}{suffix}");
                if self.has_target(&cluster) && self.has_target(&ours) {
                    columns.push((cluster, ours));
                }
            }
        }
        columns
    }
}

/// Every table of the results page.
pub fn markdown(results: &Results) -> String {
    let summary = Summary::new(results);
    let mut out = String::new();
    machine(&mut out, results);
    if !results.throughput.is_empty() {
        throughput_tables(&mut out, &summary);
        cpu_table(&mut out, &summary);
        footprint_table(&mut out, &summary);
    }
    if !results.latency.is_empty() {
        latency_table(&mut out, results);
    }
    if !results.backlog.is_empty() {
        backlog_table(&mut out, results);
    }
    goals_table(&mut out, &summary);
    repeated_note(&mut out, results);
    out
}

/// The cluster measurements repeated after a failed attempt, if any.
fn repeated_note(out: &mut String, results: &Results) {
    if results.repeated.is_empty() {
        return;
    }
    let _ = writeln!(out, "Measurements repeated on a fresh cluster after a failed attempt:\n");
    for note in &results.repeated {
        let _ = writeln!(out, "- {note}");
    }
    out.push('\n');
}

fn machine(out: &mut String, results: &Results) {
    let machine = &results.machine;
    let _ = writeln!(
        out,
        "Machine: {} CPUs ({}), {:.1} GiB memory, Linux {}. {} round(s), targets alternating.\n",
        machine.cpus,
        machine.cpu_model,
        machine.memory_bytes as f64 / (1u64 << 30) as f64,
        machine.kernel,
        results.rounds,
    );
}

/// Columns of text; every other column holds numbers and is right-aligned.
const TEXT_COLUMNS: [&str; 8] = ["scenario", "phase", "target", "measure", "unit", "goal", "wanted", "met"];

fn header(out: &mut String, columns: &[String]) {
    let _ = writeln!(out, "| {} |", columns.join(" | "));
    let alignments: String =
        columns.iter().map(|column| if TEXT_COLUMNS.contains(&column.as_str()) { "---|" } else { "---:|" }).collect();
    let _ = writeln!(out, "|{alignments}");
}

fn throughput_tables(out: &mut String, summary: &Summary) {
    let targets = &summary.results.targets;
    let _ = writeln!(out, "### Throughput, jobs/s\n");
    let mut columns = vec!["scenario".to_string(), "phase".to_string()];
    columns.extend(targets.iter().cloned());
    header(out, &columns);
    for scenario in summary.scenarios() {
        for (phase, metric) in [("enqueue", Metric::Enqueue), ("drain", Metric::Drain)] {
            let cells: Vec<String> =
                targets.iter().map(|target| rate(summary.value(&scenario, target, metric))).collect();
            let _ = writeln!(out, "| {scenario} | {phase} | {} |", cells.join(" | "));
        }
    }
    let ratio_columns = summary.ratio_columns();
    if ratio_columns.is_empty() {
        return;
    }
    let _ = writeln!(out, "\n### Ratios (median of per-round ratios)\n");
    let mut columns = vec!["scenario".to_string(), "phase".to_string()];
    columns.extend(ratio_columns.iter().map(|(top, bottom)| format!("{top} / {bottom}")));
    header(out, &columns);
    for scenario in summary.scenarios() {
        for (phase, metric) in [("enqueue", Metric::Enqueue), ("drain", Metric::Drain)] {
            let cells: Vec<String> = ratio_columns
                .iter()
                .map(|(top, bottom)| ratio(summary.ratio(&scenario, top, bottom, metric), bottom == CEILING))
                .collect();
            let _ = writeln!(out, "| {scenario} | {phase} | {} |", cells.join(" | "));
        }
    }
    out.push('\n');
}

fn cpu_table(out: &mut String, summary: &Summary) {
    let targets = &summary.results.targets;
    let _ = writeln!(out, "### Server CPU per job, microseconds (enqueue + reserve + ack)\n");
    let mut columns = vec!["scenario".to_string(), "jobs".to_string()];
    columns.extend(targets.iter().cloned());
    let mut ratio_columns = Vec::new();
    for (mode, client) in
        MODES.iter().flat_map(|mode| [LoadClient::Ours, LoadClient::SeppRs].map(|client| (mode, client)))
    {
        let suffix = client_suffix(client);
        let reference = format!("{REFERENCE} {mode}{suffix}");
        // The ceiling is only ever loaded by our client.
        let ceiling = (client == LoadClient::Ours).then(|| CEILING.to_string());
        for family in std::iter::once(format!("{OURS} {mode}{suffix}")).chain(ceiling) {
            if summary.has_target(&family)
                && summary.has_target(&reference)
                && !ratio_columns.contains(&(family.clone(), reference.clone()))
            {
                ratio_columns.push((family, reference.clone()));
            }
        }
    }
    ratio_columns.extend(summary.cluster_columns());
    columns.extend(ratio_columns.iter().map(|(top, bottom)| format!("{top} / {bottom}")));
    header(out, &columns);
    for scenario in summary.scenarios() {
        let jobs = summary
            .results
            .throughput
            .iter()
            .find(|run| run.scenario.name == scenario)
            .map_or(0, |run| run.scenario.jobs);
        let mut cells: Vec<String> =
            targets.iter().map(|target| number(summary.value(&scenario, target, Metric::CpuPerJob), 1)).collect();
        cells.extend(
            ratio_columns
                .iter()
                .map(|(top, bottom)| ratio(summary.ratio(&scenario, top, bottom, Metric::CpuPerJob), false)),
        );
        let _ = writeln!(out, "| {scenario} | {jobs} | {} |", cells.join(" | "));
    }
    if has_cluster(summary) {
        let _ = writeln!(out, "\n{CLUSTER3}: the CPU of its three nodes together.");
        leader_cpu_table(out, summary);
    }
    out.push('\n');
}

/// Each cluster's leader alone against one node of ours: CPU per job, and the median of the
/// per-round ratios.
fn leader_cpu_table(out: &mut String, summary: &Summary) {
    let columns = summary.cluster_columns();
    let measured = |scenario: &str| {
        columns.iter().any(|(cluster, _)| summary.value(scenario, cluster, Metric::LeaderCpuPerJob).is_some())
    };
    let scenarios: Vec<String> = summary.scenarios().into_iter().filter(|scenario| measured(scenario)).collect();
    if scenarios.is_empty() {
        return;
    }
    let _ = writeln!(out, "\nThe leader alone, CPU per job in microseconds (and against one node):\n");
    let mut header_columns = vec!["scenario".to_string()];
    header_columns.extend(columns.iter().map(|(cluster, ours)| format!("{cluster}'s leader (/ {ours})")));
    header(out, &header_columns);
    for scenario in scenarios {
        let cells: Vec<String> = columns
            .iter()
            .map(|(cluster, ours)| {
                let against_ours =
                    summary.ratio_of(&scenario, (cluster, Metric::LeaderCpuPerJob), (ours, Metric::CpuPerJob));
                format!(
                    "{} ({})",
                    number(summary.value(&scenario, cluster, Metric::LeaderCpuPerJob), 1),
                    ratio(against_ours, false)
                )
            })
            .collect();
        let _ = writeln!(out, "| {scenario} | {} |", cells.join(" | "));
    }
}

/// Whether a cluster target ran (its tables get a note on what its figures cover).
fn has_cluster(summary: &Summary) -> bool {
    summary.results.targets.iter().any(|target| target.starts_with(CLUSTER3))
}

fn footprint_table(out: &mut String, summary: &Summary) {
    let targets: Vec<&String> = summary.results.targets.iter().filter(|target| target.as_str() != CEILING).collect();
    if targets.is_empty() {
        return;
    }
    let _ = writeln!(out, "### Peak RSS / data directory with every job queued, MB (largest over rounds)\n");
    let mut columns = vec!["scenario".to_string(), "jobs".to_string()];
    columns.extend(targets.iter().map(|target| target.to_string()));
    header(out, &columns);
    for scenario in summary.scenarios() {
        let runs: Vec<&ThroughputRun> =
            summary.results.throughput.iter().filter(|run| run.scenario.name == scenario).collect();
        let jobs = runs.first().map_or(0, |run| run.scenario.jobs);
        let cells: Vec<String> = targets
            .iter()
            .map(|target| {
                let mine = runs.iter().filter(|run| &&run.target == target);
                let rss = mine.clone().filter_map(|run| run.peak_rss_bytes).max();
                let disk = mine.filter_map(|run| run.data_dir_bytes).max();
                format!("{} / {}", megabytes(rss), megabytes(disk))
            })
            .collect();
        let _ = writeln!(out, "| {scenario} | {jobs} | {} |", cells.join(" | "));
    }
    if has_cluster(summary) {
        let _ = writeln!(out, "\n{CLUSTER3}: the largest node's peak RSS, the leader's data directory.");
    }
    out.push('\n');
}

fn latency_table(out: &mut String, results: &Results) {
    let rounds = results.latency.first().map_or(0, |run| run.rounds_measured);
    let _ = writeln!(
        out,
        "### Latency of one enqueue -> reserve -> ack round trip, one connection ({rounds} round trips), ms\n"
    );
    header(out, &["target".into(), "p50".into(), "p99".into(), "p999".into(), "max".into()]);
    for target in &results.targets {
        let runs: Vec<_> = results.latency.iter().filter(|run| &run.target == target).collect();
        if runs.is_empty() {
            continue;
        }
        let pick = |field: fn(&crate::results::LatencyRun) -> f64| {
            median(runs.iter().map(|run| field(run) / 1000.0).collect())
        };
        let _ = writeln!(
            out,
            "| {target} | {} | {} | {} | {} |",
            number(pick(|run| run.p50_us), 2),
            number(pick(|run| run.p99_us), 2),
            number(pick(|run| run.p999_us), 2),
            number(pick(|run| run.max_us), 2),
        );
    }
    out.push('\n');
}

/// A row of the backlog table: label, unit, and the cell of one run.
type BacklogRow = (&'static str, &'static str, fn(&crate::results::BacklogRun) -> String);

fn backlog_table(out: &mut String, results: &Results) {
    let jobs = results.backlog.first().map_or(0, |run| run.jobs);
    let _ = writeln!(out, "### Large backlog: {jobs} queued 256-byte jobs\n");
    let mut columns = vec!["measure".to_string(), "unit".to_string()];
    columns.extend(results.backlog.iter().map(|run| run.target.clone()));
    header(out, &columns);
    let mut rows: Vec<BacklogRow> = vec![
        ("enqueue (8 conn x batch 256)", "jobs/s", |run| rate(Some(run.jobs as f64 / run.enqueue_seconds.max(1e-9)))),
        ("RSS with the backlog", "MB", |run| megabytes(run.rss_bytes)),
        ("peak RSS", "MB", |run| megabytes(run.peak_rss_bytes)),
        ("data directory", "MB", |run| megabytes(run.data_dir_bytes)),
    ];
    let churn_rows: [BacklogRow; 4] = [
        ("more jobs through it (rounds of 20,000 enqueued, then drained)", "jobs/s", |run| {
            format!("{} ({} jobs)", rate(Some(run.churn_jobs as f64 / run.churn_seconds.max(1e-9))), run.churn_jobs)
        }),
        ("peak RSS while they pass", "MB", |run| megabytes(run.churn_peak_rss_bytes)),
        ("slowest round trip meanwhile (one connection)", "ms", |run| {
            number(Some(run.churn_slowest_round_trip_seconds * 1e3), 1)
        }),
        ("data directory after they passed", "MB", |run| megabytes(run.data_dir_after_churn_bytes)),
    ];
    if results.backlog.iter().any(|run| run.churn_jobs > 0) {
        rows.extend(churn_rows);
    }
    let restart_rows: [BacklogRow; 5] = [
        ("stop (SIGTERM until exit)", "s", |run| number(Some(run.stop_seconds), 2)),
        ("restart until GetServerInfo answers", "s", |run| number(Some(run.restart_seconds), 2)),
        ("RSS after restart", "MB", |run| megabytes(run.rss_after_restart_bytes)),
        ("drain after restart (50 conn, reserve 1 + ack)", "jobs/s", |run| {
            format!("{} ({} jobs)", rate(Some(run.drained_jobs as f64 / run.drain_seconds.max(1e-9))), run.drained_jobs)
        }),
        ("data directory after the drain", "MB", |run| megabytes(run.data_dir_after_drain_bytes)),
    ];
    rows.extend(restart_rows);
    for (label, unit, cell) in rows {
        let cells: Vec<String> = results.backlog.iter().map(cell).collect();
        let _ = writeln!(out, "| {label} | {unit} | {} |", cells.join(" | "));
    }
    out.push('\n');
}

/// The performance targets (docs/benchmarks.md), each with whether this run met it.
fn goals_table(out: &mut String, summary: &Summary) {
    let results = summary.results;
    let ours = format!("{OURS} sync_all");
    let reference = format!("{REFERENCE} sync_all");
    let mut rows: Vec<(String, String, Option<f64>, bool)> = Vec::new();
    let mut throughput_goal = |label: &str, scenario: &str, metric: Metric, versus: &str, at_least: f64| {
        if summary.has_target(&ours) && summary.has_target(versus) {
            let measured = summary.ratio(scenario, &ours, versus, metric);
            if measured.is_none() {
                // The scenario did not run (`--scenarios`): nothing to judge.
                return;
            }
            let wanted =
                if versus == CEILING { format!(">= {:.0}%", at_least * 100.0) } else { format!(">= {at_least}x") };
            rows.push((label.to_string(), wanted, measured, measured.is_some_and(|value| value >= at_least)));
        }
    };
    throughput_goal("single-job enqueue, 50 conn, vs 0.1.1", "single/50", Metric::Enqueue, &reference, 1.4);
    throughput_goal("single-job enqueue, 50 conn, vs ceiling", "single/50", Metric::Enqueue, CEILING, 0.88);
    throughput_goal("reserve(1)+ack drain, 50 conn, vs 0.1.1", "single/50", Metric::Drain, &reference, 1.4);
    throughput_goal("reserve(1)+ack drain, 50 conn, vs ceiling", "single/50", Metric::Drain, CEILING, 0.85);
    throughput_goal("batch-64 enqueue, 8 conn, vs 0.1.1", "batch64/8", Metric::Enqueue, &reference, 3.0);
    if summary.has_target(&ours) && summary.has_target(&reference) {
        let measured = summary.ratio("single/50", &ours, &reference, Metric::CpuPerJob);
        rows.extend(measured.map(|_| {
            (
                "server CPU per job (single/50), vs 0.1.1".into(),
                "<= 0.6x".into(),
                measured,
                measured.is_some_and(|value| value <= 0.6),
            )
        }));
    }
    let (ours_rs, reference_rs) = (format!("{ours} via sepp-rs"), format!("{reference} via sepp-rs"));
    if summary.has_target(&ours_rs) && summary.has_target(&reference_rs) {
        let measured = summary.ratio("single/50", &ours_rs, &reference_rs, Metric::CpuPerJob);
        rows.extend(measured.map(|_| {
            (
                "server CPU per job (single/50), both loaded by sepp-rs 0.1".into(),
                "<= 0.65x".into(),
                measured,
                measured.is_some_and(|value| value <= 0.65),
            )
        }));
    }
    if let Some(run) = results.backlog.iter().find(|run| run.target == ours) {
        let scale = format!("{} jobs", run.jobs);
        let mb = |bytes: Option<u64>| bytes.map(|bytes| bytes as f64 / 1e6);
        let rss = mb(run.rss_bytes.max(run.peak_rss_bytes));
        rows.push((format!("RSS with {scale}"), "<= 300 MB".into(), rss, rss.is_some_and(|value| value <= 300.0)));
        if run.churn_jobs > 0 {
            let churning = mb(run.churn_peak_rss_bytes);
            rows.push((
                format!("RSS with {scale} while {} more pass through", run.churn_jobs),
                "<= 300 MB".into(),
                churning,
                churning.is_some_and(|value| value <= 300.0),
            ));
        }
        let disk = mb(run.data_dir_bytes);
        rows.push((
            format!("data directory with {scale}"),
            "<= 600 MB".into(),
            disk,
            disk.is_some_and(|value| value <= 600.0),
        ));
        let restart = Some(run.restart_seconds);
        rows.push((format!("restart with {scale}"), "<= 3 s".into(), restart, run.restart_seconds <= 3.0));
    }
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(out, "### Performance targets (`sync_all`)\n");
    header(out, &["goal".into(), "wanted".into(), "measured".into(), "met".into()]);
    for (label, wanted, measured, met) in rows {
        let shown = match (wanted.contains('%'), measured) {
            (true, Some(value)) => format!("{:.0}%", value * 100.0),
            (false, Some(value)) if wanted.ends_with('x') => format!("{value:.3}x"),
            (false, Some(value)) if wanted.ends_with("MB") => format!("{value:.1} MB"),
            (false, Some(value)) if wanted.ends_with(" s") => format!("{value:.2} s"),
            (false, Some(value)) => format!("{value:.2}"),
            (_, None) => "-".into(),
        };
        let _ = writeln!(out, "| {label} | {wanted} | {shown} | {} |", if met { "yes" } else { "**no**" });
    }
    out.push('\n');
}

/// `12,345` jobs/s, or `-`.
pub fn rate(value: Option<f64>) -> String {
    let Some(value) = value else {
        return "-".into();
    };
    let digits = format!("{:.0}", value);
    let mut grouped = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

fn ratio(value: Option<f64>, as_percent: bool) -> String {
    match value {
        Some(value) if as_percent => format!("{:.0}%", value * 100.0),
        Some(value) => format!("{value:.2}x"),
        None => "-".into(),
    }
}

fn number(value: Option<f64>, decimals: usize) -> String {
    value.map_or_else(|| "-".into(), |value| format!("{value:.decimals$}"))
}

fn megabytes(bytes: Option<u64>) -> String {
    bytes.map_or_else(|| "-".into(), |bytes| format!("{:.1}", bytes as f64 / 1e6))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(vec![5.0, 1.0, 3.0]), Some(3.0));
        assert_eq!(median(vec![]), None);
    }

    #[test]
    fn results_without_a_churn_phase_render_without_its_rows() {
        let run = r#"{"target": "ours sync_all", "jobs": 10, "enqueue_seconds": 1.0, "rss_bytes": 1,
            "peak_rss_bytes": 1, "data_dir_bytes": 1, "stop_seconds": 0.1, "restart_seconds": 0.1,
            "rss_after_restart_bytes": 1, "drained_jobs": 10, "drain_seconds": 1.0, "drain_connections": 50,
            "data_dir_after_drain_bytes": 1}"#;
        let mut results = Results::default();
        results.backlog.push(serde_json::from_str(run).expect("a backlog run written before the churn phase"));
        let mut out = String::new();
        backlog_table(&mut out, &results);
        assert!(out.contains("| RSS with the backlog | MB |"), "{out}");
        assert!(!out.contains("while they pass"), "{out}");
        results.backlog[0].churn_jobs = 10;
        results.backlog[0].churn_seconds = 1.0;
        let mut out = String::new();
        backlog_table(&mut out, &results);
        assert!(
            out.contains("| more jobs through it (rounds of 20,000 enqueued, then drained) | jobs/s | 10 (10 jobs) |"),
            "{out}"
        );
    }

    /// A throughput run of `target` in `round` taking `seconds` for each phase.
    fn run(target: &str, round: usize, seconds: f64) -> ThroughputRun {
        ThroughputRun {
            scenario: crate::compare::standard_scenarios(1_000).remove(2),
            target: target.into(),
            round,
            enqueue_seconds: seconds,
            drain_seconds: seconds,
            enqueue_server_cpu_seconds: Some(seconds),
            drain_server_cpu_seconds: Some(seconds),
            leader_server_cpu_seconds: None,
            client_cpu_seconds: 0.0,
            peak_rss_bytes: Some(1),
            data_dir_bytes: Some(1),
        }
    }

    #[test]
    fn a_cluster_is_compared_with_one_node_of_ours_within_each_round() {
        let mut results = Results {
            targets: vec!["ours sync_all".into(), "cluster3 sync_all".into()],
            rounds: 2,
            ..Results::default()
        };
        results.throughput =
            vec![run("ours sync_all", 0, 1.0), run("cluster3 sync_all", 0, 2.0), run("ours sync_all", 1, 2.0)];
        results.throughput.push(run("cluster3 sync_all", 1, 8.0));
        let summary = Summary::new(&results);
        let column = ("cluster3 sync_all".to_string(), "ours sync_all".to_string());
        assert_eq!(summary.ratio_columns(), [column]);
        // Rounds 0.5x and 0.25x: the median of the per-round ratios.
        assert_eq!(summary.ratio("single/50", "cluster3 sync_all", "ours sync_all", Metric::Enqueue), Some(0.375));
        let tables = markdown(&results);
        assert!(tables.contains("| scenario | phase | cluster3 sync_all / ours sync_all |"), "{tables}");
        assert!(tables.contains("cluster3: the CPU of its three nodes together."), "{tables}");
        assert!(!tables.contains("leader alone"), "{tables}");
        // With the leader's own CPU: 1 s of 2 (0.5x of ours) and 2 s of 8 (1x of ours).
        results.throughput[1].leader_server_cpu_seconds = Some(1.0);
        results.throughput[3].leader_server_cpu_seconds = Some(4.0);
        let tables = markdown(&results);
        let leader =
            "| scenario | cluster3 sync_all's leader (/ ours sync_all) |\n|---|---:|\n| single/50 | 2500.0 (0.75x) |";
        assert!(tables.contains(leader), "{tables}");
        assert!(!tables.contains("repeated"), "{tables}");
        results.repeated.push("cluster3 sync_all, single/50 round 1: call failed".into());
        let tables = markdown(&results);
        assert!(tables.contains("after a failed attempt:\n\n- cluster3 sync_all, single/50 round 1: call failed\n"));
        results.repeated.clear();
        // Without the cluster, neither the column nor the notes.
        results.targets.pop();
        results.throughput.retain(|run| run.target == "ours sync_all");
        let tables = markdown(&results);
        assert!(!tables.contains("cluster3"), "{tables}");
        assert!(Summary::new(&results).ratio_columns().is_empty());
    }

    #[test]
    fn rates_are_grouped_by_thousands() {
        assert_eq!(rate(Some(1234567.4)), "1,234,567");
        assert_eq!(rate(Some(999.0)), "999");
        assert_eq!(rate(None), "-");
    }
}
