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

An op's structure is made when the op is made (:func:`sub_of`; evaluation
reads it as a :class:`Sub`): from what its op inputs keep, its attributes
and its other inputs' kinds, so evaluating it walks nothing. The structural
key is then one int: each op's entry (op, attributes, inputs by position,
types of the arrays it reads first) interned onto the key of the ops before
it in graph order, so equal ints mean equal entry sequences, the key
:class:`Structure` spells out. An op that needs more than ``MAX_SUB_OPS``
ops (itself included) keeps none, and its graph is walked at evaluation.
"""

import collections
import itertools
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
    wire tells apart (True, 1 and 1.0 included, and -0.0 and 0.0)."""
    if isinstance(value, (list, tuple)):
        return (list, tuple(_frozen(v) for v in value))
    if isinstance(value, dict):
        return (dict, tuple(sorted((k, _frozen(v)) for k, v in value.items())))
    if isinstance(value, (float, np.floating)) and (value == 0 or value != value):
        return (type(value), float(value).hex())
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


    def position(self, e):
        """Where the op ``e`` is in ``order``."""
        return self.index[id(e)]


# Ops that keep a Sub: at most this many in the graph an op needs (itself
# included); the ops built on a larger one keep none either.
MAX_SUB_OPS = 64

# (key of the ops before, entry of the next op) -> key. Keys are ints drawn
# once each, so two Subs have one key only for equal entry sequences; when
# the table is full it starts again (old keys stay valid, equal structures
# made after that get new keys: the server prepares them once more).
_keys = {}
_key_ids = itertools.count(1)
_key_bytes = 0  # literal bytes _keys holds
_MAX_KEYS = 1 << 16
_MAX_KEY_BYTES = 64 << 20


def _intern(pair, nbytes):
    """The key for ``pair``: (key of the ops before, entry of the next op)."""
    global _key_bytes
    key = _keys.get(pair)
    if key is None:
        if len(_keys) >= _MAX_KEYS or _key_bytes + nbytes > _MAX_KEY_BYTES:
            _keys.clear()
            _key_bytes = 0
        _key_bytes += nbytes
        key = _keys.setdefault(pair, next(_key_ids))  # another thread's, if it was first
    return key


class Sub:
    """What :class:`Structure` gives (``key`` an int, see the module doc),
    made from the structure of one op or several ops' merged (see
    :func:`sub_of`)."""

    __slots__ = ("key", "order", "arrays", "scalars", "values")

    def __init__(self, structure):
        self.key, self.order, self.arrays, self.scalars, self.values = structure

    def position(self, e):
        """Where the op ``e`` is in ``order``."""
        order = self.order
        return len(order) - 1 if order[-1] is e else order.index(e)


def _whole(e):
    """The structure of the op ``e`` that keeps one: what it keeps with
    itself last in the order."""
    key, before, arrays, scalars, values = e._sub
    return key, before + (e,), arrays, scalars, values


def _extend(base, nodes):
    """The structure (key, ops in graph order, arrays, scalars, exact
    scalar values) of the structure ``base``'s ops followed by ``nodes``:
    ops not among them, each after the ops it reads."""
    key, order, arrays, scalars, values = base
    order, arrays, scalars, values = list(order), list(arrays), list(scalars), list(values)
    expr = type(nodes[-1])
    positions = None  # id(op) -> position, once an input is not the last op
    for e in nodes:
        inputs = []
        types = []  # (dtype, shape) of the arrays this op reads first
        nbytes = 0
        for x in e.inputs:
            if type(x) is float:
                inputs.append("float")
                scalars.append(x)
                values.append(x.hex() if x != x or x == 0.0 else x)
            elif isinstance(x, expr):
                if x.op is None:  # a session array
                    name = x.array_name
                    if name in arrays:
                        inputs.append(~arrays.index(name))
                    else:
                        inputs.append(~len(arrays))
                        arrays.append(name)
                        types.append((x.dtype, x.shape))
                elif x is order[-1]:
                    inputs.append(len(order) - 1)
                else:
                    if positions is None:
                        positions = {id(o): i for i, o in enumerate(order)}
                    inputs.append(positions[id(x)])
            else:
                kind = _scalar_kind(x)
                if kind is not None:
                    inputs.append(kind)
                    scalars.append(x)
                    values.append(_exact(x))
                else:  # an inline array literal: its bytes are structure
                    data = x.tobytes()
                    nbytes += len(data)
                    inputs.append((x.dtype.str, x.shape, data))
        attrs = _frozen(e.attrs) if e.attrs else ()
        key = _intern((key, (e.op, attrs, tuple(inputs), tuple(types))), nbytes)
        if positions is not None:
            positions[id(e)] = len(order)
        order.append(e)
    return key, tuple(order), tuple(arrays), tuple(scalars), tuple(values)


def _merge(base, more, tail):
    """The structure of the structure ``base``'s ops, then those of each of
    ``more`` (structures) not yet listed, then ``tail``: None past
    MAX_SUB_OPS."""
    seen = set(base[1])
    nodes = []
    for other in more:
        for e in other[1]:
            if e not in seen:
                seen.add(e)
                nodes.append(e)
    nodes.extend(tail)
    if not nodes:
        return base
    if len(base[1]) + len(nodes) > MAX_SUB_OPS:
        return None
    return _extend(base, nodes)


def sub_of(e):
    """What the op ``e`` keeps of its structure, made from what its op
    inputs keep: (key, the ops before it in graph order, arrays, scalars,
    exact scalar values), or None when it needs more than MAX_SUB_OPS ops
    (evaluation then walks them). The op itself is not in what it keeps:
    an op refers only to the ops it reads, so reference counting frees it."""
    expr = type(e)
    base = root = None
    for x in e.inputs:
        if type(x) is expr and x.op is not None:
            if root is None:
                base, root = x._sub, x
                if base is None:
                    return None
            elif x is not root:  # several op inputs: merge what they keep
                more = []
                for y in e.inputs:
                    if type(y) is expr and y.op is not None:
                        if y._sub is None:
                            return None
                        more.append(_whole(y))
                merged = _merge(_whole(root), more, (e,))
                if merged is None:
                    return None
                key, order, arrays, scalars, values = merged
                return key, order[:-1], arrays, scalars, values
    # No op input, or one (maybe read more than once): e's entry onto it.
    if base is None:
        key, before, arrays, scalars, values = 0, (), (), (), ()
    else:
        key, before, arrays, scalars, values = base
        if len(before) + 1 >= MAX_SUB_OPS:
            return None
        before += (root,)
    top = len(before) - 1
    inputs = []
    types = ()
    nbytes = 0
    for x in e.inputs:
        t = type(x)
        if t is float:
            inputs.append("float")
            scalars += (x,)
            values += (x.hex() if x != x or x == 0.0 else x,)
        elif t is expr:
            if x.op is not None:
                inputs.append(top)
            elif x.array_name in arrays:
                inputs.append(~arrays.index(x.array_name))
            else:
                inputs.append(~len(arrays))
                arrays += (x.array_name,)
                types += ((x.dtype, x.shape),)
        else:
            kind = _scalar_kind(x)
            if kind is not None:
                inputs.append(kind)
                scalars += (x,)
                values += (_exact(x),)
            else:  # an inline array literal: its bytes are structure
                data = x.tobytes()
                nbytes += len(data)
                inputs.append((x.dtype.str, x.shape, data))
    pair = (key, (e.op, _frozen(e.attrs) if e.attrs else (), tuple(inputs), types))
    key = _keys.get(pair)
    if key is None:
        key = _intern(pair, nbytes)
    return key, before, arrays, scalars, values


def structure(exprs):
    """The Sub or Structure of what evaluating the op exprs ``exprs``
    sends: what they keep merged when they keep it, else a walk."""
    if exprs[0]._sub is not None:
        first = _whole(exprs[0])
        if len(exprs) == 1:
            return Sub(first)
        if all(e._sub is not None for e in exprs[1:]):
            merged = _merge(first, [_whole(e) for e in exprs[1:]], ())
            if merged is not None:
                return Sub(merged)
    return Structure(exprs)


class Entry:
    """A graph the server keeps for this session, and the requests that ran
    it binding only what it was prepared with (by outputs and profile)."""

    __slots__ = ("handle", "node_ids", "arrays", "values", "requests")

    # Requests an entry keeps (different outputs or profile).
    MAX_REQUESTS = 8

    def __init__(self, handle, node_ids, arrays, values):
        self.handle = handle
        self.node_ids = node_ids
        self.arrays = arrays
        self.values = values
        self.requests = {}


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
