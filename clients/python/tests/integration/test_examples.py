"""The programs in examples/ and `python -m sepp.worker`, run as their users would run them."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import queue as queue_mod
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from sepp import EnqueueRequest, Payload, ReserveOptions, SeppClient
from tests.sepp_server import SeppServer

HERE = Path(__file__).parents[2]
EXAMPLES = HERE / "examples"
WAIT = 30.0


class Program:
    """A child process whose output lines can be waited for."""

    def __init__(self, args: list[str], addr: str, **env: str) -> None:
        self.lines: queue_mod.Queue[str | None] = queue_mod.Queue()
        self.seen: list[str] = []
        self.process = subprocess.Popen(
            [sys.executable, *args],
            cwd=HERE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "SEPP_ADDR": addr, **env},
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def wait_for(self, needle: str) -> str:
        while True:
            line = self.lines.get(timeout=WAIT)
            if line is None:
                raise AssertionError(f"exited before printing {needle!r}:\n" + "\n".join(self.seen))
            self.seen.append(line)
            if needle in line:
                return line

    def finish(self) -> tuple[int, str]:
        code = self.process.wait(timeout=WAIT)
        while (line := self.lines.get(timeout=WAIT)) is not None:
            self.seen.append(line)
        return code, "\n".join(self.seen)

    def stop(self, signum: int) -> tuple[int, str]:
        self.process.send_signal(signum)
        return self.finish()


@pytest.fixture
async def fresh(start_server: Any) -> AsyncIterator[tuple[SeppServer, SeppClient]]:
    srv = start_server()
    async with await SeppClient.connect(srv.addr) as client:
        yield srv, client


def run(script: str, addr: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        capture_output=True,
        text=True,
        timeout=WAIT,
        env={**os.environ, "SEPP_ADDR": addr},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


async def test_producer(fresh: tuple[SeppServer, SeppClient]) -> None:
    srv, client = fresh
    output = await asyncio.to_thread(run, "producer.py", srv.addr)
    assert "one job:" in output and output.count("batch job:") == 3
    assert "atomic jobs:" in output
    jobs = await client.reserve(ReserveOptions(["emails"], _lease(), max_jobs=10))
    assert jobs is not None and len(jobs) == 5  # the scheduled reminder is not due yet


async def test_sync_producer(fresh: tuple[SeppServer, SeppClient]) -> None:
    srv, client = fresh
    output = await asyncio.to_thread(run, "sync_producer.py", srv.addr)
    assert "enqueued job" in output and "batch:" in output
    jobs = await client.reserve(ReserveOptions(["emails"], _lease(), max_jobs=10))
    assert jobs is not None and len(jobs) == 4
    # Every one is a job examples/worker.py handles (a welcome, with its user).
    assert {job.ctx.job_type for job in jobs} == {"send_welcome"}
    assert all(job.payload is not None and b'"user"' in job.payload.data for job in jobs)


async def test_manual(fresh: tuple[SeppServer, SeppClient]) -> None:
    srv, client = fresh
    await client.enqueue_batch([EnqueueRequest("emails", t) for t in ("send_welcome", "slow")])
    output = await asyncio.to_thread(run, "manual.py", srv.addr)
    assert output.count("reserved JobCtx(") == 2
    assert (
        await client.reserve(ReserveOptions(["emails"], _lease(), wait_timeout=_lease(0))) is None
    )


async def test_quickstart_stops_on_sigint(fresh: tuple[SeppServer, SeppClient]) -> None:
    srv, _ = fresh
    program = Program([str(EXAMPLES / "quickstart.py")], srv.addr)
    enqueued = await asyncio.to_thread(program.wait_for, "enqueued job")
    processed = await asyncio.to_thread(program.wait_for, "processing job")
    assert enqueued.split()[-1] == processed.split()[2]
    code, output = await asyncio.to_thread(program.stop, signal.SIGINT)
    assert code == 0 and "worker stopped" in output, output


async def test_worker_stops_on_sigterm(fresh: tuple[SeppServer, SeppClient]) -> None:
    srv, client = fresh
    await client.enqueue(
        EnqueueRequest(
            "emails", "send_welcome", payload=Payload(b'{"user": 9}', "application/json")
        )
    )
    program = Program([str(EXAMPLES / "worker.py")], srv.addr)
    await asyncio.to_thread(program.wait_for, "welcoming user 9")
    code, output = await asyncio.to_thread(program.stop, signal.SIGTERM)
    assert code == 0 and "worker stopped" in output, output


async def test_the_command_line_runner(fresh: tuple[SeppServer, SeppClient]) -> None:
    srv, client = fresh
    ack = await client.enqueue(EnqueueRequest("emails", "send_welcome"))
    program = Program(["-m", "sepp.worker", "examples.cli_worker:make_worker"], srv.addr)
    line = await asyncio.to_thread(program.wait_for, "processed")
    assert ack.job_id in line
    code, output = await asyncio.to_thread(program.stop, signal.SIGINT)
    assert code == 0 and "worker stopped" in output, output


async def test_the_command_line_runner_refuses_a_bad_target(
    fresh: tuple[SeppServer, SeppClient],
) -> None:
    srv, _ = fresh
    for target in ("no_colon", "examples.cli_worker:missing", "nonexistent.module:x", "os:sep"):
        program = Program(["-m", "sepp.worker", target], srv.addr)
        code, output = await asyncio.to_thread(program.finish)
        assert code == 2 and "sepp.worker:" in output, (target, output)


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


@pytest.mark.skipif(
    not _installed("opentelemetry.exporter.otlp"),
    reason="needs the otel extra and the OTLP exporter",
)
async def test_traced_exports_linked_spans(fresh: tuple[SeppServer, SeppClient]) -> None:
    from tests.otlp_collector import otlp_collector

    srv, _ = fresh
    async with otlp_collector() as collector:
        output = await asyncio.to_thread(_run_traced, srv.addr, f"http://{collector.addr}")
        assert "processing" in output
        spans = {span.name: span for span in collector.spans}
    assert {"checkout", "sepp.enqueue", "sepp.process", "sepp.ack"} <= set(spans)
    enqueue, process = spans["sepp.enqueue"], spans["sepp.process"]
    assert enqueue.parent_span_id == spans["checkout"].span_id
    assert [link.span_id for link in process.links] == [enqueue.span_id]
    assert process.trace_id != enqueue.trace_id  # a trace of its own, linked


def _run_traced(addr: str, endpoint: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "traced.py")],
        capture_output=True,
        text=True,
        timeout=WAIT,
        env={**os.environ, "SEPP_ADDR": addr, "OTEL_ENDPOINT": endpoint},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _lease(seconds: float = 30) -> Any:
    from datetime import timedelta

    return timedelta(seconds=seconds)
