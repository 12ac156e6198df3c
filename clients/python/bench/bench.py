"""Client benchmark: one measured phase against a running sepp server, one JSON line out.

    python bench.py --addr 127.0.0.1:PORT --phase enqueue-single|enqueue-batch|drain
                    --jobs N --concurrency C [--batch 64] [--queue NAME] [--payload-bytes 256]

It uses only the public API that this client shares with sepp-py 0.1.0, so the same file
measures either package, whichever one the interpreter running it has installed. The JSON line
goes to stdout; anything else goes to stderr. `seconds` and `cpu_seconds` cover the measured
phase alone (not start-up or connecting), and the CPU is this whole process's (all threads).

- `enqueue-single`: C tasks, each enqueues one job per call until N jobs are in.
- `enqueue-batch`: C tasks, each enqueues `--batch` jobs per call until N jobs are in.
- `drain`: a Worker with max_in_flight = C and a handler that returns at once runs until N jobs
  were acked (the queue must already hold them), then shuts down gracefully.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import time
from datetime import timedelta
from importlib.metadata import version
from typing import Any

from sepp import EnqueueAck, EnqueueRequest, Payload, SeppClient, Worker

JOB_TYPE = "bench"
ENCODING = "application/octet-stream"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class JobCounter:
    """Hands out the remaining job count to concurrent tasks."""

    def __init__(self, total: int) -> None:
        self.remaining = total

    def take(self, most: int) -> int:
        n = min(most, self.remaining)
        self.remaining -= n
        return n


def job(args: argparse.Namespace, data: bytes) -> EnqueueRequest:
    # The server refuses empty payload bytes: with --payload-bytes 0 the job has no payload.
    return EnqueueRequest(args.queue, JOB_TYPE, payload=Payload(data, ENCODING) if data else None)


async def enqueue_single(client: SeppClient, args: argparse.Namespace, data: bytes) -> None:
    counter = JobCounter(args.jobs)

    async def task() -> None:
        while counter.take(1):
            await client.enqueue(job(args, data))

    await asyncio.gather(*(task() for _ in range(args.concurrency)))


async def enqueue_batch(client: SeppClient, args: argparse.Namespace, data: bytes) -> None:
    counter = JobCounter(args.jobs)

    async def task() -> None:
        while n := counter.take(args.batch):
            requests = [job(args, data) for _ in range(n)]
            results = await client.enqueue_batch(requests)
            for result in results:
                if not isinstance(result, EnqueueAck):
                    raise RuntimeError(f"job rejected: {result}")

    await asyncio.gather(*(task() for _ in range(args.concurrency)))


async def drain(client: SeppClient, args: argparse.Namespace, data: bytes) -> None:
    worker = Worker(client, [args.queue], timedelta(seconds=60), max_in_flight=args.concurrency)
    shutdown = worker.shutdown_handle()
    handled = 0

    @worker.handler(JOB_TYPE)
    async def handle(payload: Any, ctx: Any) -> None:
        nonlocal handled
        handled += 1
        if handled == args.jobs:
            shutdown.shutdown()

    # run() returns once the in-flight jobs, the last one included, are acked.
    await worker.run()
    if handled < args.jobs:
        raise RuntimeError(f"worker stopped after {handled} of {args.jobs} jobs")


PHASES = {"enqueue-single": enqueue_single, "enqueue-batch": enqueue_batch, "drain": drain}


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    data = bytes(i % 251 for i in range(args.payload_bytes))
    client = await SeppClient.connect(args.addr)
    try:
        wall_start, cpu_start = time.perf_counter(), cpu_seconds()
        await PHASES[args.phase](client, args, data)
        wall, cpu = time.perf_counter() - wall_start, cpu_seconds() - cpu_start
    finally:
        await client.close()
    return {
        "client": "sepp-py",
        "client_version": version("sepp-py"),
        "phase": args.phase,
        "jobs": args.jobs,
        "seconds": round(wall, 6),
        "cpu_seconds": round(cpu, 6),
    }


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--addr", required=True)
    parser.add_argument("--phase", required=True, choices=sorted(PHASES))
    parser.add_argument("--jobs", required=True, type=int)
    parser.add_argument("--concurrency", required=True, type=int)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--queue", default="bench")
    parser.add_argument("--payload-bytes", type=int, default=256)
    args = parser.parse_args(argv)
    for name in ("jobs", "concurrency", "batch"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be at least 1")
    if args.payload_bytes < 0:
        parser.error("--payload-bytes must not be negative")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        result = asyncio.run(measure(args))
    except Exception as exc:
        print(f"bench: {args.phase} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
