"""A worker for the command line runner:

    SEPP_ADDR=127.0.0.1:50051 python -m sepp.worker examples.cli_worker:make_worker

`make_worker` runs inside the runner's event loop, so it can connect; the runner closes the
client once the worker has stopped (SIGINT or SIGTERM stops it gracefully).
"""

from __future__ import annotations

import os
from datetime import timedelta

from sepp import JobCtx, Payload, SeppClient, Worker


async def make_worker() -> Worker:
    client = await SeppClient.connect(os.environ.get("SEPP_ADDR", "127.0.0.1:50051"))
    worker = Worker(client, ["emails"], timedelta(seconds=30))

    @worker.handler("send_welcome")
    async def send_welcome(payload: Payload | None, ctx: JobCtx) -> None:
        print("processed", ctx.id, flush=True)

    return worker
