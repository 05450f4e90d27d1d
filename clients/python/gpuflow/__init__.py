"""gpuflow: a client for the gpuflow GPU compute service.

    import numpy as np
    import gpuflow

    client = gpuflow.connect("localhost:50051")
    with client.session() as s:
        s.upload(np.arange(6, dtype=np.float32).reshape(2, 3), name="x")
        print(s.download("x"))
"""

from gpuflow.client import ArrayInfo, Client, ExecuteResult, Session, connect
from gpuflow.graph import Graph, Node
from gpuflow.dtypes import DTYPES, bfloat16_to_float32, float32_to_bfloat16
from gpuflow.errors import (
    CancelledError,
    Error,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    ResourceExhaustedError,
    UnavailableError,
    UnimplementedError,
)

__version__ = "0.1.0"

__all__ = [
    "ArrayInfo",
    "CancelledError",
    "Client",
    "DTYPES",
    "Error",
    "ExecuteResult",
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
]
