"""gpuflow.jit translations run on the host, without a GPU: the translation as
the server compiles it (nvrtc_check.raw_kernel_source: the device library in
place of <cupy/complex.cuh>) compiled for the host by nvcc, its __device__
functions made __host__ __device__ and the bit casts it calls stubbed, and
the kernel called for every thread of the grid, one thread after another.
So kernels whose threads do not talk to each other (no __syncthreads,
shared memory or warp functions) give their results here, to compare with
NumPy on the CPU backend (which does not run raw kernels). As in
test_device_complex_math.py, the real functions are glibc's here and CUDA's
on the device: an ulp or two apart. Used by test_jit_complex.py."""

import hashlib
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

from nvrtc_check import CUDA_HOME, raw_kernel_source

NVCC = shutil.which("nvcc") or (os.path.join(CUDA_HOME, "bin", "nvcc")
                                if os.path.exists(os.path.join(CUDA_HOME, "bin", "nvcc"))
                                else None)

_PRELUDE = r"""
#include <cstdio>
#include <cstring>
__host__ __device__ inline double h_longlong_as_double(long long v) {
  double d; memcpy(&d, &v, 8); return d;
}
__host__ __device__ inline long long h_double_as_longlong(double v) {
  long long d; memcpy(&d, &v, 8); return d;
}
__host__ __device__ inline float h_int_as_float(int v) { float d; memcpy(&d, &v, 4); return d; }
__host__ __device__ inline int h_float_as_int(float v) { int d; memcpy(&d, &v, 4); return d; }
__host__ __device__ inline unsigned h_float_as_uint(float v) {
  unsigned d; memcpy(&d, &v, 4); return d;
}
// The library's block and warp helpers are never called by these kernels.
template <class T> __host__ __device__ inline T h_shfl(unsigned, T v, unsigned, int = 32) {
  return v;
}
struct h_dim3 { unsigned x, y, z; };
static h_dim3 h_blockIdx, h_threadIdx, h_blockDim, h_gridDim;
"""

_RENAMES = [("__longlong_as_double(", "h_longlong_as_double("),
            ("__double_as_longlong(", "h_double_as_longlong("),
            ("__int_as_float(", "h_int_as_float("), ("__float_as_int(", "h_float_as_int("),
            ("__float_as_uint(", "h_float_as_uint("), ("__shfl_down_sync(", "h_shfl("),
            ("__shfl_up_sync(", "h_shfl("), ("__syncthreads()", "((void)0)")]
_THREADS_TALK = re.compile(r"__syncthreads|__shared__|_sync\(|%laneid|warpSize|atomic")

_work = None


def _work_dir():
    global _work
    if _work is None:
        _work = tempfile.TemporaryDirectory(prefix="gpuflow-jit-host-")
    return _work.name


def emulates(source):
    """Whether run() can emulate this translation (threads independent, nvcc here)."""
    return NVCC is not None and not _THREADS_TALK.search(source)


def _host_source(source):
    marker = 'extern "C" __global__ void '
    head, kernel = source.split(marker, 1)
    library = raw_kernel_source(head)
    for a, b in _RENAMES:
        library = library.replace(a, b)
    library = re.sub(r"\b__device__\b", "__host__ __device__", library)
    kernel = re.sub(r"\b(blockIdx|threadIdx|blockDim|gridDim)\b", r"h_\1", kernel)
    return _PRELUDE + library + "static void " + kernel


def run(kernel, grid, block, args):
    """``kernel(grid, block, args)`` emulated on NumPy arrays and scalars (as
    gpuflow.jit types them): the arrays after the launch, in argument order
    (the arrays it does not write unchanged)."""
    source = kernel.cuda_source(*args)
    if not emulates(source):
        raise ValueError("this translation's threads talk to each other; it runs on a GPU only")
    text = _host_source(source)
    name, params = re.search(r"static void (\w+)\((.*)\) \{", text).groups()
    params = params.split(", ")
    values = [np.array(a) if isinstance(a, np.ndarray) else
              np.complex128(a) if isinstance(a, complex) else
              np.float64(a) if isinstance(a, float) else
              np.bool_(a) if isinstance(a, bool) else
              np.int64(a) if isinstance(a, int) else a for a in args]
    values += [np.int64(d) for a in args if isinstance(a, np.ndarray) for d in a.shape]
    assert len(values) == len(params), (params, len(values))
    grid = list((grid,) if isinstance(grid, int) else grid) + [1, 1]
    block = list((block,) if isinstance(block, int) else block) + [1, 1]
    main = ["int main(int argc, char** argv) {", '  FILE* in = fopen(argv[1], "rb");']
    call, written = [], []
    for k, (param, v) in enumerate(zip(params, values)):
        ctype = param.rsplit(" ", 1)[0]
        if ctype.endswith("*"):
            ct = ctype[:-1].replace("const ", "")
            main.append(f"  {ct}* a{k} = new {ct}[{max(v.size, 1)}];")
            main.append(f"  fread(a{k}, sizeof({ct}), {v.size}, in);")
            call.append(f"a{k}")
            if not ctype.startswith("const "):
                written.append(k)
        else:
            main.append(f"  {ctype} s{k}; fread(&s{k}, sizeof(s{k}), 1, in);")
            call.append(f"s{k}")
    main += [
        f"  h_gridDim = {{{grid[0]}u, {grid[1]}u, {grid[2]}u}};",
        f"  h_blockDim = {{{block[0]}u, {block[1]}u, {block[2]}u}};",
        "  for (unsigned bz = 0; bz < h_gridDim.z; ++bz)",
        "  for (unsigned by = 0; by < h_gridDim.y; ++by)",
        "  for (unsigned bx = 0; bx < h_gridDim.x; ++bx)",
        "  for (unsigned tz = 0; tz < h_blockDim.z; ++tz)",
        "  for (unsigned ty = 0; ty < h_blockDim.y; ++ty)",
        "  for (unsigned tx = 0; tx < h_blockDim.x; ++tx) {",
        "    h_blockIdx = {bx, by, bz};",
        "    h_threadIdx = {tx, ty, tz};",
        f"    {name}({', '.join(call)});",
        "  }",
        '  FILE* out = fopen(argv[2], "wb");',
    ]
    main += [f"  fwrite(a{k}, sizeof(a{k}[0]), {values[k].size}, out);" for k in written]
    main += ["  fclose(out);", "  return 0;", "}"]
    work = _work_dir()
    stem = os.path.join(work, f"{name}_{hashlib.sha256(text.encode()).hexdigest()[:16]}")
    if not os.path.exists(stem):
        with open(stem + ".cu", "w") as f:
            f.write(text + "\n".join(main) + "\n")
        proc = subprocess.run([NVCC, "-std=c++17", "-O1", "-w", "-Xcompiler", "-ffp-contract=off",
                               stem + ".cu", "-o", stem], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr[-8000:]
    with open(stem + ".in", "wb") as f:
        for v in values:
            f.write(np.ascontiguousarray(v).tobytes())
    subprocess.run([stem, stem + ".in", stem + ".out"], check=True)
    with open(stem + ".out", "rb") as f:
        data = f.read()
    results = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    pos = 0
    for k in written:
        v = values[k]
        results[k] = np.frombuffer(data[pos:pos + v.nbytes], v.dtype).reshape(v.shape).copy()
        pos += v.nbytes
    assert pos == len(data)
    return results
