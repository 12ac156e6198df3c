#!/usr/bin/env bash
# Tests the TypeScript client (sepp-js) against a sepp server binary:
#
#   SEPP_BIN=/path/to/sepp clients/typescript/scripts/test.sh
#
# Installs the locked dependencies (npm ci), checks that src/gen matches a fresh generation from
# the repository's proto, typechecks (strict), lints, builds the package and checks that the
# committed dist/ equals that build, then runs the unit tests
# and the integration tests (the real server on port 0 with temporary data directories, the packed
# package without OpenTelemetry, the examples, and every README example). Quiet on success; a
# failing step prints its output.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if [[ -z "${SEPP_BIN:-}" || ! -x "${SEPP_BIN}" ]]; then
  echo "test.sh: SEPP_BIN must name the sepp server binary to test (got '${SEPP_BIN:-}')" >&2
  exit 2
fi
SEPP_BIN="$(cd "$(dirname "$SEPP_BIN")" && pwd)/$(basename "$SEPP_BIN")"
export SEPP_BIN

log="$(mktemp)"
scratch="$(mktemp -d)"
trap 'rm -rf "$log" "$scratch"' EXIT

# Runs a step with its output kept aside, and shows it only when the step fails.
step() {
  local name="$1"
  shift
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "test.sh: $name failed" >&2
    exit 1
  fi
}

step "npm ci" npm ci --no-audit --no-fund --prefer-offline
# Tells tests/interop/run.sh that these dependencies match the lock file.
sha256sum package-lock.json | cut -d' ' -f1 > node_modules/.sepp-lock.sha256
# The committed stubs must be what buf and ts-proto generate from the proto today.
step "code generation" npx buf generate ../../proto --template buf.gen.yaml --output "$scratch"
if ! diff -r "$scratch/src/gen" src/gen >"$log" 2>&1; then
  cat "$log" >&2
  echo "test.sh: src/gen differs from a fresh generation; run 'npm run gen' and commit the result" >&2
  exit 1
fi
step "typecheck" npx tsc --noEmit
step "lint" npx biome ci --colors=off .
# dist/ is committed, so that installing the package from a checkout needs no build step; it must
# be exactly what the build makes from the sources today.
mkdir -p "$scratch/committed-dist"
if [[ -d dist ]]; then cp -r dist/. "$scratch/committed-dist/"; fi
step "build" npm run build
if ! diff -r "$scratch/committed-dist" dist >"$log" 2>&1; then
  cat "$log" >&2
  echo "test.sh: the committed dist/ differs from a fresh build; run 'npm run build' and commit dist/" >&2
  exit 1
fi

tests=(test/unit/*.test.ts test/integration/*.test.ts)
if ! node --import tsx --test --test-timeout=120000 --test-reporter=spec "${tests[@]}" >"$log" 2>&1; then
  cat "$log" >&2
  echo "test.sh: tests failed" >&2
  exit 1
fi
pass="$(sed -n 's/^ℹ pass \([0-9]*\)$/\1/p' "$log")"
fail="$(sed -n 's/^ℹ fail \([0-9]*\)$/\1/p' "$log")"
echo "sepp-js: ${pass:-?} passed, ${fail:-?} failed"
