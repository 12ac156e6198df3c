//! The calls on the wire: one descriptor per RPC of `sepp.v1.QueueService` ([`Rpc`]), and a
//! [`Node`], a channel to one server that sends a call whose message was encoded beforehand.
//!
//! The client encodes each request once and sends those bytes with `tonic::client::Grpc`
//! (instead of a generated stub, which consumes the message): every retry of a call, and every
//! re-send to a cluster's leader, sends the same bytes without copying the message.

use std::marker::PhantomData;

use prost::bytes::{BufMut, Bytes};
use tonic::codec::{BufferSettings, Codec, EncodeBuf, Encoder};
use tonic::codegen::http::uri::PathAndQuery;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{GrpcMethod, Request, Response, Status};
use tonic_prost::{ProstCodec, ProstDecoder};

use super::ApiKeyInterceptor;
use crate::proto as pb;

const SERVICE: &str = "sepp.v1.QueueService";

/// One RPC: its name, path, and request and response types.
pub(crate) struct Rpc<Req, Resp> {
    /// The name in logs, spans and deadline messages (`enqueue`, `get_server_info`, …).
    pub(crate) operation: &'static str,
    method: &'static str,
    path: &'static str,
    types: PhantomData<fn(Req) -> Resp>,
}

impl<Req, Resp> Clone for Rpc<Req, Resp> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<Req, Resp> Copy for Rpc<Req, Resp> {}

macro_rules! rpcs {
    ($($name:ident: $method:literal as $operation:literal, $request:ty => $response:ty;)*) => {
        $(
            pub(crate) const $name: Rpc<$request, $response> = Rpc {
                operation: $operation,
                method: $method,
                path: concat!("/sepp.v1.QueueService/", $method),
                types: PhantomData,
            };
        )*
    };
}

rpcs! {
    ENQUEUE_BATCH: "EnqueueBatch" as "enqueue", pb::EnqueueBatchRequest => pb::EnqueueBatchResponse;
    ENQUEUE_ATOMIC: "EnqueueAtomic" as "enqueue_atomic", pb::EnqueueBatchRequest => pb::EnqueueAtomicResponse;
    RESERVE: "Reserve" as "reserve", pb::ReserveRequest => pb::ReserveResponse;
    ACK: "Ack" as "ack", pb::AckRequest => pb::AckResponse;
    ACK_BATCH: "AckBatch" as "ack", pb::AckBatchRequest => pb::AckBatchResponse;
    NACK: "Nack" as "nack", pb::NackRequest => pb::NackResponse;
    EXTEND: "Extend" as "extend", pb::ExtendRequest => pb::ExtendResponse;
    DRAIN_DEAD_LETTERS: "DrainDeadLetters" as "drain_dead_letters",
        pb::DrainDeadLettersRequest => pb::DrainDeadLettersResponse;
    GET_SERVER_INFO: "GetServerInfo" as "get_server_info", pb::GetServerInfoRequest => pb::GetServerInfoResponse;
    CANCEL_JOB: "CancelJob" as "cancel_job", pb::CancelJobRequest => pb::CancelJobResponse;
    UPSERT_SCHEDULE: "UpsertSchedule" as "upsert_schedule", pb::UpsertScheduleRequest => pb::ScheduleInfo;
    DELETE_SCHEDULE: "DeleteSchedule" as "delete_schedule", pb::DeleteScheduleRequest => pb::DeleteScheduleResponse;
    LIST_SCHEDULES: "ListSchedules" as "list_schedules", pb::ListSchedulesRequest => pb::ListSchedulesResponse;
    PAUSE_QUEUE: "PauseQueue" as "pause_queue", pb::PauseQueueRequest => pb::PauseQueueResponse;
    RESUME_QUEUE: "ResumeQueue" as "resume_queue", pb::ResumeQueueRequest => pb::ResumeQueueResponse;
    LIST_PAUSES: "ListPauses" as "list_pauses", pb::ListPausesRequest => pb::ListPausesResponse;
}

/// A channel to one server, with the API key interceptor and the receive limit.
pub(crate) struct Node {
    /// The `host:port` dialed; `None` for a channel the user built (`from_channel`).
    pub(crate) addr: Option<String>,
    grpc: tonic::client::Grpc<InterceptedService<Channel, ApiKeyInterceptor>>,
}

impl Node {
    pub(crate) fn new(
        addr: Option<String>,
        channel: Channel,
        interceptor: ApiKeyInterceptor,
        max_receive_message_bytes: Option<usize>,
    ) -> Self {
        let mut grpc = tonic::client::Grpc::new(InterceptedService::new(channel, interceptor));
        if let Some(limit) = max_receive_message_bytes {
            grpc = grpc.max_decoding_message_size(limit);
        }
        Self { addr, grpc }
    }

    /// The name of the node in logs.
    pub(crate) fn name(&self) -> &str {
        self.addr.as_deref().unwrap_or("the given channel")
    }

    /// Sends `rpc` with the encoded request `request`.
    pub(crate) async fn unary<Req, Resp>(
        &self,
        rpc: Rpc<Req, Resp>,
        mut request: Request<Bytes>,
    ) -> Result<Response<Resp>, Status>
    where
        Resp: prost::Message + Default + Send + Sync + 'static,
    {
        let mut grpc = self.grpc.clone();
        grpc.ready().await.map_err(|error| Status::unknown(format!("Service was not ready: {error}")))?;
        request.extensions_mut().insert(GrpcMethod::new(SERVICE, rpc.method));
        grpc.unary(request, PathAndQuery::from_static(rpc.path), Encoded::<Resp>(PhantomData)).await
    }
}

impl Node {
    /// Opens a `Consume` stream whose messages (encoded beforehand) come from `requests`.
    pub(crate) async fn consume<S>(
        &self,
        mut request: Request<S>,
    ) -> Result<Response<tonic::Streaming<pb::ConsumeResponse>>, Status>
    where
        S: tonic::codegen::tokio_stream::Stream<Item = Bytes> + Send + 'static,
    {
        let mut grpc = self.grpc.clone();
        grpc.ready().await.map_err(|error| Status::unknown(format!("Service was not ready: {error}")))?;
        request.extensions_mut().insert(GrpcMethod::new(SERVICE, "Consume"));
        let path = PathAndQuery::from_static("/sepp.v1.QueueService/Consume");
        grpc.streaming(request, path, Encoded::<pb::ConsumeResponse>(PhantomData)).await
    }
}

/// A codec that sends a message encoded beforehand and decodes the response with prost.
struct Encoded<Resp>(PhantomData<fn() -> Resp>);

impl<Resp> Codec for Encoded<Resp>
where
    Resp: prost::Message + Default + Send + 'static,
{
    type Encode = Bytes;
    type Decode = Resp;
    type Encoder = Passthrough;
    type Decoder = ProstDecoder<Resp>;

    fn encoder(&mut self) -> Passthrough {
        Passthrough
    }

    fn decoder(&mut self) -> ProstDecoder<Resp> {
        ProstCodec::<(), Resp>::raw_decoder(BufferSettings::default())
    }
}

/// Writes the encoded message as it is.
struct Passthrough;

impl Encoder for Passthrough {
    type Item = Bytes;
    type Error = Status;

    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put_slice(&item);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_rpc_names_its_method_on_the_queue_service() {
        assert_eq!(ENQUEUE_BATCH.path, "/sepp.v1.QueueService/EnqueueBatch");
        assert_eq!(DRAIN_DEAD_LETTERS.path, "/sepp.v1.QueueService/DrainDeadLetters");
        assert_eq!(GET_SERVER_INFO.method, "GetServerInfo");
        assert_eq!(ENQUEUE_BATCH.operation, "enqueue");
    }
}
