//! The retry policy of a queue: how long a nacked job waits before its next attempt (docs/protocol.md#retry-policy).

use crate::limits::{QueueLimits, RetryBackoff};
use crate::types::JobId;

/// The delay before retrying `job_id` after its attempt `nacked_attempt` failed, under the
/// queue's policy. Deterministic per job and attempt: up to a quarter of the capped delay is
/// subtracted as jitter, so retries of many jobs spread out but one job's retry never changes.
pub fn retry_delay_ms(limits: &QueueLimits, job_id: &JobId, nacked_attempt: u32) -> u64 {
    let base_ms = limits.retry_delay_ms;
    if base_ms == 0 {
        return 0;
    }
    let grown_ms = match limits.retry_backoff {
        RetryBackoff::None => base_ms,
        RetryBackoff::Exponential => {
            let doublings = nacked_attempt.saturating_sub(1);
            2u64.checked_pow(doublings).map_or(u64::MAX, |factor| base_ms.saturating_mul(factor))
        }
    };
    let capped_ms = grown_ms.min(limits.retry_delay_max_ms).min(limits.max_schedule_horizon_ms);
    capped_ms - jitter_hash(job_id, nacked_attempt) % (capped_ms / 4 + 1)
}

/// A 64-bit mix (FNV-1a, then a SplitMix finaliser) of the job id and attempt.
fn jitter_hash(job_id: &JobId, attempt: u32) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in job_id.as_bytes().iter().chain(attempt.to_le_bytes().iter()) {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash ^= hash >> 30;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^= hash >> 27;
    hash = hash.wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}
