//! Compiles the node-to-node service with protox (pure Rust, no protoc) into tonic code.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_file = "proto/raft.proto";
    println!("cargo:rerun-if-changed={proto_file}");
    let descriptors = protox::compile([proto_file], ["proto"])?;
    tonic_prost_build::configure().build_server(true).build_client(true).compile_fds(descriptors)?;
    Ok(())
}
