#!/usr/bin/env bash
# Tests of the Python client: the stub check, ruff, mypy --strict, the whole pytest suite twice
# (once with the otel extra, once without it), and finally the repository's conformance suite
# for the official sepp-py 0.1 (tests/conformance/python), run with this client in its place to
# show that code written for sepp-py 0.1 runs on it unchanged, and sepp-py 0.1.0's own unit tests
# of its errors and types (test_errors.py, test_types.py, from its sdist on PyPI, fetched once
# into the cache), run with this client installed as `sepp` in place of 0.1.0's.
#
#   SEPP_BIN=/path/to/sepp clients/python/scripts/test.sh [pytest args...]
#
# SEPP_BIN   the server binary the integration tests start (required)
# PYTHON     the interpreter the virtualenvs are made from (default: python3)
#
# The virtualenvs live in $HOME/.cache/sepp-py-client/{dev,plain}. Each is (re)filled from its
# pinned requirements file only when that file changed, and the client is reinstalled into
# both, as a built wheel, only when its sources changed, so a run with warm caches spends its
# time in the tests.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="$HOME/.cache/sepp-py-client"

if [[ -z "${SEPP_BIN:-}" || ! -x "${SEPP_BIN}" ]]; then
    echo "test.sh: SEPP_BIN must name the sepp server binary (got '${SEPP_BIN:-}')" >&2
    exit 2
fi
SEPP_BIN="$(cd "$(dirname "$SEPP_BIN")" && pwd)/$(basename "$SEPP_BIN")"
export SEPP_BIN

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
quiet() {
    if ! "$@" >"$log" 2>&1; then
        cat "$log" >&2
        echo "test.sh: failed: $*" >&2
        exit 1
    fi
}

# venv NAME REQUIREMENTS: make sure the virtualenv exists and matches its requirements file.
venv() {
    local dir="$cache/$1" requirements="$here/requirements/$2"
    local want stamp="$cache/$1/.requirements.sha256"
    want="$(sha256sum "$requirements" | cut -d' ' -f1)"
    if [[ ! -x "$dir/bin/python" ]]; then
        quiet "${PYTHON:-python3}" -m venv "$dir"
    fi
    if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
        echo "test.sh: installing $2 into $dir" >&2
        quiet "$dir/bin/python" -m pip install -q --disable-pip-version-check -r "$requirements"
        echo "$want" > "$stamp"
        rm -f "$dir/.client.sha256"
    fi
}

# install NAME: build the client's wheel and install it, when its sources changed.
install_client() {
    local dir="$cache/$1" want stamp="$cache/$1/.client.sha256"
    want="$(cd "$here" && find src pyproject.toml README.md -type f ! -name '*.pyc' -print0 \
        | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)"
    if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
        quiet "$dir/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
            --no-build-isolation --force-reinstall "$here"
        echo "$want" > "$stamp"
    fi
}

venv dev dev.txt
venv plain plain.txt
install_client dev
install_client plain
dev="$cache/dev/bin"

cd "$here"
echo "== python client: generated stubs"
PYTHON="$dev/python" scripts/gen_stubs.sh --check
echo "== python client: ruff"
"$dev/ruff" check .
"$dev/ruff" format --check .
echo "== python client: mypy --strict"
"$dev/mypy"
echo "== python client: tests with the otel extra"
"$dev/python" -m pytest -q -p no:cacheprovider tests "$@"
echo "== python client: tests without the otel extra"
"$cache/plain/bin/python" -m pytest -q -p no:cacheprovider tests "$@"
echo "== python client: the conformance suite written for sepp-py 0.1, run with this client"
(cd "$here/../../tests/conformance/python" && "$dev/python" -m pytest -q -p no:cacheprovider .)
echo "== python client: sepp-py 0.1.0's test_errors.py and test_types.py, run with this client"
legacy="$cache/sepp-py-0.1.0"
if [[ ! -d "$legacy/sepp_py-0.1.0/tests" ]]; then
    quiet "$dev/python" -m pip download -q --disable-pip-version-check --no-deps \
        --no-binary :all: sepp-py==0.1.0 -d "$legacy"
    tar -xzf "$legacy/sepp_py-0.1.0.tar.gz" -C "$legacy"
    # Without 0.1.0's own sources, `import sepp` can only find this client.
    rm -rf "$legacy/sepp_py-0.1.0/src"
fi
(cd "$legacy/sepp_py-0.1.0" && "$dev/python" -m pytest -q -p no:cacheprovider \
    -o asyncio_default_fixture_loop_scope=function \
    tests/test_errors.py tests/test_types.py)
