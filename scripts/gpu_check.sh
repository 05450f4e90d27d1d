#!/usr/bin/env bash
# On a GPU host, with a bundle built here (see bench/README.md):
#   scripts/gpu_check.sh OUTDIR
# Runs the GPU benchmark and the conformance suite against the CUDA backend
# (SKIP_BENCH=1 or SKIP_CONFORMANCE=1 leave one out).
set -uo pipefail
out=${1:-/tmp/gpuflow-out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$PWD/dist/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONPATH=$PWD/clients/python PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
dir=$(mktemp -d)
dist/bin/gpuflowd --backend=cuda --port=0 --port_file="$dir/port" --max_session_memory_limit=64GiB \
  --default_session_memory_limit=16GiB --max_array_bytes=32GiB >"$out/gpuflowd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.1; done
[ -s "$dir/port" ] || { echo "gpuflowd did not start"; cat "$out/gpuflowd.log"; exit 1; }
[ "${SKIP_BENCH:-0}" = 1 ] || timeout 480 python3 bench/gpu_bench.py --budget 420 --target "localhost:$(cat "$dir/port")" \
  --out "$out/gpu_results.json" 2>&1 | tail -60
kill -TERM $pid; wait $pid
echo "gpuflowd exit: $?"
tail -5 "$out/gpuflowd.log"
echo "transfer (256 MiB, 1 MiB chunks), gpuflowd (cuda) vs bare gRPC:"
[ "${SKIP_BENCH:-0}" = 1 ] || bench/transfer.sh dist --bytes=256MiB --chunk_bytes=1MiB --repeats=7 | tee "$out/transfer.md"
if [ "${SKIP_CONFORMANCE:-0}" != 1 ]; then
  GPUFLOW_TEST_BACKEND=cuda GPUFLOW_SERVER_BIN=$PWD/dist/bin/gpuflowd timeout 300 \
    python3 -m pytest -q -p no:cacheprovider -n 8 tests/python >"$out/pytest_cuda.log" 2>&1
  echo "pytest exit: $?"
  grep -E "^(FAILED|ERROR)" "$out/pytest_cuda.log" | head -60
  tail -3 "$out/pytest_cuda.log"
fi
