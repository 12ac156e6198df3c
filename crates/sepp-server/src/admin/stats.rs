//! Live stats: what the committer publishes, the once-a-second frames built from it, and the
//! history ring behind the dashboard's charts.
//!
//! The committer publishes a [`StatsSnapshot`] (per-queue depths and totals) at most every
//! 250 ms, also when idle, through a watch channel: publishing is a few map walks, and nothing
//! on the committer waits for anyone to read it. The [`StatsHub`] task turns the latest snapshot
//! into a frame each second (depths, totals, per-second rates), keeps the frames' rates in a
//! compact ring of `admin.stats_history_ms` (one sample per queue per second), and broadcasts
//! each frame to the SSE subscribers.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, RwLock};

use sepp_core::{Depths, QueueTotals, State, TimeMs};
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, watch};

use crate::admin::events::Event;
use crate::committer::{Clock, CommitterHandle};
use crate::live::LiveConfig;

/// The committer publishes at most this often.
pub const PUBLISH_INTERVAL_MS: TimeMs = 250;
/// Totals of a queue with no entries that did nothing for this long are forgotten.
pub const IDLE_EVICTION_MS: TimeMs = 15 * 60 * 1000;

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

/// Samples of the history ring: per-second rates in hundredths (enqueued, acked, nacked,
/// dead-lettered), 16 bytes each.
type Sample = [u32; 4];

/// The history ring: one timeline of tick times, and per queue the samples of its last ticks
/// (aligned to the end of the timeline).
#[derive(Default)]
pub struct History {
    timeline: VecDeque<TimeMs>,
    queues: BTreeMap<Arc<str>, VecDeque<Sample>>,
}

impl History {
    /// Appends one tick: a sample for every queue in `rates`. Queues missing from it leave the
    /// history; the ring keeps the newest `capacity` ticks.
    pub fn push(&mut self, ts_ms: TimeMs, rates: &BTreeMap<Arc<str>, [f64; 4]>, capacity: usize) {
        let capacity = capacity.max(1);
        self.timeline.push_back(ts_ms);
        self.queues.retain(|name, _| rates.contains_key(name));
        for (name, rates) in rates {
            let ring = self.queues.entry(name.clone()).or_default();
            ring.push_back(rates.map(|rate| (rate * 100.0).round().clamp(0.0, u32::MAX as f64) as u32));
            while ring.len() > capacity {
                ring.pop_front();
            }
        }
        while self.timeline.len() > capacity {
            self.timeline.pop_front();
        }
    }

    /// `{<queue>: [{ts_ms, enqueued, acked, nacked, dead_lettered}, ...]}`, oldest first.
    pub fn to_json(&self) -> Value {
        let mut queues = Map::new();
        for (name, ring) in &self.queues {
            let offset = self.timeline.len() - ring.len();
            let samples: Vec<Value> = ring
                .iter()
                .enumerate()
                .map(|(index, sample)| {
                    let rate = |at: usize| Value::from(f64::from(sample[at]) / 100.0);
                    json!({
                        "ts_ms": self.timeline[offset + index],
                        "enqueued": rate(0),
                        "acked": rate(1),
                        "nacked": rate(2),
                        "dead_lettered": rate(3),
                    })
                })
                .collect();
            queues.insert(name.to_string(), Value::Array(samples));
        }
        Value::Object(queues)
    }

    /// The heap bytes the ring holds (capacity, not length: what it really takes).
    pub fn heap_bytes(&self) -> usize {
        let rings: usize =
            self.queues.iter().map(|(name, ring)| ring.capacity() * size_of::<Sample>() + name.len() + 64).sum();
        rings + self.timeline.capacity() * size_of::<TimeMs>()
    }
}

/// The frames and the history, shared by the HTTP handlers.
pub struct StatsHub {
    snapshots: watch::Receiver<Arc<StatsSnapshot>>,
    latest: RwLock<Arc<Value>>,
    history: Mutex<History>,
}

impl StatsHub {
    pub fn new(snapshots: watch::Receiver<Arc<StatsSnapshot>>) -> StatsHub {
        StatsHub { snapshots, latest: RwLock::new(Arc::new(Value::Null)), history: Mutex::default() }
    }

    /// The committer's latest snapshot (at most about 250 ms old).
    pub fn snapshot(&self) -> Arc<StatsSnapshot> {
        self.snapshots.borrow().clone()
    }

    /// The latest frame.
    pub fn frame(&self) -> Arc<Value> {
        self.latest.read().expect("stats frame lock").clone()
    }

    pub fn history_json(&self) -> Value {
        self.history.lock().expect("stats history lock").to_json()
    }
}

/// What the hub remembers between ticks to compute rates.
struct Ticker {
    seq: u64,
    previous: BTreeMap<Arc<str>, QueueTotals>,
    previous_ms: TimeMs,
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
    let mut ticker = Ticker { seq: 0, previous: BTreeMap::new(), previous_ms: clock.now_ms() };
    let tick = move |ticker: &mut Ticker| {
        let declared: Vec<String> = live.get().config.queues.iter().map(|queue| queue.name.clone()).collect();
        let capacity = (live.get().config.admin.stats_history_ms / 1000) as usize;
        let snapshot = hub.snapshot();
        let now_ms = clock.now_ms();
        let (frame, rates) = ticker.frame(now_ms, &snapshot, &declared, committer.queued());
        hub.history.lock().expect("stats history lock").push(now_ms, &rates, capacity);
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
    /// The next frame, and each listed queue's rates for the history.
    fn frame(
        &mut self,
        now_ms: TimeMs,
        snapshot: &StatsSnapshot,
        declared: &[String],
        command_queue_len: usize,
    ) -> (Value, BTreeMap<Arc<str>, [f64; 4]>) {
        let seconds = ((now_ms - self.previous_ms).max(1) as f64) / 1000.0;
        let mut names: BTreeSet<Arc<str>> = snapshot.queues.keys().cloned().collect();
        names.extend(declared.iter().map(|name| Arc::from(name.as_str())));
        let mut queues = Map::new();
        let mut rates = BTreeMap::new();
        let mut current = BTreeMap::new();
        for name in names {
            let stats = snapshot.queue(&name);
            let before = self.previous.get(&name).copied().unwrap_or(stats.totals);
            let rate = |now: u64, then: u64| (now.saturating_sub(then) as f64 / seconds * 100.0).round() / 100.0;
            let totals = stats.totals;
            let queue_rates = [
                rate(totals.enqueued, before.enqueued),
                rate(totals.acked, before.acked),
                rate(totals.nacked, before.nacked),
                rate(totals.dead_lettered, before.dead_lettered),
            ];
            let paused = stats.paused.is_some() || snapshot.all_paused.is_some();
            queues.insert(name.to_string(), queue_json(&stats, &queue_rates, paused));
            rates.insert(name.clone(), queue_rates);
            current.insert(name, totals);
        }
        self.seq += 1;
        self.previous = current;
        self.previous_ms = now_ms;
        let frame = json!({
            "seq": self.seq,
            "ts_ms": now_ms,
            "server": { "command_queue_len": command_queue_len },
            "queues": queues,
        });
        (frame, rates)
    }
}

fn queue_json(stats: &QueueStats, rates: &[f64; 4], paused: bool) -> Value {
    let (depths, totals) = (&stats.depths, &stats.totals);
    json!({
        "paused": paused,
        "ready": depths.ready,
        "scheduled": depths.scheduled,
        "inflight": depths.inflight,
        "dead_lettered": depths.dead_letter,
        "held_by_key_limit": stats.held_by_key,
        "totals": {
            "enqueued": totals.enqueued,
            "reserved": totals.reserved,
            "acked": totals.acked,
            "nacked": totals.nacked,
            "dead_lettered": totals.dead_lettered,
        },
        "rates": {
            "enqueued": rates[0],
            "acked": rates[1],
            "nacked": rates[2],
            "dead_lettered": rates[3],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rates_for(queues: usize, rate: f64) -> BTreeMap<Arc<str>, [f64; 4]> {
        (0..queues).map(|n| (Arc::from(format!("queue-{n:03}").as_str()), [rate, rate / 2.0, 0.25, 0.0])).collect()
    }

    #[test]
    fn an_hour_of_history_for_a_hundred_queues_takes_under_ten_megabytes() {
        let mut history = History::default();
        let rates = rates_for(100, 1234.56);
        for tick in 0..3_600 + 50 {
            history.push(tick * 1000, &rates, 3_600);
        }
        let bytes = history.heap_bytes();
        assert!(bytes < 10 << 20, "the history takes {bytes} bytes");
        assert_eq!(history.timeline.len(), 3_600);
        assert!(history.queues.values().all(|ring| ring.len() == 3_600));
    }

    #[test]
    fn samples_keep_two_decimals_and_line_up_with_the_timeline() {
        let mut history = History::default();
        history.push(1_000, &rates_for(1, 1.23456), 10);
        let mut two = rates_for(2, 7.0);
        history.push(2_000, &two, 10);
        two.remove("queue-000");
        history.push(3_000, &two, 10);
        let json = history.to_json();
        assert!(json.get("queue-000").is_none(), "a queue no longer listed leaves the history");
        let samples = json["queue-001"].as_array().unwrap();
        assert_eq!(samples.len(), 2);
        assert_eq!(samples[0]["ts_ms"], 2_000);
        assert_eq!(samples[1]["ts_ms"], 3_000);
        assert_eq!(samples[1]["enqueued"], 7.0);
        assert_eq!(samples[1]["acked"], 3.5);
        assert_eq!(samples[1]["nacked"], 0.25);
    }

    #[test]
    fn the_ring_keeps_only_its_capacity() {
        let mut history = History::default();
        for tick in 0..10 {
            history.push(tick, &rates_for(1, 1.0), 3);
        }
        let json = history.to_json();
        let times: Vec<i64> =
            json["queue-000"].as_array().unwrap().iter().map(|s| s["ts_ms"].as_i64().unwrap()).collect();
        assert_eq!(times, [7, 8, 9]);
    }
}
