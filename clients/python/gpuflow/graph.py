"""A small builder for gpuflow graphs (the wire form of gpuflow.v1.Graph).

    g = gpuflow.Graph()
    a, b = g.array("a"), g.array("b")          # session arrays, by name
    h = g.sqrt(g.add(g.mul(a, a), g.mul(b, b)))
    y = g.add(g.mul(h, 2), 1)                  # Python scalars are weak, as in NumPy 2
    s = g.softmax(a, axis=-1)
    out = session.execute(g, outputs=[y, s])   # numpy arrays, returned inline
    session.execute(g, outputs={"y": y})       # or stored in the session as "y"

Every op of docs/ops.md is a method: ``g.<op>(*inputs, **attrs)``; the
server's registry (``client.info().ops``) is the authority on names,
arity and attributes. Inputs may be nodes, Python scalars (weak), NumPy
scalars (strong, with their dtype) or small NumPy arrays (inline literals).
"""

import itertools

import numpy as np

from gpuflow import dtypes
from gpuflow.v1 import graph_pb2, types_pb2

# reduce_type (custom reduction kernels) is a string: a C type name or a dtype name.
_DTYPE_ATTRS = {"dtype", "out_dtype", "sub_dtype", "div_dtype"}


class Node:
    """A value in a graph: a node's result or a session array."""

    __slots__ = ("graph", "id", "array_name")

    def __init__(self, graph, id=None, array_name=None):
        self.graph = graph
        self.id = id
        self.array_name = array_name

    def __repr__(self):
        if self.array_name is not None:
            return f"<gpuflow array {self.array_name!r}>"
        return f"<gpuflow node {self.id!r}>"


class Graph:
    """Builds a gpuflow.v1.Graph node by node, in topological order."""

    def __init__(self):
        self._proto = graph_pb2.Graph()
        self._ids = itertools.count()

    @property
    def proto(self):
        return self._proto

    def array(self, name):
        """A reference to the session array ``name``."""
        return Node(self, array_name=name)

    def op(self, op, *inputs, id=None, **attrs):
        """Appends a node running ``op`` on ``inputs`` with ``attrs``; returns it."""
        node = self._proto.nodes.add()
        node.id = id if id is not None else f"{op}_{next(self._ids)}"
        node.op = op
        for value in inputs:
            self._set_input(node.inputs.add(), value)
        for key, value in attrs.items():
            if value is None:
                continue
            _set_attr(node.attrs[key], key, value)
        return Node(self, id=node.id)

    def __getattr__(self, op):
        if op.startswith("_"):
            raise AttributeError(op)
        return lambda *inputs, **attrs: self.op(op, *inputs, **attrs)

    def _set_input(self, msg, value):
        if isinstance(value, Node):
            if value.graph is not self:
                raise ValueError(f"{value!r} belongs to another graph")
            if value.array_name is not None:
                msg.array = value.array_name
            else:
                msg.node = value.id
        elif isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
            _set_scalar(msg.scalar, value)
        elif isinstance(value, np.generic):
            _set_scalar(msg.scalar, value.item())
            msg.scalar.dtype = dtypes.to_proto(value.dtype)
        elif isinstance(value, np.ndarray):
            array = np.asarray(value, dtype=value.dtype.newbyteorder("<"), order="C")
            msg.literal.dtype = dtypes.to_proto(array.dtype)
            msg.literal.shape.extend(array.shape)
            msg.literal.data = array.tobytes()
        else:
            raise TypeError(f"cannot use {type(value).__name__} as a graph input")


def _set_scalar(msg, value):
    if isinstance(value, bool):
        msg.bool_value = value
    elif isinstance(value, int):
        if value >= 1 << 63:
            msg.uint_value = value
        else:
            msg.int_value = value
    elif isinstance(value, complex):
        msg.complex_value.real = value.real
        msg.complex_value.imag = value.imag
    else:
        msg.float_value = float(value)


def _set_attr(msg, key, value):
    if key in _DTYPE_ATTRS and not isinstance(value, (list, tuple)):
        msg.dtype_value = dtypes.to_proto(value if isinstance(value, str) else np.dtype(value))
    elif isinstance(value, bool):
        msg.bool_value = value
    elif isinstance(value, (int, np.integer)):
        msg.int_value = int(value)
    elif isinstance(value, (float, np.floating)):
        msg.float_value = float(value)
    elif isinstance(value, str):
        msg.string_value = value
    elif isinstance(value, (list, tuple)):
        if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
            msg.ints.values.extend(int(v) for v in value)
        elif all(isinstance(v, (int, float, np.number)) for v in value):
            msg.floats.values.extend(float(v) for v in value)
        elif all(isinstance(v, str) for v in value):
            msg.strings.values.extend(value)
        else:
            raise TypeError(f"attribute {key!r}: a list must hold only ints, floats or strings")
    else:
        raise TypeError(f"attribute {key!r}: cannot send {type(value).__name__}")


# Wire dtype -> the little-endian numpy dtype of its bytes, as met.
_NUMPY_DTYPES = {}


def inline_to_numpy(msg):
    """An InlineArray message -> numpy array (bfloat16 as uint16 words)."""
    dtype = _NUMPY_DTYPES.get(msg.dtype)
    if dtype is None:
        dtype = _NUMPY_DTYPES[msg.dtype] = dtypes.numpy_dtype(dtypes.name_of(msg.dtype))
    return np.frombuffer(msg.data, dtype=dtype).reshape(tuple(msg.shape)).copy()


__all__ = ["Graph", "Node", "inline_to_numpy", "types_pb2"]
