"""Cross-language interop agent for this client (driven by `tests/interop/`).

    python agent.py produce --addr HOST:PORT --queue Q --spec FILE.json
        enqueues every job of FILE.json ({"jobs": [{"job_type", "payload_b64", "encoding",
        "custom", "traceparent"}]}) with its trace context; prints {"job_ids": [...]}
    python agent.py work --addr HOST:PORT --queue Q --count N
        runs a Worker with a catch-all handler until N jobs were handled and acked; prints
        {"jobs": [{"id", "job_type", "payload_b64", "encoding", "custom", "traceparent"}],
         "streamed": true|false}, each job as its handler saw it, and whether the Worker took
        them over the Consume stream (false: with reserve calls)
    python agent.py info --addr HOST:PORT --queue Q
        prints {"features": [...]}, what the server offers beyond the 0.1 protocol
    python agent.py settled --addr HOST:PORT --queue Q --ids ID,ID,...
        prints {"unsettled": [...]}: the ids the server still holds (ready, leased or
        dead-lettered), found by cancelling each (a finished job is NOT_FOUND); needs a server
        with the feature "cancel"

Only the JSON line goes to stdout. Failures go to stderr with exit status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
from datetime import timedelta
from typing import Any

from sepp import (
    EnqueueRequest,
    JobCtx,
    JobNotFoundError,
    Payload,
    Primitive,
    SeppClient,
    TraceContext,
    Worker,
)


def request_from_spec(queue: str, job: dict[str, Any]) -> EnqueueRequest:
    data = base64.b64decode(job.get("payload_b64") or "")
    custom: dict[str, Primitive] = dict(job.get("custom") or {})
    traceparent = job.get("traceparent")
    return EnqueueRequest(
        queue,
        job["job_type"],
        payload=Payload(data, job.get("encoding") or "") if data else None,
        custom=custom,
        trace_context=TraceContext(traceparent) if traceparent else None,
    )


async def produce(client: SeppClient, queue: str, spec_path: str) -> dict[str, Any]:
    with open(spec_path, encoding="utf-8") as spec_file:
        spec = json.load(spec_file)
    job_ids = []
    for job in spec["jobs"]:
        ack = await client.enqueue(request_from_spec(queue, job))
        job_ids.append(ack.job_id)
    return {"job_ids": job_ids}


def seen_job(payload: Payload | None, ctx: JobCtx) -> dict[str, Any]:
    return {
        "id": ctx.id,
        "job_type": ctx.job_type,
        "payload_b64": base64.b64encode(payload.data).decode("ascii") if payload else None,
        "encoding": payload.encoding if payload else None,
        "custom": dict(ctx.custom),
        "traceparent": ctx.trace_context.traceparent if ctx.trace_context else None,
    }


async def work(client: SeppClient, queue: str, count: int) -> dict[str, Any]:
    seen: list[dict[str, Any]] = []
    if count <= 0:
        return {"jobs": seen, "streamed": False}
    worker = Worker(client, [queue], timedelta(seconds=30), wait_timeout=timedelta(seconds=5))
    stop = worker.shutdown_handle()

    @worker.catch_all
    async def record(payload: Payload | None, ctx: JobCtx) -> None:
        seen.append(seen_job(payload, ctx))
        if len(seen) >= count:
            stop.shutdown()

    await worker.run()  # returns once every handled job is acked
    return {"jobs": seen, "streamed": worker.transport == "consume"}


async def settled(client: SeppClient, ids: list[str]) -> dict[str, Any]:
    unsettled = []
    for job_id in ids:
        try:
            await client.cancel(job_id, "interop: this job should have been acked")
        except JobNotFoundError:
            continue  # finished: acked
        except Exception:
            pass  # e.g. dead-lettered
        unsettled.append(job_id)
    return {"unsettled": unsettled}


async def main(argv: list[str]) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description="sepp interop agent (our Python client)")
    parser.add_argument("mode", choices=["produce", "work", "info", "settled"])
    parser.add_argument("--addr", required=True)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--spec")
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--ids", default="")
    args = parser.parse_args(argv)
    if args.mode == "produce" and not args.spec:
        parser.error("produce needs --spec")
    async with await SeppClient.connect(args.addr) as client:
        if args.mode == "produce":
            return await produce(client, args.queue, args.spec)
        if args.mode == "info":
            return {"features": (await client.get_server_info()).features}
        if args.mode == "settled":
            return await settled(client, [i for i in args.ids.split(",") if i])
        return await work(client, args.queue, args.count)


if __name__ == "__main__":
    try:
        answer = asyncio.run(main(sys.argv[1:]))
    except Exception as err:
        print(f"python agent: {type(err).__name__}: {err}", file=sys.stderr)
        sys.exit(1)
    print(json.dumps(answer), flush=True)
