//! Compiles the wire contract with protox (pure Rust, no protoc) into the message types; the
//! client sends them with `tonic::client::Grpc` itself (see `src/client/wire.rs`), so no client
//! stub is generated. The crate's tests also get the messages with a server trait
//! (`$OUT_DIR/stub/sepp.v1.rs`), to stand up stub servers; the library does not compile it.
//!
//! The proto is the workspace's `proto/sepp/v1/queue.proto`, reached through the crate's
//! `proto` symlink (`../../proto`), so `cargo package` copies the contract into the packaged
//! crate and it builds on its own. Where the symlink is not one (a checkout without symlink
//! support), the workspace path is used directly.
use std::path::{Path, PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = if Path::new("proto/sepp/v1/queue.proto").exists() { "proto" } else { "../../proto" };
    let file = format!("{root}/sepp/v1/queue.proto");
    println!("cargo:rerun-if-changed={file}");
    let descriptors = protox::compile([file.as_str()], [root])?;
    tonic_prost_build::configure().build_server(false).build_client(false).compile_fds(descriptors.clone())?;
    let stub = PathBuf::from(std::env::var("OUT_DIR")?).join("stub");
    std::fs::create_dir_all(&stub)?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(false)
        .generate_default_stubs(true)
        .out_dir(stub)
        .compile_fds(descriptors)?;
    Ok(())
}
