"""`ShutdownHandle`: how a Worker is asked to stop, from any thread."""

from __future__ import annotations

import asyncio

__all__ = ["ShutdownHandle"]


class ShutdownHandle:
    """Stops a Worker gracefully. Share it freely; `shutdown()` may be called from any thread."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._requested = False
        self._loop: asyncio.AbstractEventLoop | None = None

    def shutdown(self) -> None:
        """Ask the worker to stop taking jobs and to return from `run()` once drained."""
        self._requested = True
        loop = self._loop
        if loop is None or loop.is_closed():
            self._event.set()
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._event.set()
        else:
            loop.call_soon_threadsafe(self._event.set)

    @property
    def is_shutdown(self) -> bool:
        """Whether shutdown was requested."""
        return self._requested

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        if self._requested:
            self._event.set()

    async def wait(self) -> None:
        """Wait until shutdown is requested."""
        await self._event.wait()
