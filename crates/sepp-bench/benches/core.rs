//! The ceiling of the core itself: commands applied per second on `sepp_core::State`, with no
//! gRPC, no committer thread and no disk. Each job carries a 256-byte payload, as in the load
//! phases.
//!
//! - `enqueue`: validation plus insertion of single-job enqueues into a fresh state.
//! - `reserve_ack`: reserve(1) then ack, until a queue of ready jobs is empty.
//! - `lifecycle`: enqueue, reserve and ack of one job against a steady backlog of 10,000, and
//!   `lifecycle_with_totals` the same with the admin API's per-queue totals counted.
//! - `lifecycle_1000_keys` and `lifecycle_1000_keys_limited`: the lifecycle with every job
//!   carrying one of 1,000 tenants, without and with a per-key limit (`key_max_in_flight = 1`).
//! - `stats_publish_100_queues`: one stats snapshot for the admin API, over 100 queues.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use sepp_core::validate::{ReservePlan, ReserveRequest, plan_reserve, validate_new_job};
use sepp_core::{JobId, NewJob, Payload, Policy, State, StorageRules};

const QUEUE: &str = "bench";
const JOBS_PER_ITERATION: u64 = 1_000;
const NOW_MS: i64 = 1_700_000_000_000;

fn new_job() -> NewJob {
    NewJob {
        queue: QUEUE.to_string(),
        job_type: "bench".to_string(),
        payload: Some(Payload { data: vec![b'x'; 256], encoding: "application/octet-stream".to_string() }),
        ..NewJob::default()
    }
}

fn fresh_state() -> State {
    State::new(Arc::new(Policy::default()), StorageRules::default())
}

fn reserve_one(policy: &Policy) -> ReservePlan {
    let request = ReserveRequest {
        queues: vec![QUEUE.to_string()],
        wait_timeout_ms: None,
        lease_duration_ms: Some(60_000),
        worker_id: None,
        max_jobs: Some(1),
    };
    plan_reserve(policy, request).expect("a valid reserve")
}

/// Enqueues one job the way the server handles a single-job EnqueueBatch: validate, then apply.
fn enqueue_one(state: &mut State, id: u128, records: &mut Vec<sepp_core::Record>) {
    let job = new_job();
    validate_new_job(state.policy(), &job, NOW_MS).expect("a valid job");
    let outcome = state.enqueue(NOW_MS, vec![(JobId::from_u128(id), job)], records);
    assert!(outcome[0].is_ok());
    records.clear();
}

fn reserve_and_ack(state: &mut State, plan: &ReservePlan, records: &mut Vec<sepp_core::Record>) {
    let delivered = state.reserve(NOW_MS, plan, records);
    let delivery = &delivered[0];
    state.ack(delivery.job.id, delivery.attempt, records).expect("a live lease");
    records.clear();
}

fn filled_state(jobs: u64) -> State {
    let mut state = fresh_state();
    let mut records = Vec::new();
    for id in 0..jobs {
        enqueue_one(&mut state, u128::from(id) + 1, &mut records);
    }
    state
}

fn core(c: &mut Criterion) {
    let mut group = c.benchmark_group("core");
    group.throughput(Throughput::Elements(JOBS_PER_ITERATION));
    group.bench_function("enqueue", |b| {
        b.iter_batched(
            fresh_state,
            |mut state| {
                let mut records = Vec::new();
                for id in 0..JOBS_PER_ITERATION {
                    enqueue_one(&mut state, u128::from(id) + 1, &mut records);
                }
                state
            },
            BatchSize::LargeInput,
        )
    });
    let template = filled_state(JOBS_PER_ITERATION);
    let plan = reserve_one(template.policy());
    group.bench_function("reserve_ack", |b| {
        b.iter_batched(
            || template.clone(),
            |mut state| {
                let mut records = Vec::new();
                for _ in 0..JOBS_PER_ITERATION {
                    reserve_and_ack(&mut state, &plan, &mut records);
                }
                state
            },
            BatchSize::LargeInput,
        )
    });
    group.throughput(Throughput::Elements(1));
    let mut steady = filled_state(10_000);
    let mut next_id = 1_000_000u128;
    let mut records = Vec::new();
    group.bench_function("lifecycle", |b| {
        b.iter(|| {
            next_id += 1;
            enqueue_one(&mut steady, next_id, &mut records);
            reserve_and_ack(&mut steady, &plan, &mut records);
            black_box(&steady);
        })
    });
    // The same with per-queue totals counted, as the server does while its admin listener runs.
    let mut counted = filled_state(10_000);
    counted.count_totals();
    group.bench_function("lifecycle_with_totals", |b| {
        b.iter(|| {
            next_id += 1;
            enqueue_one(&mut counted, next_id, &mut records);
            reserve_and_ack(&mut counted, &plan, &mut records);
            black_box(&counted);
        })
    });
    group.finish();
    keyed_lifecycle(c);
    stats_publish(c);
}

/// The lifecycle over a steady backlog of 10,000 jobs spread over 1,000 tenants, with and
/// without a per-key in-flight limit on the tenant: what the per-key index costs.
fn keyed_lifecycle(c: &mut Criterion) {
    let mut group = c.benchmark_group("core");
    group.throughput(Throughput::Elements(1));
    let tenant_job = |n: u128| {
        let mut job = new_job();
        job.custom.insert("tenant".into(), Some(sepp_core::Primitive::String(format!("t{}", n % 1_000))));
        job
    };
    for (name, limited) in [("lifecycle_1000_keys", false), ("lifecycle_1000_keys_limited", true)] {
        let mut policy = Policy::default();
        let mut limits = policy.defaults.clone();
        if limited {
            limits.key_limit = Some(Arc::new(sepp_core::KeyLimit {
                field: "tenant".into(),
                default: sepp_core::KeyLimits { max_in_flight: Some(1), rate: None },
                overrides: Default::default(),
            }));
        }
        policy.declared.insert(QUEUE.into(), limits);
        let mut state = State::new(Arc::new(policy), StorageRules::default());
        let mut records = Vec::new();
        let enqueue = |state: &mut State, n: u128, records: &mut Vec<sepp_core::Record>| {
            let job = tenant_job(n);
            validate_new_job(state.policy(), &job, NOW_MS).expect("a valid job");
            assert!(state.enqueue(NOW_MS, vec![(JobId::from_u128(n + 1), job)], records)[0].is_ok());
            records.clear();
        };
        for n in 0..10_000u128 {
            enqueue(&mut state, n, &mut records);
        }
        let plan = reserve_one(state.policy());
        let mut next = 1_000_000u128;
        group.bench_function(name, |b| {
            b.iter(|| {
                next += 1;
                enqueue(&mut state, next, &mut records);
                reserve_and_ack(&mut state, &plan, &mut records);
                black_box(&state);
            })
        });
    }
    group.finish();
}

/// One stats snapshot the committer publishes for the admin API (every 250 ms), with 100
/// queues of 100 jobs each.
fn stats_publish(c: &mut Criterion) {
    let mut state = fresh_state();
    state.count_totals();
    let mut records = Vec::new();
    for queue in 0..100u128 {
        let jobs = (0..100u128).map(|n| {
            let job = NewJob { queue: format!("queue-{queue}"), ..new_job() };
            (JobId::from_u128(queue * 1_000 + n + 1), job)
        });
        state.enqueue(NOW_MS, jobs.collect(), &mut records);
    }
    let (sender, _receiver) = tokio::sync::watch::channel(Arc::default());
    let mut publisher = sepp_server::admin::stats::StatsPublisher::new(sender);
    let mut now_ms = NOW_MS;
    c.bench_function("stats_publish_100_queues", |b| {
        b.iter(|| {
            now_ms += 250;
            publisher.after_cycle(now_ms, &mut state);
        })
    });
}

criterion_group!(benches, core);
criterion_main!(benches);
