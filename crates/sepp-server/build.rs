//! Compiles the wire contract with protox (pure Rust, no protoc) into tonic server and client code,
//! and has Cargo rebuild the crate when the embedded admin UI bundle changes.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto_root = "../../proto";
    let proto_file = "../../proto/sepp/v1/queue.proto";
    println!("cargo:rerun-if-changed={proto_file}");
    // The admin UI bundle is embedded by `include_dir!`; a rebuilt bundle must rebuild the crate.
    println!("cargo:rerun-if-changed=../../admin-ui/dist");
    let descriptors = protox::compile([proto_file], [proto_root])?;
    tonic_prost_build::configure().build_server(true).build_client(true).compile_fds(descriptors)?;
    Ok(())
}
