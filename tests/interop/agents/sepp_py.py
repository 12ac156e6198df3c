"""The interop agent for the official Python client, sepp-py 0.1.0 (see ../README.md).

    python sepp_py.py produce --addr HOST:PORT --queue Q --spec FILE.json   -> {"job_ids": [...]}
    python sepp_py.py work    --addr HOST:PORT --queue Q --count N          -> {"jobs": [...]}

Only the JSON answer goes to stdout; errors go to stderr with a non-zero exit.
"""

import argparse
import asyncio
import base64
import json
import sys
from datetime import timedelta

from sepp import EnqueueRequest, Payload, SeppClient, TraceContext, Worker


async def produce(client, queue, spec_path):
    with open(spec_path, encoding="utf-8") as spec_file:
        spec = json.load(spec_file)
    job_ids = []
    for job in spec["jobs"]:
        request = EnqueueRequest(
            queue,
            job["job_type"],
            payload=Payload(base64.b64decode(job["payload_b64"]), job["encoding"]),
            custom=job["custom"],
            trace_context=TraceContext(job["traceparent"]),
        )
        ack = await client.enqueue(request)
        job_ids.append(ack.job_id)
    return {"job_ids": job_ids}


async def work(client, queue, count):
    seen = []
    worker = Worker(client, [queue], timedelta(seconds=30))
    shutdown = worker.shutdown_handle()

    async def handler(payload, ctx):
        seen.append(
            {
                "id": ctx.id,
                "job_type": ctx.job_type,
                "payload_b64": base64.b64encode(payload.data).decode() if payload else None,
                "encoding": payload.encoding if payload else None,
                "custom": dict(ctx.custom),
                "traceparent": ctx.trace_context.traceparent if ctx.trace_context else None,
            }
        )
        if len(seen) >= count:
            shutdown.shutdown()

    worker.catch_all(handler)
    if count > 0:
        await worker.run()
    return {"jobs": seen}


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["produce", "work"])
    parser.add_argument("--addr", required=True)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--spec")
    parser.add_argument("--count", type=int)
    args = parser.parse_args()
    client = await SeppClient.connect(args.addr)
    try:
        if args.mode == "produce":
            answer = await produce(client, args.queue, args.spec)
        else:
            answer = await work(client, args.queue, args.count)
    finally:
        await client.close()
    print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as error:  # noqa: BLE001 - report any failure as the agent's error
        print(f"sepp_py agent: {error!r}", file=sys.stderr)
        sys.exit(1)
