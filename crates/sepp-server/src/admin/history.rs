//! The history behind the dashboard's charts: per-second rates (enqueued, acked, nacked,
//! dead-lettered) in a ring of `admin.stats_history_ms`, within a byte budget of
//! `admin.stats_history_bytes`.
//!
//! The ring always holds two series: `total` (every queue summed) and `other` (the queues that
//! have no series of their own, summed). Each other queue gets a series of its own while it is
//! among the busiest that fit in the budget: a series is charged for a full ring (16 bytes a
//! second) from the moment it is made, so the history never outgrows its budget as its rings
//! fill (they grow as they fill, never past their length).
//! Busiest is the activity score the ticker keeps per queue (jobs per second, averaged over about
//! five minutes). Each tick, free room goes to the busiest queues without a series; a queue
//! without one whose score is more than twice the lowest tracked one (plus 0.1/s) takes that
//! series' place. A series that loses its place, or whose queue is gone, is folded into `other`
//! (added second by second), so at every second `total` = the tracked series + `other`. A queue
//! that gains a series starts it empty: its earlier seconds stay in `other`.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use sepp_admin_types as api;
use sepp_core::TimeMs;

/// Per-second rates: enqueued, acked, nacked, dead-lettered.
pub type Rates = [f64; 4];

/// A sample: rates in hundredths, 16 bytes.
type Sample = [u32; 4];

/// What a series costs beyond its samples and name (map entry, ring header, score).
const SERIES_OVERHEAD: usize = 96;
/// A score must be this many times the lowest tracked one (plus [`SWAP_MARGIN`]) to take its place.
const SWAP_FACTOR: f64 = 2.0;
const SWAP_MARGIN: f64 = 0.1;
/// Series that change hands in one tick, at most (each fold costs a pass over a ring).
const MAX_SWAPS_PER_TICK: usize = 64;
/// Series answers are cut down to this many points (averaged over equal spans of seconds).
pub const MAX_POINTS: usize = 3_600;

/// One queue's input to a tick.
pub struct QueueRates {
    pub name: Arc<str>,
    pub rates: Rates,
    /// Activity (jobs per second, smoothed): the busiest have series of their own.
    pub score: f64,
}

struct Series {
    ring: VecDeque<Sample>,
    score: f64,
    /// The last tick that listed the queue.
    tick: u64,
}

/// The history ring. See the module documentation.
#[derive(Default)]
pub struct History {
    timeline: VecDeque<TimeMs>,
    total: VecDeque<Sample>,
    other: VecDeque<Sample>,
    queues: HashMap<Arc<str>, Series>,
    /// Queues of the last tick without a series of their own.
    folded: usize,
    budget_bytes: usize,
    capacity: usize,
    ticks: u64,
}

fn sample(rates: &Rates) -> Sample {
    rates.map(|rate| (rate * 100.0).round().clamp(0.0, u32::MAX as f64) as u32)
}

fn add(into: &mut Sample, from: &Sample) {
    for (a, b) in into.iter_mut().zip(from) {
        *a = a.saturating_add(*b);
    }
}

fn series_cost(name: &str, capacity: usize) -> usize {
    capacity * size_of::<Sample>() + name.len() + SERIES_OVERHEAD
}

/// Pushes onto a ring that may hold `capacity` samples, growing it no further than that.
fn push_capped<T>(ring: &mut VecDeque<T>, value: T, capacity: usize) {
    while ring.len() >= capacity {
        ring.pop_front();
    }
    if ring.len() == ring.capacity() {
        ring.reserve_exact(ring.len().clamp(1, capacity - ring.len()));
    }
    ring.push_back(value);
}

fn trim<T>(ring: &mut VecDeque<T>, capacity: usize) {
    if ring.len() > capacity {
        ring.drain(..ring.len() - capacity);
        ring.shrink_to(capacity);
    }
}

impl History {
    /// Appends one tick at `ts_ms` for the queues in `queues` (queues missing from it leave,
    /// folded into `other`), keeping the newest `capacity` seconds within `budget_bytes`.
    pub fn push(&mut self, ts_ms: TimeMs, queues: &[QueueRates], capacity: usize, budget_bytes: usize) {
        let capacity = capacity.max(1);
        if capacity < self.capacity {
            self.trim(capacity);
        }
        self.capacity = capacity;
        self.budget_bytes = budget_bytes;

        self.ticks += 1;
        for queue in queues {
            if let Some(series) = self.queues.get_mut(&queue.name) {
                series.score = queue.score;
                series.tick = self.ticks;
            }
        }
        let gone: Vec<Arc<str>> =
            self.queues.iter().filter(|(_, series)| series.tick != self.ticks).map(|(name, _)| name.clone()).collect();
        for name in gone {
            self.fold(&name);
        }
        self.make_room();
        self.admit(queues);

        let mut total = Sample::default();
        let mut other = Sample::default();
        for queue in queues {
            let sample = sample(&queue.rates);
            add(&mut total, &sample);
            match self.queues.get_mut(&queue.name) {
                Some(series) => push_capped(&mut series.ring, sample, capacity),
                None => add(&mut other, &sample),
            }
        }
        self.folded = queues.len() - self.queues.len();
        push_capped(&mut self.timeline, ts_ms, capacity);
        push_capped(&mut self.total, total, capacity);
        push_capped(&mut self.other, other, capacity);
    }

    fn trim(&mut self, capacity: usize) {
        trim(&mut self.timeline, capacity);
        trim(&mut self.total, capacity);
        trim(&mut self.other, capacity);
        for series in self.queues.values_mut() {
            trim(&mut series.ring, capacity);
        }
    }

    /// The bytes the series of queues may take: the budget less the timeline, `total` and `other`.
    fn room_for_queues(&self) -> usize {
        let fixed = self.capacity * (size_of::<TimeMs>() + 2 * size_of::<Sample>());
        self.budget_bytes.saturating_sub(fixed)
    }

    fn charged(&self) -> usize {
        self.queues.keys().map(|name| series_cost(name, self.capacity)).sum()
    }

    /// Folds the least busy series until the others fit (after the budget or ring shrank).
    fn make_room(&mut self) {
        let room = self.room_for_queues();
        let mut charged = self.charged();
        while charged > room {
            let Some(name) = self.least_busy() else { return };
            charged -= series_cost(&name, self.capacity);
            self.fold(&name);
        }
    }

    fn least_busy(&self) -> Option<Arc<str>> {
        self.queues
            .iter()
            .min_by(|a, b| a.1.score.total_cmp(&b.1.score).then_with(|| b.0.cmp(a.0)))
            .map(|(name, _)| name.clone())
    }

    /// Gives series to the busiest queues without one: into free room, then in place of the
    /// least busy series when much busier.
    fn admit(&mut self, queues: &[QueueRates]) {
        let room = self.room_for_queues();
        let mut charged = self.charged();
        let lowest = self.queues.values().map(|series| series.score).min_by(f64::total_cmp);
        let cheapest = series_cost("", self.capacity);
        let best_outside = queues
            .iter()
            .filter(|queue| !self.queues.contains_key(&queue.name))
            .map(|queue| queue.score)
            .max_by(f64::total_cmp);
        let Some(best_outside) = best_outside else { return };
        let free_room = charged + cheapest <= room;
        let beats_lowest = lowest.is_some_and(|lowest| best_outside > lowest * SWAP_FACTOR + SWAP_MARGIN);
        if !free_room && !beats_lowest {
            return;
        }
        let mut candidates: Vec<&QueueRates> =
            queues.iter().filter(|queue| !self.queues.contains_key(&queue.name)).collect();
        candidates.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.name.cmp(&b.name)));
        let mut swaps = 0;
        for candidate in candidates {
            let cost = series_cost(&candidate.name, self.capacity);
            if charged + cost > room {
                let Some(lowest) = self.least_busy() else { break };
                let lowest_score = self.queues[&lowest].score;
                if swaps == MAX_SWAPS_PER_TICK || candidate.score <= lowest_score * SWAP_FACTOR + SWAP_MARGIN {
                    break;
                }
                let freed = series_cost(&lowest, self.capacity);
                if charged - freed + cost > room {
                    break;
                }
                self.fold(&lowest);
                charged -= freed;
                swaps += 1;
            }
            charged += cost;
            let series = Series { ring: VecDeque::new(), score: candidate.score, tick: self.ticks };
            self.queues.insert(candidate.name.clone(), series);
        }
    }

    /// Removes a queue's series, adding its samples into `other`.
    fn fold(&mut self, name: &str) {
        let Some(series) = self.queues.remove(name) else { return };
        let offset = self.other.len() - series.ring.len();
        for (at, sample) in series.ring.iter().enumerate() {
            add(&mut self.other[offset + at], sample);
        }
    }

    /// The heap bytes the history holds now (ring capacities and names).
    pub fn heap_bytes(&self) -> usize {
        let rings: usize = self
            .queues
            .iter()
            .map(|(name, series)| series.ring.capacity() * size_of::<Sample>() + name.len() + SERIES_OVERHEAD)
            .sum();
        rings
            + self.timeline.capacity() * size_of::<TimeMs>()
            + (self.total.capacity() + self.other.capacity()) * size_of::<Sample>()
    }

    /// The samples of `ring` (aligned to the end of the timeline) of the last `seconds`, as at
    /// most [`MAX_POINTS`] `{ts_ms, enqueued, acked, nacked, dead_lettered}`, oldest first; when
    /// there are more seconds, each point is the mean of a span of them, at the span's last second.
    fn series_json(&self, ring: &VecDeque<Sample>, seconds: usize) -> Vec<api::HistorySample> {
        let offset = self.timeline.len() - ring.len();
        let skip = ring.len().saturating_sub(seconds);
        let len = ring.len() - skip;
        let span = len.div_ceil(MAX_POINTS).max(1);
        let mut points = Vec::with_capacity(len.div_ceil(span));
        let mut start = skip;
        while start < ring.len() {
            let end = (start + span).min(ring.len());
            let mut sum = [0u64; 4];
            for sample in ring.range(start..end) {
                for (total, value) in sum.iter_mut().zip(sample) {
                    *total += u64::from(*value);
                }
            }
            let count = (end - start) as f64;
            let rate = |at: usize| (sum[at] as f64 / count).round() / 100.0;
            points.push(api::HistorySample {
                ts_ms: self.timeline[offset + end - 1],
                rates: api::Rates { enqueued: rate(0), acked: rate(1), nacked: rate(2), dead_lettered: rate(3) },
            });
            start = end;
        }
        points
    }

    /// What the overview and the SSE `hello` carry: `{queues: {<name>: [...]}, other: [...],
    /// total: [...]}` with the `busiest` busiest series and `other` over the last `seconds`, and
    /// `total` over the whole ring.
    pub fn summary_json(&self, busiest: usize, seconds: usize) -> api::History {
        let mut tracked: Vec<(&Arc<str>, &Series)> = self.queues.iter().collect();
        tracked.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then_with(|| a.0.cmp(b.0)));
        let queues = tracked
            .into_iter()
            .take(busiest)
            .map(|(name, series)| (name.to_string(), self.series_json(&series.ring, seconds)))
            .collect();
        api::History {
            queues,
            other: self.series_json(&self.other, seconds),
            total: self.series_json(&self.total, usize::MAX),
        }
    }

    /// `{budget_bytes, bytes, seconds, queues_tracked, queues_folded}`.
    pub fn info_json(&self) -> api::HistoryInfo {
        api::HistoryInfo {
            budget_bytes: self.budget_bytes as u64,
            bytes: self.heap_bytes() as u64,
            seconds: self.capacity as u64,
            queues_tracked: self.queues.len() as u64,
            queues_folded: self.folded as u64,
        }
    }

    /// One queue's series over the whole ring, or `None` when it has none (it is folded into
    /// `other`, or unknown).
    pub fn queue_json(&self, name: &str) -> Option<Vec<api::HistorySample>> {
        self.queues.get(name).map(|series| self.series_json(&series.ring, usize::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    struct Input {
        names: Vec<Arc<str>>,
        rates: Vec<Rates>,
        scores: Vec<f64>,
    }

    impl Input {
        fn new(count: usize) -> Input {
            Input {
                names: (0..count).map(|n| Arc::from(format!("queue-{n:05}").as_str())).collect(),
                rates: vec![[1.0, 0.5, 0.25, 0.0]; count],
                scores: vec![0.0; count],
            }
        }

        fn queues(&self) -> Vec<QueueRates> {
            (0..self.names.len())
                .map(|at| QueueRates { name: self.names[at].clone(), rates: self.rates[at], score: self.scores[at] })
                .collect()
        }
    }

    fn push(history: &mut History, now_ms: TimeMs, input: &Input, capacity: usize, budget: usize) {
        history.push(now_ms, &input.queues(), capacity, budget);
    }

    fn enqueued(points: &[api::HistorySample]) -> Vec<f64> {
        points.iter().map(|point| point.rates.enqueued).collect()
    }

    #[test]
    fn two_thousand_queues_for_an_hour_stay_within_the_budget() {
        let mut history = History::default();
        let mut input = Input::new(2_000);
        for (at, score) in input.scores.iter_mut().enumerate() {
            *score = (at % 1_000) as f64;
        }
        for tick in 0..3_600 + 10 {
            push(&mut history, tick * 1_000, &input, 3_600, 16 * MIB);
        }
        let bytes = history.heap_bytes();
        assert!(bytes <= 16 * MIB, "the history takes {bytes} bytes");
        let tracked = history.queues.len();
        assert!(tracked > 250 && tracked < 300, "{tracked} queues have series");
        assert_eq!(history.folded, 2_000 - tracked);
        assert!(history.queues.values().all(|series| series.score >= 850.0), "the busiest are kept");
        assert!(history.queues.values().all(|series| series.ring.len() == 3_600), "the rings are full");
        let info = history.info_json();
        assert_eq!(info.queues_folded as usize, 2_000 - tracked);
        assert_eq!(info.budget_bytes as usize, 16 * MIB);
    }

    #[test]
    fn total_is_the_tracked_series_plus_other_at_every_second() {
        let mut history = History::default();
        let mut input = Input::new(40);
        // A budget of a few series for a 60-second ring.
        let budget = 60 * 40 + 5 * series_cost("queue-00000", 60);
        for tick in 0..200usize {
            for (at, score) in input.scores.iter_mut().enumerate() {
                // The busiest queues change every 50 ticks.
                *score = if (at + tick / 50 * 7) % 40 < 5 { 100.0 } else { 1.0 };
            }
            for (at, rates) in input.rates.iter_mut().enumerate() {
                rates[0] = (at + tick) as f64 / 4.0;
            }
            if tick == 120 {
                input.names.pop();
                input.rates.pop();
                input.scores.pop();
            }
            push(&mut history, tick as TimeMs * 1_000, &input, 60, budget);
            assert!(history.heap_bytes() <= budget, "tick {tick}: {} bytes", history.heap_bytes());
        }
        assert_eq!(history.queues.len(), 5);
        let summary = history.summary_json(usize::MAX, usize::MAX);
        let total = enqueued(&summary.total);
        let mut sum = enqueued(&summary.other);
        assert_eq!((total.len(), sum.len()), (60, 60));
        for points in summary.queues.values() {
            let points = enqueued(points);
            let offset = sum.len() - points.len();
            for (at, value) in points.iter().enumerate() {
                sum[offset + at] += value;
            }
        }
        for (second, (total, sum)) in total.iter().zip(&sum).enumerate() {
            assert!((total - sum).abs() < 0.001, "second {second}: total {total}, tracked and other {sum}");
        }
    }

    #[test]
    fn a_much_busier_queue_takes_the_place_of_the_least_busy_one() {
        let mut history = History::default();
        let mut input = Input::new(4);
        input.scores = vec![5.0, 4.0, 3.0, 0.0];
        let budget = 10 * 40 + 3 * series_cost("queue-00000", 10);
        push(&mut history, 1_000, &input, 10, budget);
        assert!(history.queue_json("queue-00003").is_none());
        input.scores[3] = 6.0; // not more than twice the lowest (3.0) plus 0.1
        push(&mut history, 2_000, &input, 10, budget);
        assert!(history.queue_json("queue-00003").is_none(), "no churn for a small lead");
        input.scores[3] = 6.2;
        push(&mut history, 3_000, &input, 10, budget);
        assert_eq!(enqueued(&history.queue_json("queue-00003").unwrap()), [1.0], "it starts its own series now");
        assert!(history.queue_json("queue-00002").is_none(), "the least busy one was folded");
        // Its seconds are in `other` now, beside queue-00003's earlier seconds.
        assert_eq!(enqueued(&history.summary_json(10, 10).other), [2.0, 2.0, 1.0]);
    }

    #[test]
    fn a_smaller_budget_or_ring_applies_at_the_next_tick() {
        let mut history = History::default();
        let input = Input::new(100);
        for tick in 0..30 {
            push(&mut history, tick * 1_000, &input, 60, 4 * MIB);
        }
        assert_eq!(history.queues.len(), 100);
        let small = 60 * 40 + 10 * series_cost("queue-00000", 60);
        push(&mut history, 30_000, &input, 60, small);
        assert_eq!(history.queues.len(), 10);
        assert!(history.heap_bytes() <= small);
        push(&mut history, 31_000, &input, 20, small);
        assert_eq!(history.timeline.len(), 20);
        assert!(history.queues.values().all(|series| series.ring.len() <= 20));
        assert_eq!(history.queue_json("queue-00000").unwrap().len(), 20);
        assert!(history.queues.len() > 10, "a shorter ring leaves room for more series");
        assert_eq!(history.info_json().seconds, 20);
    }

    #[test]
    fn samples_keep_two_decimals_and_long_series_are_averaged_down() {
        let mut history = History::default();
        let mut input = Input::new(1);
        input.rates[0] = [1.23456, 7.0, 3.5, 0.25];
        push(&mut history, 1_000, &input, 10_000, 16 * MIB);
        let point = &history.queue_json("queue-00000").unwrap()[0];
        assert_eq!((point.ts_ms, point.rates.enqueued), (1_000, 1.23));
        assert_eq!((point.rates.acked, point.rates.dead_lettered), (7.0, 0.25));
        for tick in 2..=7_200 {
            input.rates[0] = [if tick % 2 == 0 { 2.0 } else { 4.0 }, 0.0, 0.0, 0.0];
            push(&mut history, tick * 1_000, &input, 10_000, 16 * MIB);
        }
        let points = history.queue_json("queue-00000").unwrap();
        assert_eq!(points.len(), MAX_POINTS);
        assert_eq!(points[1].rates.enqueued, 3.0, "two seconds averaged");
        assert_eq!(points[1].ts_ms, 4_000, "at the span's last second");
        assert_eq!(points.last().unwrap().ts_ms, 7_200_000);
        let summary = history.summary_json(10, 300);
        assert_eq!(summary.queues["queue-00000"].len(), 300);
        assert_eq!(summary.total.len(), MAX_POINTS);
    }

    #[test]
    fn a_queue_no_longer_listed_leaves_and_its_seconds_stay_in_other() {
        let mut history = History::default();
        let mut input = Input::new(2);
        push(&mut history, 1_000, &input, 10, MIB);
        input.names.remove(0);
        input.rates.remove(0);
        input.scores.remove(0);
        push(&mut history, 2_000, &input, 10, MIB);
        assert!(history.queue_json("queue-00000").is_none());
        let summary = history.summary_json(10, 10);
        assert_eq!(enqueued(&summary.other), [1.0, 0.0]);
        assert_eq!(enqueued(&summary.total), [2.0, 1.0]);
        assert_eq!(enqueued(&summary.queues["queue-00001"]), [1.0, 1.0]);
    }
}
