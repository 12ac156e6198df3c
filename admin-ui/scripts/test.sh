#!/usr/bin/env bash
# Tests of the admin UI: installs the locked npm dependencies, typechecks, lints, runs the unit
# tests, rebuilds the bundle and fails if it differs from the committed admin-ui/dist, then runs
# the browser tests (Debian's chromium) against the server binary named by $SEPP_BIN.
set -euo pipefail

: "${SEPP_BIN:?SEPP_BIN must name the sepp server binary to test against}"
SEPP_BIN="$(cd "$(dirname "$SEPP_BIN")" && pwd)/$(basename "$SEPP_BIN")"
export SEPP_BIN
cd "$(dirname "$0")/.."

export npm_config_cache="${npm_config_cache:-$HOME/.cache/sepp-npm}"
export npm_config_update_notifier=false

echo "== admin-ui: npm ci"
npm ci --no-audit --no-fund

echo "== admin-ui: typecheck"
npx vue-tsc --noEmit -p tsconfig.json

echo "== admin-ui: lint"
npx eslint .

echo "== admin-ui: unit tests"
npx vitest run

echo "== admin-ui: build (must match the committed dist/)"
npx vite build --logLevel warn
if [ -n "$(git status --porcelain -- dist)" ]; then
  echo "admin-ui/dist differs from what is committed; run 'npm run build' in admin-ui/ and commit dist/:" >&2
  git status --short -- dist >&2
  exit 1
fi

if [ ! -x /usr/bin/chromium ] && [ -z "${CHROMIUM_BIN:-}" ]; then
  echo "== admin-ui: installing chromium"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

echo "== admin-ui: browser tests against $SEPP_BIN"
node --test --test-concurrency=1 --test-timeout=600000 e2e/*.test.mjs
