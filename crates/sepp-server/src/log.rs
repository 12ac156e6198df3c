//! Where the committer hands each cycle's records: the [`Log`] sink.
//!
//! The committer calls [`Log::append`] with every record of a cycle and then [`Log::persist`]
//! once, before it answers any caller of that cycle. The durable segment log implements this
//! trait; [`VolatileLog`] keeps nothing, for a server whose state lives only in memory.

use std::io;

use sepp_core::Record;

pub trait Log: Send {
    /// Adds the records of one cycle, in order.
    fn append(&mut self, records: &[Record]) -> io::Result<()>;
    /// Makes everything appended so far durable, as the persist mode promises.
    fn persist(&mut self) -> io::Result<()>;
}

/// A log that keeps nothing: the state lives in memory and is lost on restart.
#[derive(Debug, Default)]
pub struct VolatileLog {
    records_seen: u64,
}

impl Log for VolatileLog {
    fn append(&mut self, records: &[Record]) -> io::Result<()> {
        self.records_seen += records.len() as u64;
        Ok(())
    }

    fn persist(&mut self) -> io::Result<()> {
        Ok(())
    }
}
