"""Cross-language interop: every client's agent produces jobs that every client's Worker handles.

For each (producer, worker) pair of AGENTS, the producer enqueues a few jobs on a queue of their
own and the worker's high-level Worker handles them; the test then checks that each job arrived
with the same job type, payload bytes, encoding, custom metadata (with their types: an int stays an
int, a float a float) and traceparent, that the server holds none of them any more (each was acked),
and, when the server has the Consume stream, that the Worker of every agent that streams took them
over the stream: the server's Prometheus endpoint counts no Reserve call while it works (an agent
that also reports `"streamed"` in its `work` answer must agree). The agents' interface is
described in README.md.

Run by run.sh, which builds the agents; the environment names the pieces:
  SEPP_BIN                   the server binary (started on port 0 with a temporary data directory)
  SEPP_INTEROP_RUST_AGENT    the built Rust agent (cargo build --example interop_agent -p sepp-client)
  SEPP_INTEROP_SEPP_PY       the python of a virtualenv with sepp-py 0.1.0
  SEPP_INTEROP_PYTHON        the python of a virtualenv with our client (clients/python)
"""

import base64
import hashlib
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
AGENT_TIMEOUT_S = 120


def agents():
    """The agents under test: a name, the command that runs it (the mode and flags follow), and
    whether its Worker takes jobs over the Consume stream when the server has it (`streams`)."""
    return [
        {"name": "typescript", "command": ["node", str(ROOT / "clients/typescript/build/agent.js")], "streams": True},
        {"name": "rust", "command": [os.environ["SEPP_INTEROP_RUST_AGENT"]], "streams": True},
        # sepp-py 0.1.0 predates the stream: it reserves.
        {
            "name": "sepp-py",
            "command": [os.environ["SEPP_INTEROP_SEPP_PY"], str(HERE / "agents/sepp_py.py")],
            "streams": False,
        },
        {
            "name": "python",
            "command": [os.environ["SEPP_INTEROP_PYTHON"], str(ROOT / "clients/python/interop/agent.py")],
            "streams": True,
        },
    ]


def our_python():
    """The agent of our Python client, which also answers `info` and `settled`."""
    return next(agent for agent in agents() if agent["name"] == "python")


def start_server(data_dir):
    config = Path(data_dir) / "sepp.toml"
    config.write_text(
        "[server]\n"
        'listen_addr = "127.0.0.1:0"\n'
        f"db_path = {json.dumps(str(Path(data_dir) / 'data'))}\n\n"
        "[admin]\nenabled = false\n\n"
        '[storage]\npersist_mode = "buffer"\n\n'
        '[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = "127.0.0.1:0"\n'
    )
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("SEPP_")}
    env["RUST_LOG"] = "sepp=info"
    ready_file = Path(data_dir) / "sepp.ready.json"
    server = subprocess.Popen(
        [os.environ["SEPP_BIN"], "--config", str(config), "--ready-file", str(ready_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    # Keep draining its output so it never blocks on a full pipe.
    threading.Thread(target=lambda: [None for _ in server.stdout], daemon=True).start()
    # The server writes the file (renamed into place whole) once its listeners are bound.
    deadline = time.monotonic() + 30
    while not ready_file.exists():
        if server.poll() is not None or time.monotonic() >= deadline:
            server.kill()
            raise SystemExit("interop: the server exited before it was listening")
        time.sleep(0.01)
    ready = json.loads(ready_file.read_text())
    port = int(ready["queue_addr"].rsplit(":", 1)[1])
    metrics_port = int(ready["prometheus_addr"].rsplit(":", 1)[1])
    return server, f"127.0.0.1:{port}", f"http://127.0.0.1:{metrics_port}/metrics"


def reserve_calls(metrics_url):
    """How many Reserve calls the server has answered: a Worker on the Consume stream makes none."""
    with urllib.request.urlopen(metrics_url, timeout=10) as response:
        text = response.read().decode()
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("sepp_requests_total{") and 'method="Reserve"' in line
    )


def spec_for(producer, worker):
    """Three jobs whose payloads and metadata exercise the edges: raw bytes, JSON, text, typed customs."""
    def traceparent(index):
        digest = hashlib.sha256(f"{producer}->{worker}#{index}".encode()).hexdigest()
        return f"00-{digest[:32]}-{digest[32:48]}-01"

    # Whole floats (2.0) are left out: JavaScript numbers cannot tell them from ints.
    custom = {"from": producer, "n": 3, "neg": -42, "big": 2**40, "f": 1.5, "tiny": -0.25, "yes": True, "no": False}
    payloads = [
        (bytes(range(256)), "application/octet-stream"),
        (json.dumps({"to": worker, "ok": True}).encode(), "application/json"),
        ("grüße, 你好".encode(), "text/plain"),
    ]
    return [
        {
            "job_type": f"interop_{index}",
            "payload_b64": base64.b64encode(data).decode(),
            "encoding": encoding,
            "custom": {**custom, "index": index},
            "traceparent": traceparent(index),
        }
        for index, (data, encoding) in enumerate(payloads)
    ]


def run_agent(agent, mode, addr, queue, *flags):
    command = [*agent["command"], mode, "--addr", addr, "--queue", queue, *flags]
    result = subprocess.run(command, capture_output=True, text=True, timeout=AGENT_TIMEOUT_S)
    if result.returncode != 0:
        raise AssertionError(f"{agent['name']} {mode} exited {result.returncode}: {result.stderr.strip()}")
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    if len(lines) != 1:
        raise AssertionError(f"{agent['name']} {mode} printed {len(lines)} lines, expected one: {result.stdout!r}")
    return json.loads(lines[0])


def same_typed(expected, actual):
    """Equal, with the same JSON types (bool is not int, int is not float)."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and expected.keys() == actual.keys() and all(
            same_typed(expected[key], actual[key]) for key in expected
        )
    return type(expected) is type(actual) and expected == actual


def check_pair(producer, worker, addr, metrics_url, workdir, features):
    queue = f"interop-{producer['name']}-to-{worker['name']}"
    jobs = spec_for(producer["name"], worker["name"])
    spec_path = Path(workdir) / f"{queue}.json"
    spec_path.write_text(json.dumps({"jobs": jobs}))
    job_ids = run_agent(producer, "produce", addr, queue, "--spec", str(spec_path))["job_ids"]
    reserves_before = reserve_calls(metrics_url)
    answer = run_agent(worker, "work", addr, queue, "--count", str(len(jobs)))
    streamed = reserve_calls(metrics_url) == reserves_before
    seen = answer["jobs"]
    problems = []
    # Over the stream whenever both sides can (the server answered no Reserve call meanwhile);
    # with reserve calls otherwise. An agent that reports `streamed` must agree.
    expected = bool(worker["streams"] and "consume" in features)
    if streamed is not expected:
        problems.append(f"{worker['name']}'s Worker streamed={streamed} (Reserve calls seen), expected {expected}")
    if "streamed" in answer and answer["streamed"] is not streamed:
        problems.append(f"{worker['name']}'s Worker reported streamed={answer['streamed']!r}, the server saw {streamed}")
    if "cancel" in features:
        unsettled = run_agent(our_python(), "settled", addr, queue, "--ids", ",".join(job_ids))["unsettled"]
        if unsettled:
            problems.append(f"the server still holds jobs the worker handled (not acked): {unsettled}")
    if len(job_ids) != len(jobs) or sorted(job_ids) != sorted(job["id"] for job in seen):
        problems.append(f"job ids differ: produced {job_ids}, handled {[job['id'] for job in seen]}")
    by_id = {job["id"]: job for job in seen}
    for job_id, sent in zip(job_ids, jobs):
        got = by_id.get(job_id)
        if got is None:
            continue
        for field in ("job_type", "payload_b64", "encoding", "traceparent"):
            if got[field] != sent[field]:
                problems.append(f"job {job_id}: {field} sent {sent[field]!r}, handled {got[field]!r}")
        if not same_typed(sent["custom"], got["custom"]):
            problems.append(f"job {job_id}: custom sent {sent['custom']!r}, handled {got['custom']!r}")
    return problems


def main():
    chosen = agents()
    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="sepp-interop-") as workdir:
        server, addr, metrics_url = start_server(workdir)
        try:
            features = run_agent(our_python(), "info", addr, "-")["features"]
            if "consume" not in features:
                print("interop: the server has no Consume stream: every Worker must reserve", file=sys.stderr)
            if "cancel" not in features:
                print("interop: the server cannot cancel: acks are not checked on it", file=sys.stderr)
            for producer, worker in itertools.product(chosen, chosen):
                pair = f"{producer['name']} -> {worker['name']}"
                try:
                    problems = check_pair(producer, worker, addr, metrics_url, workdir, features)
                except (AssertionError, subprocess.TimeoutExpired, json.JSONDecodeError, KeyError) as error:
                    problems = [str(error)]
                if problems:
                    failed += 1
                    print(f"FAIL {pair}", file=sys.stderr)
                    for problem in problems:
                        print(f"  {problem}", file=sys.stderr)
                else:
                    passed += 1
        finally:
            server.kill()
            server.wait()
    print(f"interop: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
