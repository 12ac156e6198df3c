"""Generated protobuf and gRPC stubs of `proto/sepp/v1/queue.proto` (regenerate, never edit)."""
