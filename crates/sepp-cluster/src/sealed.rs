//! Small files written whole: `magic (8 bytes) | CRC32C of the body: u32 LE | body`, written to
//! a temporary name, synced, renamed over the old file, the directory synced. A reader finds the
//! old file or the new one, never a mix, and knows a damaged one. The Raft state (vote, purge
//! point) and the state machine's current snapshot (its meta and the name of its data file) are
//! kept so.

use std::fs::{self, File};
use std::io;
use std::path::Path;

pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// Replaces `dir/name` with `body` under `magic`, durably.
pub(crate) fn write(dir: &Path, name: &str, magic: &[u8; 8], body: &[u8]) -> io::Result<()> {
    let mut bytes = Vec::with_capacity(12 + body.len());
    bytes.extend_from_slice(magic);
    bytes.extend_from_slice(&crc32c::crc32c(body).to_le_bytes());
    bytes.extend_from_slice(body);
    let temporary = dir.join(format!("{name}.tmp"));
    fs::write(&temporary, &bytes)?;
    File::open(&temporary)?.sync_all()?;
    fs::rename(&temporary, dir.join(name))?;
    sync_dir(dir)
}

/// Why a sealed file could not be read.
pub(crate) enum ReadError {
    Io(io::Error),
    Damaged(&'static str),
}

/// The body of the file at `path` (`None` when there is none), checked against `magic` and its
/// checksum.
pub(crate) fn read(path: &Path, magic: &[u8; 8]) -> Result<Option<Vec<u8>>, ReadError> {
    Ok(read_any(path, &[magic])?.map(|(_, body)| body))
}

/// A file's magic and body.
pub(crate) type Sealed<'m> = (&'m [u8; 8], Vec<u8>);

/// [`read`] of a file that may start with any of `magics`: which one, and the body.
pub(crate) fn read_any<'m>(path: &Path, magics: &[&'m [u8; 8]]) -> Result<Option<Sealed<'m>>, ReadError> {
    let mut bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(ReadError::Io(error)),
    };
    let Some(magic) = magics.iter().find(|magic| bytes.len() >= 12 && bytes[..8] == magic[..]) else {
        return Err(ReadError::Damaged("it does not start as this file must"));
    };
    if crc32c::crc32c(&bytes[12..]) != u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) {
        return Err(ReadError::Damaged("its checksum does not match"));
    }
    Ok(Some((*magic, bytes.split_off(12))))
}
