"""Side-by-side runs of bench.py under several Python clients against one sepp server.

    python compare.py --server-bin target/release/sepp \
        --client ours=/path/to/venv-a/bin/python --client sepp-py-0.1.0=/path/to/venv-b/bin/python \
        [--jobs 20000] [--rounds 3] [--persist-mode sync_all]

It starts the server on port 0 with a fresh data directory, then runs every phase (enqueue-single
with 16 tasks, enqueue-batch with 16 tasks of 64, drain with max_in_flight 32) for every client,
round after round, alternating the clients' order so drift on a shared machine hits both alike.
Each drain gets its own queue, pre-filled with exactly --jobs jobs by the same interpreter before
the measured run. It prints a table (median of the rounds; `ratio` is jobs/s against the last
--client, the baseline) and, with --json, writes every run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

BENCH = Path(__file__).with_name("bench.py")
PHASES = [("enqueue-single", 16), ("enqueue-batch", 16), ("drain", 32)]
_PORT = re.compile(r"127\.0\.0\.1:(\d+)")


def start_server(
    binary: str, workdir: Path, persist_mode: str
) -> tuple[subprocess.Popen[str], str]:
    config = workdir / "sepp.toml"
    config.write_text(
        f'[server]\nlisten_addr = "127.0.0.1:0"\ndb_path = "{workdir / "data"}"\n'
        f'[storage]\npersist_mode = "{persist_mode}"\n[admin]\nenabled = false\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SEPP_")}
    env["RUST_LOG"] = "sepp=info"
    proc = subprocess.Popen(
        [binary, "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if "queue server listening" in line and (match := _PORT.search(line)):
            # Keep reading so the pipe never fills up.
            threading.Thread(target=proc.stdout.read, daemon=True).start()
            return proc, f"127.0.0.1:{match.group(1)}"
    raise SystemExit(f"compare: the server exited with {proc.wait()} before listening")


def bench(
    python: str, addr: str, phase: str, jobs: int, concurrency: int, queue: str
) -> dict[str, Any]:
    command = [
        python, str(BENCH), "--addr", addr, "--phase", phase, "--jobs", str(jobs),
        "--concurrency", str(concurrency), "--queue", queue,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise SystemExit(f"compare: {' '.join(command)} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server-bin", default=os.environ.get("SEPP_BIN"))
    parser.add_argument("--client", action="append", required=True, metavar="NAME=PYTHON")
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--persist-mode", default="sync_all")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not args.server_bin:
        parser.error("--server-bin (or $SEPP_BIN) is required")
    clients = [tuple(c.split("=", 1)) for c in args.client]
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        proc, addr = start_server(args.server_bin, Path(tmp), args.persist_mode)
        try:
            for round_no in range(args.rounds):
                order = clients if round_no % 2 == 0 else clients[::-1]
                for phase, concurrency in PHASES:
                    for name, python in order:
                        queue = f"{name}-{phase}-{round_no}"
                        if phase == "drain":
                            bench(python, addr, "enqueue-batch", args.jobs, 16, queue)
                        result = bench(python, addr, phase, args.jobs, concurrency, queue)
                        result.update(name=name, round=round_no)
                        runs.append(result)
                        print(
                            f"round {round_no} {phase:15} {name:16} "
                            f"{args.jobs / result['seconds']:9.0f} jobs/s "
                            f"{result['cpu_seconds'] / args.jobs * 1e6:6.0f} us CPU/job",
                            file=sys.stderr,
                        )
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    print(f"\n{'phase':16} {'client':16} {'jobs/s':>9} {'CPU us/job':>11} {'ratio':>9}")
    for phase, _ in PHASES:
        baseline = None
        for name, _python in clients[::-1]:
            mine = [r for r in runs if r["phase"] == phase and r["name"] == name]
            rate = statistics.median(args.jobs / r["seconds"] for r in mine)
            cpu = statistics.median(r["cpu_seconds"] / args.jobs * 1e6 for r in mine)
            baseline = baseline or rate
            print(f"{phase:16} {name:16} {rate:9.0f} {cpu:11.0f} {rate / baseline:8.2f}x")
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
