"""Run a Worker from the command line: `python -m sepp.worker myapp.jobs:worker`.

The target `module:attribute` (the module is imported with the current directory on the path)
names one of:

* a `Worker`;
* a function, sync or async, that returns a `Worker` (it runs inside the event loop, so it can
  `await SeppClient.connect(...)`); the command closes that worker's client after it stops;
* a function returning an async context manager that yields a `Worker` (for example one
  written with `@contextlib.asynccontextmanager` around `async with await SeppClient.connect`).

SIGINT and SIGTERM shut the worker down gracefully: it stops reserving and exits once the jobs in
flight are settled. A second signal stops it at once (jobs still running are cancelled and their
leases left to expire). Exit status: 0 after a graceful stop, 1 if the worker failed, 2 if the
target is not usable, 130 after a forced stop.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import inspect
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

from ._worker import Worker

EXIT_FAILED = 1
EXIT_BAD_TARGET = 2
EXIT_FORCED = 130


class TargetError(Exception):
    """The command-line target does not name a usable Worker."""


def load_target(spec: str) -> Any:
    """Import `module:attribute` (the attribute may be dotted) and return the attribute."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise TargetError(f"expected module:attribute (e.g. myapp.jobs:worker), got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as err:
        raise TargetError(f"cannot import {module_name!r}: {err}") from err
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise TargetError(f"{module_name!r} has no attribute {attribute!r}") from None
    return target


@contextlib.asynccontextmanager
async def open_worker(target: Any) -> AsyncIterator[Worker]:
    """The Worker a target stands for, cleaned up as the module docs describe."""
    if isinstance(target, Worker):
        yield target
        return
    if not callable(target):
        raise TargetError(f"the target is a {type(target).__name__}, not a Worker or a factory")
    made = target()
    if inspect.isawaitable(made):
        made = await made
    if isinstance(made, Worker):
        try:
            yield made
        finally:
            await made.client.close()
        return
    if hasattr(made, "__aenter__") and hasattr(made, "__aexit__"):
        async with made as worker:
            if not isinstance(worker, Worker):
                raise TargetError(f"the context manager yielded a {type(worker).__name__}")
            yield worker
        return
    raise TargetError(f"the factory returned a {type(made).__name__}, not a Worker")


async def run_target(
    target: Any, install_signals: Callable[[Worker, asyncio.Task[None]], None]
) -> int:
    async with open_worker(target) as worker:
        task = asyncio.get_running_loop().create_task(worker.run())
        install_signals(worker, task)
        try:
            await task
        except asyncio.CancelledError:
            logging.getLogger("sepp").warning("worker stopped by a second signal")
            return EXIT_FORCED
    return 0


def _signal_handlers(worker: Worker, task: asyncio.Task[None]) -> None:
    loop = asyncio.get_running_loop()
    handle = worker.shutdown_handle()

    def on_signal(signum: int) -> None:
        if handle.is_shutdown:
            task.cancel()
            return
        logging.getLogger("sepp").info(
            "received %s; shutting down (send it again to stop at once)",
            signal.Signals(signum).name,
        )
        handle.shutdown()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, on_signal, signum)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m sepp.worker", description="Run a sepp Worker until SIGINT or SIGTERM."
    )
    parser.add_argument("target", help="module:attribute naming a Worker or a factory of one")
    parser.add_argument(
        "--log-level", default="INFO", help="level of the `sepp` logger (default: INFO)"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        logging.getLogger("sepp").setLevel(args.log_level.upper())
    except ValueError:
        parser.error(f"unknown log level {args.log_level!r}")
    try:
        target = load_target(args.target)
        return asyncio.run(run_target(target, _signal_handlers))
    except TargetError as err:
        print(f"sepp.worker: {err}", file=sys.stderr)
        return EXIT_BAD_TARGET
    except Exception as err:
        logging.getLogger("sepp").exception("worker failed: %s", err)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
