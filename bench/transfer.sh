#!/usr/bin/env bash
# Transfer benchmark: gpuflowd vs a bare gRPC echo server, same machine, same
# chunk size. Usage: bench/transfer.sh [BUILD_DIR] [extra transfer_bench flags]
set -euo pipefail
build=${1:-build}; shift || true
bin=$build/bin
dir=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
"$bin/gpuflowd" --port=0 --port_file="$dir/port" --max_session_memory_limit=8GiB \
  --max_array_bytes=4GiB 2>"$dir/gpuflowd.log" &
"$bin/grpc_echo_server" --port=0 >"$dir/echo_port" &
for _ in $(seq 100); do [ -s "$dir/port" ] && [ -s "$dir/echo_port" ] && break; sleep 0.1; done
"$bin/transfer_bench" --gpuflow="localhost:$(cat "$dir/port")" \
  --echo="localhost:$(head -1 "$dir/echo_port")" "$@"
