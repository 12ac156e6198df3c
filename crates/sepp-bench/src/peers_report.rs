//! The tables and the chart of a peer comparison ([`PeerResults`]). Every figure is a median
//! over rounds; every ratio is taken within a round, then the median of those is shown.

use std::fmt::Write;

use crate::peers::{PeerResults, PeerRun};
use crate::report::median;

const ENQUEUE_PHASES: [&str; 2] = ["enqueue-single", "enqueue-batch"];

fn runs<'a>(results: &'a PeerResults, target: &'a str, scenario: &'a str) -> impl Iterator<Item = &'a PeerRun> {
    results.runs.iter().filter(move |run| run.target == target && run.scenario == scenario)
}

fn is_enqueue(run: &PeerRun) -> bool {
    ENQUEUE_PHASES.contains(&run.report.phase.as_str())
}

/// Median jobs/s of the enqueue (`drain` false) or drain phase.
pub fn rate(results: &PeerResults, target: &str, scenario: &str, drain: bool) -> Option<f64> {
    median(
        runs(results, target, scenario).filter(|run| is_enqueue(run) != drain).map(PeerRun::jobs_per_second).collect(),
    )
}

/// CPU µs per job over enqueue and drain of one round, of the broker or of the driver.
fn cpu_per_job_in_round(
    results: &PeerResults,
    target: &str,
    scenario: &str,
    round: usize,
    broker: bool,
) -> Option<f64> {
    let phases: Vec<&PeerRun> = runs(results, target, scenario).filter(|run| run.round == round).collect();
    if phases.len() != 2 {
        return None;
    }
    let seconds: f64 =
        phases.iter().map(|run| if broker { run.broker_cpu_seconds } else { run.driver_cpu_seconds }).sum();
    Some(seconds * 1e6 / phases[0].report.jobs.max(1) as f64)
}

/// Median broker (or driver) CPU µs per job, enqueue + drain.
pub fn cpu_per_job(results: &PeerResults, target: &str, scenario: &str, broker: bool) -> Option<f64> {
    median(
        (0..results.rounds)
            .filter_map(|round| cpu_per_job_in_round(results, target, scenario, round, broker))
            .collect(),
    )
}

fn rate_in_round(results: &PeerResults, target: &str, scenario: &str, round: usize, drain: bool) -> Option<f64> {
    runs(results, target, scenario)
        .find(|run| run.round == round && is_enqueue(run) != drain)
        .map(PeerRun::jobs_per_second)
}

/// Median over rounds of `top / bottom` for a rate (`Some(drain)`) or broker CPU per job (`None`).
pub fn ratio(results: &PeerResults, top: &str, bottom: &str, scenario: &str, figure: Option<bool>) -> Option<f64> {
    let value = |target: &str, round: usize| match figure {
        Some(drain) => rate_in_round(results, target, scenario, round, drain),
        None => cpu_per_job_in_round(results, target, scenario, round, true),
    };
    median((0..results.rounds).filter_map(|round| Some(value(top, round)? / value(bottom, round)?)).collect())
}

/// Median over rounds of one (target, scenario)'s rate divided by another's, within each round.
pub fn rate_ratio(results: &PeerResults, top: (&str, &str), bottom: (&str, &str), drain: bool) -> Option<f64> {
    median(
        (0..results.rounds)
            .filter_map(|round| {
                Some(
                    rate_in_round(results, top.0, top.1, round, drain)?
                        / rate_in_round(results, bottom.0, bottom.1, round, drain)?,
                )
            })
            .collect(),
    )
}

/// The row every "vs BullMQ" ratio divides by: BullMQ on Redis with `appendfsync always` in
/// shared/50 (its documented way: one Queue, one Worker with concurrency 50).
pub const BULLMQ_REFERENCE: (&str, &str) = ("BullMQ fsync always", "shared/50");

/// The scenarios of the results in the order they ran, the latency phase left out.
fn scenario_names(results: &PeerResults) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for run in results.runs.iter().filter(|run| run.scenario != "latency") {
        if !names.contains(&run.scenario) {
            names.push(run.scenario.clone());
        }
    }
    names
}

/// One line per target and scenario: shape, enqueue and drain rates, broker CPU per job
/// (enqueue + drain) and both rates against BullMQ (fsync always) in shared/50.
pub fn summary(results: &PeerResults) -> String {
    let mut out = String::new();
    let reference =
        results.runs.iter().any(|run| run.target == BULLMQ_REFERENCE.0 && run.scenario == BULLMQ_REFERENCE.1);
    let _ = writeln!(
        out,
        "| driver | scenario | shape | enqueue jobs/s | drain jobs/s | broker CPU µs/job | vs BullMQ, enqueue / drain |"
    );
    let _ = writeln!(out, "|---|---|---|---:|---:|---:|---:|");
    for scenario in scenario_names(results) {
        for target in &results.targets {
            let Some(first) = runs(results, &target.name, &scenario).next() else { continue };
            let versus = if reference {
                format!(
                    "{}x / {}x",
                    fmt(rate_ratio(results, (&target.name, &scenario), BULLMQ_REFERENCE, false), 2),
                    fmt(rate_ratio(results, (&target.name, &scenario), BULLMQ_REFERENCE, true), 2)
                )
            } else {
                "-".into()
            };
            let _ = writeln!(
                out,
                "| {} | {scenario} | {} | {} | {} | {} | {versus} |",
                target.name,
                first.shape,
                fmt_rate(rate(results, &target.name, &scenario, false)),
                fmt_rate(rate(results, &target.name, &scenario, true)),
                fmt(cpu_per_job(results, &target.name, &scenario, true), 1),
            );
        }
    }
    out
}

fn latency(results: &PeerResults, target: &str, percentile: u8) -> Option<f64> {
    median(
        runs(results, target, "latency")
            .filter_map(|run| if percentile == 50 { run.report.p50_us } else { run.report.p99_us })
            .collect(),
    )
}

fn fmt_rate(value: Option<f64>) -> String {
    crate::report::rate(value)
}

fn fmt(value: Option<f64>, digits: usize) -> String {
    value.map_or("-".into(), |value| format!("{value:.digits$}"))
}

fn versions(results: &PeerResults, target: &str) -> (String, String) {
    results
        .runs
        .iter()
        .find(|run| run.target == target)
        .map(|run| (run.report.server_version.clone(), format!("{} {}", run.report.client, run.report.client_version)))
        .unwrap_or_default()
}

/// The Markdown of a peer comparison.
pub fn markdown(results: &PeerResults) -> String {
    let mut out = String::new();
    if let Some(machine) = &results.machine {
        let _ = writeln!(
            out,
            "Machine: {} CPUs ({}), {:.1} GiB memory, Linux {}; load average {}. {} round(s), \
             targets alternating; clients and brokers share the CPUs.\n",
            machine.cpus,
            machine.cpu_model,
            machine.memory_bytes as f64 / (1u64 << 30) as f64,
            machine.kernel,
            results.load_average,
            results.rounds,
        );
    }
    let _ = writeln!(out, "### What an answered enqueue means\n");
    let _ = writeln!(out, "| target | durable | a job counts as enqueued when it is |");
    let _ = writeln!(out, "|---|---|---|");
    for target in &results.targets {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            target.name,
            if target.durable { "yes" } else { "no" },
            target.durability
        );
    }
    for (name, why) in &results.skipped {
        let _ = writeln!(out, "| {name} | skipped | {why} |");
    }
    for (name, scenario, round, error) in &results.failed {
        let _ = writeln!(out, "\n**Failed:** {name} {scenario} round {round}: {error}");
    }

    let scenarios = scenario_names(results);
    let _ = writeln!(
        out,
        "\n### Per driver and shape (median of rounds; vs BullMQ: against {} in {}, median of per-round ratios)\n",
        BULLMQ_REFERENCE.0, BULLMQ_REFERENCE.1
    );
    out += &summary(results);
    let _ = writeln!(out, "\n### Throughput, jobs/s (enqueue / drain)\n");
    let mut header = "| target |".to_string();
    let mut align = "|---|".to_string();
    for scenario in &scenarios {
        header += &format!(" {scenario} enqueue | {scenario} drain |");
        align += "---:|---:|";
    }
    let _ = writeln!(out, "{header}\n{align}");
    for target in &results.targets {
        let mut line = format!("| {} |", target.name);
        for scenario in &scenarios {
            line += &format!(
                " {} | {} |",
                fmt_rate(rate(results, &target.name, scenario, false)),
                fmt_rate(rate(results, &target.name, scenario, true))
            );
        }
        let _ = writeln!(out, "{line}");
    }

    let headline = "single/50";
    let _ = writeln!(out, "\n### Cost per job at {headline}, round trip, memory, versions\n");
    let _ = writeln!(
        out,
        "| target | broker CPU µs/job | driver CPU µs/job | round trip p50 ms | p99 ms | broker memory MB | server | client |"
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|---|---|");
    for target in &results.targets {
        let memory = results
            .runs
            .iter()
            .filter(|run| run.target == target.name && run.scenario == headline)
            .map(|run| run.broker_memory_bytes)
            .max();
        let (server, client) = versions(results, &target.name);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {server} | {client} |",
            target.name,
            fmt(cpu_per_job(results, &target.name, headline, true), 1),
            fmt(cpu_per_job(results, &target.name, headline, false), 1),
            fmt(latency(results, &target.name, 50).map(|us| us / 1000.0), 2),
            fmt(latency(results, &target.name, 99).map(|us| us / 1000.0), 2),
            fmt(memory.map(|bytes| bytes as f64 / 1e6), 1),
        );
    }

    let sepp = "sepp sync_all";
    if results.targets.iter().any(|target| target.name == sepp) {
        let _ = writeln!(out, "\n### {sepp} against each durable peer (median of per-round ratios)\n");
        let _ = writeln!(
            out,
            "| peer | {headline} enqueue, sepp / peer | {headline} drain, sepp / peer | broker CPU per job, sepp / peer |"
        );
        let _ = writeln!(out, "|---|---:|---:|---:|");
        for target in results.targets.iter().filter(|target| target.durable && target.name != sepp) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                target.name,
                fmt(ratio(results, sepp, &target.name, headline, Some(false)), 2),
                fmt(ratio(results, sepp, &target.name, headline, Some(true)), 2),
                fmt(ratio(results, sepp, &target.name, headline, None), 2),
            );
        }
    }
    out.push('\n');
    out
}

/// A hand-written SVG: single/50 enqueue and drain rates and broker + driver CPU per job, one
/// bar per target (durable rows dark, relaxed rows light).
pub fn svg(results: &PeerResults) -> String {
    const WIDTH: f64 = 900.0;
    const LABEL: f64 = 170.0;
    const BAR: f64 = 16.0;
    let scenario = "single/50";
    type Figure<'a> = Box<dyn Fn(&str) -> Option<f64> + 'a>;
    let panels: Vec<(&str, Figure)> = vec![
        ("single/50 enqueue, jobs/s", Box::new(|target: &str| rate(results, target, scenario, false))),
        (
            "single/50 drain (take + acknowledge), jobs/s",
            Box::new(|target: &str| rate(results, target, scenario, true)),
        ),
        (
            "single/50 broker CPU per job, µs (lower is better)",
            Box::new(|target: &str| cpu_per_job(results, target, scenario, true)),
        ),
    ];
    let targets = &results.targets;
    let panel_height = 30.0 + targets.len() as f64 * (BAR + 4.0) + 14.0;
    let height = 40.0 + panels.len() as f64 * panel_height + 24.0;
    let plot = WIDTH - LABEL - 110.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = writeln!(
        out,
        r#"<text x="10" y="22" font-size="14" font-weight="bold">sepp and peer job queues on one machine (median of rounds; dark: durable, light: relaxed)</text>"#
    );
    let mut y = 40.0;
    for (title, figure) in &panels {
        let _ = writeln!(out, r#"<text x="10" y="{}" font-weight="bold">{title}</text>"#, y + 16.0);
        let values: Vec<Option<f64>> = targets.iter().map(|target| figure(&target.name)).collect();
        let largest = values.iter().flatten().copied().fold(1e-9, f64::max);
        let mut bar_y = y + 26.0;
        for (target, value) in targets.iter().zip(&values) {
            let sepp = target.name.starts_with("sepp");
            let colour = match (sepp, target.durable) {
                (true, true) => "#1f5fa8",
                (true, false) => "#8fb8e6",
                (false, true) => "#c23b22",
                (false, false) => "#f0a090",
            };
            let _ = writeln!(
                out,
                r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
                LABEL - 6.0,
                bar_y + BAR - 4.0,
                target.name
            );
            if let Some(value) = value {
                let width = plot * value / largest;
                let _ = writeln!(
                    out,
                    r#"<rect x="{LABEL}" y="{bar_y}" width="{width:.1}" height="{BAR}" fill="{colour}"/>"#
                );
                let label = if title.contains("CPU") { format!("{value:.1}") } else { fmt_rate(Some(*value)) };
                let _ =
                    writeln!(out, r#"<text x="{:.1}" y="{}">{label}</text>"#, LABEL + width + 5.0, bar_y + BAR - 4.0);
            }
            bar_y += BAR + 4.0;
        }
        y += panel_height;
    }
    let _ = writeln!(
        out,
        r#"<text x="10" y="{}" font-size="11">blue: sepp, red: peers. Clients and brokers share the machine's CPUs.</text>"#,
        height - 10.0
    );
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::peers::{DriverReport, Peer, PeerTarget};

    fn run(target: &str, phase: &str, round: usize, seconds: f64, broker: f64) -> PeerRun {
        PeerRun {
            target: target.into(),
            scenario: "single/50".into(),
            round,
            concurrency: 50,
            shape: "connection per producer".into(),
            report: DriverReport {
                client: "c".into(),
                client_version: "1".into(),
                server_version: "s 1".into(),
                phase: phase.into(),
                jobs: 1000,
                seconds,
                p50_us: None,
                p99_us: None,
            },
            broker_cpu_seconds: broker,
            driver_cpu_seconds: broker,
            broker_memory_bytes: 1_000_000,
        }
    }

    fn target(name: &str, peer: Peer) -> PeerTarget {
        PeerTarget { name: name.into(), durable: peer.durable(), durability: peer.durability().into(), peer }
    }

    #[test]
    fn ratios_are_taken_within_a_round() {
        let results = PeerResults {
            rounds: 2,
            targets: vec![target("sepp sync_all", Peer::Sepp("sync_all".into())), target("pg-boss", Peer::PgBoss)],
            runs: vec![
                run("sepp sync_all", "enqueue-single", 0, 0.5, 0.05),
                run("sepp sync_all", "drain", 0, 0.5, 0.05),
                run("pg-boss", "enqueue-single", 0, 1.0, 0.1),
                run("pg-boss", "drain", 0, 2.0, 0.1),
                run("sepp sync_all", "enqueue-single", 1, 0.25, 0.05),
                run("sepp sync_all", "drain", 1, 0.5, 0.05),
                run("pg-boss", "enqueue-single", 1, 1.0, 0.2),
                run("pg-boss", "drain", 1, 2.0, 0.2),
            ],
            ..PeerResults::default()
        };
        assert_eq!(ratio(&results, "sepp sync_all", "pg-boss", "single/50", Some(false)), Some(3.0));
        assert_eq!(ratio(&results, "sepp sync_all", "pg-boss", "single/50", Some(true)), Some(4.0));
        assert_eq!(ratio(&results, "sepp sync_all", "pg-boss", "single/50", None), Some(0.375));
        assert_eq!(cpu_per_job(&results, "pg-boss", "single/50", true), Some(300.0));
        let text = markdown(&results);
        assert!(text.contains("| pg-boss | yes | on disk"), "{text}");
        assert!(text.contains("| pg-boss | single/50 | connection per producer | 1,000 | 500 | 300.0 | - |"), "{text}");
        assert!(svg(&results).starts_with("<svg"));
    }

    #[test]
    fn every_row_is_set_against_bullmq_shared() {
        let shared = |mut run: PeerRun| {
            run.scenario = "shared/50".into();
            run.shape = "shared".into();
            run
        };
        let results = PeerResults {
            rounds: 1,
            targets: vec![
                target("sepp sync_all", Peer::Sepp("sync_all".into())),
                target("BullMQ fsync always", Peer::BullMq { appendfsync: "always".into() }),
            ],
            runs: vec![
                shared(run("BullMQ fsync always", "enqueue-single", 0, 2.0, 0.1)),
                shared(run("BullMQ fsync always", "drain", 0, 4.0, 0.1)),
                shared(run("sepp sync_all", "enqueue-single", 0, 0.5, 0.05)),
                shared(run("sepp sync_all", "drain", 0, 0.5, 0.05)),
                run("sepp sync_all", "enqueue-single", 0, 1.0, 0.05),
                run("sepp sync_all", "drain", 0, 1.0, 0.05),
            ],
            ..PeerResults::default()
        };
        let table = summary(&results);
        assert!(
            table.contains("| sepp sync_all | shared/50 | shared | 2,000 | 2,000 | 100.0 | 4.00x / 8.00x |"),
            "{table}"
        );
        assert!(
            table.contains("| BullMQ fsync always | shared/50 | shared | 500 | 250 | 200.0 | 1.00x / 1.00x |"),
            "{table}"
        );
        assert!(
            table.contains(
                "| sepp sync_all | single/50 | connection per producer | 1,000 | 1,000 | 100.0 | 2.00x / 4.00x |"
            ),
            "{table}"
        );
    }
}
