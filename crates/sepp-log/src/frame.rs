//! Frames: the unit the log writes, checksums and recovers. One frame holds the records of one
//! committer cycle, so a cycle is on disk entirely or not at all.
//!
//! Layout: `len: u32 LE` (bytes of the body), `crc: u32 LE` (CRC32C of the body), then the body:
//! `count: u32 LE` followed by `count` encoded records (see `codec`).

use sepp_core::Record;

use crate::codec::{self, DecodeError, Placement, Source};

pub const HEADER_BYTES: usize = 8;

/// Frames larger than this are not written by this server, so a larger length is corruption.
pub const MAX_BODY_BYTES: usize = 1 << 30;

/// Appends one frame holding `records` to `out`; large payloads are reported in `placements`
/// with their offset in `out`.
pub fn encode(records: &[Record], out: &mut Vec<u8>, placements: &mut Vec<Placement>) {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER_BYTES]);
    out.extend_from_slice(&(records.len() as u32).to_le_bytes());
    for record in records {
        codec::encode(record, out, placements);
    }
    let body_len = out.len() - start - HEADER_BYTES;
    let crc = crc32c::crc32c(&out[start + HEADER_BYTES..]);
    out[start..start + 4].copy_from_slice(&(body_len as u32).to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// What is at the front of some bytes of a log file.
#[derive(Debug, PartialEq)]
pub enum Read {
    /// A whole, valid frame and the bytes it took.
    Frame(Vec<Record>, usize),
    /// No bytes at all: a clean end.
    End,
    /// A frame that does not fit in the remaining bytes: a write cut short.
    Torn,
    /// A frame whose length or checksum is wrong: damaged bytes, or a write cut short.
    Corrupt(&'static str),
    /// A frame whose checksum matches but whose records do not decode. It was written whole (a
    /// write cut short does not leave a matching checksum), so it is never a torn write: it is
    /// damage the checksum missed, or records of a newer format.
    Undecodable(&'static str),
}

/// The whole length (header and body) of the frame that starts with `header`, or why no frame
/// this server writes can start so.
pub fn frame_len(header: &[u8; HEADER_BYTES]) -> Result<usize, &'static str> {
    let body_len = u32::from_le_bytes(header[0..4].try_into().expect("4 bytes")) as usize;
    if body_len > MAX_BODY_BYTES { Err("frame length out of range") } else { Ok(HEADER_BYTES + body_len) }
}

/// Reads the frame at the front of `bytes`. Never panics, whatever the bytes. With a `source`
/// (the file and the offset of `bytes[0]` in it), large payloads stay in the file.
pub fn read(bytes: &[u8], source: Option<Source>) -> Read {
    if bytes.is_empty() {
        return Read::End;
    }
    let Some(header) = bytes.first_chunk::<HEADER_BYTES>() else {
        return Read::Torn;
    };
    let len = match frame_len(header) {
        Ok(len) => len,
        Err(reason) => return Read::Corrupt(reason),
    };
    let crc = u32::from_le_bytes(header[4..8].try_into().expect("4 bytes"));
    let Some(body) = bytes.get(HEADER_BYTES..len) else {
        return Read::Torn;
    };
    if crc32c::crc32c(body) != crc {
        return Read::Corrupt("checksum mismatch");
    }
    let body_source = source.map(|source| Source { file: source.file, offset: source.offset + HEADER_BYTES as u64 });
    match decode_body(body, body_source) {
        Ok(records) => Read::Frame(records, len),
        Err(DecodeError(reason)) => Read::Undecodable(reason),
    }
}

fn decode_body(body: &[u8], source: Option<Source>) -> Result<Vec<Record>, DecodeError> {
    let count_bytes = body.get(0..4).ok_or(DecodeError("frame body too short"))?;
    let count = u32::from_le_bytes(count_bytes.try_into().expect("4 bytes")) as usize;
    // The count is not trusted for the allocation: the records themselves must be there.
    let mut records = Vec::with_capacity(count.min(body.len()));
    let mut at = 4;
    for _ in 0..count {
        let record_source = source.map(|source| Source { file: source.file, offset: source.offset + at as u64 });
        let (record, used) = codec::decode(&body[at..], record_source)?;
        records.push(record);
        at += used;
    }
    if at != body.len() {
        return Err(DecodeError("trailing bytes after the last record"));
    }
    Ok(records)
}
