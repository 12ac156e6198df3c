#!/usr/bin/env bash
# Regenerates the committed protobuf/gRPC stubs under src/sepp/v1/ from proto/sepp/v1/queue.proto.
#
#   scripts/gen_stubs.sh          write the stubs
#   scripts/gen_stubs.sh --check  fail (exit 1) if the committed stubs differ from fresh ones
#
# PYTHON must have grpcio-tools installed (the pinned version in requirements/dev.txt): the
# generated code records that version, so another one produces different files.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
proto_root="$(cd "$here/../../proto" && pwd)"
python="${PYTHON:-python3}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

"$python" -m grpc_tools.protoc -I "$proto_root" \
    --python_out="$out" --pyi_out="$out" --grpc_python_out="$out" \
    "$proto_root/sepp/v1/queue.proto"

target="$here/src/sepp/v1"
files=(queue_pb2.py queue_pb2.pyi queue_pb2_grpc.py)
if [[ "${1:-}" == "--check" ]]; then
    status=0
    for f in "${files[@]}"; do
        if ! diff -q "$out/sepp/v1/$f" "$target/$f" >/dev/null 2>&1; then
            echo "gen_stubs: src/sepp/v1/$f is stale; run clients/python/scripts/gen_stubs.sh" >&2
            status=1
        fi
    done
    exit $status
fi
for f in "${files[@]}"; do
    cp "$out/sepp/v1/$f" "$target/$f"
done
echo "gen_stubs: wrote ${files[*]} to src/sepp/v1/"
