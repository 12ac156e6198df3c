"""pytest fixtures for the sepp conformance suite (see harness.py for the process side).

* ``server`` -- a module-scoped server with the default harness config. A test
  module overrides it by defining its own ``server`` fixture, usually with
  :func:`harness.running_server` and extra config.
* ``client`` -- a connected :class:`sepp.SeppClient` for ``server``.
* ``start_server`` -- a function-scoped factory for tests that need a server
  with special configuration of their own.
* ``new_queue`` -- unique queue names, so tests sharing a server never see
  each other's jobs.
"""

from __future__ import annotations

import itertools
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import pytest_asyncio
from sepp import SeppClient

from harness import SeppServer, running_server, sepp_binary

# --------------------------------------------------------------------------
# Fixtures
# --------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    sepp_binary()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeppServer]:
    with running_server(tmp_path_factory) as srv:
        yield srv


@pytest.fixture
def start_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., SeppServer]]:
    """Factory: ``start_server(config)`` -> a running server stopped at teardown."""
    stack: list[Any] = []

    def start(config: dict[str, Any] | None = None) -> SeppServer:
        cm = running_server(tmp_path_factory, config)
        srv = cm.__enter__()
        stack.append(cm)
        return srv

    yield start
    errors: list[BaseException] = []
    for cm in reversed(stack):
        try:
            cm.__exit__(None, None, None)
        except BaseException as exc:  # report every failing server, not just the first
            errors.append(exc)
    if errors:
        raise errors[0]


@pytest_asyncio.fixture
async def client(server: SeppServer):
    c = await SeppClient.connect(server.addr)
    try:
        yield c
    finally:
        await c.close()


@pytest.fixture
def new_queue(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """Unique queue names derived from the test name."""
    counter = itertools.count()
    base = re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:60]
    stamp = time.monotonic_ns() % 1_000_000_000

    def make(suffix: str = "q") -> str:
        return f"{base}-{suffix}-{stamp}-{next(counter)}"

    return make
