//! The encoding of one Raft entry, as it is stored in a segment and will be sent between nodes.
//!
//! `index: u64 LE | term: u64 LE | leader node: u64 LE | kind: u8 | body`, where the body is
//! nothing for a blank entry, the frame's bytes for a normal one, and for a membership:
//! `configs: u32`, each `members: u32` then that many `u64` node ids, then `nodes: u32`, each
//! `id: u64 | Raft address length: u32 | Raft address | API address length: u32 | API address`
//! (addresses in UTF-8). All integers little-endian.

use std::collections::{BTreeMap, BTreeSet};

use openraft::{CommittedLeaderId, EntryPayload, Membership};

use crate::{Entry, Frame, LogId, NodeAddr};

const BLANK: u8 = 0;
const NORMAL: u8 = 1;
const MEMBERSHIP: u8 = 2;

/// Why bytes are not an entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub &'static str);

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for DecodeError {}

/// Appends the encoding of `entry` to `out`.
pub fn encode_entry(entry: &Entry, out: &mut Vec<u8>) {
    out.extend_from_slice(&entry.log_id.index.to_le_bytes());
    out.extend_from_slice(&entry.log_id.leader_id.term.to_le_bytes());
    out.extend_from_slice(&entry.log_id.leader_id.node_id.to_le_bytes());
    match &entry.payload {
        EntryPayload::Blank => out.push(BLANK),
        EntryPayload::Normal(frame) => {
            out.push(NORMAL);
            out.extend_from_slice(&frame.0);
        }
        EntryPayload::Membership(membership) => {
            out.push(MEMBERSHIP);
            let configs = membership.get_joint_config();
            put_len(out, configs.len());
            for config in configs {
                put_len(out, config.len());
                for id in config {
                    out.extend_from_slice(&id.to_le_bytes());
                }
            }
            let nodes: Vec<_> = membership.nodes().collect();
            put_len(out, nodes.len());
            for (id, node) in nodes {
                out.extend_from_slice(&id.to_le_bytes());
                for addr in [&node.raft, &node.api] {
                    put_len(out, addr.len());
                    out.extend_from_slice(addr.as_bytes());
                }
            }
        }
    }
}

/// The entry `bytes` encode (all of them).
pub fn decode_entry(bytes: &[u8]) -> Result<Entry, DecodeError> {
    let mut input = Input(bytes);
    let index = input.u64()?;
    let term = input.u64()?;
    let node_id = input.u64()?;
    let log_id = LogId { leader_id: CommittedLeaderId::new(term, node_id), index };
    let payload = match input.u8()? {
        BLANK => EntryPayload::Blank,
        NORMAL => EntryPayload::Normal(Frame(std::mem::take(&mut input.0).to_vec())),
        MEMBERSHIP => {
            let mut configs = Vec::new();
            for _ in 0..input.len()? {
                let mut config = BTreeSet::new();
                for _ in 0..input.len()? {
                    config.insert(input.u64()?);
                }
                configs.push(config);
            }
            let mut nodes = BTreeMap::new();
            for _ in 0..input.len()? {
                let id = input.u64()?;
                let raft = input.text()?;
                let api = input.text()?;
                nodes.insert(id, NodeAddr { raft, api });
            }
            if configs.is_empty() {
                return Err(DecodeError("a membership without a configuration"));
            }
            EntryPayload::Membership(Membership::new(configs, nodes))
        }
        _ => return Err(DecodeError("unknown entry kind")),
    };
    if !input.0.is_empty() {
        return Err(DecodeError("bytes after the entry"));
    }
    Ok(Entry { log_id, payload })
}

fn put_len(out: &mut Vec<u8>, len: usize) {
    out.extend_from_slice(&u32::try_from(len).expect("fewer than 2^32 items").to_le_bytes());
}

struct Input<'a>(&'a [u8]);

impl<'a> Input<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], DecodeError> {
        if self.0.len() < len {
            return Err(DecodeError("the entry ends early"));
        }
        let (taken, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(taken)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }

    /// A length-prefixed UTF-8 string.
    fn text(&mut self) -> Result<String, DecodeError> {
        let len = self.len()?;
        let bytes = self.take(len)?;
        std::str::from_utf8(bytes).map(str::to_owned).map_err(|_| DecodeError("a node address is not UTF-8"))
    }

    /// A count or length; larger than what is left is corruption, not a reason to allocate.
    fn len(&mut self) -> Result<usize, DecodeError> {
        let len = u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")) as usize;
        if len > self.0.len() {
            return Err(DecodeError("a length beyond the entry"));
        }
        Ok(len)
    }
}
