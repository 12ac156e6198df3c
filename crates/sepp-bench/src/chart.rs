//! A hand-written SVG chart of the throughput results: for each scenario and phase, every sepp
//! target as a share of the gRPC ceiling measured in the same round (the ceiling is the 100%
//! line), labelled with its absolute jobs/s. Without a ceiling in the run, bars are relative to
//! the fastest target of their group instead.

use std::fmt::Write;

use crate::report::{CEILING, Metric, Summary};
use crate::results::Results;

const WIDTH: f64 = 960.0;
const LABEL_WIDTH: f64 = 120.0;
const BAR_HEIGHT: f64 = 13.0;
const GROUP_GAP: f64 = 10.0;
const PALETTE: [&str; 6] = ["#1f5fa8", "#8fb8e6", "#c23b22", "#f0a090", "#4d9a4d", "#a0d0a0"];

/// The SVG document for `results`.
pub fn svg(results: &Results) -> String {
    let summary = Summary::new(results);
    let has_ceiling = summary.has_target(CEILING);
    let targets: Vec<&String> = results.targets.iter().filter(|target| target.as_str() != CEILING).collect();
    let scenarios = summary.scenarios();
    let panels = [("Enqueue", Metric::Enqueue), ("Drain (reserve + ack)", Metric::Drain)];

    // Every bar's share, so the axis fits the largest.
    let share = |scenario: &str, target: &str, metric: Metric| -> Option<f64> {
        if has_ceiling {
            summary.ratio(scenario, target, CEILING, metric)
        } else {
            let best = targets.iter().filter_map(|other| summary.value(scenario, other, metric)).fold(0.0, f64::max);
            Some(summary.value(scenario, target, metric)? / best.max(1e-9))
        }
    };
    let mut largest: f64 = 1.0;
    for (_, metric) in &panels {
        for scenario in &scenarios {
            for target in &targets {
                largest = largest.max(share(scenario, target, *metric).unwrap_or(0.0));
            }
        }
    }
    let axis_max = (largest * 5.0).ceil() / 5.0;

    let group_height = targets.len() as f64 * BAR_HEIGHT + GROUP_GAP;
    let panel_height = 34.0 + scenarios.len() as f64 * group_height;
    let top = 70.0;
    let height = top + panels.len() as f64 * panel_height + 30.0;
    let plot_width = WIDTH - LABEL_WIDTH - 210.0;
    let x_of = |value: f64| LABEL_WIDTH + plot_width * (value / axis_max).min(1.0);

    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let title = if has_ceiling {
        "Throughput as a share of the gRPC ceiling (same round, median of rounds); labels: jobs/s"
    } else {
        "Throughput relative to the fastest target; labels: jobs/s"
    };
    let _ = writeln!(out, r#"<text x="10" y="20" font-size="14" font-weight="bold">{title}</text>"#);
    for (index, target) in targets.iter().enumerate() {
        let x = 10.0 + index as f64 * 150.0;
        let _ =
            writeln!(out, r#"<rect x="{x}" y="34" width="12" height="12" fill="{}"/>"#, PALETTE[index % PALETTE.len()]);
        let _ = writeln!(out, r#"<text x="{}" y="44">{}</text>"#, x + 16.0, escape(target));
    }
    for (panel, (name, metric)) in panels.iter().enumerate() {
        let y0 = top + panel as f64 * panel_height;
        let _ = writeln!(out, r#"<text x="10" y="{}" font-size="13" font-weight="bold">{name}</text>"#, y0 + 14.0);
        let plot_top = y0 + 22.0;
        let plot_bottom = plot_top + scenarios.len() as f64 * group_height;
        // Grid every 20%, with the 100% (ceiling) line drawn solid.
        let mut tick = 0.0;
        while tick <= axis_max + 1e-9 {
            let x = x_of(tick);
            let style =
                if (tick - 1.0).abs() < 1e-9 { r##"stroke="#333" stroke-width="1.5""## } else { r##"stroke="#ddd""## };
            let _ = writeln!(out, r#"<line x1="{x:.1}" y1="{plot_top}" x2="{x:.1}" y2="{plot_bottom}" {style}/>"#);
            let _ = writeln!(
                out,
                r##"<text x="{x:.1}" y="{}" text-anchor="middle" fill="#555">{:.0}%</text>"##,
                plot_bottom + 12.0,
                tick * 100.0
            );
            tick += 0.2;
        }
        if has_ceiling {
            let _ = writeln!(
                out,
                r##"<text x="{:.1}" y="{}" fill="#333">ceiling</text>"##,
                x_of(1.0) + 3.0,
                plot_top - 2.0
            );
        }
        for (group, scenario) in scenarios.iter().enumerate() {
            let gy = plot_top + group as f64 * group_height;
            let label_y = gy + targets.len() as f64 * BAR_HEIGHT / 2.0 + 4.0;
            let _ = writeln!(out, r#"<text x="10" y="{label_y:.1}">{}</text>"#, escape(scenario));
            for (index, target) in targets.iter().enumerate() {
                let y = gy + index as f64 * BAR_HEIGHT;
                let (Some(value), Some(rate)) =
                    (share(scenario, target, *metric), summary.value(scenario, target, *metric))
                else {
                    continue;
                };
                let x_end = x_of(value);
                let _ = writeln!(
                    out,
                    r#"<rect x="{LABEL_WIDTH}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {}</title></rect>"#,
                    (x_end - LABEL_WIDTH).max(0.5),
                    BAR_HEIGHT - 2.0,
                    PALETTE[index % PALETTE.len()],
                    escape(target),
                    crate::report::rate(Some(rate)),
                );
                let _ = writeln!(
                    out,
                    r#"<text x="{:.1}" y="{:.1}" font-size="10">{:.0}% · {}/s</text>"#,
                    x_end + 4.0,
                    y + BAR_HEIGHT - 4.0,
                    value * 100.0,
                    crate::report::rate(Some(rate)),
                );
            }
        }
    }
    let _ = writeln!(out, "</svg>");
    out
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}
