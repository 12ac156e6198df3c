//! Reading the log back: replaying a segment (with the torn-tail rule) and a checkpoint.
//!
//! Only a frame whose length or checksum is wrong can be a torn write, and only at the end of
//! the last segment. A frame whose checksum matches but whose records do not decode was written
//! whole: it is refused wherever it is, and the file is left as it was.

use std::fs::{self, File};
use std::io::{self, Read as _};
use std::path::Path;

use sepp_core::Record;

use super::files::io_error;
use super::{CHECKPOINT_MAGIC, OpenError, SEGMENT_MAGIC, TruncatedTail};
use crate::codec::Source;
use crate::frame::{self, Read};

/// Replays one segment. Returns the records applied, the length of its valid prefix, and the
/// tail that was cut (only ever in the last segment).
pub(super) fn replay_segment(
    path: &Path,
    file: u32,
    last: bool,
    apply: &mut impl FnMut(&Record),
) -> Result<(u64, u64, Option<TruncatedTail>), OpenError> {
    let bytes = fs::read(path).map_err(io_error(path))?;
    let corrupt =
        |offset: usize, reason| OpenError::Corrupt { file: path.to_path_buf(), offset: offset as u64, reason };
    if bytes.len() < SEGMENT_MAGIC.len() {
        return if last && SEGMENT_MAGIC.starts_with(&bytes) {
            Ok((0, 0, None))
        } else {
            Err(corrupt(0, "segment header is missing"))
        };
    }
    if &bytes[..SEGMENT_MAGIC.len()] != SEGMENT_MAGIC {
        return Err(corrupt(0, "not a sepp log segment"));
    }
    let mut at = SEGMENT_MAGIC.len();
    let mut records = 0;
    loop {
        let problem = match frame::read(&bytes[at..], Some(Source { file, offset: at as u64 })) {
            Read::Frame(frame_records, used) => {
                for record in &frame_records {
                    apply(record);
                }
                records += frame_records.len() as u64;
                at += used;
                continue;
            }
            Read::End => return Ok((records, at as u64, None)),
            // The preallocated, never written rest of the segment being filled: a clean end.
            _ if last && bytes[at..].iter().all(|byte| *byte == 0) => return Ok((records, at as u64, None)),
            Read::Torn => "the last write was cut short",
            Read::Corrupt(reason) => reason,
            // Written whole, so never a torn write: refused wherever it is.
            Read::Undecodable(reason) => {
                return Err(OpenError::Undecodable { file: path.to_path_buf(), offset: at as u64, reason });
            }
        };
        // A write cut short can only damage the end. Damage followed by an intact frame is
        // corruption of acknowledged data, not a torn tail, and is refused like any other.
        if !last || intact_frame_follows(&bytes, at) {
            return Err(corrupt(at, problem));
        }
        let tail = TruncatedTail {
            file: path.to_path_buf(),
            offset: at as u64,
            bytes_dropped: (bytes.len() - at) as u64,
            reason: problem,
        };
        return Ok((records, at as u64, Some(tail)));
    }
}

/// Whether a valid frame starts right after the (damaged) frame at `at`, judging by its length
/// field.
pub(super) fn intact_frame_follows(bytes: &[u8], at: usize) -> bool {
    let Some(Ok(len)) = bytes[at..].first_chunk().map(frame::frame_len) else { return false };
    let next = at + len;
    next < bytes.len() && matches!(frame::read(&bytes[next..], None), Read::Frame(..))
}

pub(super) fn read_checkpoint(path: &Path, file: u32, apply: &mut impl FnMut(&Record)) -> Result<u64, OpenError> {
    // A checkpoint holds every live payload, so it is read a frame at a time rather than whole:
    // restarting with a large backlog must not need memory for all of it at once.
    let reader = File::open(path).map_err(io_error(path))?;
    let len = reader.metadata().map_err(io_error(path))?.len();
    let mut reader = io::BufReader::with_capacity(1 << 20, reader);
    let corrupt = |offset: u64, reason| OpenError::Corrupt { file: path.to_path_buf(), offset, reason };
    let mut magic = [0; CHECKPOINT_MAGIC.len()];
    if len < magic.len() as u64 || reader.read_exact(&mut magic).is_err() || &magic != CHECKPOINT_MAGIC {
        return Err(corrupt(0, "not a sepp checkpoint"));
    }
    let mut at = CHECKPOINT_MAGIC.len() as u64;
    let mut records = 0;
    let mut frame_bytes = Vec::new();
    loop {
        let remaining = len - at;
        if remaining < frame::HEADER_BYTES as u64 {
            return Err(corrupt(at, "checkpoint ends before its end mark"));
        }
        let mut header = [0; frame::HEADER_BYTES];
        reader.read_exact(&mut header).map_err(io_error(path))?;
        let frame_len = frame::frame_len(&header).map_err(|reason| corrupt(at, reason))?;
        if remaining < frame_len as u64 {
            return Err(corrupt(at, "checkpoint ends before its end mark"));
        }
        frame_bytes.clear();
        frame_bytes.extend_from_slice(&header);
        frame_bytes.resize(frame_len, 0);
        reader.read_exact(&mut frame_bytes[frame::HEADER_BYTES..]).map_err(io_error(path))?;
        match frame::read(&frame_bytes, Some(Source { file, offset: at })) {
            Read::Frame(frame_records, used) => {
                at += used as u64;
                if frame_records.is_empty() {
                    return if at == len { Ok(records) } else { Err(corrupt(at, "bytes after the end mark")) };
                }
                for record in &frame_records {
                    apply(record);
                }
                records += frame_records.len() as u64;
            }
            Read::End | Read::Torn => return Err(corrupt(at, "checkpoint ends before its end mark")),
            Read::Corrupt(reason) => return Err(corrupt(at, reason)),
            Read::Undecodable(reason) => {
                return Err(OpenError::Undecodable { file: path.to_path_buf(), offset: at, reason });
            }
        }
    }
}
