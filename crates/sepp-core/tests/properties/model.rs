//! What docs/protocol.md says the queue holds, kept the simplest way: plain maps scanned in full.
//! Each operation returns what the state machine must return.

use std::cmp::Reverse;
use std::collections::BTreeMap;

use sepp_core::retry::retry_delay_ms;
use sepp_core::validate::{NackStrategy, ReservePlan};
use sepp_core::{
    DeadLetterCause, Depths, Enqueued, JobId, JobState, LeaseError, Nacked, NewJob, Policy, Rejection, StorageRules,
    SweepReport, TimeMs,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Ready,
    Scheduled { due_ms: TimeMs },
    Inflight { deadline_ms: TimeMs },
}

#[derive(Clone, Debug)]
pub struct ModelJob {
    pub queue: String,
    pub priority: u8,
    pub seq: u64,
    pub max_attempts: u32,
    pub attempt: u32,
    pub place: Place,
}

impl ModelJob {
    pub fn state(&self) -> JobState {
        let attempt = self.attempt;
        match self.place {
            Place::Ready => JobState::Ready { attempt },
            Place::Scheduled { due_ms } => JobState::Scheduled { attempt, due_ms },
            Place::Inflight { deadline_ms } => JobState::Inflight { attempt, lease_deadline_ms: deadline_ms },
        }
    }

    /// Where the job sorts among the ready jobs of its queue (docs/protocol.md#ordering).
    pub fn ready_key(&self) -> (Reverse<u8>, u64) {
        (Reverse(self.priority), self.seq)
    }
}

#[derive(Clone, Debug)]
pub struct ModelDead {
    pub queue: String,
    pub failed_at_ms: TimeMs,
    pub cause: DeadLetterCause,
    pub final_attempt: u32,
    pub last_reason: Option<String>,
}

/// What docs/protocol.md says the queue holds. Ordered maps keep every run reproducible.
pub struct Model {
    pub jobs: BTreeMap<JobId, ModelJob>,
    pub dedup: BTreeMap<(String, String), (JobId, TimeMs)>,
    pub dead: BTreeMap<JobId, ModelDead>,
    pub next_seq: u64,
    pub rules: StorageRules,
    /// Jobs that became ready during the current step.
    pub became_ready: usize,
}

impl Model {
    pub fn new(rules: StorageRules) -> Self {
        Model {
            jobs: BTreeMap::new(),
            dedup: BTreeMap::new(),
            dead: BTreeMap::new(),
            next_seq: 1,
            rules,
            became_ready: 0,
        }
    }

    pub fn live_depth(&self, queue: &str) -> u64 {
        self.jobs.values().filter(|job| job.queue == queue).count() as u64
    }

    pub fn depths(&self, queue: &str) -> Depths {
        let mut depths = Depths::default();
        for job in self.jobs.values().filter(|job| job.queue == queue) {
            match job.place {
                Place::Ready => depths.ready += 1,
                Place::Scheduled { .. } => depths.scheduled += 1,
                Place::Inflight { .. } => depths.inflight += 1,
            }
        }
        depths.dead_letter = self.dead.values().filter(|dead| dead.queue == queue).count() as u64;
        depths
    }

    pub fn dedup_hit(&self, queue: &str, key: Option<&str>, now_ms: TimeMs) -> Option<JobId> {
        let (job_id, deadline_ms) = self.dedup.get(&(queue.to_string(), key?.to_string()))?;
        (*deadline_ms > now_ms).then_some(*job_id)
    }

    pub fn insert(&mut self, policy: &Policy, now_ms: TimeMs, job_id: JobId, new: &NewJob) -> Enqueued {
        let limits = policy.queue(&new.queue);
        let place = match new.scheduled_at_ms {
            Some(due_ms) if due_ms > now_ms => Place::Scheduled { due_ms },
            _ => {
                self.became_ready += 1;
                Place::Ready
            }
        };
        self.jobs.insert(
            job_id,
            ModelJob {
                queue: new.queue.clone(),
                priority: new.priority.map_or(limits.default_priority, |priority| priority as u8),
                seq: self.next_seq,
                max_attempts: new.max_attempts.unwrap_or(limits.default_max_attempts).min(limits.max_attempts_ceiling),
                attempt: 1,
                place,
            },
        );
        self.next_seq += 1;
        if let Some(key) = &new.idempotency_key {
            let deadline_ms = now_ms.saturating_add(limits.dedup_window_ms as TimeMs);
            self.dedup.insert((new.queue.clone(), key.clone()), (job_id, deadline_ms));
        }
        Enqueued { job_id, deduplicated: false }
    }

    pub fn enqueue(
        &mut self,
        policy: &Policy,
        now_ms: TimeMs,
        job_id: JobId,
        new: &NewJob,
    ) -> Result<Enqueued, Rejection> {
        if let Some(original) = self.dedup_hit(&new.queue, new.idempotency_key.as_deref(), now_ms) {
            return Ok(Enqueued { job_id: original, deduplicated: true });
        }
        if let Some(limit) = policy.queue(&new.queue).max_queue_depth
            && self.live_depth(&new.queue) >= limit
        {
            return Err(Rejection::QueueFull { queue: new.queue.clone(), limit });
        }
        Ok(self.insert(policy, now_ms, job_id, new))
    }

    pub fn enqueue_atomic(
        &mut self,
        policy: &Policy,
        now_ms: TimeMs,
        jobs: &[(JobId, NewJob)],
    ) -> Result<Vec<Enqueued>, Vec<(u32, Rejection)>> {
        let mut rejections = Vec::new();
        for (index, (_, new)) in jobs.iter().enumerate() {
            let Some(limit) = policy.queue(&new.queue).max_queue_depth else {
                continue;
            };
            let in_batch = jobs.iter().filter(|(_, other)| other.queue == new.queue).count() as u64;
            if self.live_depth(&new.queue) + in_batch > limit {
                let rejection = Rejection::QueueFull { queue: new.queue.clone(), limit };
                rejections.push((index as u32, rejection));
            }
        }
        if !rejections.is_empty() {
            return Err(rejections);
        }
        Ok(jobs
            .iter()
            .map(|(job_id, new)| match self.dedup_hit(&new.queue, new.idempotency_key.as_deref(), now_ms) {
                Some(original) => Enqueued { job_id: original, deduplicated: true },
                None => self.insert(policy, now_ms, *job_id, new),
            })
            .collect())
    }

    /// The jobs a reserve claims, with their attempts.
    pub fn reserve(&mut self, now_ms: TimeMs, plan: &ReservePlan) -> Vec<(JobId, u32)> {
        let deadline_ms = now_ms + plan.lease_ms as TimeMs;
        let mut taken = Vec::new();
        for queue in &plan.queues {
            while taken.len() < plan.max_jobs as usize {
                let next = self
                    .jobs
                    .iter()
                    .filter(|(_, job)| job.queue == *queue && job.place == Place::Ready)
                    .min_by_key(|(_, job)| job.ready_key())
                    .map(|(job_id, _)| *job_id);
                let Some(job_id) = next else {
                    break;
                };
                let job = self.jobs.get_mut(&job_id).unwrap();
                job.place = Place::Inflight { deadline_ms };
                taken.push((job_id, job.attempt));
            }
        }
        taken
    }

    pub fn leased(&self, job_id: JobId, attempt: u32) -> Result<&ModelJob, LeaseError> {
        match self.jobs.get(&job_id) {
            Some(job) if matches!(job.place, Place::Inflight { .. }) => {
                if job.attempt == attempt {
                    Ok(job)
                } else {
                    Err(LeaseError::AttemptMismatch)
                }
            }
            _ => Err(LeaseError::NotFound),
        }
    }

    pub fn ack(&mut self, job_id: JobId, attempt: u32) -> Result<(), LeaseError> {
        self.leased(job_id, attempt)?;
        self.jobs.remove(&job_id);
        Ok(())
    }

    pub fn kill(&mut self, now_ms: TimeMs, job_id: JobId, cause: DeadLetterCause, last_reason: Option<String>) {
        let job = self.jobs.remove(&job_id).unwrap();
        if self.rules.dead_letter_retention_ms > 0 {
            let dead =
                ModelDead { queue: job.queue, failed_at_ms: now_ms, cause, final_attempt: job.attempt, last_reason };
            self.dead.insert(job_id, dead);
        }
    }

    pub fn nack(
        &mut self,
        policy: &Policy,
        now_ms: TimeMs,
        job_id: JobId,
        attempt: u32,
        strategy: NackStrategy,
        reason: Option<String>,
    ) -> Result<Nacked, LeaseError> {
        let job = self.leased(job_id, attempt)?;
        let cause = match strategy {
            NackStrategy::DeadLetter => Some(DeadLetterCause::Rejected),
            _ if attempt >= job.max_attempts => Some(DeadLetterCause::AttemptsExhausted),
            _ => None,
        };
        if let Some(cause) = cause {
            self.kill(now_ms, job_id, cause, reason);
            return Ok(Nacked { dead_lettered: true, retry_delay_ms: 0 });
        }
        let limits = policy.queue(&job.queue);
        let delay_ms = match strategy {
            NackStrategy::Delay { delay_ms } => delay_ms.min(limits.max_schedule_horizon_ms),
            _ => retry_delay_ms(limits, &job_id, attempt),
        };
        let job = self.jobs.get_mut(&job_id).unwrap();
        job.attempt += 1;
        job.place = if delay_ms > 0 {
            Place::Scheduled { due_ms: now_ms + delay_ms as TimeMs }
        } else {
            self.became_ready += 1;
            Place::Ready
        };
        Ok(Nacked { dead_lettered: false, retry_delay_ms: delay_ms })
    }

    pub fn extend(
        &mut self,
        policy: &Policy,
        now_ms: TimeMs,
        job_id: JobId,
        attempt: u32,
        lease_ms: u64,
    ) -> Result<TimeMs, LeaseError> {
        let job = self.leased(job_id, attempt)?;
        let cap_ms = policy.queue(&job.queue).max_lease_duration_ms;
        let deadline_ms = now_ms + lease_ms.min(cap_ms).max(1) as TimeMs;
        self.jobs.get_mut(&job_id).unwrap().place = Place::Inflight { deadline_ms };
        Ok(deadline_ms)
    }

    pub fn sweep(&mut self, now_ms: TimeMs) -> SweepReport {
        let limit = self.rules.sweep_limit.max(1);
        let mut report = SweepReport::default();

        let mut due: Vec<(TimeMs, u64, JobId)> = self
            .jobs
            .iter()
            .filter_map(|(job_id, job)| match job.place {
                Place::Scheduled { due_ms } if due_ms <= now_ms => Some((due_ms, job.seq, *job_id)),
                _ => None,
            })
            .collect();
        due.sort();
        due.truncate(limit);
        for (_, _, job_id) in due {
            self.jobs.get_mut(&job_id).unwrap().place = Place::Ready;
            self.became_ready += 1;
            report.promoted.push(job_id);
        }

        // Leases end in deadline order, ties in acceptance order.
        let mut expired: Vec<(TimeMs, u64, JobId)> = self
            .jobs
            .iter()
            .filter_map(|(job_id, job)| match job.place {
                Place::Inflight { deadline_ms } if deadline_ms <= now_ms => Some((deadline_ms, job.seq, *job_id)),
                _ => None,
            })
            .collect();
        expired.sort();
        expired.truncate(limit);
        for (_, _, job_id) in expired {
            let job = self.jobs.get_mut(&job_id).unwrap();
            if job.attempt >= job.max_attempts {
                self.kill(now_ms, job_id, DeadLetterCause::LeaseExpired, None);
                report.lease_dead_lettered.push(job_id);
            } else {
                job.attempt += 1;
                job.place = Place::Ready;
                self.became_ready += 1;
                report.redelivered.push(job_id);
            }
        }

        let mut ended: Vec<(TimeMs, String, String)> = self
            .dedup
            .iter()
            .filter(|(_, (_, deadline_ms))| *deadline_ms <= now_ms)
            .map(|((queue, key), (_, deadline_ms))| (*deadline_ms, queue.clone(), key.clone()))
            .collect();
        ended.sort();
        ended.truncate(limit);
        report.dedup_expired = ended.len();
        for (_, queue, key) in ended {
            self.dedup.remove(&(queue, key));
        }

        let retention_ms = self.rules.dead_letter_retention_ms as TimeMs;
        let mut aged: Vec<(TimeMs, String, JobId)> = self
            .dead
            .iter()
            .filter(|(_, dead)| dead.failed_at_ms.saturating_add(retention_ms) <= now_ms)
            .map(|(job_id, dead)| (dead.failed_at_ms, dead.queue.clone(), *job_id))
            .collect();
        aged.sort();
        aged.truncate(limit);
        report.dead_letters_expired = aged.len();
        for (_, _, job_id) in aged {
            self.dead.remove(&job_id);
        }
        report
    }

    pub fn drain(&mut self, queue: Option<&str>, max: u32) -> Vec<(JobId, ModelDead)> {
        let mut oldest: Vec<(TimeMs, String, JobId)> = self
            .dead
            .iter()
            .filter(|(_, dead)| queue.is_none_or(|queue| dead.queue == queue))
            .map(|(job_id, dead)| (dead.failed_at_ms, dead.queue.clone(), *job_id))
            .collect();
        oldest.sort();
        oldest.truncate(max as usize);
        oldest.into_iter().map(|(_, _, job_id)| (job_id, self.dead.remove(&job_id).unwrap())).collect()
    }

    pub fn next_deadline_ms(&self) -> Option<TimeMs> {
        let retention_ms = self.rules.dead_letter_retention_ms as TimeMs;
        let jobs = self.jobs.values().filter_map(|job| match job.place {
            Place::Ready => None,
            Place::Scheduled { due_ms } => Some(due_ms),
            Place::Inflight { deadline_ms } => Some(deadline_ms),
        });
        let keys = self.dedup.values().map(|(_, deadline_ms)| *deadline_ms);
        let dead = self.dead.values().map(|dead| dead.failed_at_ms.saturating_add(retention_ms));
        jobs.chain(keys).chain(dead).min()
    }
}
