"""Starting the real sepp server for the integration tests.

Each server is a process of the binary named by `$SEPP_BIN`, with its own data directory and a
TOML file written from a dict, listening on port 0. Its port is read from its own
`queue server listening` log line, and it is stopped with SIGTERM.
"""

from __future__ import annotations

import json
import os
import queue
import re
import signal
import subprocess
import threading
from pathlib import Path
from typing import Any

LISTENING = "queue server listening"
_PORT = re.compile(r"127\.0\.0\.1:(\d+)")
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


# `rust_log` for a server whose tests wait for a reserve to park: the committer's debug line
# "reserve parked" is the signal.
PARKING_LOG = "sepp=info,sepp_server::committer=debug"


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
        self._proc = subprocess.Popen(
            [sepp_binary(), "--config", str(config_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(lines,), daemon=True).start()
        while True:
            try:
                line = lines.get(timeout=START_TIMEOUT_S)
            except queue.Empty:
                self.kill()
                raise RuntimeError(f"sepp did not start listening:\n{self.output()}") from None
            if line is None:
                raise RuntimeError(f"sepp exited before listening:\n{self.output()}")
            if LISTENING in line and (match := _PORT.search(line)):
                self.port = int(match.group(1))
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

    def wait_for_lines(self, needle: str, count: int, timeout_s: float = 10.0) -> None:
        """Block until `count` lines of the output contain `needle`; AssertionError after
        `timeout_s`. (With `rust_log=PARKING_LOG`, "reserve parked" marks a parked reserve.)"""
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
