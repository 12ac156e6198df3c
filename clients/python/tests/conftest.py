"""Shared fixtures: real sepp servers, connected clients, unique queue names.

* `server` - one server per test module with the default test config (fast sweeps, dead
  letters kept for an hour). A module needing other settings defines its own `server`.
* `start_server(config, rust_log=...)` - a server of its own for one test, stopped afterwards.
* `client` - a `SeppClient` connected to `server`.
* `queue` - a queue name no other test uses.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sepp import SeppClient
from tests.sepp_server import SeppServer

DEFAULT_CONFIG: dict[str, Any] = {"storage": {"dead_letter_retention_ms": 3_600_000}}
_counter = itertools.count()


def _start(tmp: Path, config: dict[str, Any] | None, rust_log: str = "sepp=info") -> SeppServer:
    merged: dict[str, Any] = {k: dict(v) for k, v in DEFAULT_CONFIG.items()}
    for section, body in (config or {}).items():
        if section == "queues":
            merged["queues"] = body
        else:
            merged.setdefault(section, {}).update(body)
    return SeppServer(tmp / f"sepp-{next(_counter)}", merged, rust_log).start()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeppServer]:
    srv = _start(tmp_path_factory.mktemp("server"), None)
    yield srv
    assert srv.stop() == 0, srv.output()


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[Callable[..., SeppServer]]:
    started: list[SeppServer] = []

    def start(config: dict[str, Any] | None = None, rust_log: str = "sepp=info") -> SeppServer:
        srv = _start(tmp_path, config, rust_log)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        assert srv.stop() == 0, srv.output()


@pytest.fixture
async def client(server: SeppServer) -> AsyncIterator[SeppClient]:
    async with await SeppClient.connect(server.addr) as connected:
        yield connected


@pytest.fixture
def queue(request: pytest.FixtureRequest) -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:80] + f"-{next(_counter)}"


@pytest.fixture
def new_queue(request: pytest.FixtureRequest) -> Callable[[], str]:
    base = re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:80]
    return lambda: f"{base}-{next(_counter)}"
