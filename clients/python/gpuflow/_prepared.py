"""Prepared graphs, used without being asked: a lazy computation is sent
whole the first time its structure is seen (with ``prepare``, so the server
keeps it validated, planned and compiled under a handle) and by handle
after that, with only its arrays' names and its scalar values.

The structure of a computation is what the server's prepared graph depends
on: each op, its attributes and where its inputs come from (an earlier op,
the n-th distinct session array, a scalar of some kind, an inline array
literal with its bytes), the arrays' dtypes and shapes, and which ops are
outputs. Array names and scalar values are not part of it: they are bound
per call (ExecuteRequest.arrays and .scalars), so ``x * 2.0 + i`` in a loop
over ``i`` or over arrays ``x`` of one type reuses one handle.

Every structural key lives on the client that made it, per session, bounded
by the server's ``Limits.max_prepared_graphs``; a handle the server has
forgotten (FAILED_PRECONDITION) is dropped and the graph sent whole again.
"""

import collections
import threading

import numpy as np

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def walk(exprs):
    """The op exprs needed for ``exprs``, in the order a graph lists them:
    each after its inputs, shared subexpressions once."""
    order = []
    seen = set()
    stack = [(e, False) for e in reversed(exprs)]
    while stack:
        e, inputs_done = stack.pop()
        if id(e) in seen:
            continue
        if inputs_done:
            seen.add(id(e))
            order.append(e)
            continue
        stack.append((e, True))
        for x in reversed(e.inputs):
            if getattr(x, "op", None) is not None and id(x) not in seen:
                stack.append((x, False))
    return order


def _frozen(value):
    """A hashable stand-in for an attribute value that tells apart what the
    wire tells apart (True, 1 and 1.0 included)."""
    if isinstance(value, (list, tuple)):
        return (list, tuple(_frozen(v) for v in value))
    if isinstance(value, dict):
        return (dict, tuple(sorted((k, _frozen(v)) for k, v in value.items())))
    return (type(value), value)


def _scalar_kind(value):
    """The part of a scalar input the prepared graph depends on (None: not a
    scalar)."""
    if isinstance(value, np.generic):
        return value.dtype.name
    if isinstance(value, bool):
        return "weak bool"  # not numpy.bool_'s dtype name "bool": the wire tells them apart
    if isinstance(value, int):
        return "int" if _INT64_MIN <= value <= _INT64_MAX else "uint"
    if isinstance(value, float):
        return "float"
    if isinstance(value, complex):
        return "complex"
    return None


def _exact(value):
    """The scalar's value as a key equal only for the same bits (-0.0 is not
    0.0)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and (value != value or value == 0.0):
        return value.hex()
    if isinstance(value, complex):
        return (value.real.hex(), value.imag.hex())
    return value


class Structure:
    """What one evaluation sends, apart from its outputs: the ops in graph
    order, the structural key, the session arrays read (in the server's
    order: first use) and the scalar inputs (in graph order)."""

    __slots__ = ("order", "index", "key", "arrays", "scalars", "values")

    def __init__(self, exprs):
        self.order = walk(exprs)
        self.index = {}
        arrays = {}
        array_types = []
        self.scalars = []
        key = []
        for i, e in enumerate(self.order):
            self.index[id(e)] = i
            inputs = []
            for x in e.inputs:
                if getattr(x, "op", 0) is None:  # a session array
                    position = arrays.get(x.array_name)
                    if position is None:
                        position = arrays[x.array_name] = len(arrays)
                        array_types.append((x.dtype, x.shape))
                    inputs.append(~position)
                elif hasattr(x, "op"):
                    inputs.append(self.index[id(x)])
                else:
                    kind = _scalar_kind(x)
                    if kind is not None:
                        self.scalars.append(x)
                        inputs.append(kind)
                    else:  # an inline array literal: its bytes are structure
                        inputs.append((x.dtype.str, x.shape, x.tobytes()))
            attrs = _frozen(e.attrs) if e.attrs else ()
            key.append((e.op, attrs, tuple(inputs)))
        self.arrays = tuple(arrays)
        self.values = tuple(_exact(v) for v in self.scalars)
        self.key = (tuple(key), tuple(array_types))


class Entry:
    """A graph the server keeps for this session."""

    __slots__ = ("handle", "node_ids", "arrays", "values")

    def __init__(self, handle, node_ids, arrays, values):
        self.handle = handle
        self.node_ids = node_ids
        self.arrays = arrays
        self.values = values


class Cache:
    """Structural key -> Entry, least recently used first out, at most
    ``limit`` (the server's Limits.max_prepared_graphs; 0: off). Thread-safe."""

    def __init__(self, limit):
        self.limit = limit
        self._entries = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key):
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key, entry):
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.limit:
                self._entries.popitem(last=False)

    def drop(self, key, entry):
        with self._lock:
            if self._entries.get(key) is entry:
                del self._entries[key]

    def __len__(self):
        with self._lock:
            return len(self._entries)
