"""Starting the real sepp server for the integration tests.

Each server is a process of the binary named by `$SEPP_BIN`, with its own data directory and a
TOML file written from a dict, listening on port 0. Its addresses are read from the ready file it
writes once its listeners are bound (`--ready-file`), and it is stopped with SIGTERM.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
START_TIMEOUT_S = 30.0


def sepp_binary() -> str:
    binary = os.environ.get("SEPP_BIN", "")
    if not binary or not os.access(binary, os.X_OK):
        raise RuntimeError(
            "the integration tests need the sepp server binary: set SEPP_BIN to its path "
            f"(got {binary!r})"
        )
    return binary


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {value!r}")


def render_config(config: dict[str, Any]) -> str:
    """`{"section": {key: value}, "queues": [{...}]}` as TOML."""
    lines: list[str] = []
    for section, body in config.items():
        if section == "queues":
            continue
        lines.append(f"[{section}]")
        lines.extend(f"{key} = {_toml(value)}" for key, value in body.items())
    for declared in config.get("queues", []):
        lines.append("[[queues]]")
        lines.extend(f"{key} = {_toml(value)}" for key, value in declared.items())
    return "\n".join(lines) + "\n"


# Configuration for a server whose tests wait for reserves to park (`SeppServer.wait_parked`):
# its Prometheus endpoint, on a port of its own, serves the `sepp_reserve_waiting` gauge.
WATCH_PARKED: dict[str, Any] = {
    "metrics": {"prometheus_enabled": True, "prometheus_listen_addr": "127.0.0.1:0"}
}


class SeppServer:
    """One running server process."""

    def __init__(
        self, workdir: Path, config: dict[str, Any] | None = None, rust_log: str = "sepp=info"
    ) -> None:
        self.workdir = workdir
        self.rust_log = rust_log
        base: dict[str, Any] = {
            "server": {"listen_addr": "127.0.0.1:0", "db_path": str(workdir / "data")},
            "admin": {"enabled": False},
            "storage": {"persist_mode": "buffer", "sweep_interval_ms": 50},
        }
        for section, body in (config or {}).items():
            if section == "queues":
                base["queues"] = body
            else:
                base.setdefault(section, {}).update(body)
        self.config = base
        self.lines: list[str] = []
        self._new_line = threading.Condition()
        self.port = 0
        self.prometheus_port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> SeppServer:
        self.workdir.mkdir(parents=True, exist_ok=True)
        config_path = self.workdir / "sepp.toml"
        config_path.write_text(render_config(self.config))
        env = {k: v for k, v in os.environ.items() if not k.startswith("SEPP_")}
        env["RUST_LOG"] = self.rust_log
        ready_file = self.workdir / "sepp.ready.json"
        ready_file.unlink(missing_ok=True)  # left by a server that was killed
        self._proc = subprocess.Popen(
            [sepp_binary(), "--config", str(config_path), "--ready-file", str(ready_file)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(lines,), daemon=True).start()
        deadline = time.monotonic() + START_TIMEOUT_S
        # The file is renamed into place whole: once it exists, it can be read.
        while not ready_file.exists():
            if self._proc.poll() is not None:
                raise RuntimeError(f"sepp exited before listening:\n{self.output()}")
            if time.monotonic() >= deadline:
                self.kill()
                raise RuntimeError(f"sepp did not start listening:\n{self.output()}")
            time.sleep(0.01)
        ready = json.loads(ready_file.read_text())
        self.port = int(ready["queue_addr"].rsplit(":", 1)[1])
        if ready["prometheus_addr"] is not None:
            self.prometheus_port = int(ready["prometheus_addr"].rsplit(":", 1)[1])
        return self

    def _read(self, lines: queue.Queue[str | None]) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for raw in iter(self._proc.stdout.readline, b""):
            line = _ANSI.sub("", raw.decode("utf-8", "replace").rstrip())
            with self._new_line:
                self.lines.append(line)
                self._new_line.notify_all()
            lines.put(line)
        lines.put(None)

    def reserves_waiting(self) -> int:
        """The server's `sepp_reserve_waiting` gauge now (it runs with `WATCH_PARKED`)."""
        assert self.prometheus_port is not None, "the server runs without WATCH_PARKED"
        url = f"http://127.0.0.1:{self.prometheus_port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        for line in text.splitlines():
            if line.startswith("sepp_reserve_waiting"):
                return int(float(line.rsplit(" ", 1)[1]))
        raise AssertionError(f"no sepp_reserve_waiting in the scrape:\n{text}")

    def wait_parked(self, count: int, timeout_s: float = 10.0) -> None:
        """Block until `count` reserves wait for a job at once: the server has each of them, so
        it parks them before any call made after this returns. AssertionError after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while self.reserves_waiting() < count:
            assert time.monotonic() < deadline, f"no {count} reserves waiting within {timeout_s} s"
            time.sleep(0.02)

    def wait_for_lines(self, needle: str, count: int, timeout_s: float = 10.0) -> None:
        """Block until `count` lines of the output contain `needle`; AssertionError after
        `timeout_s`."""
        with self._new_line:
            found = self._new_line.wait_for(
                lambda: sum(needle in line for line in self.lines) >= count, timeout_s
            )
        assert found, f"no {count} lines with {needle!r} within {timeout_s} s:\n{self.output()}"

    def output(self) -> str:
        return "\n".join(self.lines)

    def kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()

    def stop(self) -> int:
        """SIGTERM and wait; returns the exit status."""
        assert self._proc is not None
        if self._proc.poll() is None:
            self._proc.send_signal(signal.SIGTERM)
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
                raise RuntimeError(f"sepp ignored SIGTERM:\n{self.output()}") from None
        return self._proc.returncode
