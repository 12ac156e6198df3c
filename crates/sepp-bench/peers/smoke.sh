#!/usr/bin/env bash
# A smoke run of every peer driver of `sepp-bench peers`: a few hundred jobs through each phase
# (enqueue, drain, round trips) of every scenario (a connection per producer: single/8,
# single/50, batch64/8; one shared client: shared/50) and every target whose server is reachable
# here, sepp included. Peers whose server is not reachable (PostgreSQL on 127.0.0.1:5432,
# RabbitMQ on 127.0.0.1:5672, a redis-server, nats-server or beanstalkd binary) are skipped with a
# message saying why. No speed is asserted: it checks that each driver completes its phases,
# that each drain leaves its queue empty, and that every measured target has its shared/50 row.
#
#   SEPP_BENCH_BIN=/path/to/sepp-bench SEPP_BIN=/path/to/sepp crates/sepp-bench/peers/smoke.sh
#
# Installs the drivers' locked dependencies with npm ci; downloads nothing else.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

for var in SEPP_BENCH_BIN SEPP_BIN; do
  if [[ -z "${!var:-}" || ! -x "${!var}" ]]; then
    echo "smoke.sh: $var must name the binary to use (got '${!var:-}')" >&2
    exit 2
  fi
done
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "smoke.sh: node and npm are needed for the peer drivers" >&2
  exit 2
fi

(cd node && npm ci --no-audit --no-fund --loglevel=error >/dev/null)

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# A phase of a few hundred jobs takes seconds; one that has not finished in two minutes hangs.
export SEPP_PEERS_DRIVER_TIMEOUT_S="${SEPP_PEERS_DRIVER_TIMEOUT_S:-120}"
run() {
  "$SEPP_BENCH_BIN" peers --no-install --ours-bin "$SEPP_BIN" --jobs 200 --rounds 1 --latency-rounds 20 \
    --out "$out" >"$out/tables.txt"
}
# One BullMQ drain hung once in about eighty runs, in the peer's own client (cause unknown), so a
# failed run gets one more try; two failures in a row fail the smoke run.
if ! run; then
  echo "peers smoke: the run above failed; running it once more" >&2
  run
fi
grep -q '^| sepp sync_all |' "$out/peers.md"
grep -q '^| sepp sync_all | shared/50 | shared |' "$out/peers.md"
python3 - "$out/peers.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))
for name, why in results["skipped"]:
    print(f"peers smoke: skipped {name}: {why}")
measured = sorted({run["target"] for run in results["runs"]})
for target in measured:
    shared = [run for run in results["runs"] if run["target"] == target and run["scenario"] == "shared/50"]
    phases = sorted(run["report"]["phase"] for run in shared)
    if phases != ["drain", "enqueue-single"] or any(run["shape"] != "shared" for run in shared):
        sys.exit(f"peers smoke: {target} has no complete shared/50 row: {phases}")
print("peers smoke: every phase completed for " + ", ".join(measured))
PY
