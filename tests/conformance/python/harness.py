"""Process harness for the sepp conformance suite.

Every server under test is a real process of the binary named by ``SEPP_BIN``,
started with its own temporary data directory and a TOML config file written
for the test. The gRPC port is learnt from the server itself, never guessed:
from the ready file it writes once its listeners are bound (``--ready-file``,
when its ``--help`` offers it), else from its log line ("queue server
listening ... 127.0.0.1:<port>", sepp 0.1.1). The server is stopped with
SIGTERM and must exit with status 0.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import os
import queue as queue_mod
import re
import signal
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

STARTUP_TIMEOUT_S = 30.0
SHUTDOWN_TIMEOUT_S = 20.0
LISTENING_MARKER = "queue server listening"

# A config section that serves the Prometheus endpoint on a port of its own, for
# ``SeppServer.wait_parked``.
WATCH_PARKED: dict[str, Any] = {
    "metrics": {"prometheus_enabled": True, "prometheus_listen_addr": "127.0.0.1:0"}
}


@functools.cache
def offers_ready_file(binary: str) -> bool:
    """Whether ``binary`` takes ``--ready-file`` (this project's server; not sepp 0.1.1)."""
    shown = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    return "--ready-file" in shown.stdout

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_PORT = re.compile(r"127\.0\.0\.1:(\d+)")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def utcnow() -> datetime:
    return datetime.now(UTC)


# --------------------------------------------------------------------------
# TOML rendering (tomllib only reads; the configs we need are simple)
# --------------------------------------------------------------------------


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        # JSON string escapes are valid TOML basic-string escapes.
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        inner = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
        return "{ " + inner + " }" if inner else "{}"
    raise TypeError(f"cannot render {value!r} as TOML")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key)


def render_config(config: dict[str, Any]) -> str:
    """Render ``{"section": {...}, "queues": [{...}, ...]}`` as TOML."""
    lines: list[str] = []
    for section, body in config.items():
        if section == "queues":
            continue
        lines.append(f"[{section}]")
        for key, value in body.items():
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
        lines.append("")
    for q in config.get("queues", []):
        lines.append("[[queues]]")
        for key, value in q.items():
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
        lines.append("")
    return "\n".join(lines)


def merge_config(base: dict[str, Any], extra: dict[str, Any] | None) -> dict[str, Any]:
    merged: dict[str, Any] = {k: (list(v) if k == "queues" else dict(v)) for k, v in base.items()}
    for section, body in (extra or {}).items():
        if section == "queues":
            merged.setdefault("queues", []).extend(body)
        else:
            merged.setdefault(section, {}).update(body)
    return merged


# --------------------------------------------------------------------------
# The server process
# --------------------------------------------------------------------------


class SeppServer:
    """One sepp server process with its own data dir and config file."""

    def __init__(self, binary: str, workdir: Path, config: dict[str, Any] | None = None):
        self.binary = binary
        self.workdir = workdir
        self.db_path = workdir / "data"
        self.config_path = workdir / "sepp.toml"
        base = {
            "server": {"listen_addr": "127.0.0.1:0", "db_path": str(self.db_path)},
            "admin": {"enabled": False},
        }
        self.config = merge_config(base, config)
        self.proc: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self.prometheus_port: int | None = None
        self.ready_file = workdir / "sepp.ready.json"
        self.lines: list[str] = []
        self._lines_lock = threading.Lock()
        self._line_queue: queue_mod.Queue[str | None] = queue_mod.Queue()
        self._reader: threading.Thread | None = None

    @property
    def addr(self) -> str:
        assert self.port is not None, "server not started"
        return f"127.0.0.1:{self.port}"

    def output(self) -> str:
        with self._lines_lock:
            return "\n".join(self.lines)

    def _drain_stdout(self, stdout: Any, lines: queue_mod.Queue[str | None]) -> None:
        # Runs for the whole life of the process so the pipe never fills up.
        for raw in iter(stdout.readline, b""):
            line = strip_ansi(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
            with self._lines_lock:
                self.lines.append(line)
            lines.put(line)
        lines.put(None)

    def start(self) -> SeppServer:
        """Start the process (again, after :meth:`stop`, on the same data dir)."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.port = None
        self._line_queue = queue_mod.Queue()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(render_config(self.config))
        env = {k: v for k, v in os.environ.items() if not k.upper().startswith("SEPP_")}
        env["RUST_LOG"] = "sepp=info"
        args = [self.binary, "--config", str(self.config_path)]
        ready_file = offers_ready_file(self.binary)
        if ready_file:
            self.ready_file.unlink(missing_ok=True)  # left by a server that was killed
            args += ["--ready-file", str(self.ready_file)]
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=self.workdir,
            env=env,
        )
        self._reader = threading.Thread(
            target=self._drain_stdout,
            args=(self.proc.stdout, self._line_queue),
            name="sepp-stdout",
            daemon=True,
        )
        self._reader.start()

        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        if ready_file:
            return self._wait_ready_file(deadline)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self._kill()
                raise RuntimeError(
                    f"sepp did not log {LISTENING_MARKER!r} within {STARTUP_TIMEOUT_S}s\n"
                    f"--- config ---\n{render_config(self.config)}\n--- output ---\n{self.output()}"
                )
            try:
                line = self._line_queue.get(timeout=remaining)
            except queue_mod.Empty:
                continue
            if line is None:
                rc = self.proc.wait(timeout=SHUTDOWN_TIMEOUT_S)
                raise RuntimeError(
                    f"sepp exited with status {rc} before listening\n"
                    f"--- config ---\n{render_config(self.config)}\n--- output ---\n{self.output()}"
                )
            if LISTENING_MARKER in line:
                m = _PORT.search(line)
                if m is None:
                    self._kill()
                    raise RuntimeError(f"no 127.0.0.1:<port> in listening line: {line!r}")
                self.port = int(m.group(1))
                return self

    def _wait_ready_file(self, deadline: float) -> SeppServer:
        assert self.proc is not None
        # The file is renamed into place whole: once it exists, it can be read.
        while not self.ready_file.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"sepp exited with status {self.proc.returncode} before listening\n"
                    f"--- config ---\n{render_config(self.config)}\n--- output ---\n{self.output()}"
                )
            if time.monotonic() >= deadline:
                self._kill()
                raise RuntimeError(
                    f"sepp wrote no ready file within {STARTUP_TIMEOUT_S}s\n"
                    f"--- config ---\n{render_config(self.config)}\n--- output ---\n{self.output()}"
                )
            time.sleep(0.01)
        ready = json.loads(self.ready_file.read_text())
        self.port = int(ready["queue_addr"].rsplit(":", 1)[1])
        if ready["prometheus_addr"] is not None:
            self.prometheus_port = int(ready["prometheus_addr"].rsplit(":", 1)[1])
        return self

    def reserves_waiting(self) -> int | None:
        """The ``sepp_reserve_waiting`` gauge now, or None from a server without it (0.1.1)."""
        if self.prometheus_port is None:
            return None
        url = f"http://127.0.0.1:{self.prometheus_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        for line in text.splitlines():
            if line.startswith("sepp_reserve_waiting"):
                return int(float(line.rsplit(" ", 1)[1]))
        return None

    async def wait_parked(self, count: int, timeout: float = 10.0) -> None:
        """Return once ``count`` reserves wait for a job at once: the server has each of them,
        so it parks them before any call made after this returns. The server must run with
        ``WATCH_PARKED``. sepp 0.1.1 has no such gauge: there this can only give the reserves
        a moment."""
        if await asyncio.to_thread(self.reserves_waiting) is None:
            assert not offers_ready_file(self.binary), "the server runs without WATCH_PARKED"
            await asyncio.sleep(0.3)
            return
        deadline = time.monotonic() + timeout
        while (await asyncio.to_thread(self.reserves_waiting) or 0) < count:
            assert time.monotonic() < deadline, f"no {count} reserves waiting within {timeout}s"
            await asyncio.sleep(0.02)

    def wait_for_log(self, needle: str, timeout: float = 10.0) -> str:
        """Block until a log line (seen so far or later) contains ``needle``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lines_lock:
                for line in self.lines:
                    if needle in line:
                        return line
            time.sleep(0.02)
        raise AssertionError(f"no log line containing {needle!r} within {timeout}s")

    def _kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=SHUTDOWN_TIMEOUT_S)

    def stop(self) -> int:
        """SIGTERM the server and return its exit status."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=SHUTDOWN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._kill()
                raise AssertionError(
                    f"sepp did not exit within {SHUTDOWN_TIMEOUT_S}s of SIGTERM\n{self.output()}"
                ) from None
        if self._reader is not None:
            self._reader.join(timeout=SHUTDOWN_TIMEOUT_S)
        return self.proc.returncode

    def restart(self) -> SeppServer:
        """SIGTERM (requiring exit status 0) and start again on the same data dir."""
        rc = self.stop()
        assert rc == 0, f"sepp exited with status {rc} after SIGTERM\n{self.output()}"
        return self.start()


def sepp_binary() -> str:
    binary = os.environ.get("SEPP_BIN")
    if not binary:
        pytest.exit(
            "SEPP_BIN is not set: point it at the sepp server binary to test "
            "(e.g. SEPP_BIN=$HOME/.cache/sepp-0.1.1/bin/sepp)",
            returncode=2,
        )
    if not os.access(binary, os.X_OK):
        pytest.exit(f"SEPP_BIN={binary} is not an executable file", returncode=2)
    return binary


def binary_version() -> str:
    """The version the binary under test prints for ``--version`` (``sepp 0.2.0`` -> ``0.2.0``);
    the server must report the same one in GetServerInfo."""
    out = subprocess.run([sepp_binary(), "--version"], capture_output=True, text=True, check=True)
    return out.stdout.split()[-1]


_dir_counter = itertools.count()


@contextmanager
def running_server(
    tmp_path_factory: pytest.TempPathFactory, config: dict[str, Any] | None = None
) -> Iterator[SeppServer]:
    """Start a server, yield it, then SIGTERM it and require exit status 0."""
    workdir = tmp_path_factory.mktemp(f"sepp{next(_dir_counter)}")
    srv = SeppServer(sepp_binary(), workdir, config).start()
    try:
        yield srv
    finally:
        rc = srv.stop()
        assert rc == 0, f"sepp exited with status {rc} after SIGTERM\n{srv.output()}"
