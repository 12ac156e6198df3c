//! The Consume stream: a worker's credits, pushed leases and settles on one call.

use std::pin::Pin;

use futures_util::Stream;
use tonic::{Request, Response, Status, Streaming};

use crate::proto::v1 as pb;
use crate::service::QueueApi;

/// What a Consume call answers with.
pub type ConsumeStream = Pin<Box<dyn Stream<Item = Result<pb::ConsumeResponse, Status>> + Send>>;

/// Opens a Consume stream (not offered yet: UNIMPLEMENTED).
pub async fn open(
    _api: &QueueApi,
    _request: Request<Streaming<pb::ConsumeRequest>>,
) -> Result<Response<ConsumeStream>, Status> {
    Err(Status::unimplemented("Consume is not offered by this server"))
}
