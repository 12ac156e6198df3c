//! Live stats: what the committer publishes, and the once-a-second frames built from it.
//!
//! The committer publishes a [`StatsSnapshot`] (per-queue depths and totals) at most every
//! 250 ms, also when idle, through a watch channel: publishing is a few map walks, and nothing
//! on the committer waits for anyone to read it. The [`StatsHub`] task turns the latest snapshot
//! into a frame each second, adds the second's rates to the [`History`], and broadcasts each
//! frame to the SSE subscribers. A frame carries the depths, totals and per-second rates of the
//! [`FRAME_QUEUES`] busiest queues, and the sum over every queue: its size does not grow with the
//! number of queues. Busiest is an activity score per queue (enqueued, acked, nacked and
//! dead-lettered jobs per second, averaged over about five minutes), the same that picks the
//! queues with a history series of their own; ties go to the queue holding more jobs, then to
//! the name.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use sepp_admin_types as api;
use sepp_core::{Depths, QueueTotals, State, TimeMs};
use tokio::sync::{broadcast, watch};

use crate::admin::events::Event;
use crate::admin::history::{History, QueueRates};
use crate::live::LiveConfig;
use sepp_engine::{Clock, CommitterHandle, StatsSink};

/// The committer publishes at most this often.
pub const PUBLISH_INTERVAL_MS: TimeMs = 250;
/// Totals of a queue with no entries that did nothing for this long are forgotten.
pub const IDLE_EVICTION_MS: TimeMs = 15 * 60 * 1000;
/// A frame carries this many queues at most (the busiest).
pub const FRAME_QUEUES: usize = 500;
/// The overview and `hello` carry the series of this many queues at most (the busiest)...
pub const SUMMARY_QUEUES: usize = 10;
/// ...over this many seconds.
pub const SUMMARY_SECONDS: usize = 300;
/// The weight of the newest second in a queue's activity score (an average over ~300 s).
const SCORE_WEIGHT: f64 = 1.0 / 300.0;

/// One queue in a snapshot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueStats {
    pub depths: Depths,
    pub totals: QueueTotals,
    /// Paused by name: `Some(until_ms)` (`None` inside when it lasts until resumed).
    pub paused: Option<Option<TimeMs>>,
    /// Ready jobs that their key's in-flight limit holds back (per-key limits only).
    pub held_by_key: u64,
}

/// What the committer last published.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatsSnapshot {
    pub taken_at_ms: TimeMs,
    /// Every queue with entries, totals or a pause, by name.
    pub queues: BTreeMap<Arc<str>, QueueStats>,
    /// The pause of every queue, if there is one, and its end.
    pub all_paused: Option<Option<TimeMs>>,
}

impl StatsSnapshot {
    pub fn queue(&self, name: &str) -> QueueStats {
        self.queues.get(name).copied().unwrap_or_default()
    }
}

/// The committer's side: builds and publishes snapshots, and forgets idle totals.
pub struct StatsPublisher {
    sender: watch::Sender<Arc<StatsSnapshot>>,
    next_publish_ms: TimeMs,
    /// Each queue's totals when they last changed, and when that was.
    activity: HashMap<Arc<str>, (QueueTotals, TimeMs)>,
}

impl StatsPublisher {
    pub fn new(sender: watch::Sender<Arc<StatsSnapshot>>) -> StatsPublisher {
        StatsPublisher { sender, next_publish_ms: 0, activity: HashMap::new() }
    }

    /// When the committer must wake to publish next.
    pub fn wake_ms(&self) -> TimeMs {
        self.next_publish_ms
    }

    /// Publishes a snapshot of `state` when one is due.
    pub fn after_cycle(&mut self, now_ms: TimeMs, state: &mut State) {
        if now_ms < self.next_publish_ms {
            return;
        }
        self.next_publish_ms = now_ms + PUBLISH_INTERVAL_MS;
        let mut queues: BTreeMap<Arc<str>, QueueStats> = BTreeMap::new();
        for name in state.queue_names() {
            let depths = state.depths(&name);
            let held_by_key = state.held_by_key_limit(&name);
            queues.insert(name, QueueStats { depths, held_by_key, ..QueueStats::default() });
        }
        let mut idle = Vec::new();
        for (name, totals) in state.totals() {
            let (seen, changed_at_ms) = self.activity.entry(name.clone()).or_insert((*totals, now_ms));
            if seen != totals {
                *seen = *totals;
                *changed_at_ms = now_ms;
            }
            let entry = queues.entry(name.clone()).or_default();
            if entry.depths == Depths::default() && now_ms - *changed_at_ms > IDLE_EVICTION_MS {
                idle.push(name.clone());
            } else {
                entry.totals = *totals;
            }
        }
        for name in idle {
            state.forget_totals(&name);
            self.forget(&name);
            if queues.get(&name).is_some_and(|queue| queue.depths == Depths::default()) {
                queues.remove(&name);
            }
        }
        let mut all_paused = None;
        for (name, until_ms) in state.pauses() {
            if &*name == sepp_core::ALL_QUEUES {
                all_paused = Some(until_ms);
            } else {
                queues.entry(name).or_default().paused = Some(until_ms);
            }
        }
        self.sender.send_replace(Arc::new(StatsSnapshot { taken_at_ms: now_ms, queues, all_paused }));
    }

    /// Publishes at the end of this cycle, whenever the last one was.
    pub fn publish_soon(&mut self) {
        self.next_publish_ms = 0;
    }

    /// Forgets what it knew of `queue`'s activity (its totals were dropped).
    pub fn forget(&mut self, queue: &str) {
        self.activity.remove(queue);
        self.next_publish_ms = 0;
    }
}

/// The committer's stats sink (`Command::PublishStats`): the same methods, on the committer
/// thread.
impl StatsSink for StatsPublisher {
    fn wake_ms(&self) -> TimeMs {
        StatsPublisher::wake_ms(self)
    }

    fn after_cycle(&mut self, now_ms: TimeMs, state: &mut State) {
        StatsPublisher::after_cycle(self, now_ms, state)
    }

    fn publish_soon(&mut self) {
        StatsPublisher::publish_soon(self)
    }

    fn forget(&mut self, queue: &str) {
        StatsPublisher::forget(self, queue)
    }
}

/// The frames and the history, shared by the HTTP handlers.
pub struct StatsHub {
    snapshots: watch::Receiver<Arc<StatsSnapshot>>,
    latest: RwLock<Arc<api::Frame>>,
    history: Mutex<History>,
}

impl StatsHub {
    pub fn new(snapshots: watch::Receiver<Arc<StatsSnapshot>>) -> StatsHub {
        StatsHub { snapshots, latest: RwLock::new(Arc::new(api::Frame::default())), history: Mutex::default() }
    }

    /// The committer's latest snapshot (at most about 250 ms old).
    pub fn snapshot(&self) -> Arc<StatsSnapshot> {
        self.snapshots.borrow().clone()
    }

    /// The latest frame.
    pub fn frame(&self) -> Arc<api::Frame> {
        self.latest.read().expect("stats frame lock").clone()
    }

    /// The history of the busiest queues, `other` and `total` (see [`History::summary_json`]).
    pub fn history_json(&self) -> api::History {
        self.history.lock().expect("stats history lock").summary_json(SUMMARY_QUEUES, SUMMARY_SECONDS)
    }

    /// `{budget_bytes, bytes, seconds, queues_tracked, queues_folded}`.
    pub fn history_info(&self) -> api::HistoryInfo {
        self.history.lock().expect("stats history lock").info_json()
    }

    /// One queue's own series, or `None` when it has none.
    pub fn queue_history(&self, name: &str) -> Option<Vec<api::HistorySample>> {
        self.history.lock().expect("stats history lock").queue_json(name)
    }
}

/// What the hub remembers between ticks: each queue's totals (for rates) and activity score,
/// and the buffers each tick reuses (a tick over 50,000 queues allocates no per-queue memory).
struct Ticker {
    seq: u64,
    seen: HashMap<Arc<str>, Seen>,
    previous_ms: TimeMs,
    /// The queues of the latest tick, with their rates and scores.
    rates: Vec<QueueRates>,
    /// (score, jobs held, index into `rates`), to pick the busiest.
    order: Vec<(f64, u64, usize)>,
}

struct Seen {
    totals: QueueTotals,
    score: f64,
    seq: u64,
}

/// The once-a-second hub: its first frame is in place when this returns, so every `hello`
/// carries one; the task it spawns sends a frame each second until `stopping` turns true.
pub fn start_hub(
    hub: Arc<StatsHub>,
    live: Arc<LiveConfig>,
    committer: CommitterHandle,
    events: broadcast::Sender<Event>,
    clock: Arc<dyn Clock>,
    mut stopping: watch::Receiver<bool>,
) {
    let mut ticker =
        Ticker { seq: 0, seen: HashMap::new(), previous_ms: clock.now_ms(), rates: Vec::new(), order: Vec::new() };
    let tick = move |ticker: &mut Ticker| {
        let config = live.get();
        let admin = &config.config.admin;
        let capacity = (admin.stats_history_ms / 1000) as usize;
        let budget = usize::try_from(admin.stats_history_bytes).unwrap_or(usize::MAX);
        let snapshot = hub.snapshot();
        let now_ms = clock.now_ms();
        let frame = ticker.frame(now_ms, &snapshot, &config.config.queues, committer.queued());
        hub.history.lock().expect("stats history lock").push(now_ms, &ticker.rates, capacity, budget);
        let frame = Arc::new(frame);
        *hub.latest.write().expect("stats frame lock") = frame.clone();
        frame
    };
    tick(&mut ticker);
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(std::time::Duration::from_secs(1));
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        interval.tick().await; // the first tick is immediate, and its frame is already made
        loop {
            tokio::select! {
                _ = interval.tick() => {}
                _ = stopping.wait_for(|stopping| *stopping) => return,
            }
            let frame = tick(&mut ticker);
            let _ = events.send(Event::stats(&frame));
        }
    });
}

impl Ticker {
    /// The next frame; leaves each listed queue's rates and activity score in `self.rates`.
    fn frame(
        &mut self,
        now_ms: TimeMs,
        snapshot: &StatsSnapshot,
        declared: &[sepp_config::QueueConfig],
        command_queue_len: usize,
    ) -> api::Frame {
        let seconds = ((now_ms - self.previous_ms).max(1) as f64) / 1000.0;
        self.seq += 1;
        self.previous_ms = now_ms;
        self.rates.clear();
        let mut sum = QueueStats::default();
        let mut sum_rates = [0.0; 4];
        let undeclared_listed = declared.iter().filter(|queue| !snapshot.queues.contains_key(queue.name.as_str()));
        let declared_names: Vec<Arc<str>> = undeclared_listed
            .map(|queue| match self.seen.get_key_value(queue.name.as_str()) {
                Some((name, _)) => name.clone(),
                None => Arc::from(queue.name.as_str()),
            })
            .collect();
        let listed = snapshot
            .queues
            .iter()
            .map(|(name, stats)| (name, *stats))
            .chain(declared_names.iter().map(|name| (name, QueueStats::default())));
        for (name, stats) in listed {
            let totals = stats.totals;
            let seen = self.seen.entry(name.clone()).or_insert(Seen { totals, score: 0.0, seq: self.seq });
            let rate = |now: u64, then: u64| (now.saturating_sub(then) as f64 / seconds * 100.0).round() / 100.0;
            let rates = [
                rate(totals.enqueued, seen.totals.enqueued),
                rate(totals.acked, seen.totals.acked),
                rate(totals.nacked, seen.totals.nacked),
                rate(totals.dead_lettered, seen.totals.dead_lettered),
            ];
            let activity: f64 = rates.iter().sum();
            seen.score += (activity - seen.score) * SCORE_WEIGHT;
            seen.totals = totals;
            seen.seq = self.seq;
            add_stats(&mut sum, &stats);
            for (total, rate) in sum_rates.iter_mut().zip(rates) {
                *total += rate;
            }
            self.rates.push(QueueRates { name: name.clone(), rates, score: seen.score });
        }
        let seq = self.seq;
        self.seen.retain(|_, seen| seen.seq == seq);

        self.order.clear();
        self.order.extend(self.rates.iter().enumerate().map(|(at, queue)| {
            let depths = snapshot.queue(&queue.name).depths;
            (queue.score, depths.ready + depths.scheduled + depths.inflight + depths.dead_letter, at)
        }));
        let rates = &self.rates;
        let busiest = |a: &(f64, u64, usize), b: &(f64, u64, usize)| {
            b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)).then_with(|| rates[a.2].name.cmp(&rates[b.2].name))
        };
        if self.order.len() > FRAME_QUEUES {
            self.order.select_nth_unstable_by(FRAME_QUEUES - 1, busiest);
            self.order.truncate(FRAME_QUEUES);
        }
        let queues: BTreeMap<String, api::QueueFrame> = self
            .order
            .iter()
            .map(|(_, _, at)| {
                let queue = &self.rates[*at];
                let stats = snapshot.queue(&queue.name);
                let paused = stats.paused.is_some() || snapshot.all_paused.is_some();
                (queue.name.to_string(), queue_frame(&stats, &queue.rates, paused))
            })
            .collect();
        let queue_count = self.rates.len();
        let sum_rates = sum_rates.map(|rate| (rate * 100.0).round() / 100.0);
        let total = api::FrameTotal {
            depths: depths_of(&sum),
            totals: totals_of(&sum),
            rates: rates_of(&sum_rates),
            held_by_key_limit: Some(sum.held_by_key),
        };
        api::Frame {
            seq: self.seq,
            ts_ms: now_ms,
            server: api::FrameServer { command_queue_len: command_queue_len as u64 },
            queue_count: Some(queue_count as u64),
            truncated: Some(queues.len() < queue_count),
            queues,
            total: Some(total),
        }
    }
}

/// Adds a queue's depths and totals into a sum.
fn add_stats(sum: &mut QueueStats, stats: &QueueStats) {
    let (into, from) = (&mut sum.depths, &stats.depths);
    into.ready += from.ready;
    into.scheduled += from.scheduled;
    into.inflight += from.inflight;
    into.dead_letter += from.dead_letter;
    let (into, from) = (&mut sum.totals, &stats.totals);
    into.enqueued += from.enqueued;
    into.reserved += from.reserved;
    into.acked += from.acked;
    into.nacked += from.nacked;
    into.dead_lettered += from.dead_lettered;
    sum.held_by_key += stats.held_by_key;
}

fn depths_of(stats: &QueueStats) -> api::Depths {
    let depths = &stats.depths;
    api::Depths {
        ready: depths.ready,
        scheduled: depths.scheduled,
        inflight: depths.inflight,
        dead_lettered: depths.dead_letter,
    }
}

fn totals_of(stats: &QueueStats) -> api::Totals {
    let totals = &stats.totals;
    api::Totals {
        enqueued: totals.enqueued,
        reserved: totals.reserved,
        acked: totals.acked,
        nacked: totals.nacked,
        dead_lettered: totals.dead_lettered,
    }
}

fn rates_of(rates: &[f64; 4]) -> api::Rates {
    api::Rates { enqueued: rates[0], acked: rates[1], nacked: rates[2], dead_lettered: rates[3] }
}

/// A queue in a frame: its depths, totals, rates, held jobs and whether reserves skip it.
fn queue_frame(stats: &QueueStats, rates: &[f64; 4], paused: bool) -> api::QueueFrame {
    api::QueueFrame {
        depths: depths_of(stats),
        totals: totals_of(stats),
        rates: rates_of(rates),
        held_by_key_limit: Some(stats.held_by_key),
        paused,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticker() -> Ticker {
        Ticker { seq: 0, seen: HashMap::new(), previous_ms: 0, rates: Vec::new(), order: Vec::new() }
    }

    /// 600 queues of one ready job each; `busy` has enqueued `busy_enqueued` in all.
    fn snapshot(busy_enqueued: u64) -> StatsSnapshot {
        let mut queues = BTreeMap::new();
        for n in 0..600 {
            let stats = QueueStats { depths: Depths { ready: 1, ..Depths::default() }, ..QueueStats::default() };
            queues.insert(Arc::from(format!("quiet-{n:03}").as_str()), stats);
        }
        let mut busy = QueueStats::default();
        busy.totals.enqueued = busy_enqueued;
        busy.totals.acked = busy_enqueued;
        queues.insert(Arc::from("zz-busy"), busy);
        StatsSnapshot { taken_at_ms: 0, queues, all_paused: None }
    }

    #[test]
    fn a_frame_carries_the_500_busiest_queues_and_the_sum_over_all() {
        let mut ticker = ticker();
        ticker.frame(1_000, &snapshot(0), &[], 0);
        let frame = ticker.frame(2_000, &snapshot(50), &[], 7);
        assert_eq!((frame.seq, frame.ts_ms), (2, 2_000));
        assert_eq!(frame.queue_count, Some(601));
        assert_eq!(frame.truncated, Some(true));
        let queues = &frame.queues;
        assert_eq!(queues.len(), FRAME_QUEUES);
        assert_eq!(queues["zz-busy"].rates.enqueued, 50.0, "the busiest first, whatever its name");
        assert!(queues.contains_key("quiet-000") && !queues.contains_key("quiet-599"), "then by name");
        let total = frame.total.as_ref().unwrap();
        assert_eq!((total.depths.ready, total.totals.acked), (600, 50));
        assert_eq!(total.rates.acked, 50.0);
        let total = serde_json::to_value(total).unwrap();
        assert!(total.get("paused").is_none());
        assert_eq!(ticker.rates.len(), 601, "every queue's rates go to the history");

        // The score decays slowly: a second later, still the busiest.
        let frame = ticker.frame(3_000, &snapshot(50), &[], 0);
        assert!(frame.queues.contains_key("zz-busy"));
        assert_eq!(frame.queues["zz-busy"].rates.enqueued, 0.0);
    }

    #[test]
    fn a_declared_queue_without_stats_is_listed_and_a_gone_queue_forgotten() {
        let mut ticker = ticker();
        let declared: Vec<sepp_config::QueueConfig> =
            toml::from_str::<sepp_config::Config>("[[queues]]\nname = \"declared\"\n").unwrap().queues;
        let frame = ticker.frame(1_000, &StatsSnapshot::default(), &declared, 0);
        assert_eq!(frame.queue_count, Some(1));
        assert_eq!(frame.truncated, Some(false));
        assert!(frame.queues.contains_key("declared"));
        ticker.frame(2_000, &StatsSnapshot::default(), &[], 0);
        assert!(ticker.seen.is_empty(), "a queue no longer listed is forgotten");
    }
}
