//! Compiles the wire contract with protox (pure Rust, no protoc) into a tonic client.
//!
//! The proto is the workspace's `proto/sepp/v1/queue.proto`; a copy vendored into the crate
//! directory (`proto/`) wins when present, so a packaged crate builds on its own.
use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = if Path::new("proto/sepp/v1/queue.proto").exists() {
        "proto"
    } else {
        "../../proto"
    };
    let file = format!("{root}/sepp/v1/queue.proto");
    println!("cargo:rerun-if-changed={file}");
    let descriptors = protox::compile([file.as_str()], [root])?;
    tonic_prost_build::configure()
        .build_server(false)
        .build_client(true)
        .compile_fds(descriptors)?;
    Ok(())
}
