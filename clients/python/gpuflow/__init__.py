"""gpuflow: a client for the gpuflow GPU compute service.

    import numpy as np
    import gpuflow

    client = gpuflow.connect("localhost:50051")
    with client.session() as s:
        s.upload(np.arange(6, dtype=np.float32).reshape(2, 3), name="x")
        print(s.download("x"))

        x = s.asarray(np.random.rand(1000, 512))       # a RemoteArray
        y = gpuflow.sqrt((x ** 2).sum(axis=-1))         # lazy, CuPy-style
        print(y.get()[:3])                              # one fused Execute
        f = y.get_async()                               # a Future: f.result() later

See docs/python.md for the whole API.
"""

import numpy as _np

from gpuflow.client import (
    ArrayInfo,
    Client,
    ExecuteResult,
    Future,
    Session,
    connect,
    current_session,
)
from gpuflow.graph import Graph, Node
from gpuflow.dtypes import DTYPES, bfloat16_to_float32, float32_to_bfloat16
from gpuflow.errors import (
    CancelledError,
    Error,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    ResourceExhaustedError,
    SessionClosedError,
    SessionLostError,
    UnauthenticatedError,
    UnavailableError,
    UnimplementedError,
)
from gpuflow.remote_array import (
    RemoteArray,
    evaluate,
    evaluate_async,
    persist,
    to_graph,
    to_numpy,
    to_torch,
)
from gpuflow.functions import *  # noqa: F401,F403 - CuPy/NumPy-named functions
from gpuflow.functions import __all__ as _function_names
from gpuflow.kernels import ElementwiseKernel, RawKernel, ReductionKernel
from gpuflow import jit  # noqa: E402 - Python kernels (docs/jit.md)
from gpuflow import fft  # noqa: E402,F401 - gpuflow.fft, CuPy's cupy.fft (docs/python.md)
from gpuflow import linalg  # noqa: E402,F401 - gpuflow.linalg, CuPy's cupy.linalg
from gpuflow import testing  # noqa: E402,F401 - gpuflow.testing, CuPy's cupy.testing
from gpuflow import exceptions  # noqa: E402,F401 - gpuflow.exceptions, CuPy's cupy.exceptions
from gpuflow import cuda  # noqa: E402,F401 - gpuflow.cuda, CuPy's cupy.cuda stand-ins
from gpuflow.benchmark import BenchmarkResult, benchmark
from gpuflow.fusion import Fusion, fuse
from gpuflow._memory_pool import get_default_memory_pool, get_default_pinned_memory_pool

# dtypes, as in CuPy (gpuflow.float32 is numpy.float32); bfloat16 is the
# string "bfloat16" wherever a dtype is taken.
bool_ = _np.bool_
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float16, float32, float64 = _np.float16, _np.float32, _np.float64
complex64, complex128 = _np.complex64, _np.complex128
bfloat16 = "bfloat16"
newaxis = None

# NumPy's type names, abstract types, dtype utilities and constants, as
# CuPy re-exports them (cupy.dtype is numpy.dtype): only those the running
# numpy has (NumPy 2 dropped float_, complex_, obj2sctype, PINF and NINF).
# issubdtype and promote_types also take gpuflow's "bfloat16" (a floating
# type).
_NUMPY_NAMES = [
    "dtype", "finfo", "iinfo", "min_scalar_type", "common_type", "obj2sctype",
    "number", "integer", "signedinteger", "unsignedinteger", "floating", "complexfloating",
    "inexact", "generic", "byte", "ubyte", "short", "ushort", "intc", "uintc", "intp", "uintp",
    "int_", "uint", "longlong", "ulonglong", "half", "single", "double", "csingle", "cdouble",
    "float_", "complex_", "e", "pi", "inf", "nan", "euler_gamma", "PINF", "NINF",
]
_NUMPY_NAMES = [_n for _n in _NUMPY_NAMES if _n in _np.__dict__]
globals().update({_n: _np.__dict__[_n] for _n in _NUMPY_NAMES})
_BFLOAT16_BASES = (_np.floating, _np.inexact, _np.number, _np.generic)


def issubdtype(arg1, arg2):
    """numpy.issubdtype; "bfloat16" (a RemoteArray's bfloat16 dtype) is a
    floating type."""
    if isinstance(arg1, str) and arg1 == "bfloat16":
        return (isinstance(arg2, str) and arg2 == "bfloat16") or arg2 in _BFLOAT16_BASES
    if isinstance(arg2, str) and arg2 == "bfloat16":
        return False
    return bool(_np.issubdtype(arg1, arg2))


def promote_types(type1, type2):
    """numpy.promote_types; with "bfloat16", NumPy's rules extended as
    gpuflow promotes it (the string "bfloat16" or a numpy dtype)."""
    if "bfloat16" in (type1, type2):
        from gpuflow import _inference
        from gpuflow.remote_array import dtype_name

        name = _inference.promote_types([_inference.Type(dtype_name(type1), ()),
                                         _inference.Type(dtype_name(type2), ())])
        return name if name == "bfloat16" else _np.dtype(name)
    return _np.promote_types(type1, type2)


__version__ = "0.1.0"

__all__ = sorted(_function_names + _NUMPY_NAMES + ["issubdtype", "promote_types"] + [
    "BenchmarkResult",
    "ElementwiseKernel",
    "PermissionDeniedError",
    "RawKernel",
    "ReductionKernel",
    "RemoteArray",
    "SessionClosedError",
    "SessionLostError",
    "UnauthenticatedError",
    "benchmark",
    "bfloat16",
    "bool_",
    "complex128",
    "complex64",
    "cuda",
    "current_session",
    "evaluate",
    "evaluate_async",
    "float16",
    "float32",
    "float64",
    "fuse",
    "get_default_memory_pool",
    "get_default_pinned_memory_pool",
    "int16",
    "int32",
    "int64",
    "int8",
    "linalg",
    "newaxis",
    "persist",
    "to_graph",
    "to_numpy",
    "testing",
    "to_torch",
    "uint16",
    "uint32",
    "uint64",
    "uint8",
    "ArrayInfo",
    "CancelledError",
    "Client",
    "DTYPES",
    "Error",
    "ExecuteResult",
    "Fusion",
    "Future",
    "Graph",
    "Node",
    "FailedPreconditionError",
    "InternalError",
    "InvalidArgumentError",
    "NotFoundError",
    "ResourceExhaustedError",
    "Session",
    "UnavailableError",
    "UnimplementedError",
    "bfloat16_to_float32",
    "connect",
    "float32_to_bfloat16",
])
