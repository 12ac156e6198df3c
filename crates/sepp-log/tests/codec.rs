//! The record codec and frames: every record round-trips, damaged bytes are errors (never
//! panics), and the frame checksum catches bit flips.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use sepp_core::{
    AuditEntry, DeadLetter, DeadLetterCause, Job, JobId, JobState, Payload, Primitive, Record, TraceContext,
};
use sepp_log::codec::{self, DecodeError};
use sepp_log::frame::{self, Read};

use common::{Rng, variant};
use sepp_core::schedule::{Cadence, CatchUp, JobTemplate, Overlap, Schedule, ScheduleSpec};

fn id(n: u128) -> JobId {
    JobId::from_u128(n)
}

/// A job with every optional field set: a payload, a trace context with tracestate, a schedule
/// and a custom value of every type.
fn full_job() -> Arc<Job> {
    let mut custom = BTreeMap::new();
    custom.insert("string".to_string(), Primitive::String("héllo 🦀".to_string()));
    custom.insert("empty".to_string(), Primitive::String(String::new()));
    custom.insert("double".to_string(), Primitive::Double(-1.5e300));
    custom.insert("int".to_string(), Primitive::Int(i64::MIN));
    custom.insert("true".to_string(), Primitive::Bool(true));
    custom.insert("false".to_string(), Primitive::Bool(false));
    Arc::new(Job {
        id: id(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef),
        seq: u64::MAX,
        queue: Arc::from("emails"),
        job_type: Arc::from("send-welcome"),
        payload: Some(common::inline_payload(vec![0, 1, 2, 255, 254], "application/json")),
        priority: 9,
        trace_context: Some(Box::new(TraceContext {
            traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into(),
            tracestate: Some("congo=t61rcWkgMzE".into()),
        })),
        enqueued_at_ms: 1_700_000_000_123,
        max_attempts: u32::MAX,
        custom: custom.into(),
        scheduled_at_ms: Some(1_700_000_060_000),
    })
}

/// A job with every optional field absent.
fn bare_job() -> Arc<Job> {
    Arc::new(Job {
        id: id(1),
        seq: 1,
        queue: Arc::from("q"),
        job_type: Arc::from("t"),
        payload: None,
        priority: 0,
        trace_context: None,
        enqueued_at_ms: -5,
        max_attempts: 1,
        custom: Default::default(),
        scheduled_at_ms: None,
    })
}

/// A job with a trace context but no tracestate, and an empty payload.
fn traced_job() -> Arc<Job> {
    let mut job = (*bare_job()).clone();
    job.id = id(2);
    job.trace_context = Some(Box::new(TraceContext { traceparent: "00-abc-def-00".into(), tracestate: None }));
    job.payload = Some(common::inline_payload(Vec::new(), ""));
    job.custom.insert("only".into(), Primitive::Double(0.0));
    Arc::new(job)
}

const CAUSES: [DeadLetterCause; 5] = [
    DeadLetterCause::AttemptsExhausted,
    DeadLetterCause::Rejected,
    DeadLetterCause::LeaseExpired,
    DeadLetterCause::Admin,
    DeadLetterCause::Cancelled,
];

/// Every record variant, with each optional field both present and absent, every job state and
/// every dead-letter cause.
fn every_record() -> Vec<Record> {
    let mut records = Vec::new();
    for job in [full_job(), bare_job(), traced_job()] {
        records.push(Record::JobAccepted { job: job.clone(), due_ms: None });
        records.push(Record::JobAccepted { job: job.clone(), due_ms: Some(i64::MAX) });
        for state in [
            JobState::Ready { attempt: 1 },
            JobState::Scheduled { attempt: 2, due_ms: i64::MIN },
            JobState::Inflight { attempt: u32::MAX, lease_deadline_ms: 1_700_000_000_000 },
        ] {
            records.push(Record::JobRestored { job: job.clone(), state });
        }
        for cause in CAUSES {
            for last_reason in [None, Some("boom: ünïcode".to_string()), Some(String::new())] {
                records.push(Record::DeadLetterRestored {
                    dead: DeadLetter { job: job.clone(), cause, failed_at_ms: 42, final_attempt: 3, last_reason },
                });
            }
        }
    }
    records.push(Record::DedupBound {
        queue: Arc::from("emails"),
        key: "order-17".into(),
        job_id: id(7),
        deadline_ms: 1_700_086_400_000,
    });
    records.push(Record::DedupBound { queue: Arc::from(""), key: String::new(), job_id: id(0), deadline_ms: 0 });
    records.push(Record::Leased { job_id: id(3), lease_deadline_ms: 1_700_000_030_000 });
    records.push(Record::LeaseExtended { job_id: id(3), lease_deadline_ms: -1 });
    records.push(Record::Acked { job_id: id(u128::MAX) });
    records.push(Record::Retried { job_id: id(4), attempt: 2, due_ms: None });
    records.push(Record::Retried { job_id: id(4), attempt: 3, due_ms: Some(1_700_000_001_000) });
    records.push(Record::Promoted { job_id: id(5) });
    for cause in CAUSES {
        for (last_reason, kept) in [(None, false), (Some("bad input".to_string()), true)] {
            records.push(Record::DeadLettered { job_id: id(6), cause, failed_at_ms: 9, last_reason, kept });
        }
    }
    records.push(Record::DeadLetterRemoved { job_id: id(6) });
    records.push(Record::DedupExpired { queue: Arc::from("emails"), key: "order-17".into() });
    records.push(Record::Purged { job_id: id(8) });
    records.push(Record::DeadLetterRequeued { job_id: id(9), seq: u64::MAX, enqueued_at_ms: -3 });
    records.push(Record::QueueClosed { queue: Arc::from("emails"), until_ms: 1_700_000_030_000 });
    records.push(Record::QueueReopened { queue: Arc::from("") });
    records.push(Record::QueuePaused { queue: Arc::from("emails"), until_ms: Some(1_700_000_060_000) });
    records.push(Record::QueuePaused { queue: Arc::from(""), until_ms: None });
    records.push(Record::QueueResumed { queue: Arc::from("emails") });
    records.push(Record::LeaseCancelled { job_id: id(10), at_ms: 1_700_000_000_500, reason: None });
    records.push(Record::LeaseCancelled { job_id: id(11), at_ms: -7, reason: Some("customer asked".into()) });
    for (cadence, overlap, catch_up, payload, last_job) in [
        (
            Cadence::Cron { expression: "0 9 * * MON-FRI".into(), time_zone: "Europe/Zurich".into() },
            Overlap::Skip,
            CatchUp::Latest,
            Some(Payload { data: vec![0, 1, 255], encoding: "application/octet-stream".into() }),
            Some(id(12)),
        ),
        (Cadence::Every { interval_ms: u64::MAX }, Overlap::Allow, CatchUp::Skip, None, None),
    ] {
        let template = JobTemplate {
            queue: "reports".into(),
            job_type: "daily".into(),
            payload,
            priority: Some(7),
            max_attempts: None,
            custom: [("tenant".to_string(), Primitive::String("acme".into())), ("n".to_string(), Primitive::Int(-1))]
                .into(),
        };
        records.push(Record::ScheduleSet {
            schedule: Box::new(Schedule {
                spec: ScheduleSpec { id: "daily-report".into(), cadence, template, overlap, catch_up },
                anchor_ms: 1_700_000_000_000,
                next_ms: i64::MAX,
                last_slot_ms: Some(-5),
                last_job,
                fired: 42,
            }),
        });
    }
    records.push(Record::ScheduleDeleted { id: "daily-report".into() });
    records.push(Record::SequenceRestored { next_seq: u64::MAX });
    records.push(Record::RateAdvanced { queue: Arc::from("api"), tat_us: -1_700_000_000_000_000 });
    records.push(Record::KeyRateAdvanced { queue: Arc::from("api"), key: Arc::from("acme"), tat_us: i64::MAX });
    records.push(Record::KeyRateForgotten { queue: Arc::from("api"), key: Arc::from("") });
    records.push(Record::ScheduleFired { id: "s".into(), slot_ms: 1, next_ms: 2, job_id: Some(id(13)) });
    records.push(Record::ScheduleFired { id: String::new(), slot_ms: i64::MIN, next_ms: i64::MAX, job_id: None });
    for (actor, details) in [("ana", r#"{"queue":"emails","job_ids":["a"]}"#), ("", "")] {
        records.push(Record::Audited {
            entry: Arc::new(AuditEntry {
                seq: 17,
                ts_ms: 1_700_000_000_000,
                actor: actor.into(),
                role: "operator".into(),
                action: "dead_letters.requeue".into(),
                details: details.into(),
            }),
        });
    }
    records
}

fn encoded(record: &Record) -> Vec<u8> {
    let mut bytes = Vec::new();
    codec::encode(record, &mut bytes, &mut Vec::new());
    bytes
}

fn framed(records: &[Record]) -> Vec<u8> {
    let mut bytes = Vec::new();
    frame::encode(records, &mut bytes, &mut Vec::new());
    bytes
}

fn job_of(record: &Record) -> Option<&Job> {
    match record {
        Record::JobAccepted { job, .. } | Record::JobRestored { job, .. } => Some(job),
        Record::DeadLetterRestored { dead } => Some(&dead.job),
        _ => None,
    }
}

#[test]
fn the_fixture_covers_every_variant_state_cause_and_optional_field() {
    let records = every_record();
    let variants: BTreeSet<_> = records.iter().map(variant).collect();
    assert_eq!(variants.len(), 27, "variants covered: {variants:?}");
    let states: HashSet<_> = records
        .iter()
        .filter_map(|record| match record {
            Record::JobRestored { state, .. } => Some(std::mem::discriminant(state)),
            _ => None,
        })
        .collect();
    assert_eq!(states.len(), 3);
    let causes: BTreeSet<_> = records
        .iter()
        .filter_map(|record| match record {
            Record::DeadLettered { cause, .. } => Some(*cause as u8),
            Record::DeadLetterRestored { dead } => Some(dead.cause as u8),
            _ => None,
        })
        .collect();
    assert_eq!(causes, BTreeSet::from([1, 2, 3, 4, 5]));
    let jobs: Vec<&Job> = records.iter().filter_map(job_of).collect();
    let custom_kinds: HashSet<_> =
        jobs.iter().flat_map(|job| job.custom.values()).map(std::mem::discriminant).collect();
    assert_eq!(custom_kinds.len(), 4);
    assert!(jobs.iter().any(|job| { job.trace_context.as_ref().is_some_and(|trace| trace.tracestate.is_some()) }));
    assert!(jobs.iter().any(|job| { job.trace_context.as_ref().is_some_and(|trace| trace.tracestate.is_none()) }));
    assert!(jobs.iter().any(|job| job.trace_context.is_none()));
    assert!(jobs.iter().any(|job| job.payload.is_some()) && jobs.iter().any(|job| job.payload.is_none()));
    assert!(jobs.iter().any(|job| job.scheduled_at_ms.is_some()));
    assert!(jobs.iter().any(|job| job.scheduled_at_ms.is_none()));
}

#[test]
fn every_record_round_trips_through_the_codec() {
    for record in every_record() {
        let bytes = encoded(&record);
        let (decoded, used) = codec::decode(&bytes, None).unwrap_or_else(|error| panic!("{record:?}: {error}"));
        assert_eq!(decoded, record);
        assert_eq!(used, bytes.len(), "{record:?} left bytes unread");
    }
}

#[test]
fn records_encoded_back_to_back_decode_one_after_another() {
    let records = every_record();
    let mut bytes = Vec::new();
    for record in &records {
        codec::encode(record, &mut bytes, &mut Vec::new());
    }
    let mut at = 0;
    let mut decoded = Vec::new();
    while at < bytes.len() {
        let (record, used) = codec::decode(&bytes[at..], None).expect("valid record");
        decoded.push(record);
        at += used;
    }
    assert_eq!(decoded, records);
}

#[test]
fn every_record_round_trips_through_a_frame_of_its_own_and_a_shared_frame() {
    let records = every_record();
    for record in &records {
        let bytes = framed(std::slice::from_ref(record));
        assert_eq!(frame::read(&bytes, None), Read::Frame(vec![record.clone()], bytes.len()));
    }
    let bytes = framed(&records);
    assert_eq!(frame::read(&bytes, None), Read::Frame(records, bytes.len()));
}

#[test]
fn an_empty_frame_round_trips_as_a_frame_of_no_records() {
    let bytes = framed(&[]);
    assert_eq!(bytes.len(), frame::HEADER_BYTES + 4);
    assert_eq!(frame::read(&bytes, None), Read::Frame(Vec::new(), bytes.len()));
}

#[test]
fn consecutive_frames_are_read_one_at_a_time() {
    let mut rng = Rng::new(11);
    let cycles: Vec<Vec<Record>> = (0..20).map(|_| rng.records(0, 6)).collect();
    let mut bytes = Vec::new();
    for cycle in &cycles {
        frame::encode(cycle, &mut bytes, &mut Vec::new());
    }
    let mut at = 0;
    for cycle in &cycles {
        let Read::Frame(records, used) = frame::read(&bytes[at..], None) else { panic!("frame at {at}") };
        assert_eq!(&records, cycle);
        at += used;
    }
    assert_eq!(frame::read(&bytes[at..], None), Read::End);
}

#[test]
fn a_nan_custom_value_survives_bit_for_bit() {
    let mut job = (*bare_job()).clone();
    let nan = f64::from_bits(0x7ff8_dead_beef_0001);
    job.custom.insert("nan".into(), Primitive::Double(nan));
    let bytes = encoded(&Record::JobAccepted { job: Arc::new(job), due_ms: None });
    let (Record::JobAccepted { job, .. }, _) = codec::decode(&bytes, None).expect("decodes") else {
        panic!("wrong variant");
    };
    let Some(Primitive::Double(value)) = job.custom.get("nan") else { panic!("custom value lost") };
    assert_eq!(value.to_bits(), nan.to_bits());
}

#[test]
fn every_truncated_prefix_of_a_record_is_a_decode_error() {
    for record in every_record() {
        let bytes = encoded(&record);
        for len in 0..bytes.len() {
            assert!(codec::decode(&bytes[..len], None).is_err(), "{record:?} cut to {len} bytes decoded");
        }
    }
}

#[test]
fn every_truncated_prefix_of_a_frame_is_torn_and_the_empty_prefix_is_the_end() {
    let bytes = framed(&every_record());
    assert_eq!(frame::read(&[], None), Read::End);
    for len in 1..bytes.len() {
        assert_eq!(frame::read(&bytes[..len], None), Read::Torn, "frame cut to {len} bytes");
    }
}

#[test]
fn bytes_after_a_frame_are_left_for_the_next_read() {
    let records = every_record();
    let mut bytes = framed(&records);
    let len = bytes.len();
    bytes.extend_from_slice(b"\xffgarbage that is not a frame");
    assert_eq!(frame::read(&bytes, None), Read::Frame(records, len));
}

/// A frame around `body` with a correct length and checksum.
fn frame_around(body: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
    bytes.extend_from_slice(&crc32c::crc32c(body).to_le_bytes());
    bytes.extend_from_slice(body);
    bytes
}

#[test]
fn a_checksummed_body_that_does_not_decode_is_undecodable_not_torn() {
    let acked = encoded(&Record::Acked { job_id: id(9) });
    let mut unknown_tag = 1u32.to_le_bytes().to_vec();
    unknown_tag.push(200);
    let mut trailing = 1u32.to_le_bytes().to_vec();
    trailing.extend_from_slice(&acked);
    trailing.push(0);
    let mut missing_record = 2u32.to_le_bytes().to_vec();
    missing_record.extend_from_slice(&acked);
    let cases: [(&[u8], &str); 5] = [
        (&[], "frame body too short"),
        (&[1, 0], "frame body too short"),
        (&unknown_tag, "unknown record tag"),
        (&trailing, "trailing bytes after the last record"),
        (&missing_record, "record ends early"),
    ];
    for (body, reason) in cases {
        assert_eq!(frame::read(&frame_around(body), None), Read::Undecodable(reason), "body {body:?}");
    }
}

#[test]
fn a_frame_length_beyond_the_maximum_is_corrupt_rather_than_torn() {
    let mut bytes = ((frame::MAX_BODY_BYTES + 1) as u32).to_le_bytes().to_vec();
    bytes.extend_from_slice(&[0; 4]);
    assert_eq!(frame::read(&bytes, None), Read::Corrupt("frame length out of range"));
    bytes[..4].copy_from_slice(&(frame::MAX_BODY_BYTES as u32).to_le_bytes());
    assert_eq!(frame::read(&bytes, None), Read::Torn);
}

#[test]
fn out_of_range_enum_and_flag_bytes_are_decode_errors() {
    let job = encoded(&Record::JobRestored { job: bare_job(), state: JobState::Ready { attempt: 1 } });
    // The job state tag is the byte after the job: 5 bytes before the end (tag + attempt).
    let mut bad_state = job.clone();
    let state_at = bad_state.len() - 5;
    bad_state[state_at] = 3;
    assert_eq!(codec::decode(&bad_state, None), Err(DecodeError("unknown job state")));

    let dead = Record::DeadLettered {
        job_id: id(1),
        cause: DeadLetterCause::Admin,
        failed_at_ms: 0,
        last_reason: None,
        kept: true,
    };
    let bytes = encoded(&dead);
    let mut bad_cause = bytes.clone();
    bad_cause[17] = 0;
    assert_eq!(codec::decode(&bad_cause, None), Err(DecodeError("unknown dead-letter cause")));
    let mut bad_kept = bytes.clone();
    *bad_kept.last_mut().expect("not empty") = 2;
    assert_eq!(codec::decode(&bad_kept, None), Err(DecodeError("invalid boolean")));
    let mut bad_option = bytes;
    let option_at = bad_option.len() - 2;
    bad_option[option_at] = 7;
    assert_eq!(codec::decode(&bad_option, None), Err(DecodeError("invalid option tag")));

    let mut priority_job = (*bare_job()).clone();
    priority_job.priority = 10;
    let bytes = encoded(&Record::JobAccepted { job: Arc::new(priority_job), due_ms: None });
    assert_eq!(codec::decode(&bytes, None), Err(DecodeError("priority above 9")));
}

#[test]
fn invalid_utf8_in_a_string_is_a_decode_error() {
    let record = Record::DedupExpired { queue: Arc::from("ab"), key: "cd".into() };
    let mut bytes = encoded(&record);
    // Tag, then the queue's u32 length, then its bytes.
    bytes[5] = 0xff;
    assert_eq!(codec::decode(&bytes, None), Err(DecodeError("invalid UTF-8")));
}

/// Decoding must not panic; what decodes must encode and decode to itself again.
fn decode_is_total_and_stable(bytes: &[u8]) -> bool {
    match codec::decode(bytes, None) {
        Ok((record, used)) => {
            assert!(used <= bytes.len());
            let again = encoded(&record);
            let (twice, _) = codec::decode(&again, None).expect("a decoded record re-encodes validly");
            assert_eq!(encoded(&twice), again);
            true
        }
        Err(_) => false,
    }
}

#[test]
fn random_bytes_never_panic_the_decoders() {
    let mut rng = Rng::new(0x5e99_0001);
    let mut decoded = 0;
    for _ in 0..6000 {
        let len = rng.below(160) as usize;
        let mut bytes = rng.bytes(len);
        // Half the time, make the tag a real one so decoding goes deeper than the first byte.
        if !bytes.is_empty() && rng.percent(50) {
            bytes[0] = rng.range(1, 12) as u8;
        }
        if decode_is_total_and_stable(&bytes) {
            decoded += 1;
        }
        // A well-formed header over random bytes: the body reaches the decoder only if the
        // checksum matches, so fix it up half the time.
        let mut framed_bytes = frame_around(&bytes);
        if rng.percent(50) {
            framed_bytes[4] ^= 1;
            assert!(!matches!(frame::read(&framed_bytes, None), Read::Frame(..)));
        } else if let Read::Frame(records, used) = frame::read(&framed_bytes, None) {
            assert_eq!(used, framed_bytes.len());
            assert_eq!(frame::read(&framed(&records), None), Read::Frame(records, used));
        }
        let _ = frame::read(&bytes, None);
    }
    // The generator must reach the success path too, or the stability check checks nothing.
    assert!(decoded > 50, "only {decoded} random inputs decoded");
}

/// One random change to `bytes`, and whether it is guaranteed to be caught by a CRC32C (a burst
/// of at most 32 bits, or up to three flipped bits, inside the checksummed bytes).
fn mutate(rng: &mut Rng, bytes: &mut Vec<u8>) -> &'static str {
    match rng.below(6) {
        0 => {
            let at = rng.below(bytes.len() as u64 * 8);
            bytes[(at / 8) as usize] ^= 1 << (at % 8);
            "one bit flipped"
        }
        1 => {
            for _ in 0..rng.range(2, 3) {
                let at = rng.below(bytes.len() as u64 * 8);
                bytes[(at / 8) as usize] ^= 1 << (at % 8);
            }
            "a few bits flipped"
        }
        2 => {
            let at = rng.below(bytes.len() as u64) as usize;
            bytes[at] ^= rng.range(1, 255) as u8;
            "one byte changed"
        }
        3 => {
            let len = rng.below(bytes.len() as u64) as usize;
            bytes.truncate(len);
            "truncated"
        }
        4 => {
            let at = rng.below(bytes.len() as u64 + 1) as usize;
            let len = rng.range(1, 8) as usize;
            let insert = rng.bytes(len);
            bytes.splice(at..at, insert);
            "bytes inserted"
        }
        _ => {
            for _ in 0..rng.range(2, 16) {
                let at = rng.below(bytes.len() as u64) as usize;
                bytes[at] = rng.next_u64() as u8;
            }
            "bytes scrambled"
        }
    }
}

#[test]
fn mutated_frames_are_detected_unless_their_checksum_matches() {
    let mut rng = Rng::new(0x5e99_0002);
    let mut detected = 0;
    for round in 0..4000 {
        let records = rng.records(0, 5);
        let original = framed(&records);
        let mut bytes = original.clone();
        let mutation = mutate(&mut rng, &mut bytes);
        if bytes == original {
            continue;
        }
        match frame::read(&bytes, None) {
            Read::Frame(read, used) => {
                let same = used == original.len() && bytes[..used] == original[..];
                // Only possible when the change is outside the frame (inserted at its very end)
                // or the damaged bytes carry a matching checksum; flips never do.
                assert!(
                    !matches!(mutation, "one bit flipped" | "a few bits flipped" | "one byte changed"),
                    "round {round}: {mutation} was accepted"
                );
                if !same {
                    let body = &bytes[frame::HEADER_BYTES..used];
                    let crc = u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
                    assert_eq!(crc32c::crc32c(body), crc, "round {round}: accepted a frame whose CRC differs");
                    assert_ne!(read, records, "round {round}: changed bytes decoded to the same records");
                } else {
                    assert_eq!(read, records);
                }
            }
            Read::Corrupt(_) | Read::Undecodable(_) | Read::Torn | Read::End => detected += 1,
        }
        // The decoder must survive whatever the body became.
        if bytes.len() > frame::HEADER_BYTES {
            decode_is_total_and_stable(&bytes[frame::HEADER_BYTES..]);
        }
    }
    assert!(detected > 3000, "only {detected} mutations were detected");
}
