"""CuPy's own cupyx.jit examples, run through gpuflow.jit (issue 20, item 4).

Each example below is CuPy's text as CuPy ships it (the file, the doctest
of the user guide, or the body of a test of CuPy's test suite; the source
is named beside it). The gpuflow version is made from it by one rewrite
only, the module names: ``cupyx.jit`` -> ``gpuflow.jit``, ``cupy`` ->
``gpuflow``. The harness adds what gpuflow needs around the text (a
connection and a session) and, for CuPy's test bodies, the helpers their
test module provides (``testing.shaped_random``, ``self._check``,
``runtime.is_hip``; on the gpuflow side computed as CuPy computes them).

* Always (CI, no GPU): the gpuflow text runs against a real gpuflowd
  started with --allow_raw_kernels up to its first device result (the CPU
  backend answers FAILED_PRECONDITION there), and every translation its
  launches made compiles with NVRTC for sm_90. CuPy's error tests raise
  gpuflow.jit.JitError (naming the construct, in the example's text), and
  the examples that write into an array made by an operation raise the
  documented ValueError, before anything is sent.
* With GPUFLOW_TEST_BACKEND=cuda: the gpuflow text runs to the end (CuPy's
  own asserts in it pass) and its results equal a NumPy reference.
* With CuPy importable and a GPU as well: CuPy's original text runs, and
  gpuflow's results equal CuPy's (exactly for integers, allclose for
  floats). Where an example draws random numbers, CuPy's run is given the
  numbers gpuflow drew, so both compute on the same data.

The example texts are from CuPy (https://github.com/cupy/cupy), Copyright
(c) 2015 Preferred Infrastructure, Inc. and Copyright (c) 2015 Preferred
Networks, Inc., under the MIT License.
"""

import contextlib
import ctypes
import io
import linecache
import re
import textwrap

import numpy as np
import pytest

import gpuflow as gf
from gpuflow import jit
from conftest import BACKEND
from nvrtc_check import NVRTC, assert_compiles, needs_compiler

CUDA = BACKEND == "cuda"


def _find_cupy():
    """(cupy, None) when CuPy imports and sees a GPU, else (None, why not)."""
    try:
        import cupy
        import cupyx.jit  # noqa: F401
    except Exception as err:  # ImportError, or a CUDA library that fails to load
        return None, f"CuPy is not importable ({type(err).__name__}: {err})"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None, "CuPy sees no GPU"
    except Exception as err:
        return None, f"CuPy sees no GPU ({err})"
    return cupy, None


# ---- the examples, as CuPy wrote them ----------------------------------------------------

GUIDE = "docs/source/user_guide/kernel.rst"
EXAMPLES = "examples/jit/"
TESTS = "tests/cupyx_tests/jit_tests/test_raw.py"


def _doctest_code(block):
    """The Python of a doctest block (``>>>`` and ``...`` lines)."""
    lines = []
    for line in textwrap.dedent(block).splitlines():
        if line.startswith((">>> ", "... ")):
            lines.append(line[4:])
        elif line.rstrip() in (">>>", "..."):
            lines.append("")
    return "\n".join(lines) + "\n"


# docs/source/user_guide/kernel.rst, "JIT kernel definition" / "Basic Usage".
GUIDE_ELEMENTWISE_COPY = _doctest_code("""
   >>> from cupyx import jit
   >>>
   >>> @jit.rawkernel()
   ... def elementwise_copy(x, y, size):
   ...     tid = jit.blockIdx.x * jit.blockDim.x + jit.threadIdx.x
   ...     ntid = jit.gridDim.x * jit.blockDim.x
   ...     for i in range(tid, size, ntid):
   ...         y[i] = x[i]

   >>> size = cupy.uint32(2 ** 22)
   >>> x = cupy.random.normal(size=(size,), dtype=cupy.float32)
   >>> y = cupy.empty((size,), dtype=cupy.float32)

   >>> elementwise_copy((128,), (1024,), (x, y, size))  # RawKernel style
   >>> assert (x == y).all()

   >>> elementwise_copy[128, 1024](x, y, size)  #  Numba style
   >>> assert (x == y).all()
""")

# docs/source/user_guide/kernel.rst, "Raw kernels": the guide's vector add, a
# CUDA C++ RawKernel (gpuflow.RawKernel). The guide's doctests name cupy ``cp``.
GUIDE_RAW_KERNEL_ADD = _doctest_code("""
   >>> add_kernel = cp.RawKernel(r'''
   ... extern "C" __global__
   ... void my_add(const float* x1, const float* x2, float* y) {
   ...     int tid = blockDim.x * blockIdx.x + threadIdx.x;
   ...     y[tid] = x1[tid] + x2[tid];
   ... }
   ... ''', 'my_add')
   >>> x1 = cp.arange(25, dtype=cp.float32).reshape(5, 5)
   >>> x2 = cp.arange(25, dtype=cp.float32).reshape(5, 5)
   >>> y = cp.zeros((5, 5), dtype=cp.float32)
   >>> add_kernel((5,), (5,), (x1, x2, y))  # grid, block and arguments
   >>> y
   array([[ 0.,  2.,  4.,  6.,  8.],
          [10., 12., 14., 16., 18.],
          [20., 22., 24., 26., 28.],
          [30., 32., 34., 36., 38.],
          [40., 42., 44., 46., 48.]], dtype=float32)
""")

# examples/jit/elmentwise_op.py (sic)
EXAMPLE_ELEMENTWISE_OP = '''\
from __future__ import annotations

import cupy
from cupyx import jit


@jit.rawkernel()
def elementwise_copy(x, y, size):
    tid = jit.blockIdx.x * jit.blockDim.x + jit.threadIdx.x
    ntid = jit.gridDim.x * jit.blockDim.x
    for i in range(tid, size, ntid):
        y[i] = x[i]


size = cupy.uint32(2 ** 22)
x = cupy.random.normal(size=(size,), dtype=cupy.float32)
y = cupy.empty((size,), dtype=cupy.float32)

elementwise_copy((128,), (1024,), (x, y, size))

elementwise_copy[128, 1024](x, y, size)

assert (x == y).all()
'''

# examples/jit/reduction_simple.py
EXAMPLE_REDUCTION_SIMPLE = '''\
import cupy
from cupyx import jit


@jit.rawkernel()
def reduction(x, y, size):
    tid = jit.threadIdx.x
    ntid = jit.blockDim.x

    value = cupy.float32(0)
    for i in range(tid, size, ntid):
        value += x[i]

    smem = jit.shared_memory(cupy.float32, 1024)
    smem[tid] = value

    jit.syncthreads()

    if tid == cupy.uint32(0):
        value = cupy.float32(0)
        for i in range(ntid):
            value += smem[i]
        y[0] = value


size = cupy.uint32(2 ** 22)
x = cupy.random.normal(size=(size,), dtype=cupy.float32)
y = cupy.empty((1,), dtype=cupy.float32)

reduction[1, 1024](x, y, size)

print(y[0])
print(x.sum())
'''

# examples/jit/reduction_atomic.py
EXAMPLE_REDUCTION_ATOMIC = '''\
from __future__ import annotations

import cupy
from cupyx import jit


@jit.rawkernel()
def reduction(x, y, size):
    tid = jit.blockIdx.x * jit.blockDim.x + jit.threadIdx.x
    ntid = jit.blockDim.x * jit.gridDim.x

    value = cupy.float32(0)
    for i in range(tid, size, ntid):
        value += x[i]

    smem = jit.shared_memory(cupy.float32, 1024)
    smem[jit.threadIdx.x] = value

    jit.syncthreads()

    if jit.threadIdx.x == cupy.uint32(0):
        value = cupy.float32(0)
        for i in range(jit.blockDim.x):
            value += smem[i]
        jit.atomic_add(y, 0, value)


size = cupy.uint32(2 ** 22)
x = cupy.random.normal(size=(size,), dtype=cupy.float32)
y = cupy.empty((1,), dtype=cupy.float32)

reduction[64, 1024](x, y, size)

print(y[0])
print(x.sum())
'''

# The bodies of tests of tests/cupyx_tests/jit_tests/test_raw.py (class
# TestRaw), keyed by the test's name.
TEST_BODIES = {
    "test_raw_grid_1D": '''\
@jit.rawkernel()
def f(arr1, arr2):
    x = jit.grid(1)
    if x < arr1.size:
        arr2[x] = arr1[x]

x = cupy.arange(10)
y = cupy.empty_like(x)
f((1,), (10,), (x, y))
assert (x == y).all()
''',
    "test_raw_grid_2D": '''\
@jit.rawkernel()
def f(arr1, arr2, n, m):
    x, y = jit.grid(2)
    # TODO(leofang): make it possible to write this:
    # if x < arr1.shape[0] and y < arr1.shape[1]:
    if x < n and y < m:
        arr2[x, y] = arr1[x, y]

x = cupy.arange(20).reshape(4, 5)
y = cupy.empty_like(x)
f((1,), (4, 5), (x, y, x.shape[0], x.shape[1]))
assert (x == y).all()
''',
    "test_raw_grid_3D": '''\
@jit.rawkernel()
def f(arr1, arr2, k, m, n):
    x, y, z = jit.grid(3)
    if x < k and y < m and z < n:
        arr2[x, y, z] = arr1[x, y, z]

l, m, n = (2, 3, 4)
x = cupy.arange(24).reshape(l, m, n)
y = cupy.empty_like(x)
f(((l+1)//2, (m+1)//2, (n+1)//2), (2, 2, 2), (x, y, l, m, n))
assert (x == y).all()
''',
    "test_raw_grid_invalid1": '''\
@jit.rawkernel()
def f():
    x, = jit.grid(1)  # cannot unpack an int

with pytest.raises(ValueError):
    f((1,), (1,), ())
''',
    "test_raw_grid_invalid2": '''\
@jit.rawkernel()
def f():
    x = jit.grid(2)
    y = cupy.int64(x)  # <- x is a tuple  # NOQA

# we don't care the exception type as long as something is raised
with pytest.raises(Exception):
    f((1,), (1,), ())
''',
    "test_raw_grid_invalid3": '''\
for n in (0, 4, 'abc', [0], (1,)):
    @jit.rawkernel()
    def f():
        x = jit.grid(n)  # n can only be 1, 2, 3 (as int)  # NOQA

    err = ValueError if isinstance(n, int) else TypeError
    with pytest.raises(err):
        f((1,), (1,), ())
''',
    "test_raw_gridsize_1D": '''\
@jit.rawkernel()
def f(arr):
    x = jit.grid(1)
    gx = jit.gridsize(1)
    if x == 0:
        arr[x] = gx

x = cupy.zeros(1)
grid = 8
block = 10
f((grid,), (block,), (x,))
assert x == grid * block
''',
    "test_raw_gridsize_2D": '''\
@jit.rawkernel()
def f(arr):
    x, y = jit.grid(2)
    gx, gy = jit.gridsize(2)
    if x == 0 and y == 0:
        arr[0] = gx
        arr[1] = gy

x = cupy.zeros(2)
grid = (2, 7)
block = (3, 5)
f(grid, block, (x,))
assert x[0] == grid[0] * block[0]
assert x[1] == grid[1] * block[1]
''',
    "test_raw_gridsize_3D": '''\
@jit.rawkernel()
def f(arr):
    x, y, z = jit.grid(3)
    gx, gy, gz = jit.gridsize(3)
    if x == 0 and y == 0 and z == 0:
        arr[0] = gx
        arr[1] = gy
        arr[2] = gz

x = cupy.zeros(3)
grid = (2, 7, 4)
block = (3, 5, 11)
f(grid, block, (x,))
assert x[0] == grid[0] * block[0]
assert x[1] == grid[1] * block[1]
assert x[2] == grid[2] * block[2]
''',
    "test_raw_one_thread": '''\
@jit.rawkernel()
def f(x, y):
    y[0] = x[0]

x = cupy.array([10], dtype=numpy.int32)
y = cupy.array([20], dtype=numpy.int32)
f((1,), (1,), (x, y))
assert int(y[0]) == 10
''',
    "test_raw_elementwise_single_op": '''\
@jit.rawkernel()
def f(x, y):
    tid = jit.threadIdx.x + jit.blockDim.x * jit.blockIdx.x
    y[tid] = x[tid]

x = testing.shaped_random((30,), dtype=numpy.int32, seed=0)
y = testing.shaped_random((30,), dtype=numpy.int32, seed=1)
f((5,), (6,), (x, y))
assert bool((x == y).all())
''',
    "test_raw_elementwise_loop": '''\
@jit.rawkernel()
def f(x, y, size):
    tid = jit.threadIdx.x + jit.blockDim.x * jit.blockIdx.x
    ntid = jit.blockDim.x * jit.gridDim.x
    for i in range(tid, size, ntid):
        y[i] = x[i]

x = testing.shaped_random((1024,), dtype=numpy.int32, seed=0)
y = testing.shaped_random((1024,), dtype=numpy.int32, seed=1)
f((5,), (6,), (x, y, numpy.uint32(1024)))
assert bool((x == y).all())
''',
    "test_raw_multidimensional_array": '''\
@jit.rawkernel()
def f(x, y, n_row, n_col):
    tid = jit.threadIdx.x + jit.blockDim.x * jit.blockIdx.x
    ntid = jit.blockDim.x * jit.gridDim.x
    size = n_row * n_col
    for i in range(tid, size, ntid):
        i_row = i // n_col
        i_col = i % n_col
        y[i_row, i_col] = x[i_row, i_col]

n, m = numpy.uint32(12), numpy.uint32(13)
x = testing.shaped_random((n, m), dtype=numpy.int32, seed=0)
y = testing.shaped_random((n, m), dtype=numpy.int32, seed=1)
f((5,), (6,), (x, y, n, m))
assert bool((x == y).all())
''',
    "test_raw_multidimensional_array_with_attr": '''\
@jit.rawkernel()
def f(x, y):
    tid = jit.threadIdx.x + jit.blockDim.x * jit.blockIdx.x
    ntid = jit.blockDim.x * jit.gridDim.x
    n_col = x.size // len(x)
    for i in range(tid, x.size, ntid):
        i_row = i // n_col
        i_col = i % n_col
        y[i_row, i_col] = x[i_row, i_col]

n, m = numpy.uint32(12), numpy.uint32(13)
x = testing.shaped_random((n, m), dtype=numpy.int32, seed=0)
y = testing.shaped_random((n, m), dtype=numpy.int32, seed=1)
f((5,), (6,), (x, y))
assert bool((x == y).all())
''',
    "test_raw_ndim": '''\
@jit.rawkernel()
def f(x, y):
    y[0] = x.ndim

x = cupy.empty((1, 1, 1, 1, 1, 1, 1), dtype=numpy.int32)
y = cupy.zeros((1,), dtype=numpy.int64)
f((1,), (1,), (x, y))
assert y.item() == 7
''',
    "test_raw_0dim_array": '''\
@jit.rawkernel()
def f(x, y):
    y[()] = x[()]

x = testing.shaped_random((), dtype=numpy.int32, seed=0)
y = testing.shaped_random((), dtype=numpy.int32, seed=1)
f((1,), (1,), (x, y))
assert bool((x == y).all())
''',
    "test_min": '''\
@jit.rawkernel()
def f(x, y, z, r):
    tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
    r[tid] = min(x[tid], y[tid], z[tid])

x = testing.shaped_random((1024,), dtype=numpy.int32, seed=0)
y = testing.shaped_random((1024,), dtype=numpy.int32, seed=1)
z = testing.shaped_random((1024,), dtype=numpy.int32, seed=2)
r = testing.shaped_random((1024,), dtype=numpy.int32, seed=3)
f((8,), (128,), (x, y, z, r))
expected = cupy.minimum(x, cupy.minimum(y, z))
assert bool((r == expected).all())
''',
    "test_max": '''\
@jit.rawkernel()
def f(x, y, z, r):
    tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
    r[tid] = max(x[tid], y[tid], z[tid])

x = testing.shaped_random((1024,), dtype=numpy.int32, seed=0)
y = testing.shaped_random((1024,), dtype=numpy.int32, seed=1)
z = testing.shaped_random((1024,), dtype=numpy.int32, seed=2)
r = testing.shaped_random((1024,), dtype=numpy.int32, seed=3)
f((8,), (128,), (x, y, z, r))
expected = cupy.maximum(x, cupy.maximum(y, z))
assert bool((r == expected).all())
''',
    "test_syncthreads": '''\
@jit.rawkernel()
def f(x, y, buf):
    tid = jit.threadIdx.x + jit.threadIdx.y * jit.blockDim.x
    ntid = jit.blockDim.x * jit.blockDim.y
    buf[tid] = x[ntid - tid - 1]
    jit.syncthreads()
    y[tid] = buf[ntid - tid - 1]

x = testing.shaped_random((1024,), dtype=numpy.int32, seed=0)
y = testing.shaped_random((1024,), dtype=numpy.int32, seed=1)
buf = testing.shaped_random((1024,), dtype=numpy.int32, seed=2)
f((1,), (32, 32), (x, y, buf))
assert bool((x == y).all())
''',
    "test_syncwarp": '''\
@jit.rawkernel()
def f(x):
    laneId = jit.threadIdx.x & 0x1f
    if laneId < 16:
        x[laneId] = 1
    else:
        x[laneId] = 2
    jit.syncwarp()

x = cupy.zeros((32,), dtype=numpy.int32)
y = cupy.ones_like(x)
f((1,), (32,), (x,))
y[16:] += 1
assert bool((x == y).all())
''',
    "test_syncwarp_mask": '''\
@jit.rawkernel()
def f(x, m):
    laneId = jit.threadIdx.x & 0x1f
    if laneId < m:
        x[laneId] = 1
        jit.syncwarp(mask=m)

for mask in (2, 4, 8, 16, 32):
    x = cupy.zeros((32,), dtype=numpy.int32)
    y = cupy.zeros_like(x)
    f((1,), (32,), (x, mask))
    y[:mask] += 1
    assert bool((x == y).all())
''',
    "test_shared_memory_static": '''\
@jit.rawkernel()
def f(x, y):
    tid = jit.threadIdx.x
    ntid = jit.blockDim.x
    bid = jit.blockIdx.x
    i = tid + bid * ntid

    smem = jit.shared_memory(numpy.int32, 32)
    smem[tid] = x[i]
    jit.syncthreads()
    y[i] = smem[ntid - tid - 1]

x = testing.shaped_random((1024,), dtype=numpy.int32, seed=0)
y = testing.shaped_random((1024,), dtype=numpy.int32, seed=1)
f((32,), (32,), (x, y))
expected = x.reshape(32, 32)[:, ::-1].ravel()
assert bool((y == expected).all())
''',
    "test_shared_memory_dynamic": '''\
@jit.rawkernel()
def f(x, y):
    tid = jit.threadIdx.x
    ntid = jit.blockDim.x
    bid = jit.blockIdx.x
    i = tid + bid * ntid

    smem = jit.shared_memory(numpy.int32, None)
    smem[tid] = x[i]
    jit.syncthreads()
    y[i] = smem[ntid - tid - 1]

x = testing.shaped_random((1024,), dtype=numpy.int32, seed=0)
y = testing.shaped_random((1024,), dtype=numpy.int32, seed=1)
f((32,), (32,), (x, y), shared_mem=128)
expected = x.reshape(32, 32)[:, ::-1].ravel()
assert bool((y == expected).all())
''',
    "test_atomic_sub": '''\
@jit.rawkernel()
def f(x, out):
    tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
    if tid < x.size:
        jit.atomic_sub(out, 0, x[tid])

x = cupy.ones((1024,), dtype=dtype)
out = cupy.sum(x, dtype=dtype).reshape(1,)
f((32,), (32,), (x, out))
expected = cupy.zeros_like(out)
self._check(out, expected)
''',
    "test_atomic_exch": '''\
@jit.rawkernel()
def f(x, out):
    tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
    if tid < x.size:
        jit.atomic_exch(out, x.size - tid - 1, x[tid])

x = cupy.arange(1024, dtype=dtype)
out = cupy.zeros_like(x)
f((32,), (32,), (x, out))
expected = x[::-1]
self._check(out, expected)
''',
    "test_atomic_min": '''\
@jit.rawkernel()
def f(x, out):
    tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
    if tid < x.size:
        jit.atomic_min(out, tid, x[tid])

x = cupy.arange(1024, dtype=dtype)
out = x + 1
f((32,), (32,), (x, out))  # effectively copy x to out
self._check(out, x)
''',
    "test_atomic_max": '''\
@jit.rawkernel()
def f(x, out):
    tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
    if tid < x.size:
        jit.atomic_max(out, tid, x[tid])

x = cupy.arange(1, 1025, dtype=dtype)
out = x - 1
f((32,), (32,), (x, out))  # effectively copy x to out
self._check(out, x)
''',
    "test_atomic_inc": '''\
dtype = cupy.uint32  # atomic_inc only supports 1 dtype

@jit.rawkernel()
def f(x, out):
    tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
    if tid < x.size:
        # = 0 if out[tid] >= x[tid] else out[tid] + 1
        jit.atomic_inc(out, tid, x[tid])

x = cupy.arange(1, 1025, dtype=dtype)
out = x - 1
f((32,), (32,), (x, out))
expected = x
self._check(out, expected)
''',
    "test_atomic_dec": '''\
dtype = cupy.uint32  # atomic_dec only supports 1 dtype

@jit.rawkernel()
def f(x, out):
    tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
    if tid < x.size:
        # = x[tid] if (out[tid] == 0 or out[tid] >= x[tid]) \\
        # else out[tid] - 1
        jit.atomic_dec(out, tid, x[tid])

x = cupy.zeros(1024, dtype=dtype)
out = cupy.arange(1024, dtype=dtype)
f((32,), (32,), (x, out))
expected = x
self._check(out, expected)
''',
    "test_atomic_cas": '''\
if dtype == cupy.uint16:
    if (
        runtime.is_hip or
        runtime.runtimeGetVersion() < 10010 or
        int(device.get_compute_capability()) < 70
    ):
        self.skipTest('not supported')

@jit.rawkernel()
def f(x, y, out):
    tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
    if tid < x.size:
        # = y[tid] if out[tid] == x[tid] else out[tid]
        jit.atomic_cas(out, tid, x[tid], y[tid])

x = cupy.arange(1024, dtype=dtype)
y = x.copy()
y[512:] = 0
out = x.copy()
out[:512] = 0
f((32,), (32,), (x, y, out))
expected = cupy.zeros_like(out)
self._check(out, expected)
''',
    "test_atomic_and": '''\
@jit.rawkernel()
def f(x, out):
    tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
    if tid < x.size:
        jit.atomic_and(out, tid, x[tid])

x = cupy.arange(1024, dtype=dtype)
out = cupy.ones_like(x)
f((32,), (32,), (x, out))
expected = cupy.zeros_like(out)
expected[1::2] = 1
self._check(out, expected)
''',
    "test_atomic_or": '''\
@jit.rawkernel()
def f(x, out):
    tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
    if tid < x.size:
        jit.atomic_or(out, tid, x[tid])

x = testing.shaped_random((1024,), dtype=dtype, seed=0)
out = testing.shaped_random((1024,), dtype=dtype, seed=1)
y = out.copy()
f((32,), (32,), (x, out))
expected = x | y
self._check(out, expected)
''',
    "test_atomic_xor": '''\
@jit.rawkernel()
def f(x, out):
    tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
    if tid < x.size:
        jit.atomic_xor(out, tid, x[tid])

@jit.rawkernel()
def f_no_atomic(x, out):
    tid = jit.blockDim.x * jit.blockIdx.x + jit.threadIdx.x
    if tid < x.size:
        out[tid] = out[tid] ^ x[tid]

x = testing.shaped_random((1024,), dtype=dtype, seed=0)
out = testing.shaped_random((1024,), dtype=dtype, seed=1)
expected = out.copy()
f((32,), (32,), (x, out))
f_no_atomic((32,), (32,), (x, expected))
self._check(out, expected)
''',
    "test_raw_grid_block_interface": '''\
@jit.rawkernel()
def f(x, y, size):
    tid = jit.threadIdx.x + jit.blockDim.x * jit.blockIdx.x
    ntid = jit.blockDim.x * jit.gridDim.x
    for i in range(tid, size, ntid):
        y[i] = x[i]

x = testing.shaped_random((1024,), dtype=numpy.int32, seed=0)
y = testing.shaped_random((1024,), dtype=numpy.int32, seed=1)
f[5, 6](x, y, numpy.uint32(1024))
assert bool((x == y).all())
''',
    "test_shfl": '''\
# strictly speaking this function is invalid in Python (see the
# discussion in cupy/cupy#5340), but it serves for our purpose
@jit.rawkernel()
def f(a, b):
    laneId = jit.threadIdx.x & 0x1f
    if laneId == 0:
        value = a
    value = jit.shfl_sync(0xffffffff, value, 0)
    b[laneId] = value

a = dtype(100)
b = cupy.empty((32,), dtype=dtype)
f[1, 32](a, b)
assert (b == a * cupy.ones((32,), dtype=dtype)).all()
''',
    "test_shfl_width": '''\
@jit.rawkernel()
def f(a, b, w):
    laneId = jit.threadIdx.x & 0x1f
    value = jit.shfl_sync(0xffffffff, b[jit.threadIdx.x], 0, width=w)
    b[laneId] = value

c = cupy.arange(32, dtype=cupy.int32)
for w in (2, 4, 8, 16, 32):
    a = cupy.int32(100)
    b = cupy.arange(32, dtype=cupy.int32)
    f[1, 32](a, b, w)
    c[c % w != 0] = c[c % w == 0]
    assert (b == c).all()
''',
    "test_shfl_up": '''\
N = 5

@jit.rawkernel()
def f(a):
    value = jit.shfl_up_sync(0xffffffff, a[jit.threadIdx.x], N)
    a[jit.threadIdx.x] = value

a = cupy.arange(32, dtype=dtype)
f[1, 32](a)
expected = [i for i in range(N)] + [i for i in range(32-N)]
assert(a == cupy.asarray(expected, dtype=dtype)).all()
''',
    "test_shfl_down": '''\
N = 5
# __shfl_down() on HIP does not seem to have the same behavior...
block = 64 if runtime.is_hip else 32

@jit.rawkernel()
def f(a):
    value = jit.shfl_down_sync(0xffffffff, a[jit.threadIdx.x], N)
    a[jit.threadIdx.x] = value

a = cupy.arange(block, dtype=dtype)
f[1, block](a)
expected = [i for i in range(N, block)]
expected += [(block-N+i) for i in range(N)]
assert(a == cupy.asarray(expected, dtype=dtype)).all()
''',
    "test_shfl_xor": '''\
@jit.rawkernel()
def f_shfl_xor(a):
    laneId = jit.threadIdx.x & 0x1f
    value = 31 - laneId
    i = 16
    while i >= 1:
        value += jit.shfl_xor_sync(0xffffffff, value, i)
        i //= 2
    a[jit.threadIdx.x] = value

a = cupy.arange(32, dtype=dtype)
b = a.copy()
f_shfl_xor[1, 32](a)
assert (a == b.sum() * cupy.ones(32, dtype=dtype)).all()
''',
    "test_error_msg": """\
@jit.rawkernel()
def f(x):
    return unknown_var  # NOQA

import re
mes = re.escape('''Unbound name: unknown_var

  @jit.rawkernel()
  def f(x):
>     return unknown_var  # NOQA
''')
x = cupy.zeros((10,), dtype=numpy.float32)
with pytest.raises(NameError, match=mes):
    f((1,), (1,), (x,))
""",
    "test_laneid": '''\
@jit.rawkernel()
def f(arr):
    x = jit.grid(1)
    if x < arr.size:
        arr[x] = jit.laneid()

N = 64 if runtime.is_hip else 32
x = cupy.zeros((N*2,), dtype=cupy.uint32)
f((1,), (N*2,), (x,))
y = cupy.arange(N*2, dtype=cupy.uint32) % N
assert (x == y).all()
''',
    "test_warpsize": '''\
@jit.rawkernel()
def f(arr):
    x = jit.grid(1)
    if x == 0:
        arr[0] = jit.warpsize

N = 64 if runtime.is_hip else 32
x = cupy.zeros((1,), dtype=cupy.uint32)
f((1,), (1,), (x,))
assert x == N
''',
}


# ---- what the harness gives the texts ---------------------------------------------------


def to_gpuflow(text):
    """CuPy's text with gpuflow's module names: the one rewrite allowed."""
    text = text.replace("from cupyx import jit", "from gpuflow import jit")
    text = re.sub(r"\bcupyx\.jit\b", "gpuflow.jit", text)
    return re.sub(r"\bcupy\b", "gpuflow", text)


def host(value):
    """A NumPy copy of a gpuflow or CuPy array (or of a NumPy value)."""
    return np.asarray(value.get() if hasattr(value, "get") and not isinstance(value, dict)
                      else value)


def shaped_random_np(shape, dtype=np.float32, scale=10, seed=0):
    """cupy.testing.shaped_random's values, on the host."""
    rs = np.random.RandomState(seed)   # the stream numpy.random.seed(seed) gives
    dtype = np.dtype(dtype)
    if dtype == "?":
        return np.asarray(rs.randint(2, size=shape), dtype=dtype)
    return np.asarray(rs.rand(*shape) * scale).astype(dtype)


class GpuflowTesting:
    """``testing`` for the gpuflow run of CuPy's test bodies: the helpers
    of cupy.testing they call, with CuPy's values."""

    @staticmethod
    def shaped_random(shape, xp=None, dtype=np.float32, scale=10, seed=0):
        return gf.array(shaped_random_np(shape, dtype, scale, seed))   # writable, as in CuPy


class GpuflowRuntime:
    """``runtime`` (cupy.cuda.runtime) for the gpuflow run."""
    is_hip = False

    @staticmethod
    def runtimeGetVersion():   # noqa: N802 - CuPy's name
        """The CUDA version of the toolkit the translations compile with."""
        return nvrtc_version()


class GpuflowDevice:
    """``device`` (cupy.cuda.device) for the gpuflow run: the server's device."""

    def __init__(self, client):
        self._client = client

    def get_compute_capability(self):
        found = re.search(r"sm_(\d+)", self._client.info().device)
        return found.group(1) if found else "90"   # what the CPU-backend run compiles for


def nvrtc_version():
    """CUDA's version number (12040 for 12.4) of the local NVRTC, 0 without one."""
    if NVRTC is None:
        return 0
    major, minor = ctypes.c_int(), ctypes.c_int()
    NVRTC.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return major.value * 1000 + minor.value * 10


class TestCaseSelf:
    """``self`` of CuPy's TestRaw, for both runs: its ``_check`` and ``skipTest``."""

    @staticmethod
    def _check(a, e):
        np.testing.assert_allclose(host(a), host(e), rtol=1e-5, atol=1e-5)

    @staticmethod
    def skipTest(reason):   # noqa: N802 - unittest's name
        pytest.skip(reason)


class Raises:
    """``pytest`` for CuPy's error tests: each ``pytest.raises(CuPy's
    exception)`` block must raise ``kind`` instead (gpuflow.jit.JitError in
    the gpuflow run; any exception in CuPy's, whatever its version raises)."""

    def __init__(self, kind):
        self.kind = kind
        self.caught = []

    @contextlib.contextmanager
    def raises(self, expected_exception, match=None):
        del expected_exception, match   # CuPy's types and messages
        with pytest.raises(self.kind) as info:
            yield info
        self.caught.append(info.value)


@contextlib.contextmanager
def patched(obj, name, make):
    """``obj.name`` replaced by ``make(original)`` inside the block."""
    original = getattr(obj, name)
    setattr(obj, name, make(original))
    try:
        yield
    finally:
        setattr(obj, name, original)


def run_text(text, filename, env):
    """Runs ``text`` as a module named ``filename`` (its source readable by
    inspect, as the jit translators need); (namespace, exception or None)."""
    linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
    ns = dict(env, __name__="cupy_example")
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(text, filename, "exec"), ns)
    except pytest.skip.Exception:
        raise
    except Exception as err:   # the caller decides what this example may raise
        return ns, err
    return ns, None


# ---- the examples, with what each must give ------------------------------------------------


class Example:
    """One CuPy example: its text, where it comes from, the names whose
    values are compared and a NumPy reference for them."""

    def __init__(self, name, source, text, *, outputs=(), reference=None, dtype=None,
                 expect="runs", constructs=(), draws=False, cupy_empty=None,
                 tolerance=None):
        self.name, self.source, self.text = name, source, text
        self.outputs, self.reference = outputs, reference
        self.dtype = None if dtype is None else np.dtype(dtype).type
        self.id = name if dtype is None else f"{name}-{dtype}"
        self.expect, self.constructs = expect, list(constructs)
        self.draws, self.cupy_empty, self.tolerance = draws, cupy_empty, tolerance

    def env(self, flavour, client=None, cupy=None):
        if flavour == "gpuflow":
            env = {"gpuflow": gf, "cp": gf, "numpy": np, "jit": jit, "testing": GpuflowTesting,
                   "runtime": GpuflowRuntime, "device": GpuflowDevice(client),
                   "pytest": Raises(jit.JitError) if self.expect == "jit_error" else pytest}
        else:
            import cupy.testing
            import cupyx
            import cupyx.jit
            from cupy.cuda import device, runtime

            env = {"cupy": cupy, "cp": cupy, "cupyx": cupyx, "numpy": np, "jit": cupyx.jit,
                   "testing": cupy.testing, "runtime": runtime, "device": device,
                   "pytest": Raises(Exception) if self.expect == "jit_error" else pytest}
        env["self"] = TestCaseSelf()
        if self.dtype is not None:
            env["dtype"] = self.dtype
        return env


S = shaped_random_np


def ex_test(name, **kw):
    return Example(name, TESTS, TEST_BODIES[name], **kw)


def reduction_tolerance(r):
    # float32 partial sums of 2**22 values in another order: a few ulps of sum|x|.
    return {"rtol": 0, "atol": 1e-6 * float(np.abs(r["x"]).sum())}


RUNS = [
    Example("guide_raw_kernel_add", GUIDE, GUIDE_RAW_KERNEL_ADD, outputs=("y",),
            reference=lambda r: {"y": 2 * np.arange(25, dtype=np.float32).reshape(5, 5)}),
    Example("guide_elementwise_copy", GUIDE, GUIDE_ELEMENTWISE_COPY, outputs=("x", "y"),
            reference=lambda r: {"y": r["x"]}, draws=True),
    Example("elmentwise_op", EXAMPLES + "elmentwise_op.py", EXAMPLE_ELEMENTWISE_OP,
            outputs=("x", "y"), reference=lambda r: {"y": r["x"]}, draws=True),
    Example("reduction_simple", EXAMPLES + "reduction_simple.py", EXAMPLE_REDUCTION_SIMPLE,
            outputs=("x", "y"), draws=True, tolerance=reduction_tolerance,
            reference=lambda r: {"y": [r["x"].sum(dtype=np.float64)]}),
    # y = cupy.empty((1,)) collects atomic_add's: CuPy leaves it uninitialised,
    # gpuflow.empty is zero-filled; CuPy's run gets zeros (one of its values).
    Example("reduction_atomic", EXAMPLES + "reduction_atomic.py", EXAMPLE_REDUCTION_ATOMIC,
            outputs=("x", "y"), draws=True, cupy_empty="zeros", tolerance=reduction_tolerance,
            reference=lambda r: {"y": [r["x"].sum(dtype=np.float64)]}),
    ex_test("test_raw_grid_1D", outputs=("x", "y"),
            reference=lambda r: {"x": np.arange(10), "y": np.arange(10)}),
    ex_test("test_raw_grid_2D", outputs=("y",),
            reference=lambda r: {"y": np.arange(20).reshape(4, 5)}),
    ex_test("test_raw_grid_3D", outputs=("y",),
            reference=lambda r: {"y": np.arange(24).reshape(2, 3, 4)}),
    ex_test("test_raw_gridsize_1D", outputs=("x",), reference=lambda r: {"x": [80.0]}),
    ex_test("test_raw_gridsize_2D", outputs=("x",), reference=lambda r: {"x": [6.0, 35.0]}),
    ex_test("test_raw_gridsize_3D", outputs=("x",),
            reference=lambda r: {"x": [6.0, 35.0, 44.0]}),
    ex_test("test_raw_one_thread", outputs=("x", "y"),
            reference=lambda r: {"y": np.array([10], np.int32)}),
    ex_test("test_raw_elementwise_single_op", outputs=("x", "y"),
            reference=lambda r: {"x": S((30,), np.int32, seed=0),
                                 "y": S((30,), np.int32, seed=0)}),
    ex_test("test_raw_elementwise_loop", outputs=("y",),
            reference=lambda r: {"y": S((1024,), np.int32, seed=0)}),
    ex_test("test_raw_multidimensional_array", outputs=("y",),
            reference=lambda r: {"y": S((12, 13), np.int32, seed=0)}),
    ex_test("test_raw_multidimensional_array_with_attr", outputs=("y",),
            reference=lambda r: {"y": S((12, 13), np.int32, seed=0)}),
    ex_test("test_raw_ndim", outputs=("y",), reference=lambda r: {"y": np.array([7])}),
    ex_test("test_raw_0dim_array", outputs=("x", "y"),
            reference=lambda r: {"y": S((), np.int32, seed=0)}),
    ex_test("test_min", outputs=("r",), reference=lambda r: {"r": np.minimum(
        S((1024,), np.int32, seed=0),
        np.minimum(S((1024,), np.int32, seed=1), S((1024,), np.int32, seed=2)))}),
    ex_test("test_max", outputs=("r",), reference=lambda r: {"r": np.maximum(
        S((1024,), np.int32, seed=0),
        np.maximum(S((1024,), np.int32, seed=1), S((1024,), np.int32, seed=2)))}),
    ex_test("test_syncthreads", outputs=("y", "buf"),
            reference=lambda r: {"y": S((1024,), np.int32, seed=0),
                                 "buf": S((1024,), np.int32, seed=0)[::-1]}),
    ex_test("test_syncwarp", outputs=("x",),
            reference=lambda r: {"x": np.repeat(np.array([1, 2], np.int32), 16)}),
    ex_test("test_syncwarp_mask", outputs=("x",),   # the last mask, 32
            reference=lambda r: {"x": np.ones(32, np.int32)}),
    ex_test("test_shared_memory_static", outputs=("y",), reference=lambda r: {
        "y": S((1024,), np.int32, seed=0).reshape(32, 32)[:, ::-1].ravel()}),
    ex_test("test_shared_memory_dynamic", outputs=("y",), reference=lambda r: {
        "y": S((1024,), np.int32, seed=0).reshape(32, 32)[:, ::-1].ravel()}),
    *[ex_test("test_atomic_exch", dtype=d, outputs=("out",),
              reference=lambda r, d=d: {"out": np.arange(1024, dtype=d)[::-1]})
      for d in "iILQf"],
    ex_test("test_atomic_dec", outputs=("out",),
            reference=lambda r: {"out": np.zeros(1024, np.uint32)}),
    *[ex_test("test_atomic_cas", dtype=d, outputs=("out",),
              reference=lambda r, d=d: {"out": np.zeros(1024, d)})
      for d in "iHILQ"],
    *[ex_test("test_atomic_and", dtype=d, outputs=("out",),
              reference=lambda r, d=d: {"out": (np.arange(1024) & 1).astype(d)})
      for d in "iILQ"],
    *[ex_test("test_atomic_or", dtype=d, outputs=("out",), reference=lambda r, d=d: {
        "out": S((1024,), d, seed=0) | S((1024,), d, seed=1)}) for d in "iILQ"],
    *[ex_test("test_atomic_xor", dtype=d, outputs=("out", "expected"), reference=lambda r, d=d: {
        "out": S((1024,), d, seed=0) ^ S((1024,), d, seed=1),
        "expected": S((1024,), d, seed=0) ^ S((1024,), d, seed=1)}) for d in "iILQ"],
    ex_test("test_raw_grid_block_interface", outputs=("y",),
            reference=lambda r: {"y": S((1024,), np.int32, seed=0)}),
    *[ex_test("test_shfl", dtype=d, outputs=("b",),
              reference=lambda r, d=d: {"b": np.full(32, 100, d)}) for d in "iIlLqQfd"],
    *[ex_test("test_shfl_up", dtype=d, outputs=("a",), reference=lambda r, d=d: {
        "a": np.array(list(range(5)) + list(range(27)), d)}) for d in "iIlLqQfd"],
    *[ex_test("test_shfl_down", dtype=d, outputs=("a",), reference=lambda r, d=d: {
        "a": np.array(list(range(5, 32)) + list(range(27, 32)), d)}) for d in "iIlLqQfd"],
    *[ex_test("test_shfl_xor", dtype=d, outputs=("a",),   # sum(31 - lane) over the warp
              reference=lambda r, d=d: {"a": np.full(32, 496, d)}) for d in "iIlLqQfd"],
    ex_test("test_laneid", outputs=("x",),
            reference=lambda r: {"x": np.arange(64, dtype=np.uint32) % 32}),
    ex_test("test_warpsize", outputs=("x",), reference=lambda r: {"x": np.array([32], np.uint32)}),
]

# CuPy's tests of bad kernels: gpuflow raises JitError where CuPy raises its
# own exception (constructs in the order the test's pytest.raises blocks run).
ERRORS = [
    ex_test("test_raw_grid_invalid1", expect="jit_error", constructs=["unpacking a non-tuple"]),
    ex_test("test_raw_grid_invalid2", expect="jit_error", constructs=["tuple variable"]),
    # n = 0, 4: out of range; 'abc', [0], (1,): not an integer constant.
    ex_test("test_raw_grid_invalid3", expect="jit_error",
            constructs=["jit.grid"] * 2 + ["non-constant size"] * 3),
    # CuPy names the unbound name; gpuflow stops at the 'return' of a value
    # first (a kernel returns nothing), before it resolves the name.
    ex_test("test_error_msg", expect="jit_error", constructs=["'return' with a value"]),
]

# They run on CuPy but write into an array an operation made (out = x + 1,
# x - 1, cupy.sum(...)): gpuflow arrays are immutable and only those made by
# empty/zeros/ones/full/arange/*_like/.copy() are writable, so the launch is
# refused with ValueError before anything is sent (docs/jit.md, "Writes").
READ_ONLY = [
    *[ex_test("test_atomic_sub", dtype=d, expect="read_only") for d in "iI"],
    *[ex_test("test_atomic_min", dtype=d, expect="read_only") for d in "iILQ"],
    *[ex_test("test_atomic_max", dtype=d, expect="read_only") for d in "iILQ"],
    ex_test("test_atomic_inc", expect="read_only"),
]


def ids(examples):
    return [ex.id for ex in examples]


# ---- running them ---------------------------------------------------------------------------


class GpuflowRun:
    """An example's gpuflow text, run in a session of ``target``. On the CPU
    backend it stops at its first device result (FAILED_PRECONDITION); its
    launches have been translated by then."""

    def __init__(self, ex, target):
        self.filename = f"<{ex.source} {ex.id} (gpuflow)>"
        self.text = to_gpuflow(ex.text)
        self.results = self.draws = None
        drawn = []

        def recording(original):
            def normal(*args, **kwargs):
                out = original(*args, **kwargs)
                drawn.append(out)
                return out
            return normal

        with gf.connect(target) as client, client.session(label=f"cupy {ex.id}"):
            env = ex.env("gpuflow", client=client)
            self.pytest = env["pytest"]
            with patched(gf.random, "normal", recording):
                self.ns, self.error = run_text(self.text, self.filename, env)
            if self.error is None:
                try:
                    self.results = {name: host(self.ns[name]) for name in ex.outputs}
                    self.draws = [host(a) for a in drawn]
                except gf.Error as err:   # the CPU backend, at the first result
                    self.error, self.results = err, None
        self.kernels = [v for v in self.ns.values()
                        if isinstance(v, (jit.JitKernel, gf.RawKernel))]

    def check(self):
        """Re-raises what stopped the text, unless it is the CPU backend's
        FAILED_PRECONDITION for the first raw kernel it ran."""
        if self.error is None:
            return
        if not CUDA and isinstance(self.error, gf.FailedPreconditionError):
            assert "cuda" in str(self.error).lower(), self.error
            return
        raise self.error


def run_cupy(ex, cupy, draws=None):
    """CuPy's original text on CuPy; its namespace."""
    filename = f"<{ex.source} {ex.id} (CuPy)>"
    pending = list(draws or [])

    def replaying(original):
        def normal(loc=0.0, scale=1.0, size=None, dtype=float):
            values = pending.pop(0)   # what gpuflow drew for the same call
            assert values.shape == tuple(int(s) for s in size), (values.shape, size)
            assert values.dtype == np.dtype(dtype)
            return cupy.asarray(values)
        return normal

    with contextlib.ExitStack() as stack:
        if ex.draws:
            stack.enter_context(patched(cupy.random, "normal", replaying))
        if ex.cupy_empty == "zeros":
            stack.enter_context(patched(cupy, "empty", lambda original: cupy.zeros))
        ns, err = run_text(ex.text, filename, ex.env("cupy", cupy=cupy))
    if err is not None:
        raise err
    assert not pending, "CuPy's run drew fewer arrays than gpuflow's"
    return ns


@pytest.fixture(scope="module")
def gpuflow_run(raw_kernel_server):
    """Runs each example's gpuflow text once for this module's tests."""
    runs = {}

    def run(ex):
        if ex.id not in runs:
            runs[ex.id] = GpuflowRun(ex, raw_kernel_server.target)
        return runs[ex.id]

    return run


@pytest.fixture(scope="module")
def cupy_module():
    cupy, why = _find_cupy()
    if cupy is None:
        pytest.skip(f"compares with CuPy: {why}")
    return cupy


def assert_same(got, want, what, tolerance=None):
    """Exact for integers and bools, allclose for floats; the same shape,
    and the same dtype where ``want`` is an array."""
    if isinstance(want, np.ndarray):
        assert np.asarray(got).dtype == want.dtype, (what, np.asarray(got).dtype, want.dtype)
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if tolerance is not None:
        np.testing.assert_allclose(got, want, err_msg=what, **tolerance)
    elif got.dtype.kind == "f" or want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=0, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


needs_cuda = pytest.mark.skipif(not CUDA, reason="runs kernels: needs GPUFLOW_TEST_BACKEND=cuda "
                                                 "(a gpuflowd on a GPU)")


# ---- the tests --------------------------------------------------------------------------------


def test_the_gpuflow_texts_differ_from_cupys_by_module_names_only():
    for ex in RUNS + ERRORS + READ_ONLY:
        text = to_gpuflow(ex.text)
        assert not re.search(r"\bcupyx?\b", text.replace("gpuflow/gpuflow#", "")), ex.id
        assert re.sub(r"\bgpuflow\b", "cupy", text) == ex.text.replace("cupyx import jit",
                                                                      "cupy import jit"), ex.id


@needs_compiler
@pytest.mark.parametrize("ex", RUNS + READ_ONLY, ids=ids(RUNS + READ_ONLY))
def test_every_translation_compiles_with_nvrtc(ex, gpuflow_run):
    run = gpuflow_run(ex)
    if ex.expect == "read_only":
        assert isinstance(run.error, ValueError), run.error
        assert re.search(r"writes 'out' \(line \d+\) but argument 1 is read-only",
                         str(run.error)), run.error
    else:
        run.check()
    assert run.kernels, f"{ex.id} defines no kernel"
    for kernel in run.kernels:
        if isinstance(kernel, gf.RawKernel):   # CUDA C++ as written
            assert_compiles(kernel.code)
            continue
        assert kernel._cache, f"{ex.id}: {kernel.__name__} was never launched"
        for translation in kernel._cache.values():
            assert_compiles(translation.source)


@needs_cuda
@pytest.mark.parametrize("ex", RUNS, ids=ids(RUNS))
def test_runs_on_gpuflow_and_matches_numpy(ex, gpuflow_run):
    run = gpuflow_run(ex)
    run.check()   # CuPy's own asserts in the text passed
    tolerance = ex.tolerance(run.results) if ex.tolerance else None
    for name, want in ex.reference(run.results).items():
        assert_same(run.results[name], want, f"{ex.id}: {name}", tolerance)


@needs_cuda
@pytest.mark.parametrize("ex", RUNS, ids=ids(RUNS))
def test_gives_what_cupy_gives(ex, gpuflow_run, cupy_module):
    run = gpuflow_run(ex)
    run.check()
    try:
        ns = run_cupy(ex, cupy_module, run.draws)
    except Exception as err:  # noqa: BLE001 - CuPy failing on its own text is CuPy's matter
        # (CuPy 14 with NumPy 2 refuses test_warpsize's `arr[0] = jit.warpsize`:
        # "Cannot cast from 'int32' to uint32"); gpuflow's side is still held
        # to NumPy by test_runs_on_gpuflow_and_matches_numpy.
        pytest.skip(f"CuPy {cupy_module.__version__} cannot run its own text here: "
                    f"{type(err).__name__}: {err}")
    theirs = {name: host(ns[name]) for name in ex.outputs}
    tolerance = ex.tolerance(theirs) if ex.tolerance else None
    for name in ex.outputs:
        assert_same(run.results[name], theirs[name], f"{ex.id}: {name}", tolerance)


@pytest.mark.parametrize("ex", ERRORS, ids=ids(ERRORS))
def test_bad_kernels_raise_jit_error(ex, gpuflow_run):
    run = gpuflow_run(ex)
    assert run.error is None, run.error   # each pytest.raises block caught a JitError
    caught = run.pytest.caught
    assert [e.construct for e in caught] == ex.constructs, [str(e) for e in caught]
    lines = run.text.splitlines()
    for err in caught:
        assert err.filename == run.filename, str(err)
        assert 1 <= err.lineno <= len(lines) and 1 <= err.col <= len(lines[err.lineno - 1])
        assert str(err).startswith(f"{run.filename}:{err.lineno}:{err.col}: ")
    assert not any(k._cache for k in run.kernels)   # no translation, so nothing sent


@needs_cuda
@pytest.mark.parametrize("ex", ERRORS + READ_ONLY, ids=ids(ERRORS + READ_ONLY))
def test_cupy_runs_its_own_text(ex, cupy_module):
    """CuPy's side of the error and read-only cases: its text runs there (CuPy
    refuses the bad kernels too; it runs those gpuflow refuses as read-only)."""
    ns = run_cupy(ex, cupy_module)
    if ex.expect == "jit_error":
        assert len(ns["pytest"].caught) == len(ex.constructs)
