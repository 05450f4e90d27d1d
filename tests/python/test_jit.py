"""gpuflow.jit: Python kernels translated to CUDA C++ and run as raw_kernel nodes.

Everywhere (no GPU needed): every translation compiles with NVRTC for sm_90
with the server's options (libnvrtc through ctypes; nvcc when only it is
there; skipped when the CUDA toolkit is missing), unsupported constructs
raise JitError at the right file, line and column before anything is sent,
and both call forms reach the server as raw_kernel nodes (the CPU backend
answers FAILED_PRECONDITION). With GPUFLOW_TEST_BACKEND=cuda the launches
are checked against NumPy instead.
"""

import inspect
import math
import os

import numpy as np
import pytest

import gpuflow
import gpuflow as gf
from gpuflow import jit
from conftest import BACKEND
from kernel_nodes import attrs_of, node_of, runs_or_needs_cuda
from nvrtc_check import assert_compiles, needs_compiler

CUDA = BACKEND == "cuda"
THIS_FILE = os.path.abspath(__file__)


def f32(*shape):
    return np.zeros(shape, np.float32)


def arr(dtype, *shape):
    return np.zeros(shape, dtype)


# ---- kernels ----------------------------------------------------------------------------


@jit.rawkernel()
def vec_add(a, b, y):
    i = jit.grid(1)
    if i < y.size:
        y[i] = a[i] + b[i]


@jit.rawkernel
def saxpy_strided(alpha, x, y):
    """A grid-stride loop."""
    start = jit.grid(1)
    step = jit.gridsize(1)
    for i in range(start, y.shape[0], step):
        y[i] = alpha * x[i] + y[i]


@jit.rawkernel()
def control_flow(x, out, n):
    i = jit.grid(1)
    acc = 0.0
    for k in range(n):
        if k % 3 == 0:
            continue
        elif k == 7:
            break
        else:
            acc += x[k]
    for k in range(n - 1, -1, -2):   # a negative step
        acc -= k
    for k in range(2, n):
        acc *= 1.0 if k > 3 and not k == 5 or k < 0 else 0.5
    t = 0
    while True:
        t += 1
        if t >= 10:
            break
    out[i] = acc + t if 0 <= i < out.size else acc


@jit.rawkernel()
def dynamic_step(out, start, stop, step):
    c = 0
    for k in range(start, stop, step):
        c += k
    out[0] = c


@jit.rawkernel()
def arithmetic(x, n, out):
    i = jit.grid(1)
    a = n // 3
    b = n % -7
    c = n ** 3
    d = x[i] // 2.5
    e = x[i] % 2.0
    f = x[i] ** 2
    g = n / 4
    h = (n << 2) | (n >> 1) ^ (n & 15)
    m = -n + ~n
    out[i] = a + b + c + d + e + f + g + h + m


@jit.rawkernel()
def matmul(a, b, c):
    i, j = jit.grid(2)
    if i < c.shape[0] and j < c.shape[1]:
        acc = gpuflow.float32(0)
        for k in range(a.shape[1]):
            acc += a[i, k] * b[k, j]
        c[i, j] = acc


@jit.rawkernel()
def three_d(x, y):
    i, j, k = jit.grid(3)
    n0, n1, n2 = x.shape
    if i < n0 and j < n1 and k < n2:
        y[i, j, k] = x[i, j, k] + x[-1, 0, -1] + x.ndim + len(x)


@jit.rawkernel()
def block_sum(x, out):
    smem = jit.shared_memory(gpuflow.float32, 256)
    tid = jit.threadIdx.x
    i = jit.blockIdx.x * jit.blockDim.x + tid
    smem[tid] = x[i] if i < x.size else gpuflow.float32(0)
    jit.syncthreads()
    s = jit.blockDim.x // 2
    while s > 0:
        if tid < s:
            smem[tid] += smem[tid + s]
        jit.syncthreads()
        s //= 2
    if tid == 0:
        jit.atomic_add(out, 0, smem[0])


@jit.rawkernel()
def warp_sum(x, out):
    i = jit.grid(1)
    v = x[i] if i < x.size else 0.0
    offset = 16
    while offset > 0:
        v += jit.shfl_down_sync(0xffffffff, v, offset)
        offset //= 2
    if jit.laneid() == 0:
        jit.atomic_add(out, 0, v)
    jit.syncwarp()
    w = jit.shfl_sync(0xffffffff, v, 0, width=jit.warpsize)
    u = jit.shfl_up_sync(0xffffffff, w, 1)
    z = jit.shfl_xor_sync(0xffffffff, u, 1)
    if jit.all_sync(0xffffffff, z > 0) or jit.any_sync(0xffffffff, z < 0):
        out[1] = jit.ballot_sync(0xffffffff, z == 0)


@jit.rawkernel()
def dynamic_shared(x, out):
    buf = jit.shared_memory(gpuflow.float64, None)
    tile = jit.shared_memory(gpuflow.int32, (8, 4), alignment=16)
    buf[jit.threadIdx.x] = x[jit.threadIdx.x]
    tile[1, 2] = 3
    jit.syncthreads()
    out[jit.threadIdx.x] = buf[0] + tile[1, 2] + tile.size + tile.shape[0]


@jit.rawkernel()
def math_calls(x, y):
    i = jit.grid(1)
    v = x[i]
    r = (math.sqrt(v) + math.exp(v) + math.log(v) + math.sin(v) + math.cos(v) + math.tan(v)
         + math.asin(v) + math.acos(v) + math.atan(v) + math.sinh(v) + math.cosh(v)
         + math.tanh(v) + math.asinh(v) + math.acosh(v) + math.atanh(v) + math.log2(v)
         + math.log10(v) + math.log1p(v) + math.expm1(v) + math.erf(v) + math.erfc(v)
         + math.gamma(v) + math.lgamma(v) + math.fabs(v) + math.atan2(v, v)
         + math.hypot(v, 2.0) + math.copysign(v, -1.0) + math.fmod(v, 3.0) + math.pow(v, 2)
         + math.log(v, 10) + math.degrees(v) + math.radians(v) + math.pi + math.e + math.inf)
    r += math.floor(v) + math.ceil(v) + math.trunc(v) + math.cbrt(v) + math.exp2(v)
    if math.isnan(v) or math.isinf(v) or not math.isfinite(v):
        r = math.nan
    y[i] = r


@jit.rawkernel()
def ufunc_calls(x, y, k):
    i = jit.grid(1)
    v = x[i]
    r = (gpuflow.sqrt(v) + gpuflow.exp(v) + gpuflow.log(v) + gpuflow.sin(v) + np.cos(v)
         + gpuflow.arcsin(v) + gpuflow.arccos(v) + gpuflow.arctan(v) + gpuflow.arcsinh(v)
         + gpuflow.arccosh(v) + gpuflow.arctanh(v) + gpuflow.abs(v) + gpuflow.absolute(-v)
         + abs(v) + gpuflow.fabs(v) + gpuflow.floor(v) + gpuflow.ceil(v) + gpuflow.trunc(v)
         + gpuflow.rint(v) + gpuflow.sign(v) + gpuflow.square(v) + gpuflow.negative(v)
         + gpuflow.exp2(v) + gpuflow.expm1(v) + gpuflow.log2(v) + gpuflow.log10(v)
         + gpuflow.log1p(v) + gpuflow.cbrt(v) + gpuflow.deg2rad(v) + gpuflow.rad2deg(v)
         + gpuflow.maximum(v, 1) + gpuflow.minimum(v, 1) + gpuflow.fmax(v, k)
         + gpuflow.fmin(v, k) + gpuflow.arctan2(v, 1) + gpuflow.hypot(v, v)
         + gpuflow.power(v, 3) + gpuflow.copysign(v, -1) + gpuflow.fmod(v, 2)
         + max(v, 0.5, k) + min(v, k) + gpuflow.add(v, 1) + gpuflow.multiply(v, 2))
    if gpuflow.isnan(v) or gpuflow.isinf(v) or not gpuflow.isfinite(v) or gpuflow.signbit(v):
        r = 0
    if gpuflow.logical_not(k):
        r += abs(k) + gpuflow.sign(k) + gpuflow.square(k) + gpuflow.maximum(k, 2)
    y[i] = r


@jit.rawkernel()
def casts(x, y, flags):
    i = jit.grid(1)
    a = gpuflow.float32(x[i])
    b = gpuflow.int8(x[i])
    c = int(x[i])
    d = float(b)
    e = np.uint16(7)
    f = bool(x[i])
    g = gpuflow.uint64(c) + gpuflow.int64(e)
    h = gpuflow.bool_(flags[i])
    y[i] = a + b + c + d + e + f + g + h


@jit.rawkernel()
def locals_and_names(x, y):
    """C keywords as Python names, annotations, swaps and globals."""
    int = 3                # noqa: A001 - shadowing on purpose
    new = x[0]
    double = new * SCALE
    n: gpuflow.float32 = 1
    a, b = new, double
    a, b = b, a
    y[0] = a + b + n + int + LIMIT + OFFSET


SCALE = 2.5
LIMIT = np.int32(5)


def _with_closure():
    offset = 7

    @jit.rawkernel()
    def add_offset(y):
        i = jit.grid(1)
        if i < y.size:
            y[i] = y[i] + offset
    return add_offset


OFFSET = 1
add_offset = _with_closure()


@jit.rawkernel()
def zero_d(x, y):
    y[()] = x[()] * 2


@jit.rawkernel()
def grid_dims(y):
    i = jit.threadIdx.x + jit.threadIdx.y + jit.threadIdx.z
    j = jit.blockIdx.x + jit.blockIdx.y + jit.blockIdx.z
    k = jit.blockDim.x + jit.blockDim.y + jit.blockDim.z
    m = jit.gridDim.x + jit.gridDim.y + jit.gridDim.z
    p, q = jit.gridsize(2)
    r, s, t = jit.gridsize(3)
    y[0] = i + j + k + m + p + q + r + s + t + jit.warpsize
    return


def atomics_kernel(op, dtype):
    """A kernel using jit.atomic_<op> on a dtype array, with its source text."""
    fn = getattr(jit, f"atomic_{op}")

    if op == "cas":
        @jit.rawkernel()
        def kernel(a, v):
            i = jit.grid(1)
            old = fn(a, i, v, v)
            a[0] = old
    else:
        @jit.rawkernel()
        def kernel(a, v):
            i, j = jit.grid(2)
            old = fn(a, (i, j), v)
            a[0, 0] = old
    return kernel


ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
              "float32", "float64"]


# ---- translations compile ------------------------------------------------------------------


COMPILE_CASES = [
    (vec_add, (f32(5), f32(5), f32(5))),
    (vec_add, (arr("float64", 5), arr("int32", 5), arr("float64", 5))),
    (saxpy_strided, (2.0, f32(9), f32(9))),
    (saxpy_strided, (np.float32(2.0), f32(9), f32(9))),
    (control_flow, (f32(9), f32(9), 10)),
    (control_flow, (arr("int64", 9), arr("float64", 9), np.int32(10))),
    (dynamic_step, (arr("int64", 1), 0, 10, -3)),
    (dynamic_step, (arr("int64", 1), np.uint32(0), np.uint32(10), np.uint32(1))),
    (arithmetic, (f32(5), 7, f32(5))),
    (arithmetic, (arr("float64", 5), np.int8(7), arr("float64", 5))),
    (arithmetic, (arr("float64", 5), np.uint16(7), arr("float64", 5))),
    (matmul, (f32(3, 4), f32(4, 5), f32(3, 5))),
    (three_d, (f32(2, 3, 4), f32(2, 3, 4))),
    (block_sum, (f32(1000), f32(1))),
    (warp_sum, (f32(1000), f32(2))),
    (warp_sum, (arr("float64", 1000), arr("float64", 2))),
    (dynamic_shared, (arr("float64", 64), f32(64))),
    (math_calls, (f32(5), f32(5))),
    (math_calls, (arr("float64", 5), arr("float64", 5))),
    (math_calls, (arr("int32", 5), arr("float64", 5))),
    (ufunc_calls, (f32(5), f32(5), np.float32(1))),
    (ufunc_calls, (arr("float64", 5), arr("float64", 5), 3)),
    (casts, (f32(5), arr("float64", 5), arr("bool", 5))),
    (locals_and_names, (f32(5), f32(5))),
    (add_offset, (arr("int16", 5),)),
    (zero_d, (f32(), f32())),
    (grid_dims, (arr("int64", 1),)),
]


@needs_compiler
@pytest.mark.parametrize("kernel,args", COMPILE_CASES,
                         ids=[f"{k.__name__}-{i}" for i, (k, _) in enumerate(COMPILE_CASES)])
def test_translation_compiles_with_nvrtc(kernel, args):
    assert_compiles(kernel.cuda_source(*args))


@pytest.mark.parametrize("kernel,args", COMPILE_CASES,
                         ids=[f"{k.__name__}-{i}" for i, (k, _) in enumerate(COMPILE_CASES)])
def test_raw_kernel_reads_the_parameter_list_the_client_passes(kernel, args):
    """RawKernel checks the argument count against the source's signature: it
    must see the user's arguments plus one int64 per array dimension."""
    source = kernel.cuda_source(*args)
    raw = gf.RawKernel(source, kernel.__name__)
    assert raw._arity == len(args) + sum(np.ndim(a) for a in args
                                         if not isinstance(a, (int, float, np.generic)))


@needs_compiler
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_dtype_compiles(dtype):
    assert_compiles(vec_add.cuda_source(arr(dtype, 4), arr(dtype, 4), arr(dtype, 4)))
    assert_compiles(control_flow.cuda_source(arr(dtype, 4), arr("float64", 4), 3))
    assert_compiles(casts.cuda_source(arr(dtype, 4), arr(dtype, 4), arr(dtype, 4)))
    if dtype != "bool" and dtype[0] != "f":
        assert_compiles(arithmetic.cuda_source(arr(dtype, 4), np.dtype(dtype).type(3),
                                               arr("float64", 4)))
    assert_compiles(arithmetic.cuda_source(arr(dtype, 4), np.int32(3), arr(dtype, 4)))


ATOMIC_SUPPORT = {
    "add": ["int32", "int64", "uint32", "uint64", "float32", "float64"],
    "sub": ["int32", "int64", "uint32", "uint64", "float32", "float64"],
    "max": ["int32", "int64", "uint32", "uint64"],
    "min": ["int32", "int64", "uint32", "uint64"],
    "exch": ["int32", "int64", "uint32", "uint64", "float32", "float64"],
    "cas": ["int32", "int64", "uint16", "uint32", "uint64", "float32", "float64"],
    "and": ["int32", "int64", "uint32", "uint64"],
    "or": ["int32", "int64", "uint32", "uint64"],
    "xor": ["int32", "int64", "uint32", "uint64"],
    "inc": ["uint32"],
    "dec": ["uint32"],
}


@needs_compiler
@pytest.mark.parametrize("op", sorted(ATOMIC_SUPPORT))
def test_atomics_compile_for_their_dtypes_and_refuse_others(op):
    kernel = atomics_kernel(op, None)
    for dtype in ALL_DTYPES:
        shape = (4,) if op == "cas" else (4, 4)
        args = (arr(dtype, *shape), np.dtype(dtype).type(1))
        if dtype in ATOMIC_SUPPORT[op]:
            source = assert_compiles(kernel.cuda_source(*args))
            assert "atomic" in source
        else:
            with pytest.raises(jit.JitError, match=f"jit.atomic_{op} does not support {dtype}"):
                kernel.cuda_source(*args)


@needs_compiler
@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_shuffles_compile_for_every_dtype(dtype):
    @jit.rawkernel()
    def shuffle(x, y):
        i = jit.grid(1)
        y[i] = jit.shfl_xor_sync(0xffffffff, x[i], 1) + jit.shfl_sync(0xffff, x[i], 3, 16)

    assert_compiles(shuffle.cuda_source(arr(dtype, 32), arr("float64", 32)))


# ---- what the translation says ----------------------------------------------------------------


def test_arrays_pass_their_shapes_as_trailing_int64_parameters():
    source = matmul.cuda_source(f32(3, 4), f32(4, 5), f32(3, 5))
    assert ('extern "C" __global__ void matmul(const float* a, const float* b, float* c, '
            'long long _gf_a_shape0, long long _gf_a_shape1, long long _gf_b_shape0, '
            'long long _gf_b_shape1, long long _gf_c_shape0, long long _gf_c_shape1)') in source
    assert "#include" not in source   # NVRTC has no standard headers
    # C order: a[i, k] is a[i * shape1 + k].
    assert "a[(i) * _gf_a_shape1 + k]" in source


def test_types_follow_numpy_with_python_literals_taking_the_other_type():
    # float32 + int32 is float64 in NumPy; the store casts back to y's float32.
    source = vec_add.cuda_source(f32(5), arr("int32", 5), f32(5))
    assert "y[i] = ((float)((((double)(a[i])) + ((double)(b[i])))));" in source
    source = saxpy_strided.cuda_source(np.float32(2), f32(4), f32(4))
    assert "float alpha" in source and "y[i] = ((alpha * x[i]) + y[i]);" in source
    source = saxpy_strided.cuda_source(2.0, f32(4), f32(4))
    assert "double alpha" in source   # a Python float is float64, as in CuPy
    source = block_sum.cuda_source(f32(4), f32(1))
    assert "unsigned int tid;" in source  # threadIdx.x is uint32, as in cupyx.jit
    source = arithmetic.cuda_source(f32(5), 7, f32(5))
    for line in ["a = _gf_floordiv(n, 3LL);", "b = _gf_mod(n, -7LL);", "c = _gf_ipow(n, 3LL);",
                 "d = _gf_floordiv(x[i], 2.5f);", "f = powf(x[i], 2.0f);",  # literals follow x
                 "g = (((double)(n)) / 4.0);", "float d;", "double g;"]:
        assert line in source


def test_translations_are_cached_per_signature():
    k = jit.rawkernel()(vec_add.func)
    s1 = k.cuda_source(f32(3), f32(3), f32(3))
    assert k.cuda_source(f32(7), f32(7), f32(7)) is s1   # shapes are arguments, not types
    s2 = k.cuda_source(arr("float64", 3), f32(3), f32(3))
    assert s2 != s1 and "const double* a" in s2 and len(k._cache) == 2
    with pytest.raises(jit.JitError, match="'a' has 2 dimension.s. but 1 indices"):
        k.cuda_source(f32(3, 3), f32(3), f32(3))
    assert len(k._cache) == 2   # failed translations are not cached


def test_python_scalars_are_typed_as_cupy_types_them():
    @jit.rawkernel()
    def store(y, a, b, c):
        y[0] = a + b + c

    source = store.cuda_source(f32(1), 1, 2.0, True)
    assert "long long a, double b, bool c" in source
    source = store.cuda_source(f32(1), np.int16(1), np.float32(2), np.bool_(True))
    assert "short a, float b, bool c" in source


def test_bad_arguments():
    with pytest.raises(TypeError, match="takes 3 arguments"):
        vec_add.cuda_source(f32(3), f32(3))
    with pytest.raises(TypeError, match="argument 2 .'y'. is a list"):
        vec_add.cuda_source(f32(3), f32(3), [1, 2])
    with pytest.raises(TypeError, match="is float16"):
        vec_add.cuda_source(f32(3), f32(3), np.zeros(3, np.float16))
    with pytest.raises(TypeError, match="is float16; jit kernels take bool, .*complex128"):
        vec_add.cuda_source(f32(3), f32(3), np.float16(1))
    with pytest.raises(OverflowError, match="does not fit int64"):
        saxpy_strided.cuda_source(2**63, f32(3), f32(3))


def test_calling_jit_functions_outside_a_kernel_is_an_error():
    with pytest.raises(RuntimeError, match="only be used inside a @gpuflow.jit.rawkernel"):
        jit.grid(1)


def test_device_functions_are_refused():
    with pytest.raises(jit.JitError, match="device functions"):
        jit.rawkernel(device=True)


# ---- errors name the construct and where it is -----------------------------------------------


def k_with(x):
    with open("f") as f:  # ERR 'with' statement
        x[0] = f


def k_list(x):
    x[0] = [1, 2][0]  # ERR list display


def k_comprehension(x):
    x[0] = [i for i in range(3)][0]  # ERR list comprehension


def k_lambda(x):
    x[0] = (lambda v: v)(1)  # ERR lambda


def k_slice(x):
    x[1:2] = 0  # ERR slice


def k_string(x):
    x[0] = "a"  # ERR string literal


def k_type_change(x):
    v = 1
    v = 2.5  # ERR variable changing type
    x[0] = v


def k_aug_type_change(x):
    v = 0
    v += x[0, 0]  # ERR variable changing type


def k_for_list(x):
    for v in x:  # ERR for loop over a non-range iterable
        x[0] = v


def k_for_else(x):
    for i in range(3):  # ERR 'for ... else'
        pass
    else:
        x[0] = 1


def k_try(x):
    try:  # ERR 'try' statement
        x[0] = 1
    except Exception:
        pass


def k_return_value(x):
    return x[0]  # ERR 'return' with a value


def k_call_python(x):
    x[0] = print(1)  # ERR call to print


def k_partial_index(x):
    x[0] = x[1]  # ERR partial indexing


def k_float_index(x):
    x[0.5, 1] = 1  # ERR non-integer index


def k_undefined(x):
    x[0, 0] = undefined_name  # ERR undefined name  # noqa: F821


def k_use_before(x):
    x[0, 0] = w  # noqa: F821
    w = 1


def k_matmul(x):
    x[0, 0] = x[0, 0] @ x[0, 0]  # ERR operator @


def k_is(x):
    x[0, 0] = x[0, 0] is None  # ERR operator 'is'


def k_in(x):
    x[0, 0] = 1 in (1, 2)  # ERR operator 'in'


def k_walrus(x):
    x[0, 0] = (y := 1)  # ERR assignment expression (:=)


def k_fstring(x):
    x[0, 0] = f"{x}"  # ERR f-string


def k_array_assign(x):
    y = x  # ERR array assignment
    y[0, 0] = 1


def k_shared_size(x, n):
    s = jit.shared_memory(gpuflow.float32, n)  # ERR non-constant size
    s[0] = 1


def k_range_step_zero(x):
    for i in range(0, 10, 0):  # ERR range()
        x[i, 0] = 1


def k_nested_def(x):
    def inner():  # ERR nested function definition
        pass
    x[0, 0] = 1


def k_while_else(x):
    while False:  # ERR 'while ... else'
        pass
    else:
        x[0, 0] = 1


def k_global(x):
    global SCALE  # ERR 'global' statement
    x[0, 0] = 1


def k_star_args(*xs):  # ERR *args, **kwargs, keyword-only arguments or defaults
    pass


def k_reserved(x):
    _gf_x = 1  # noqa: F841


def k_tuple_var(x):
    t = jit.grid(2)  # ERR tuple variable
    x[0, 0] = 1


def k_bool_neg(x):
    x[0, 0] = -(x[0, 0] > 1)  # ERR operator -


def k_assert(x):
    assert x  # ERR 'assert' statement


def k_none(x):
    x[0, 0] = None  # ERR None literal


def k_atomic_float_max(x):
    jit.atomic_max(x, (0, 0), 1.0)  # ERR jit.atomic_max


def k_chained_assign(x):
    a = b = 1  # ERR chained assignment (a = b = ...)
    x[0, 0] = a + b


def k_rebind_array(x):
    x = 1  # ERR rebinding an array


ERROR_KERNELS = [k_with, k_list, k_comprehension, k_lambda, k_slice, k_string, k_type_change,
                 k_aug_type_change, k_for_list, k_for_else, k_try, k_return_value,
                 k_call_python, k_partial_index, k_float_index, k_undefined, k_matmul, k_is,
                 k_in, k_walrus, k_fstring, k_array_assign, k_shared_size, k_range_step_zero,
                 k_nested_def, k_while_else, k_global, k_star_args,
                 k_tuple_var, k_bool_neg, k_assert, k_none, k_atomic_float_max,
                 k_chained_assign, k_rebind_array]


def _marked_line(func):
    """(absolute line number, line text, construct) of the ``# ERR`` line."""
    lines, start = inspect.getsourcelines(func)
    for k, line in enumerate(lines):
        if "# ERR " in line:
            construct = line.split("# ERR ", 1)[1].split("  #")[0].strip()
            return start + k, line, construct
    raise AssertionError(f"no # ERR marker in {func.__name__}")


@pytest.mark.parametrize("func", ERROR_KERNELS, ids=[f.__name__ for f in ERROR_KERNELS])
def test_unsupported_python_raises_jit_error_with_location(func):
    lineno, line, construct = _marked_line(func)
    kernel = jit.rawkernel()(func)
    args = (f32(2, 2),) * len(inspect.signature(func).parameters)
    if func is k_shared_size:
        args = (f32(2, 2), 3)
    if func is k_star_args:
        args = (f32(2, 2),)
    with pytest.raises(jit.JitError) as info:
        kernel.cuda_source(*args)
    err = info.value
    assert err.construct == construct, str(err)
    assert (err.filename, err.lineno) == (THIS_FILE, lineno), str(err)
    assert 1 <= err.col <= len(line) and line[err.col - 1] != " ", (str(err), line)
    assert str(err).startswith(f"{THIS_FILE}:{lineno}:{err.col}: ")


def test_error_columns_point_at_the_construct():
    lineno, line, _ = _marked_line(k_matmul)
    with pytest.raises(jit.JitError) as info:
        jit.rawkernel()(k_matmul).cuda_source(f32(2, 2))
    assert info.value.col == line.index("x[0, 0] @") + 1
    lineno, line, _ = _marked_line(k_slice)
    with pytest.raises(jit.JitError, match="slice is not supported") as info:
        jit.rawkernel()(k_slice).cuda_source(f32(2))
    assert info.value.col == line.index("1:2") + 1


def test_errors_in_indented_kernels_keep_their_columns():
    @jit.rawkernel()
    def nested(x):
        x[0] = {1: 2}[1]

    lines, start = inspect.getsourcelines(nested)
    with pytest.raises(jit.JitError, match="dict display is not supported") as info:
        nested.cuda_source(f32(2))
    err = info.value
    assert err.lineno == start + 2
    assert err.col == lines[2].index("{1: 2}") + 1


def test_use_before_assignment_and_reserved_names():
    with pytest.raises(jit.JitError, match="'w' is used before it is assigned"):
        jit.rawkernel()(k_use_before).cuda_source(f32(2, 2))
    with pytest.raises(jit.JitError, match="reserved"):
        jit.rawkernel()(k_reserved).cuda_source(f32(2, 2))


# ---- launches ---------------------------------------------------------------------------------


def test_both_call_forms_build_raw_kernel_nodes(raw_kernel_server):
    n = 1000
    rng = np.random.default_rng(20)
    a_np = rng.standard_normal(n).astype(np.float32)
    b_np = rng.standard_normal(n).astype(np.float32)
    with gf.connect(raw_kernel_server.target) as c, c.session() as s:
        a, b = s.asarray(a_np), s.asarray(b_np)
        y = gf.zeros(n, gf.float32)
        before = y._expr
        assert vec_add(((n + 127) // 128,), (128,), (a, b, y)) is None
        assert y._expr is not before
        node = node_of(y)
        assert node.op == "raw_kernel"
        attrs = attrs_of(node)
        assert attrs["code"] == vec_add.cuda_source(a, b, y) and attrs["name"] == "vec_add"
        assert (attrs["grid"], attrs["block"], attrs["output"]) == ([8], [128], 2)
        # The shapes follow the arrays: three int64 scalars.
        assert len(node.inputs) == 6
        assert [(node.inputs[i].scalar.int_value, node.inputs[i].scalar.dtype)
                for i in (3, 4, 5)] == [(n, gf.v1.types_pb2.DTYPE_INT64)] * 3
        runs_or_needs_cuda(y, a_np + b_np)

        z = gf.zeros(n, gf.float32)
        vec_add[(n + 127) // 128, 128](a, b, z)       # Numba's form
        assert attrs_of(node_of(z))["grid"] == [8]
        runs_or_needs_cuda(z, a_np + b_np)

        w = gf.empty(n, gf.float32)
        block_sum((4,), (256,), (a, w), shared_mem=0)
        total = gf.zeros(1, gf.float32)
        block_sum[(n + 255) // 256, 256, None, 0](a, total)
        assert attrs_of(node_of(total))["output"] == 1
        runs_or_needs_cuda(total, np.array([a_np.sum()], np.float32), rtol=1e-4)


def test_launch_needs_raw_kernel_permission(session):
    y = gf.zeros(8, gf.float32, session=session)
    vec_add((1,), (8,), (np.ones(8, np.float32), np.ones(8, np.float32), y))
    with pytest.raises(gf.PermissionDeniedError, match="allow_raw_kernels"):
        y.get()


def test_writes_to_read_only_arguments_are_refused_before_sending(session):
    a = session.asarray(np.ones(4, np.float32))
    y = gf.zeros(4, gf.float32, session=session)
    with pytest.raises(ValueError, match=r"writes 'y' \(line \d+\) but argument 2 is read-only"):
        vec_add((1,), (4,), (a, a, a))
    with pytest.raises(ValueError, match="writes 'y'"):
        vec_add((1,), (4,), (y, y, np.zeros(4, np.float32)))
    with pytest.raises(TypeError, match="args must be a tuple"):
        vec_add((1,), (4,), a)
    with pytest.raises(TypeError, match="launch configuration"):
        vec_add[1](a, a, y)
    with pytest.raises(ValueError, match="block entries must be in"):
        vec_add((1,), (0,), (a, a, y))
    # The translation knows what the kernel stores into: only that is rebound
    # (and copied for the launch); a writable argument it only reads stays.
    x = gf.arange(4, dtype=np.float32, session=session)
    vec_add((1,), (4,), (x, a, y))
    assert node_of(x).op == "arange" and node_of(y).op == "raw_kernel"
    assert node_of(y).attrs["writes"].ints.values == [2]


@pytest.mark.skipif(not CUDA, reason="runs kernels: needs GPUFLOW_TEST_BACKEND=cuda")
def test_python_semantics_on_the_device(raw_kernel_server):
    @jit.rawkernel()
    def divmod_k(a, b, q, r, p):
        i = jit.grid(1)
        if i < a.size:
            q[i] = a[i] // b[i]
            r[i] = a[i] % b[i]
            p[i] = a[i] ** 2

    ints = np.array([7, -7, 7, -7, 0, 5], np.int64)
    divs = np.array([2, 2, -2, -2, 3, 0], np.int64)
    with gf.connect(raw_kernel_server.target) as c, c.session() as s:
        for dtype in (np.int64, np.float64):
            a, b = s.asarray(ints.astype(dtype)), s.asarray(divs.astype(dtype))
            q, r, p = (gf.zeros(6, dtype) for _ in range(3))
            divmod_k((1,), (32,), (a, b, q, r, p))
            with np.errstate(all="ignore"):  # NumPy's answers in dtype: x // 0.0 is inf
                want_q = np.floor_divide(ints.astype(dtype), divs.astype(dtype))
                want_r = np.remainder(ints.astype(dtype), divs.astype(dtype))
            np.testing.assert_array_equal(q.get(), want_q)
            np.testing.assert_array_equal(r.get(), want_r)
            np.testing.assert_array_equal(p.get(), (ints ** 2).astype(dtype))
