#!/usr/bin/env bash
# Lays out what a gpuflow runtime image holds, from a build's bin/ directory,
# as a tree to copy onto the image's root:
#
#   deploy/image/stage.sh BIN_DIR STAGE_DIR [CUDA_INCLUDE_DIR]
#
#   usr/local/bin/gpuflowd, gpuflow       the server and the CLI (debug info stripped)
#   usr/local/bin/gpuflow-health          the gRPC health check (HEALTHCHECK, exec probes)
#   opt/gpuflow/cuda/lib/                 the CUDA libraries gpuflowd links (NVRTC,
#                                         cuBLAS, cuBLASLt) and NVRTC's builtins, and
#   opt/gpuflow/cuda/include/             the CUDA and CCCL headers NVRTC compiles the
#                                         generated kernels against: CUDA builds only
#   etc/ld.so.conf.d/gpuflow-cuda.conf    where the loader finds those libraries
#   usr/share/gpuflow/runtime-packages    the distribution packages that own every other
#                                         library the binaries need (ldd, dpkg -S), plus
#                                         python3-grpcio for gpuflow-health
#   usr/share/gpuflow/install-runtime     run in the image as root: installs those
#                                         packages, adds the user, checks every library
#                                         resolves
#
# Both Dockerfile targets run it in their build stage, and the image test
# (tests/python/test_deploy_image.py) runs it on build/bin to pack an image
# without compiling in a container. The package names come from the build
# machine's own package database, so the runtime stage must be the same
# distribution release as the build stage (Debian 12 for cpu, Ubuntu 24.04
# for cuda).
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 BIN_DIR STAGE_DIR [CUDA_INCLUDE_DIR (default /usr/local/cuda/include)]" >&2
  exit 2
fi
bin_dir=$1
stage=$2
cuda_include=${3:-/usr/local/cuda/include}
here=$(cd "$(dirname "$0")" && pwd)

rm -rf "$stage"
mkdir -p "$stage/usr/local/bin" "$stage/usr/share/gpuflow"
for b in gpuflowd gpuflow; do
  [ -x "$bin_dir/$b" ] || { echo "stage: $bin_dir/$b is missing (build targets gpuflowd and gpuflow)" >&2; exit 1; }
  strip --strip-debug -o "$stage/usr/local/bin/$b" "$bin_dir/$b"
done
install -m 0755 "$here/gpuflow-health" "$stage/usr/local/bin/gpuflow-health"
install -m 0755 "$here/install-runtime" "$stage/usr/share/gpuflow/install-runtime"

# Every shared library the binaries load, as ldd resolves it here.
libs=$(ldd "$bin_dir/gpuflowd" "$bin_dir/gpuflow" | awk '
  /not found/ { print "MISSING " $1; next }
  $2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u)
if grep -q '^MISSING' <<<"$libs"; then
  echo "stage: libraries not found by ldd: $(grep '^MISSING' <<<"$libs" | cut -d' ' -f2 | tr '\n' ' ')" >&2
  exit 1
fi

packages=()
cuda_libs=()
for lib in $libs; do
  case $lib in
    */cuda*/*) cuda_libs+=("$lib"); continue ;;
  esac
  owner=""
  for candidate in "$lib" "/usr$lib" "$(realpath "$lib")"; do
    owner=$(dpkg -S "$candidate" 2>/dev/null | head -n1 | cut -d: -f1,2 | sed 's/: .*//') && [ -n "$owner" ] && break
  done
  if [ -z "$owner" ]; then
    echo "stage: no package owns $lib: the image could not install it" >&2
    exit 1
  fi
  packages+=("$owner")
done
packages+=(python3-grpcio)
printf '%s\n' "${packages[@]}" | sort -u > "$stage/usr/share/gpuflow/runtime-packages"

if [ ${#cuda_libs[@]} -gt 0 ]; then
  mkdir -p "$stage/opt/gpuflow/cuda/lib" "$stage/etc/ld.so.conf.d"
  for lib in "${cuda_libs[@]}"; do
    # The soname link and the file it names (cp -a keeps the link a link).
    cp -a "$lib" "$stage/opt/gpuflow/cuda/lib/"
    [ "$(realpath "$lib")" = "$lib" ] || cp -a "$(realpath "$lib")" "$stage/opt/gpuflow/cuda/lib/"
    case $(basename "$lib") in
      libnvrtc.so.*)
        # NVRTC loads its builtins at run time (dlopen): ldd cannot see them.
        cp -a "$(dirname "$lib")"/libnvrtc-builtins.so* "$stage/opt/gpuflow/cuda/lib/" ;;
    esac
  done
  [ -f "$cuda_include/cuda_fp16.h" ] || { echo "stage: no CUDA headers in $cuda_include" >&2; exit 1; }
  [ -d "$cuda_include/cccl" ] || [ -d "$cuda_include/cub" ] || { echo "stage: no CCCL headers in $cuda_include" >&2; exit 1; }
  cp -a "$(realpath "$cuda_include")" "$stage/opt/gpuflow/cuda/include"
  echo /opt/gpuflow/cuda/lib > "$stage/etc/ld.so.conf.d/gpuflow-cuda.conf"
fi
echo "stage: $stage: $(wc -l < "$stage/usr/share/gpuflow/runtime-packages") package(s), ${#cuda_libs[@]} CUDA librar(ies)"
