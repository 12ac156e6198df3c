#!/usr/bin/env bash
# The observability stage of the test command: installs a real Prometheus server (Debian's
# `prometheus` package) when it is missing, then runs the end-to-end test in which it scrapes
# the server's /metrics endpoint and the test queries its HTTP API for every metric family
# (crates/sepp-server/tests/observability.rs, the ignored test this stage runs).
set -euo pipefail
cd "$(dirname "$0")/../.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sepp-target}"

if [[ -z "${SEPP_PROMETHEUS_BIN:-}" ]] && ! [[ -x /usr/bin/prometheus ]]; then
  echo "installing prometheus (Debian package)"
  sudo_cmd=()
  if [[ "$(id -u)" != 0 ]]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y --no-install-recommends prometheus
fi
export SEPP_PROMETHEUS_BIN="${SEPP_PROMETHEUS_BIN:-/usr/bin/prometheus}"
"$SEPP_PROMETHEUS_BIN" --version | head -1

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run -p sepp-server --test observability --locked --run-ignored only
else
  cargo test -p sepp-server --test observability --locked -- --ignored
fi
