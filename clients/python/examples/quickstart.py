"""Enqueue one job, then process it with a Worker; Ctrl-C stops the worker gracefully.

SEPP_ADDR=127.0.0.1:50051 python examples/quickstart.py
"""

from __future__ import annotations

import asyncio
import os
import signal
from datetime import timedelta

from sepp import EnqueueRequest, JobCtx, Payload, SeppClient, Worker

ADDR = os.environ.get("SEPP_ADDR", "127.0.0.1:50051")


async def main() -> None:
    async with await SeppClient.connect(ADDR) as client:
        ack = await client.enqueue(
            EnqueueRequest(
                "emails", "send_welcome", payload=Payload(b'{"user": 42}', "application/json")
            )
        )
        print("enqueued job", ack.job_id, flush=True)

        worker = Worker(client, ["emails"], timedelta(seconds=30))

        @worker.handler("send_welcome")
        async def send_welcome(payload: Payload | None, ctx: JobCtx) -> None:
            print("processing job", ctx.id, payload.data if payload else None, flush=True)

        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, worker.shutdown_handle().shutdown)
        await worker.run()
        print("worker stopped", flush=True)


if __name__ == "__main__":
    asyncio.run(main())
