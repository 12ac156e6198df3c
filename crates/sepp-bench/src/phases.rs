//! The closed-loop load phases. Each connection runs one task that sends its next call as soon
//! as the previous one is answered; the connections share a ticket counter, so together they
//! move exactly the requested number of jobs.
//!
//! - [`enqueue`]: N producers enqueue `batch` jobs per RPC until `jobs` are stored.
//! - [`drain`]: N workers reserve up to `batch` jobs and ack each one, until `jobs` are acked;
//!   the clock stops at the last ack.
//! - [`latency`]: one connection, sequential enqueue -> reserve -> ack round trips.
//! - [`churn`]: jobs passing through a server that holds a large backlog, in rounds of enqueue
//!   then drain, while one connection measures round trips.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::task::JoinSet;

use crate::BenchError;
use crate::client::{Connection, LoadClient};

/// The wall time one phase took to move its jobs.
#[derive(Clone, Copy, Debug)]
pub struct PhaseTiming {
    pub jobs: u64,
    pub elapsed: Duration,
}

impl PhaseTiming {
    pub fn jobs_per_second(&self) -> f64 {
        self.jobs as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// Round-trip latency percentiles, in microseconds.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct LatencySummary {
    pub rounds: usize,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// Opens `count` connections of `client`, each its own HTTP/2 channel.
pub async fn connect_all(
    addr: std::net::SocketAddr,
    count: usize,
    client: LoadClient,
) -> Result<Vec<Connection>, BenchError> {
    let mut connections = Vec::with_capacity(count);
    for _ in 0..count {
        connections.push(Connection::connect(addr, client).await?);
    }
    Ok(connections)
}

/// Takes the next `batch` tickets out of `jobs`; `None` when none are left.
fn take_tickets(tickets: &AtomicU64, jobs: u64, batch: u32) -> Option<u32> {
    let first = tickets.fetch_add(u64::from(batch), Ordering::Relaxed);
    (first < jobs).then(|| (jobs - first).min(u64::from(batch)) as u32)
}

/// Enqueues `jobs` jobs into `queue`, `batch` per RPC, over every connection at once.
pub async fn enqueue(
    connections: &[Connection],
    queue: &str,
    jobs: u64,
    batch: u32,
) -> Result<PhaseTiming, BenchError> {
    let tickets = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for connection in connections {
        let (mut connection, tickets, queue) = (connection.clone(), tickets.clone(), queue.to_string());
        tasks.spawn(async move {
            while let Some(count) = take_tickets(&tickets, jobs, batch) {
                connection.enqueue(&queue, count as usize).await?;
            }
            Ok::<_, BenchError>(())
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.map_err(|error| BenchError::Unexpected(format!("producer task failed: {error}")))??;
    }
    Ok(PhaseTiming { jobs, elapsed: started.elapsed() })
}

/// Reserves (up to `batch` per call) and acks `jobs` jobs of `queue` over every connection at
/// once. The queue must hold at least `jobs` ready jobs: every reserve is then answered in full.
pub async fn drain(connections: &[Connection], queue: &str, jobs: u64, batch: u32) -> Result<PhaseTiming, BenchError> {
    let tickets = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = JoinSet::new();
    for connection in connections {
        let (mut connection, tickets, queue) = (connection.clone(), tickets.clone(), queue.to_string());
        tasks.spawn(async move {
            let mut last_ack = None;
            while let Some(count) = take_tickets(&tickets, jobs, batch) {
                let leases = connection.reserve(&queue, count).await?;
                if leases.len() != count as usize {
                    return Err(BenchError::Unexpected(format!("reserve of {count} returned {} jobs", leases.len())));
                }
                for lease in &leases {
                    connection.ack(lease).await?;
                }
                last_ack = Some(Instant::now());
            }
            Ok::<_, BenchError>(last_ack)
        });
    }
    let mut last_ack = started;
    while let Some(joined) = tasks.join_next().await {
        let finished = joined.map_err(|error| BenchError::Unexpected(format!("worker task failed: {error}")))??;
        last_ack = last_ack.max(finished.unwrap_or(started));
    }
    Ok(PhaseTiming { jobs, elapsed: last_ack - started })
}

/// Checks that `queue` has nothing left to reserve.
pub async fn expect_empty(connection: &Connection, queue: &str) -> Result<(), BenchError> {
    let leases = connection.clone().reserve(queue, 1).await?;
    if leases.is_empty() {
        Ok(())
    } else {
        Err(BenchError::Unexpected(format!("queue {queue} still had jobs after the drain")))
    }
}

/// Runs `rounds` sequential enqueue -> reserve -> ack round trips on one connection.
pub async fn latency(connection: &Connection, queue: &str, rounds: usize) -> Result<LatencySummary, BenchError> {
    let mut connection = connection.clone();
    let mut samples_us = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        connection.enqueue(queue, 1).await?;
        let leases = connection.reserve(queue, 1).await?;
        let [lease] = leases.as_slice() else {
            return Err(BenchError::Unexpected(format!("latency reserve returned {} jobs", leases.len())));
        };
        connection.ack(lease).await?;
        samples_us.push(started.elapsed().as_secs_f64() * 1e6);
    }
    samples_us.sort_by(f64::total_cmp);
    Ok(LatencySummary {
        rounds,
        p50_us: percentile(&samples_us, 0.50),
        p99_us: percentile(&samples_us, 0.99),
        p999_us: percentile(&samples_us, 0.999),
        max_us: samples_us.last().copied().unwrap_or(0.0),
    })
}

/// Nearest-rank percentile of sorted samples.
pub fn percentile(sorted: &[f64], quantile: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (quantile * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tickets_run_out_exactly_at_the_job_count() {
        let tickets = AtomicU64::new(0);
        let taken: Vec<u32> = std::iter::from_fn(|| take_tickets(&tickets, 10, 4)).collect();
        assert_eq!(taken, vec![4, 4, 2]);
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let samples: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(percentile(&samples, 0.50), 500.0);
        assert_eq!(percentile(&samples, 0.99), 990.0);
        assert_eq!(percentile(&samples, 0.999), 999.0);
        assert_eq!(percentile(&[7.0], 0.999), 7.0);
    }
}

/// Jobs enqueued and then drained per churn round: the backlog grows by at most this much.
const CHURN_ROUND_JOBS: u64 = 20_000;

/// What [`churn`] measured.
#[derive(Clone, Copy, Debug)]
pub struct Churn {
    pub timing: PhaseTiming,
    /// The slowest enqueue -> reserve -> ack round trip of the probing connection.
    pub slowest_round_trip: Duration,
    pub round_trips: usize,
}

/// Passes `jobs` jobs through `queue` in rounds of enqueue (`batch` per call) then drain
/// (reserve `batch`, ack each), while `probe` does sequential round trips through
/// `probe_queue`, the way a latency-sensitive client would see the server meanwhile.
pub async fn churn(
    connections: &[Connection],
    probe: &Connection,
    queue: &str,
    probe_queue: &str,
    jobs: u64,
    batch: u32,
) -> Result<Churn, BenchError> {
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let prober = {
        let (mut probe, done, probe_queue) = (probe.clone(), done.clone(), probe_queue.to_string());
        tokio::spawn(async move {
            let (mut slowest, mut round_trips) = (Duration::ZERO, 0);
            while !done.load(Ordering::Relaxed) {
                let started = Instant::now();
                probe.enqueue(&probe_queue, 1).await?;
                for lease in probe.reserve(&probe_queue, 1).await? {
                    probe.ack(&lease).await?;
                }
                slowest = slowest.max(started.elapsed());
                round_trips += 1;
            }
            Ok::<_, BenchError>((slowest, round_trips))
        })
    };
    let started = Instant::now();
    let mut moved = 0;
    let passed = async {
        while moved < jobs {
            let round = (jobs - moved).min(CHURN_ROUND_JOBS);
            enqueue(connections, queue, round, batch).await?;
            drain(connections, queue, round, batch).await?;
            moved += round;
        }
        Ok::<_, BenchError>(())
    }
    .await;
    let elapsed = started.elapsed();
    done.store(true, Ordering::Relaxed);
    let probed = prober.await.map_err(|error| BenchError::Unexpected(format!("probe task failed: {error}")))?;
    passed?;
    let (slowest_round_trip, round_trips) = probed?;
    Ok(Churn { timing: PhaseTiming { jobs, elapsed }, slowest_round_trip, round_trips })
}
