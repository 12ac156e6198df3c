//! placeholder docs
#![warn(missing_docs)]

pub mod client;
mod convert;
mod otel;
mod types;
pub mod worker;

/// The generated wire types and client stub of `sepp.v1`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
mod proto {
    tonic::include_proto!("sepp.v1");
}

pub use types::*;
