"""Every Python example of the README runs as written, against the real server.

The README's snippets read like one session: `client` is a connected SeppClient, `asyncio` and
`logging` are imported, and later snippets use what earlier ones defined. They run here in that
order, with the documented address replaced by the test server's. Complete programs (the
quickstart) run as a subprocess; the signal snippet gets SIGINT; the TLS snippet gets a TLS
server with the README's API key and a `ca.pem` in its working directory.
"""

from __future__ import annotations

import ast
import asyncio
import logging
import os
import re
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sepp import EnqueueRequest, JobCtx, SeppClient, Worker
from tests.integration.test_connect import make_tls_files
from tests.sepp_server import SeppServer

README = Path(__file__).parents[2] / "README.md"
DOC_ADDR = "127.0.0.1:50051"
WAIT = 20.0


def readme_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def kind(block: str) -> str:
    if "asyncio.run(" in block:
        return "program"
    if "add_signal_handler" in block:
        return "signal"
    if "https://queue.example.com" in block:
        return "tls"
    return "session"


class RecordingClient(SeppClient):
    """The real client, noting which job types were acked and nacked (to know when to stop)."""

    settled: list[tuple[str, str]]

    async def ack(self, ctx: Any) -> None:
        await super().ack(ctx)
        self.settled.append(("ack", ctx.job_type))

    async def nack(self, ctx: Any, *args: Any, **kwargs: Any) -> bool:
        dead = await super().nack(ctx, *args, **kwargs)
        self.settled.append(("nack", ctx.job_type))
        return dead


async def run_snippet(
    code: str, namespace: dict[str, Any], until: Callable[[], Awaitable[object]] | None = None
) -> None:
    compiled = compile(code, "<README>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(compiled, namespace)
    if not asyncio.iscoroutine(result):
        return
    task = asyncio.ensure_future(result)
    if until is not None:
        await asyncio.wait_for(until(), WAIT)
    await asyncio.wait_for(task, WAIT)


def test_every_readme_block_is_covered() -> None:
    kinds = [kind(block) for block in readme_blocks()]
    assert kinds.count("program") == 1 and kinds.count("signal") == 1 and kinds.count("tls") == 1
    assert kinds.count("session") >= 6


async def test_the_session_snippets_run_in_order(
    server: SeppServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    channel_client = await SeppClient.connect(server.addr)
    client = RecordingClient.from_channel(channel_client.channel)
    client.settled = []
    # A Worker on the Consume stream settles on the stream, not with the client's calls.
    worker_ack, worker_nack = Worker._ack, Worker._nack

    async def ack(worker: Worker, ctx: Any) -> None:
        await worker_ack(worker, ctx)
        client.settled.append(("ack", ctx.job_type))

    async def nack(worker: Worker, ctx: Any, *args: Any) -> bool:
        dead = await worker_nack(worker, ctx, *args)
        client.settled.append(("nack", ctx.job_type))
        return dead

    monkeypatch.setattr(Worker, "_ack", ack)
    monkeypatch.setattr(Worker, "_nack", nack)
    namespace: dict[str, Any] = {"client": client, "asyncio": asyncio, "logging": logging}
    for block in (b for b in readme_blocks() if kind(b) == "session"):
        code = block.replace(DOC_ADDR, server.addr)
        if "await worker.run()" in code:
            # The Worker gets a queue of its own: the long poll it has pending when it shuts
            # down is cancelled, and a job enqueued while the server has not yet seen that
            # cancellation is leased to it and only comes back when its lease runs out. On
            # another queue that cannot hold up the snippets that follow.
            code = code.replace('"emails"', '"emails-worker"')
            await client.enqueue(EnqueueRequest("emails-worker", "send_welcome"))
            await client.enqueue(EnqueueRequest("emails-worker", "send_receipt"))

            async def both_settled() -> None:
                while not {("ack", "send_welcome"), ("nack", "send_receipt")} <= set(
                    client.settled
                ):
                    await asyncio.sleep(0.02)
                namespace["worker"].shutdown_handle().shutdown()

            try:
                await run_snippet(code, namespace, both_settled)
            except TimeoutError:
                raise AssertionError(f"the worker snippet settled only {client.settled}") from None
        elif "client.reserve(" in code:
            await client.enqueue(EnqueueRequest("emails", "send_welcome"))
            await run_snippet(code, namespace)
        else:
            await run_snippet(code, namespace)
    # What the snippets left behind is real: the producer's job and the blocking client's.
    assert namespace["ack"].job_id and len(namespace["acks"]) == 2
    assert isinstance(namespace["worker"], Worker)
    # The schedules snippet left the nightly schedule and deleted the heartbeat.
    assert namespace["deleted"] is True
    assert [s.id for s in await client.list_schedules()] == ["nightly-report"]
    assert await client.delete_schedule("nightly-report") is True
    # The pause snippet lifted both pauses it made, and nothing is paused any more.
    assert namespace["resumed"] is True
    assert await client.list_pauses() == []
    await client.close()


async def test_the_signal_snippet_stops_the_worker_on_sigint(server: SeppServer) -> None:
    (block,) = [b for b in readme_blocks() if kind(b) == "signal"]
    async with await SeppClient.connect(server.addr) as client:
        worker = Worker(client, ["signal-q"], timedelta(seconds=30))
        started = asyncio.Event()

        @worker.catch_all
        async def handle(payload: object, ctx: JobCtx) -> None:
            started.set()

        await client.enqueue(EnqueueRequest("signal-q", "t"))
        namespace: dict[str, Any] = {"worker": worker, "asyncio": asyncio}

        async def interrupt() -> None:
            await started.wait()
            os.kill(os.getpid(), signal.SIGINT)

        try:
            await run_snippet(block, namespace, interrupt)
        finally:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
        assert worker.shutdown_handle().is_shutdown


async def test_the_tls_snippet_connects_with_its_key_and_ca(start_server, tmp_path: Path) -> None:
    (block,) = [b for b in readme_blocks() if kind(b) == "tls"]
    make_tls_files(tmp_path)
    srv = start_server(
        {
            "server": {
                "tls_cert_path": str(tmp_path / "cert.pem"),
                "tls_key_path": str(tmp_path / "key.pem"),
            },
            "auth": {"api_keys": [{"name": "docs", "key": "secret"}]},
        }
    )
    code = block.replace("queue.example.com:50051", f"localhost:{srv.port}")
    namespace: dict[str, Any] = {"SeppClient": SeppClient}
    cwd = os.getcwd()
    os.chdir(tmp_path)  # the snippet opens "ca.pem"
    try:
        await run_snippet(code, namespace)
    finally:
        os.chdir(cwd)
    client = namespace["client"]
    assert (await client.get_server_info()).version
    await client.close()


def test_the_quickstart_program_runs(start_server) -> None:
    server = start_server()
    (block,) = [b for b in readme_blocks() if kind(b) == "program"]
    process = subprocess.Popen(
        [sys.executable, "-c", block.replace(DOC_ADDR, server.addr)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:
            lines.append(line)
            if line.startswith("processing job"):
                break
        assert lines[0].startswith("enqueued job"), "".join(lines)
        assert lines[-1].split()[-1] == lines[0].split()[-1]  # the same job came back
    finally:
        process.kill()
        process.wait()


def test_run_snippet_surfaces_errors() -> None:
    with pytest.raises(NameError):
        asyncio.run(run_snippet("await undefined_thing()", {}))
