#!/usr/bin/env bash
# Run the sepp conformance suite (Python, official sepp-py client) against a
# sepp server binary.
#
#   SEPP_BIN=/path/to/sepp tests/conformance/python/run.sh [pytest args...]
#
# SEPP_BIN   server binary to test (required)
# SEPP_VENV  virtualenv to create/reuse (default: $HOME/.cache/sepp-venv)
# PYTHON     interpreter used to create the venv (default: python3)
#
# Extra arguments go to pytest, e.g. -m "not improvement" against sepp 0.1.1.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

if [[ -z "${SEPP_BIN:-}" ]]; then
    echo "run.sh: SEPP_BIN is not set; point it at the sepp server binary to test," >&2
    echo "        e.g. SEPP_BIN=target/release/sepp $0" >&2
    exit 2
fi
if [[ ! -x "$SEPP_BIN" ]]; then
    echo "run.sh: SEPP_BIN=$SEPP_BIN is not an executable file" >&2
    exit 2
fi
SEPP_BIN="$(cd "$(dirname "$SEPP_BIN")" && pwd)/$(basename "$SEPP_BIN")"
export SEPP_BIN

venv="${SEPP_VENV:-$HOME/.cache/sepp-venv}"
req="$here/requirements.txt"
want="$(sha256sum "$req" | cut -d' ' -f1)"
stamp="$venv/.sepp-requirements.sha256"

if [[ ! -x "$venv/bin/python" ]]; then
    echo "run.sh: creating virtualenv at $venv" >&2
    "${PYTHON:-python3}" -m venv "$venv"
fi
if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    echo "run.sh: installing $req into $venv" >&2
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
    echo "$want" > "$stamp"
fi

cd "$here"
exec "$venv/bin/python" -m pytest -q "$here" "$@"
