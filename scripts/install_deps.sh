#!/usr/bin/env bash
# Installs the Debian 12 packages gpuflow needs to build and test, when any
# are missing (as root, or through sudo). Safe to run again: it installs
# nothing when everything is present. The CUDA toolkit is optional and is
# never installed here (it is used when found at /usr/local/cuda).
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config make
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  libcivetweb-dev libssl-dev libgtest-dev libgmock-dev libbenchmark-dev
  clang-format
  # make fuzz: clang with libFuzzer (tests/fuzz)
  clang libfuzzer-14-dev
  python3 python3-grpcio python3-protobuf python3-numpy python3-pytest
  # promtool and a real Prometheus for tests/python/test_observability.py
  prometheus
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install_deps: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null; then
  sudo=(sudo)
else
  echo "install_deps: missing packages (${missing[*]}) and neither root nor sudo" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
