#!/usr/bin/env bash
# Cross-language interop: jobs enqueued by each client are handled by every client's Worker.
#
#   SEPP_BIN=/path/to/sepp tests/interop/run.sh
#
# SEPP_BIN                  the server binary (required)
# SEPP_INTEROP_RUST_AGENT   the built Rust agent; built with cargo (in $CARGO_TARGET_DIR) when unset
# SEPP_INTEROP_VENV         virtualenv for sepp-py 0.1.0 (default: $HOME/.cache/sepp-interop-venv)
# SEPP_INTEROP_PYTHON_VENV  virtualenv for our Python client (default: $HOME/.cache/sepp-interop-python-venv)
#
# Builds what is missing (the TypeScript package's npm dependencies and build, the Rust agent, the
# sepp-py and Python client virtualenvs), reusing it on later runs, then runs interop.py. Quiet on success.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"

if [[ -z "${SEPP_BIN:-}" || ! -x "${SEPP_BIN}" ]]; then
  echo "run.sh: SEPP_BIN must name the sepp server binary to test (got '${SEPP_BIN:-}')" >&2
  exit 2
fi
SEPP_BIN="$(cd "$(dirname "$SEPP_BIN")" && pwd)/$(basename "$SEPP_BIN")"
export SEPP_BIN

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
quiet() {
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "run.sh: failed: $*" >&2
    exit 1
  fi
}

# TypeScript agent: the package's build. Install and build only when they are missing or stale.
ts="$root/clients/typescript"
lock_hash="$(sha256sum "$ts/package-lock.json" | cut -d' ' -f1)"
if [[ ! -f "$ts/node_modules/.sepp-lock.sha256" || "$(cat "$ts/node_modules/.sepp-lock.sha256")" != "$lock_hash" ]]; then
  (cd "$ts" && quiet npm ci --no-audit --no-fund --prefer-offline)
  echo "$lock_hash" > "$ts/node_modules/.sepp-lock.sha256"
fi
if [[ ! -f "$ts/build/agent.js" ]] || [[ -n "$(find "$ts/src" "$ts/interop" "$ts/package.json" "$ts/tsup.config.ts" -newer "$ts/build/agent.js" -print -quit)" ]]; then
  (cd "$ts" && quiet npm run build)
fi

# Rust agent: the sepp-client example.
if [[ -z "${SEPP_INTEROP_RUST_AGENT:-}" ]]; then
  export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sepp-target}"
  (cd "$root" && quiet cargo build --example interop_agent -p sepp-client --locked)
  SEPP_INTEROP_RUST_AGENT="$CARGO_TARGET_DIR/debug/examples/interop_agent"
fi
export SEPP_INTEROP_RUST_AGENT

# The official Python client, sepp-py 0.1.0, in a virtualenv of its own.
venv="${SEPP_INTEROP_VENV:-$HOME/.cache/sepp-interop-venv}"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [[ ! -x "$venv/bin/python" ]]; then
  quiet "${PYTHON:-python3}" -m venv "$venv"
fi
if [[ ! -f "$venv/.sepp-requirements.sha256" || "$(cat "$venv/.sepp-requirements.sha256")" != "$want" ]]; then
  quiet "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$here/requirements.txt"
  echo "$want" > "$venv/.sepp-requirements.sha256"
fi
export SEPP_INTEROP_SEPP_PY="$venv/bin/python"

# Our Python client, installed from clients/python as a user would; reinstalled when it changed.
ours="${SEPP_INTEROP_PYTHON_VENV:-$HOME/.cache/sepp-interop-python-venv}"
py="$root/clients/python"
want="$(cd "$py" && find src pyproject.toml README.md -type f ! -name '*.pyc' -print0 | sort -z \
  | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
if [[ ! -x "$ours/bin/python" ]]; then
  quiet "${PYTHON:-python3}" -m venv "$ours"
fi
if [[ ! -f "$ours/.sepp-client.sha256" || "$(cat "$ours/.sepp-client.sha256")" != "$want" ]]; then
  quiet "$ours/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall \
    -c "$py/requirements/plain.txt" "$py"
  echo "$want" > "$ours/.sepp-client.sha256"
fi
export SEPP_INTEROP_PYTHON="$ours/bin/python"

exec python3 "$here/interop.py"
