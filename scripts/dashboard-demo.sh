#!/usr/bin/env bash
# Renders docs/grafana/sepp-dashboard.png: starts a release `sepp` with its Prometheus endpoint,
# a real Prometheus scraping it every second, and a mixed workload (sepp-bench dashboard-load)
# for SECONDS (default 150); then draws the dashboard's queries from Prometheus' API with
# scripts/render-dashboard.py (which needs matplotlib: `pip install matplotlib`).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sepp-target}"
seconds="${SECONDS_OF_LOAD:-150}"
python="${PYTHON:-python3}"
prometheus="${SEPP_PROMETHEUS_BIN:-/usr/bin/prometheus}"

cargo build --release --locked -p sepp-server -p sepp-bench
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { "$python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
grpc_port="$(free_port)"
metrics_port="$(free_port)"
prom_port="$(free_port)"

cat > "$work/sepp.toml" <<EOF
[server]
listen_addr = "127.0.0.1:$grpc_port"
db_path = "$work/data"

[storage]
dead_letter_retention_ms = 3600000

[metrics]
prometheus_enabled = true
prometheus_listen_addr = "127.0.0.1:$metrics_port"
EOF
"$CARGO_TARGET_DIR/release/sepp" --config "$work/sepp.toml" > "$work/sepp.log" 2>&1 &
pids+=($!)

cat > "$work/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: sepp
    static_configs:
      - targets: ["127.0.0.1:$metrics_port"]
EOF
"$prometheus" --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prom" \
  --web.listen-address="127.0.0.1:$prom_port" > "$work/prometheus.log" 2>&1 &
pids+=($!)

for _ in $(seq 100); do
  if grep -q "queue server listening" "$work/sepp.log" && curl -sf "http://127.0.0.1:$prom_port/-/ready" > /dev/null; then
    break
  fi
  sleep 0.2
done

"$CARGO_TARGET_DIR/release/sepp-bench" dashboard-load --addr "127.0.0.1:$grpc_port" --seconds "$seconds"
sleep 3
minutes="$("$python" -c "print(($seconds + 10) / 60)")"
"$python" scripts/render-dashboard.py --prometheus "http://127.0.0.1:$prom_port" --minutes "$minutes" \
  --out docs/grafana/sepp-dashboard.png
