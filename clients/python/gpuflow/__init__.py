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
from gpuflow.benchmark import BenchmarkResult, benchmark
from gpuflow.fusion import Fusion, fuse

# dtypes, as in CuPy (gpuflow.float32 is numpy.float32); bfloat16 is the
# string "bfloat16" wherever a dtype is taken.
bool_ = _np.bool_
int8, int16, int32, int64 = _np.int8, _np.int16, _np.int32, _np.int64
uint8, uint16, uint32, uint64 = _np.uint8, _np.uint16, _np.uint32, _np.uint64
float16, float32, float64 = _np.float16, _np.float32, _np.float64
complex64, complex128 = _np.complex64, _np.complex128
bfloat16 = "bfloat16"
newaxis = None

__version__ = "0.1.0"

__all__ = sorted(_function_names + [
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
    "current_session",
    "evaluate",
    "evaluate_async",
    "float16",
    "float32",
    "float64",
    "fuse",
    "int16",
    "int32",
    "int64",
    "int8",
    "newaxis",
    "persist",
    "to_graph",
    "to_numpy",
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
