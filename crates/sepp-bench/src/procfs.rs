//! What a server process costs, read from `/proc` (Linux only): CPU time, resident memory, and
//! the size of its data directory on disk.

use std::path::Path;
use std::sync::OnceLock;

/// CPU time and memory of one process at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ProcessSample {
    /// User plus system CPU time of every thread, in seconds.
    pub cpu_seconds: f64,
    /// Resident set size now, in bytes.
    pub rss_bytes: u64,
    /// Peak resident set size so far (VmHWM), in bytes.
    pub peak_rss_bytes: u64,
}

/// Clock ticks per second of the CPU counters in `/proc/<pid>/stat`.
fn clock_ticks_per_second() -> f64 {
    static TICKS: OnceLock<f64> = OnceLock::new();
    *TICKS.get_or_init(|| {
        // SAFETY: sysconf only reads a configuration value.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if ticks > 0 { ticks as f64 } else { 100.0 }
    })
}

/// Reads the counters of `pid`; `None` when the process is gone or `/proc` is unavailable.
pub fn sample(pid: u32) -> Option<ProcessSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    Some(ProcessSample {
        cpu_seconds: cpu_ticks(&stat)? as f64 / clock_ticks_per_second(),
        rss_bytes: status_kib(&status, "VmRSS:").unwrap_or(0) * 1024,
        peak_rss_bytes: status_kib(&status, "VmHWM:").unwrap_or(0) * 1024,
    })
}

/// Like [`sample`], with the CPU time of the process's children that have exited and been
/// waited for (a PostgreSQL postmaster's backends) added to its own.
pub fn sample_with_children(pid: u32) -> Option<ProcessSample> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut sample = sample(pid)?;
    sample.cpu_seconds = cpu_ticks_with_children(&stat)? as f64 / clock_ticks_per_second();
    Some(sample)
}

/// utime + stime + cutime + cstime (fields 14 to 17) from the text of `/proc/<pid>/stat`.
fn cpu_ticks_with_children(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    (11..15).map(|index| fields.get(index)?.parse::<u64>().ok()).sum()
}

/// The proportional set size of `pid` (its shared pages divided among the processes sharing
/// them), from `/proc/<pid>/smaps_rollup`.
pub fn pss_bytes(pid: u32) -> Option<u64> {
    let rollup = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).ok()?;
    Some(status_kib(&rollup, "Pss:")? * 1024)
}

/// Every process whose command name (`/proc/<pid>/comm`) is one of `names`.
pub fn pids_named(names: &[&str]) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|comm| names.contains(&comm.trim()))
        })
        .collect()
}

/// utime + stime from the text of `/proc/<pid>/stat`. The command name (field 2) may hold spaces
/// and parentheses, so fields are counted from the last `)`: utime and stime are fields 14 and 15.
fn cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// A `kB` line of `/proc/<pid>/status`, such as `VmHWM:   12345 kB`.
fn status_kib(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// Bytes allocated on disk (as `du` counts them) by every file under `dir`.
pub fn disk_usage_bytes(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(metadata) if metadata.is_dir() => disk_usage_bytes(&entry.path()),
            Ok(metadata) => metadata.blocks() * 512,
            Err(_) => 0,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_ticks_are_counted_after_a_command_name_with_spaces_and_parentheses() {
        let stat = "42 (my (odd) name) S 1 42 42 0 -1 4194560 100 0 0 0 250 70 0 0 20 0 3 0 1000 0 0";
        assert_eq!(cpu_ticks(stat), Some(320));
    }

    #[test]
    fn children_cpu_ticks_are_added_to_the_process_own() {
        let stat = "42 (postgres) S 1 42 42 0 -1 4194560 100 0 0 0 250 70 1000 30 20 0 3 0 1000 0 0";
        assert_eq!(cpu_ticks_with_children(stat), Some(1350));
    }

    #[test]
    fn this_process_is_found_by_its_command_name() {
        let comm = std::fs::read_to_string("/proc/self/comm").unwrap();
        assert!(pids_named(&[comm.trim()]).contains(&std::process::id()));
        assert!(pss_bytes(std::process::id()).is_some_and(|bytes| bytes > 0));
    }

    #[test]
    fn status_lines_are_read_in_kib() {
        let status = "Name:\tsepp\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\n";
        assert_eq!(status_kib(status, "VmHWM:"), Some(2048));
        assert_eq!(status_kib(status, "VmRSS:"), Some(1024));
        assert_eq!(status_kib(status, "VmSwap:"), None);
    }

    #[test]
    fn the_current_process_can_be_sampled() {
        let sample = sample(std::process::id()).expect("/proc is readable");
        assert!(sample.peak_rss_bytes >= sample.rss_bytes);
        assert!(sample.rss_bytes > 0);
    }
}
