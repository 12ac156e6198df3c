#!/usr/bin/env bash
# Instructions per job of the release `sepp` under callgrind, with observability off, with
# metrics + the Prometheus endpoint on (scraped every second), and with tracing at ratio 1.0
# exporting to an OTLP receiver (sepp-bench otlp-sink). Each setting runs the single-job load
# (`sepp-bench run`, 8 connections, enqueue then reserve + ack) twice, with LOW and HIGH jobs;
# the difference divided by HIGH - LOW is the cost of one job, without startup and shutdown.
# Instruction counts do not depend on how busy the machine is. Used for docs/benchmarks.md.
# SEPP_BIN picks another server binary (e.g. a build of an older commit), SETTINGS a subset
# (or adds `tracing-0.1`: tracing at ratio 0.1).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sepp-target}"
low="${LOW:-500}"
high="${HIGH:-2500}"
bin="${SEPP_BIN:-$CARGO_TARGET_DIR/release/sepp}"
bench="$CARGO_TARGET_DIR/release/sepp-bench"
work="$(mktemp -d)"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

port_of() { # file needle
  for _ in $(seq 600); do
    if line="$(grep -a "$2" "$1" 2>/dev/null | head -1)" && [[ -n "$line" ]]; then
      sed -E 's/.*127\.0\.0\.1:([0-9]+).*/\1/' <<<"$(sed 's/\x1b\[[0-9;]*m//g' <<<"$line")"
      return
    fi
    sleep 0.1
  done
  echo "no '$2' in $1" >&2; cat "$1" >&2; exit 1
}

"$bench" otlp-sink --listen 127.0.0.1:0 > "$work/sink.log" 2>&1 &
pids+=($!)
sink_port="$(port_of "$work/sink.log" "otlp sink listening")"

measure() { # setting jobs -> instructions
  local setting="$1" jobs="$2" dir="$work/$1-$2"
  mkdir -p "$dir"
  {
    printf '[server]\nlisten_addr = "127.0.0.1:0"\ndb_path = "%s/data"\n\n[storage]\npersist_mode = "buffer"\n\n[admin]\nenabled = false\n' "$dir"
    case "$setting" in
      metrics) printf '\n[metrics]\nprometheus_enabled = true\nprometheus_listen_addr = "127.0.0.1:0"\n' ;;
      tracing) printf '\n[tracing]\nenabled = true\notlp_endpoint = "http://127.0.0.1:%s"\nsample_ratio = 1.0\n' "$sink_port" ;;
      tracing-0.1) printf '\n[tracing]\nenabled = true\notlp_endpoint = "http://127.0.0.1:%s"\nsample_ratio = 0.1\n' "$sink_port" ;;
    esac
  } > "$dir/sepp.toml"
  RUST_LOG=sepp=info valgrind --tool=callgrind --callgrind-out-file="$dir/callgrind.out" \
    "$bin" --config "$dir/sepp.toml" > "$dir/sepp.log" 2>&1 &
  local server=$!
  local port scraper=""
  port="$(port_of "$dir/sepp.log" "queue server listening")"
  if [[ "$setting" == metrics ]]; then
    local metrics_port
    metrics_port="$(port_of "$dir/sepp.log" "prometheus metrics endpoint listening")"
    (while sleep 1; do curl -s "http://127.0.0.1:$metrics_port/metrics" > /dev/null || true; done) &
    scraper=$!
  fi
  "$bench" run --addr "127.0.0.1:$port" --connections 8 --jobs "$jobs" --latency-rounds 0 > "$dir/run.log" 2>&1
  [[ -n "$scraper" ]] && kill "$scraper"
  kill -TERM "$server"
  wait "$server" || true
  [[ -n "${KEEP_DIR:-}" ]] && cp "$dir/callgrind.out" "$KEEP_DIR/$(basename "$bin")-$setting-$jobs.out"
  grep -E '^summary:' "$dir/callgrind.out" | awk '{print $2}'
}

printf '| setting | instructions, %s jobs | instructions, %s jobs | per job |\n|---|---:|---:|---:|\n' "$low" "$high"
for setting in ${SETTINGS:-off metrics tracing}; do
  a="$(measure "$setting" "$low")"
  b="$(measure "$setting" "$high")"
  printf '| %s | %s | %s | %s |\n' "$setting" "$a" "$b" "$(( (b - a) / (high - low) ))"
done
