//! Compiles the wire contract with protox (pure Rust, no protoc) into a tonic client.
//!
//! The proto is the workspace's `proto/sepp/v1/queue.proto`, reached through the crate's
//! `proto` symlink (`../../proto`), so `cargo package` copies the contract into the packaged
//! crate and it builds on its own. Where the symlink is not one (a checkout without symlink
//! support), the workspace path is used directly.
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = if Path::new("proto/sepp/v1/queue.proto").exists() { "proto" } else { "../../proto" };
    let file = format!("{root}/sepp/v1/queue.proto");
    println!("cargo:rerun-if-changed={file}");
    let descriptors = protox::compile([file.as_str()], [root])?;
    tonic_prost_build::configure().build_server(false).build_client(true).compile_fds(descriptors)?;
    Ok(())
}
