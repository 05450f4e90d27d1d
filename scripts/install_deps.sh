#!/usr/bin/env bash
# Installs the Debian 12 packages gpuflow needs to build and test, when any
# are missing (as root, or through sudo). Safe to run again: it installs
# nothing when everything is present. The CUDA toolkit is optional and is
# never installed here (it is used when found at /usr/local/cuda).
#
#   scripts/install_deps.sh           build and test (make test)
#   scripts/install_deps.sh --build   only what building gpuflowd and gpuflow
#                                     takes (the Dockerfile's build stages:
#                                     Debian 12, or Ubuntu 24.04 for CUDA)
#   scripts/install_deps.sh --image   make test's and a container engine's
#                                     (make test-image: podman, debootstrap)
#   ... --list                        prints the packages instead
set -euo pipefail

mode=test
list=false
for arg in "$@"; do
  case $arg in
    --build | --image) mode=$arg ;;
    --list) list=true ;;
    *) echo "usage: $0 [--build | --image] [--list]" >&2; exit 2 ;;
  esac
done

packages=(
  cmake ninja-build g++ pkg-config make
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  libcivetweb-dev prometheus-cpp-dev libssl-dev
)
if [ "$mode" != --build ]; then
  packages+=(
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-format
  # make fuzz: clang with libFuzzer (tests/fuzz)
  clang libfuzzer-14-dev
  python3 python3-grpcio python3-protobuf python3-numpy python3-pytest
  # promtool and a real Prometheus for tests/python/test_observability.py,
  # test_deploy_alerts.py and test_deploy_dashboard.py
  prometheus
  # test_deploy_manifests.py reads the rendered manifests
  python3-yaml
  # test_security.py and tls_credentials_test make TLS certificates with it
  openssl
  )
  # `kubectl kustomize` for test_deploy_manifests.py. Debian's kubectl is
  # kubernetes-client; a kubectl already installed from elsewhere (another
  # package owning /usr/bin/kubectl) is used as it is.
  command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)
fi
if [ "$mode" = --image ]; then
  # runc: crun refuses hosts with hybrid cgroup hierarchies.
  packages+=(podman buildah debootstrap runc uidmap)
fi
if $list; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

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
