#!/usr/bin/env bash
# Renders the chart of `sepp-bench peers` as a PNG beside its SVG:
#
#   crates/sepp-bench/peers/chart.sh docs/benchmarks/peers/peers.svg
#
# with rsvg-convert (Debian's librsvg2-bin; `apt-get install -y librsvg2-bin` when it is missing).
set -euo pipefail
svg="$1"
if ! command -v rsvg-convert >/dev/null; then
  echo "chart.sh: rsvg-convert is missing (apt-get install -y librsvg2-bin); only the SVG is written" >&2
  exit 1
fi
rsvg-convert --background-color=white -o "${svg%.svg}.png" "$svg"
