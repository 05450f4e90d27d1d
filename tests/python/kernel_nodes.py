"""Helpers for tests of custom and raw kernel launches (test_kernels.py,
test_jit.py): the graph node a RemoteArray's value comes from, its
attributes as Python values, and the check that a kernel's result is right
on CUDA and refused on the CPU backend."""

import numpy as np
import pytest

import gpuflow as gf
from conftest import BACKEND


def node_of(array):
    """The graph node that computes `array` (the last one of its graph)."""
    graph, _ = gf.to_graph(array)
    return graph.proto.nodes[-1]


def attrs_of(node):
    out = {}
    for key, value in node.attrs.items():
        kind = value.WhichOneof("value")
        v = getattr(value, kind)
        out[key] = list(v.values) if kind in ("ints", "floats", "strings") else v
    return out


def runs_or_needs_cuda(array, expected, rtol=1e-6, atol=0):
    """On CUDA: the array equals `expected`. On the CPU backend: the server
    refuses with FAILED_PRECONDITION, naming the CUDA backend."""
    if BACKEND == "cuda":
        np.testing.assert_allclose(array.get(), expected, rtol=rtol, atol=atol)
    else:
        with pytest.raises(gf.FailedPreconditionError, match="cuda"):
            array.get()
