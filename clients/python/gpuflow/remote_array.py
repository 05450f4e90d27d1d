"""RemoteArray: CuPy-style arrays that live in a gpuflow session.

    import numpy as np, gpuflow
    with gpuflow.connect("localhost:50051") as client, client.session() as s:
        a = s.asarray(np.random.rand(1000, 512).astype(np.float32))
        y = gpuflow.sqrt((a ** 2).sum(axis=-1))      # builds a graph; nothing runs yet
        print(y.shape, y.dtype)                       # (1000,) float32, known client-side
        print(y.get()[:3])                            # one Execute, fused on the server
        norms, peak = gpuflow.evaluate(y, a.max())    # several results, one Execute

Operations on RemoteArrays only record a node; ``.get()``,
``gpuflow.evaluate`` and ``.persist`` send the graph that produced the
requested arrays in one ``Execute``, where the server fuses it.
``.get_async()`` and ``gpuflow.evaluate_async`` send it without waiting and
return a :class:`gpuflow.Future`, so one thread keeps several in flight.
Shapes and dtypes are inferred client-side with the server's rules (NumPy
2's), so ``shape``/``dtype`` need no round trip and shape errors raise at
once.

Values are immutable: an operation makes a new RemoteArray. What looks like
an in-place update rebinds the Python object to a new value: ``a[idx] = v``,
``a += 1``, ``a.fill(v)``, ``out=a`` (one more node each, fused like any
other). Nothing aliases: ``b = a[0]`` keeps its value when ``a`` changes.
Arrays made by ``gpuflow.empty``, ``zeros``, ``ones``, ``full``, ``arange``,
the ``*_like`` functions and ``.copy()`` are *writable*: a custom kernel that
writes one (a RawKernel argument, an ElementwiseKernel output argument)
rebinds that Python object to the kernel's result, so ``y.get()`` afterwards
sees the kernel's writes.

Temporary arrays (numpy operands too large to travel inside the graph,
``asarray`` uploads, results too large to return inline) are named
``_tmp.N`` in the session and deleted once nothing references them.

A RemoteArray is used from one thread at a time; different RemoteArrays of
one session may be evaluated from different threads.
"""

import math
import operator
import weakref

import numpy as np

from gpuflow import _inference, _prepared, _shm, dtypes
from gpuflow._members import ArrayMembers, c_strides
from gpuflow import client as _client
from gpuflow.errors import Error, FailedPreconditionError
from gpuflow.graph import Graph, _set_scalar, inline_to_numpy
from gpuflow.v1 import service_pb2

# Total bytes returned inline by one Execute (the client accepts 64 MiB
# messages); larger results are stored, downloaded and deleted.
_INLINE_BUDGET = 32 << 20
# numpy operands up to this size travel inside the graph as literals; larger
# ones are uploaded as temporaries.
_LITERAL_BYTES = 64 << 10

_INT64_MAX = _inference.INT64_MAX
_INT64_MIN = _inference.INT64_MIN


class _Expr:
    """One value of a lazy graph: a session array (``op`` is None) or ``op``
    applied to ``inputs`` (other _Exprs, Python scalars, numpy scalars or
    small numpy arrays) with ``attrs``. Never changed once made: an op's
    structure (``_sub``, see gpuflow._prepared) is taken when it is made."""

    __slots__ = ("op", "inputs", "attrs", "dtype", "shape", "array_name", "_sub", "__weakref__")

    def __init__(self, op, inputs, attrs, dtype, shape, array_name=None):
        self.op = op
        self.inputs = tuple(inputs)
        if attrs:  # a copy, lists as tuples: the caller's may change later
            attrs = {k: tuple(v) if isinstance(v, list) else v for k, v in attrs.items()}
        self.attrs = attrs
        self.dtype = dtype
        self.shape = tuple(map(int, shape))
        self.array_name = array_name
        self._sub = None if op is None else _prepared.sub_of(self)


def _leaf(session, name, dtype, shape, owned):
    expr = _Expr(None, (), {}, dtype, shape, array_name=name)
    if owned:
        weakref.finalize(expr, session._release_temp, name)
    return expr


class UnsupportedOperand(TypeError):
    """An operand gpuflow cannot turn into an array (operators then return
    NotImplemented)."""


# ---- dtypes ----------------------------------------------------------------------


def dtype_name(dtype):
    """A gpuflow dtype name for a numpy dtype, a type or a name ('bfloat16'
    included)."""
    if isinstance(dtype, str) and dtype == "bfloat16":
        return dtype
    if dtype is None:
        raise TypeError("dtype must not be None here")
    try:
        name = np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"not a dtype: {dtype!r}") from None
    if name not in dtypes.DTYPES:
        raise TypeError(f"gpuflow has no dtype {name!r}; supported: {', '.join(dtypes.DTYPES)}")
    return name


def _public_dtype(name):
    return name if name == "bfloat16" else np.dtype(name)


# ---- host conversion (numpy, torch, DLPack, __array__) ---------------------------


def _is_torch_tensor(obj):
    return type(obj).__module__.split(".")[0] == "torch" and hasattr(obj, "detach")


def host_array(obj):
    """(numpy array, gpuflow dtype name) for a host or device array-like:
    numpy arrays, torch tensors on any device, DLPack producers (CPU memory;
    CuPy arrays through ``.get()``), objects with ``__array__``, lists and
    scalars. bfloat16 data comes back as uint16 words."""
    if isinstance(obj, np.ndarray):
        arr = obj
    elif _is_torch_tensor(obj):
        import torch

        t = obj.detach()
        if t.device.type != "cpu":
            t = t.cpu()
        t = t.contiguous()
        if t.dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(np.uint16), "bfloat16"
        arr = t.numpy()
    elif hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        device_type = obj.__dlpack_device__()[0]
        if device_type in (1, 3):  # kDLCPU, kDLCUDAHost
            arr = np.from_dlpack(obj)
        elif callable(getattr(obj, "get", None)):  # CuPy
            arr = np.asarray(obj.get())
        elif hasattr(obj, "__array__"):
            arr = np.asarray(obj)
        else:
            raise UnsupportedOperand(
                f"cannot copy a {type(obj).__name__} on DLPack device type {device_type} to the "
                "host; copy it to CPU memory first"
            )
    else:
        try:
            arr = np.asarray(obj)
        except Exception as err:  # noqa: BLE001 - any conversion failure means "unsupported"
            raise UnsupportedOperand(f"cannot use {type(obj).__name__} as an array: {err}") from None
    if arr.dtype.name == "bfloat16":  # ml_dtypes
        return np.ascontiguousarray(arr).view(np.uint16), "bfloat16"
    if arr.dtype.name not in dtypes.DTYPES:
        raise UnsupportedOperand(
            f"gpuflow has no dtype {arr.dtype.name!r} (from {type(obj).__name__}); "
            f"supported: {', '.join(dtypes.DTYPES)}"
        )
    return arr, arr.dtype.name


# ---- sessions --------------------------------------------------------------------


def session_of(values, session=None):
    """The session that ``values`` (RemoteArrays among other things) share:
    ``session`` if given, else theirs, else the current session."""
    found = session
    for v in values:
        if isinstance(v, RemoteArray):
            if found is None:
                found = v.session
            elif v.session is not found:
                raise ValueError(
                    f"arrays of different sessions cannot be combined ({found.id} and "
                    f"{v.session.id}); move one with session.asarray(array)"
                )
    if found is None:
        found = _client.current_session()
    if found is None:
        raise ValueError(
            "no session: pass session=..., use a RemoteArray, or work inside "
            "`with client.session() as s:`"
        )
    found._check_open()
    return found


def as_remote(x, session=None):
    """``x`` if it is a RemoteArray, else ``asarray(x)`` in ``session`` (or
    the current session): how the module functions take array-likes."""
    return x if isinstance(x, RemoteArray) else asarray(x, session=session_of((), session))


def _upload_temp(session, host, name):
    session._check_open()
    session._delete_released()
    temp = session._new_temp_name()
    info = session.upload(host, name=temp, dtype="bfloat16" if name == "bfloat16" else None)
    return _leaf(session, temp, info.dtype, info.shape, owned=True)


def operand(value, session):
    """(graph input, Type) for an op operand: a RemoteArray, a Python scalar
    (weak), a numpy scalar (strong) or an array-like (a literal when small,
    else uploaded). UnsupportedOperand for anything else."""
    if isinstance(value, RemoteArray):
        if value.session is not session:
            raise ValueError("arrays of different sessions cannot be combined")
        return value._expr, _inference.Type(value._expr.dtype, value._expr.shape)
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, np.generic):
        return value, _inference.Type.weak_scalar(value)
    if isinstance(value, np.generic):
        if value.dtype.name not in dtypes.DTYPES:
            raise UnsupportedOperand(f"gpuflow has no dtype {value.dtype.name!r}")
        return value, _inference.Type(value.dtype.name, ())
    if isinstance(value, (str, bytes)) or value is None:
        raise UnsupportedOperand(f"cannot use {type(value).__name__} as an array operand")
    host, name = host_array(value)
    limit = min(_LITERAL_BYTES, session.client.limits.max_inline_bytes)
    if name != "bfloat16" and host.nbytes <= limit:
        # A copy of its own: the caller's array may change before the
        # graph is sent, and the op's structure holds these bytes now.
        host = host.copy()
        host.flags.writeable = False
        return host, _inference.Type(name, host.shape)
    leaf = _upload_temp(session, host, name)
    return leaf, _inference.Type(leaf.dtype, leaf.shape)


# (op, input types) -> (dtype, shape) of attribute-free ops; inference is a
# pure function of them. Cleared when full.
_INFERRED = {}
_MAX_INFERRED = 4096


# The inference key of a weak Python scalar, by its type: the types whose
# values need no check (check_literals looks at Python ints only).
_WEAK_KEYS = {float: ("float64", (), True), bool: ("bool", (), True),
              complex: ("complex128", (), True)}


def apply(op, operands, attrs=None, *, session=None, writable=False):
    """A RemoteArray for ``op`` on ``operands`` with ``attrs`` (None values
    dropped); dtype and shape are inferred here, so misuse raises now."""
    if not attrs and session is None:
        # The common case first, with what it gives remembered: RemoteArrays
        # of one session and Python floats, bools or complexes, no
        # attributes, types inferred before. Anything else takes the way
        # below (which also raises what misuse raises).
        found = None
        key = [op]
        inputs = []
        for value in operands:
            t = type(value)
            if t is RemoteArray:
                if found is None:
                    found = value.session
                elif value.session is not found:
                    break
                e = value._expr
                inputs.append(e)
                key.append((e.dtype, e.shape, False))
            else:
                weak = _WEAK_KEYS.get(t)
                if weak is None:
                    break
                inputs.append(value)
                key.append(weak)
        else:
            inferred = _INFERRED.get(tuple(key)) if found is not None else None
            if inferred is not None:
                found._check_open()
                return RemoteArray(found, _Expr(op, inputs, {}, *inferred), writable=writable)
    session = session_of(operands, session)
    inputs, types = [], []
    for value in operands:
        x, t = operand(value, session)
        inputs.append(x)
        types.append(t)
    attrs = {k: v for k, v in (attrs or {}).items() if v is not None}
    if attrs:
        dtype, shape = _inference.infer(op, types, attrs)
    else:
        # An op without attributes infers the same from the same input types:
        # a loop that builds one expression again and again infers it once.
        key = (op, *((t.dtype, t.shape, t.weak) for t in types))
        found = _INFERRED.get(key)
        if found is None:
            dtype, shape = _inference.infer(op, types, attrs)
            found = (dtype, tuple(map(int, shape)))
            if len(_INFERRED) >= _MAX_INFERRED:
                _INFERRED.clear()
            _INFERRED[key] = found
        dtype, shape = found
    _inference.check_literals(op, types, inputs, dtype)
    return RemoteArray(session, _Expr(op, inputs, attrs, dtype, shape), writable=writable)


# A weak Python scalar's inference key and its kind in a structure (see
# _prepared._scalar_kind), by type.
_WEAK_OPERANDS = {t: (key, _prepared._scalar_kind(t())) for t, key in _WEAK_KEYS.items()}
_new = object.__new__


def _binop(op, a, b):
    """``a op b`` for an operator. An op of a RemoteArray (a session array or
    an op that keeps its structure) and a weak float, bool or complex whose
    types were inferred before is made here directly, its structure made as
    _prepared.sub_of makes it (tests check that it is the same)."""
    if type(a) is RemoteArray:
        array, scalar, first = a, b, True
    else:
        array, scalar, first = b, a, False
    weak = _WEAK_OPERANDS.get(type(scalar))
    if weak is not None and type(array) is RemoteArray:
        x = array._expr
        kept = x._sub
        if x.op is None or kept is not None and len(kept[1]) + 1 < _prepared.MAX_SUB_OPS:
            type_key = (x.dtype, x.shape, False)
            inferred = _INFERRED.get((op, type_key, weak[0]) if first else (op, weak[0], type_key))
            if inferred is not None:
                session = array.session
                session._check_open()
                if kept is None:  # the session array is the first array read
                    key, before, arrays, scalars, values = 0, (), (x.array_name,), (), ()
                    ref, types = -1, ((x.dtype, x.shape),)
                else:
                    key, before, arrays, scalars, values = kept
                    ref, types = len(before), ()
                    before += (x,)
                pair = (key, (op, (), (ref, weak[1]) if first else (weak[1], ref), types))
                e = _new(_Expr)
                e.op = op
                e.inputs = (x, scalar) if first else (scalar, x)
                e.attrs = {}
                e.dtype, e.shape = inferred
                e.array_name = None
                if type(scalar) is float and scalar == scalar and scalar != 0.0:
                    exact = scalar  # as _prepared._exact gives it
                else:
                    exact = _prepared._exact(scalar)
                e._sub = (_prepared._keys.get(pair) or _prepared._intern(pair, 0), before,
                          arrays, scalars + (scalar,), values + (exact,))
                r = _new(RemoteArray)
                r.session, r._expr, r._writable = session, e, False
                return r
    try:
        return apply(op, (a, b))
    except UnsupportedOperand:
        return NotImplemented


def rebind_out(out, result, name, casting="unsafe", broadcast=False):
    """``out=``: rebinds the RemoteArray ``out`` (or a 1-tuple of it) to
    ``result`` cast to out's dtype (checked against ``casting``, as NumPy
    checks it) and returns it; with ``broadcast`` the result may broadcast
    to out's shape (ufuncs), else the shapes must match (reductions). None:
    ``result`` itself."""
    if isinstance(out, tuple):
        if len(out) != 1:
            raise ValueError(f"{name}: out must be a single array, got {len(out)}")
        out = out[0]
    if out is None:
        return result
    if not isinstance(out, RemoteArray):
        raise TypeError(f"out must be a gpuflow RemoteArray (its Python object is rebound to the "
                        f"result), got {type(out).__name__}")
    if out.session is not result.session:
        raise ValueError("out belongs to another session")
    if not _inference.can_cast(result._expr.dtype, out._expr.dtype, casting):
        raise _inference.cast_error(name, None, result._expr.dtype, out._expr.dtype, casting)
    if broadcast:
        full = _inference.broadcast_shapes(result.shape, out.shape)
        if full != out.shape:
            raise ValueError(f"non-broadcastable output operand with shape {out.shape} doesn't "
                             f"match the broadcast shape {full}")
    elif result.shape != out.shape:
        raise ValueError(f"output parameter for {name} has shape {out.shape}, the result has "
                         f"{result.shape}")
    if result._expr.dtype != out._expr.dtype:
        result = result.astype(out.dtype)
    if result.shape != out.shape:
        result = apply("broadcast_to", (result,), {"shape": list(out.shape)})
    out._expr = result._expr
    return out


def axes_attr(axis):
    """The ``axes`` attribute for a NumPy ``axis`` argument (None: absent)."""
    if axis is None:
        return None
    if isinstance(axis, (tuple, list)):
        return [operator.index(a) for a in axis]
    return [operator.index(axis)]


# ---- evaluation -------------------------------------------------------------------


def _build_graph(exprs):
    """A Graph with every op needed for ``exprs`` (shared subexpressions
    once); returns it and {id(expr): Node}."""
    g, nodes = _graph_of(_prepared.walk([e for e in exprs if e.op is not None]))
    for e in exprs:
        if e.op is None and id(e) not in nodes:
            nodes[id(e)] = g.array(e.array_name)
    return g, nodes


def _graph_of(order):
    """The Graph of ops listed in graph order (_prepared.walk) and
    {id(expr): Node} for them and the session arrays they read."""
    g = Graph()
    nodes = {}
    for e in order:
        ins = []
        for x in e.inputs:
            if isinstance(x, _Expr):
                node = nodes.get(id(x))
                if node is None:  # a session array
                    node = nodes[id(x)] = g.array(x.array_name)
                ins.append(node)
            else:
                ins.append(x)
        nodes[id(e)] = g.op(e.op, *ins, **e.attrs)
    return g, nodes


def _nbytes(expr):
    return math.prod(expr.shape) * _inference.itemsize(expr.dtype)


class _Evaluation:
    """One evaluation of ``exprs`` (see :func:`_execute`): the Execute to
    send (None when every expr is a session array, so only downloads are
    needed) and how each reply output maps back to its expr. A structure
    seen before in this session goes by handle (see gpuflow._prepared);
    ``fallback()`` gives the whole request for when the server has
    forgotten the handle."""

    def __init__(self, session, exprs, names, profile, stage=None):
        session._check_open()
        session._delete_released()
        self.session = session
        # Held until the reply is read: the temporaries the graph reads
        # (uploads) are deleted once their exprs are gone.
        self.exprs = exprs
        self.names = names
        self.plan = []  # (index, "inline" | "store" | "temp", name)
        self.first_inline = {}
        self.request = None
        self.by_handle = None  # the _prepared.Entry used
        self._pending = None  # (key, node ids) to keep when the reply prepares it
        ops = [e for e in exprs if e.op is not None]
        if not ops:
            return
        max_inline = session.client.limits.max_inline_bytes
        budget = _INLINE_BUDGET
        self.structure = structure = _prepared.structure(ops)
        outputs = []  # (op index, store_as, return_inline)
        temps = False
        for i, (e, name) in enumerate(zip(exprs, names)):
            if e.op is None:
                continue
            node = structure.position(e)
            if name is not None:
                outputs.append((node, name, False))
                self.plan.append((i, "store", name))
            elif id(e) in self.first_inline:
                continue
            else:
                self.first_inline[id(e)] = i
                nbytes = _nbytes(e)
                if nbytes <= max_inline and nbytes <= budget:
                    budget -= nbytes
                    outputs.append((node, "", True))
                    self.plan.append((i, "inline", None))
                else:
                    temp = session._new_temp_name()
                    outputs.append((node, temp, False))
                    self.plan.append((i, "temp", temp))
                    temps = True
        if stage is not None and temps:
            outputs = self._through(stage, outputs)
            temps = self.has_temps  # those the stage could not take
        self.outputs = outputs
        self.profile = profile
        cache = session._prepared_cache()
        self.key = (structure.key, tuple(node for node, _, _ in outputs))
        entry = cache.get(self.key) if cache.limit > 0 else None
        if entry is None:
            self.request = self.fallback(prepare=cache.limit > 0)
            return
        self.by_handle = entry
        same_arrays = structure.arrays == entry.arrays
        same_values = structure.values == entry.values
        # A request that binds nothing new and names no temporaries is the
        # same each time: the entry keeps it (requests are never changed).
        spec = None
        if same_arrays and same_values and not temps:
            spec = (tuple(outputs), profile)
            request = entry.requests.get(spec)
            if request is not None:
                self.request = request
                return
        request = service_pb2.ExecuteRequest(session_id=session.id, prepared_graph=entry.handle,
                                             profile=profile)
        for node, store_as, inline in outputs:
            _add_output(request, entry.node_ids[node], store_as, inline)
        if not same_arrays:
            request.arrays.extend(structure.arrays)
        if not same_values:
            for value in structure.scalars:
                _set_scalar_input(request.scalars.add(), value)
        if spec is not None and len(entry.requests) < _prepared.Entry.MAX_REQUESTS:
            entry.requests[spec] = request
        self.request = request

    def fallback(self, prepare=True):
        """The request with the whole graph; with ``prepare``, asking the
        server to keep it (the reply's handle is remembered)."""
        structure = self.structure
        g, nodes = _graph_of(structure.order)
        request = service_pb2.ExecuteRequest(session_id=self.session.id, graph=g.proto,
                                             profile=self.profile, prepare=prepare)
        node_ids = [nodes[id(e)].id for e in structure.order]
        for node, store_as, inline in self.outputs:
            _add_output(request, node_ids[node], store_as, inline)
        if self.by_handle is not None:
            self.session._prepared_cache().drop(self.key, self.by_handle)
            self.by_handle = None
        self._pending = (self.key, node_ids) if prepare else None
        return request

    def retry(self, error):
        """The request to send again after ``error``, or None: a handle the
        server no longer holds goes whole."""
        if self.by_handle is None or not isinstance(error, FailedPreconditionError):
            return None
        self.request = self.fallback()
        return self.request

    def remember(self, reply):
        """Keeps the handle a reply gives for the graph this sent."""
        if self._pending is None or not reply.HasField("prepared"):
            return
        prepared = reply.prepared
        structure = self.structure
        if (prepared.handle == 0 or tuple(prepared.arrays) != structure.arrays
                or prepared.num_scalars != len(structure.scalars)):
            return  # not what this client would bind: never use it
        key, node_ids = self._pending
        self._pending = None
        self.session._prepared_cache().put(
            key, _prepared.Entry(prepared.handle, node_ids, structure.arrays, structure.values))

    def _through(self, stage, outputs):
        """``outputs`` (one for each entry of ``self.plan``) with the results
        too large to return inline written into the session's shared-memory
        stage instead of stored and downloaded (one call, no temporaries);
        unchanged when the stage cannot hold them."""
        offsets = {}
        total = 0
        for k, (i, kind, _) in enumerate(self.plan):
            if kind == "temp":
                offsets[k] = total
                total += -(-_nbytes(self.exprs[i]) // 256) * 256
        try:
            stage.grow(total)
        except (Error, OSError):
            return outputs
        self.stage = stage
        for k, offset in offsets.items():
            self.plan[k] = (self.plan[k][0], "shm", offset)
            outputs[k] = (outputs[k][0], ("shm", offset), False)
        return outputs

    @property
    def has_temps(self):
        """Whether the Execute stores results under temporary names."""
        return any(kind == "temp" for _, kind, _ in self.plan)

    @property
    def blocking(self):
        """Whether reading the reply makes calls (downloads, deletes)."""
        return self.has_temps or any(e.op is None for e in self.exprs)

    def results(self, reply):
        """(values, timings or None) from the Execute's reply (None when
        there was no Execute); downloads and deletes the temporaries."""
        session, exprs, names = self.session, self.exprs, self.names
        results = [None] * len(exprs)
        timings = None
        if reply is not None:
            self.remember(reply)
            timings = reply.timings
            try:
                for (i, kind, name), out in zip(self.plan, reply.outputs):
                    if kind == "inline":
                        results[i] = inline_to_numpy(out.value)
                    elif kind == "store":
                        results[i] = _client.ArrayInfo(out.info)
                    elif kind == "shm":
                        results[i] = self.stage.read(out.info, name)
                    else:
                        results[i] = session.download(name)
            finally:
                self.delete_temps()
        for i, (e, name) in enumerate(zip(exprs, names)):
            if results[i] is not None:
                continue
            if e.op is not None:  # a repeat of an inline output
                results[i] = results[self.first_inline[id(e)]].copy()
            elif name is None:
                results[i] = session.download(e.array_name)
            else:
                results[i] = session.info(name)
        return results, timings

    def delete_temps(self, reply=None):
        for _, kind, name in self.plan:
            if kind == "temp":
                try:
                    self.session.delete(name)
                except Error:
                    pass


def _add_output(request, node, store_as, inline):
    """One OutputSpec: stored as ``store_as`` (a name), written into the
    shared-memory stage (``("shm", offset)``) or returned inline."""
    if isinstance(store_as, tuple):
        request.outputs.add(node=node, shared_memory={"region": _shm.REGION,
                                                       "offset": store_as[1]})
    else:
        request.outputs.add(node=node, store_as=store_as, return_inline=inline)


def _set_scalar_input(msg, value):
    """A graph.proto Scalar for a Python or numpy scalar operand."""
    if isinstance(value, np.generic):
        _set_scalar(msg, value.item())
        msg.dtype = dtypes.to_proto(value.dtype)
    else:
        _set_scalar(msg, value)


def _execute(session, exprs, names, profile=False):
    """Evaluates ``exprs`` in one Execute. ``names[i]``: store the value in
    the session under that name (giving an ArrayInfo), or None (giving a
    numpy array). Returns (values, timings or None)."""
    stage = session._result_stage()
    if stage is None:
        return _run(_Evaluation(session, exprs, names, profile))
    with stage.lock:  # results written there are read before the next use
        return _run(_Evaluation(session, exprs, names, profile, stage=stage))


def _run(run):
    reply = None
    if run.request is not None:
        try:
            reply = _client._rpc(run.session._stub.Execute, run.request)
        except Error as err:
            again = run.retry(err)
            if again is None:
                raise
            reply = _client._rpc(run.session._stub.Execute, again)
    return run.results(reply)


def _execute_async(session, exprs, names, profile=False, then=None):
    """:func:`_execute` without waiting: a :class:`gpuflow.Future` of
    ``then(values, timings)`` (default: the pair)."""
    run = _Evaluation(session, exprs, names, profile)

    def finish(reply):
        values, timings = run.results(reply)
        return (values, timings) if then is None else then(values, timings)

    if run.request is None:
        return session._track(_client._call_async(session.client, lambda: finish(None)))
    return session._track(_client._rpc_async(session.client, session._stub.Execute, run.request,
                                             finish, blocking=run.blocking,
                                             discard=run.delete_temps if run.has_temps else None,
                                             retry=run.retry))


def to_graph(*arrays):
    """The :class:`gpuflow.Graph` that computes ``arrays`` and the node (or,
    for a plain session array, the array reference) of each: what ``.get()``
    would send. Use it to inspect a lazy computation or to run it with
    ``session.execute`` / ``Precompile``."""
    for a in arrays:
        if not isinstance(a, RemoteArray):
            raise TypeError(f"to_graph takes RemoteArrays, got {type(a).__name__}")
    graph, nodes = _build_graph([a._expr for a in arrays])
    return graph, [nodes[id(a._expr)] for a in arrays]


def _arrays_of(arrays, what):
    """The RemoteArrays given as arguments or as one list or tuple; TypeError
    naming `what` for anything else."""
    if len(arrays) == 1 and isinstance(arrays[0], (list, tuple)):
        arrays = tuple(arrays[0])
    for a in arrays:
        if not isinstance(a, RemoteArray):
            raise TypeError(f"{what} takes RemoteArrays, got {type(a).__name__}")
    return arrays


def evaluate(*arrays, profile=False):
    """Evaluates several RemoteArrays in one Execute (shared work runs once)
    and returns an :class:`gpuflow.ExecuteResult`: a list of numpy arrays
    (bfloat16 as uint16 words) with ``.timings`` (None when every array was a
    plain session array and only downloads were needed)."""
    arrays = _arrays_of(arrays, "evaluate")
    if not arrays:
        return _client.ExecuteResult([], None)
    session = session_of(arrays)
    values, timings = _execute(session, [a._expr for a in arrays], [None] * len(arrays), profile)
    return _client.ExecuteResult(values, timings)


def evaluate_async(*arrays, profile=False):
    """:func:`evaluate` without waiting: returns a :class:`gpuflow.Future`
    of its :class:`gpuflow.ExecuteResult`. Any number may be in flight on
    one session (the server runs them side by side); the arrays may change
    meanwhile (a new value rebinds the Python object, never the value that
    was sent). Misuse raises here; what the server refuses, from
    ``result()``."""
    arrays = _arrays_of(arrays, "evaluate_async")
    if not arrays:
        done = _client.Future(None)
        done.set_running_or_notify_cancel()
        done.set_result(_client.ExecuteResult([], None))
        return done
    session = session_of(arrays)
    return _execute_async(session, [a._expr for a in arrays], [None] * len(arrays), profile,
                          then=_client.ExecuteResult)


def persist(named):
    """Stores each ``{name: RemoteArray}`` in its session under ``name`` (one
    Execute), rebinds each RemoteArray to its stored array (later graphs read
    it instead of recomputing it) and returns the :class:`ArrayInfo` list."""
    for name, a in named.items():
        if not isinstance(a, RemoteArray):
            raise TypeError(f"persist takes RemoteArrays, got {type(a).__name__} for {name!r}")
    session = session_of(named.values())
    exprs = []
    for name, a in named.items():
        e = a._expr
        if e.op is None and e.array_name != name:  # a copy of a session array
            e = _Expr("reshape", [e], {"shape": list(e.shape)}, e.dtype, e.shape)
        exprs.append(e)
    infos, _ = _execute(session, exprs, list(named))
    for (name, a), info in zip(named.items(), infos):
        a._expr = _leaf(session, name, info.dtype, info.shape, owned=False)
    return infos


# ---- the array ----------------------------------------------------------------------


class RemoteArray(ArrayMembers):
    """An array in a gpuflow session, computed lazily. See the module doc."""

    __slots__ = ("session", "_expr", "_writable")
    # Numpy defers to our reflected operators and ufunc override.
    __array_priority__ = 1000

    def __init__(self, shape, dtype=float, memptr=None, strides=None, order="C", *,
                 session=None, writable=False):
        """``gpuflow.ndarray(shape, dtype=float)``, CuPy's constructor: a new
        (zero-filled, writable) array in ``session`` (default: the current
        one). ``RemoteArray(session, expr)`` is the internal form."""
        if isinstance(shape, _client.Session):
            self.session, self._expr, self._writable = shape, dtype, writable
            return
        if memptr is not None:
            raise NotImplementedError("gpuflow arrays live on the server: memptr= is not supported")
        from gpuflow import functions

        dims = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        if order not in ("C", "F"):
            raise ValueError("order not understood")
        strides_c = c_strides(tuple(operator.index(d) for d in dims), dtype_name(dtype))
        if (order == "F" and sum(1 for d in dims if d > 1) > 1) or (
                strides is not None and tuple(strides) != strides_c):
            raise NotImplementedError("gpuflow arrays are C-contiguous only")
        made = functions.zeros(dims, dtype, session=session)
        self.session, self._expr, self._writable = made.session, made._expr, True

    @classmethod
    def _from_session_array(cls, session, info):
        return cls(session, _leaf(session, info.name, info.dtype, info.shape, owned=False))

    # -- description ------------------------------------------------------------------

    @property
    def dtype(self):
        """A numpy dtype, or the string 'bfloat16' (numpy has none)."""
        return _public_dtype(self._expr.dtype)

    @property
    def shape(self):
        return self._expr.shape

    @property
    def ndim(self):
        return len(self._expr.shape)

    @property
    def size(self):
        return math.prod(self._expr.shape)

    @property
    def itemsize(self):
        return _inference.itemsize(self._expr.dtype)

    @property
    def nbytes(self):
        return _nbytes(self._expr)

    @property
    def writable(self):
        """Whether custom kernels may write this array (see the module doc)."""
        return self._writable

    @property
    def T(self):
        return self.transpose()

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __repr__(self):
        e = self._expr
        what = f"session array {e.array_name!r}" if e.op is None else f"lazy {e.op}"
        return f"RemoteArray(shape={e.shape}, dtype={e.dtype}, {what})"

    def __str__(self):
        return str(self.get())

    # -- results ------------------------------------------------------------------------

    def get(self, stream=None, order="C", out=None, blocking=True):
        """Evaluates the array and returns it as a numpy array (bfloat16 as
        uint16 words); with ``out``, copies into that numpy array instead.
        ``stream``/``blocking`` are accepted for CuPy compatibility."""
        del stream, blocking
        if order not in ("C", "A", "K"):
            raise ValueError("gpuflow returns C-contiguous arrays only")
        (value,), _ = _execute(self.session, [self._expr], [None])
        if out is not None:
            if out.shape != value.shape:
                raise ValueError(f"out has shape {out.shape}, the array has {value.shape}")
            np.copyto(out, value, casting="unsafe")
            return out
        return value

    def get_async(self, order="C", out=None):
        """:meth:`get` without waiting: returns a :class:`gpuflow.Future` of
        the numpy array (of ``out``, filled, when given; do not read ``out``
        before the Future is done). Several may be in flight on one session
        (the server runs them side by side)."""
        if order not in ("C", "A", "K"):
            raise ValueError("gpuflow returns C-contiguous arrays only")
        if out is not None and out.shape != self.shape:
            raise ValueError(f"out has shape {out.shape}, the array has {self.shape}")

        def value_of(values, timings):
            (value,) = values
            if out is None:
                return value
            np.copyto(out, value, casting="unsafe")
            return out

        return _execute_async(self.session, [self._expr], [None], then=value_of)

    def persist(self, name):
        """Stores the value in the session under ``name`` and rebinds this
        RemoteArray to that stored array. Returns self."""
        persist({name: self})
        return self

    def __array__(self, dtype=None, copy=None):
        value = self.get()
        return value if dtype is None else value.astype(dtype)

    def __dlpack__(self, stream=None, **kwargs):
        """DLPack export of the evaluated array (host memory)."""
        return self.get().__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU: the data arrives in host memory

    def item(self):
        return self.get().item()

    def tolist(self):
        return self.get().tolist()

    def __bool__(self):
        return bool(self.get())

    def __int__(self):
        return int(self.get())

    def __float__(self):
        return float(self.get())

    def __index__(self):
        return operator.index(self.get())

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d array")
        for i in range(self.shape[0]):
            yield self[i]

    # -- numpy interop --------------------------------------------------------------------

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        from gpuflow import _ufunc

        return _ufunc.array_ufunc(ufunc, method, inputs, kwargs)

    # -- operators (gpuflow's ufuncs; in-place forms rebind the array) --------------------

    __hash__ = None

    def __neg__(self):
        return apply("neg", (self,))

    def __pos__(self):
        return RemoteArray(self.session, self._expr)

    def __abs__(self):
        return apply("abs", (self,))

    def __invert__(self):
        return apply("bitwise_not", (self,))

    # -- indexing ----------------------------------------------------------------------------

    def __getitem__(self, key):
        """NumPy's indexing: integers, slices (any step, negative too), None,
        ``...`` and integer arrays (RemoteArrays, numpy arrays, lists),
        broadcast together and placed as NumPy places them
        (gpuflow._indexing, gpuflow._gather). Boolean masks: IndexError."""
        from gpuflow import _indexing

        return _indexing.getitem(self, key)

    def __setitem__(self, key, value):
        """``a[key] = value`` (a basic index or a boolean mask) rebinds ``a``
        to the updated array: one ``where`` node, fused like any other."""
        from gpuflow import _indexing

        self._expr = _indexing.assign(self, key, value)._expr

    def take(self, indices, axis=None, out=None, mode="raise"):
        """numpy.ndarray.take."""
        from gpuflow import _gather

        return _gather.take(self, indices, axis, out, mode)

    # -- shape -------------------------------------------------------------------------------

    def reshape(self, *shape, order="C"):
        """numpy.ndarray.reshape. order "F" reads and writes the elements in
        F order (the values NumPy gives, held C-ordered as every
        RemoteArray); "A" is refused (see _layout_order)."""
        order = _layout_order(order, "reshape")
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        dims = [operator.index(d) for d in shape]
        if order == "F" and self.ndim + len(dims) > 2:
            # F order is C order of the reversed axes: transpose, reshape, transpose.
            dims = list(_inference.reshape_target(self.shape, dims))
            flipped = apply("reshape", (self.transpose(),), {"shape": dims[::-1]})
            return flipped.transpose()
        return apply("reshape", (self,), {"shape": dims})

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        attrs = {"axes": [operator.index(a) for a in axes]} if axes else {}
        return apply("transpose", (self,), attrs)

    def swapaxes(self, axis1, axis2):
        perm = list(range(self.ndim))
        a = _inference.normalize_axis(axis1, self.ndim)
        b = _inference.normalize_axis(axis2, self.ndim)
        perm[a], perm[b] = perm[b], perm[a]
        return self.transpose(perm)

    def ravel(self, order="C"):
        """numpy.ndarray.ravel: "C", or "F" (the elements in F order)."""
        return self.reshape(-1, order=_layout_order(order, "ravel"))

    def flatten(self, order="C"):
        return self.reshape(-1, order=_layout_order(order, "ravel"))

    def squeeze(self, axis=None):
        return apply("squeeze", (self,), {"axes": axes_attr(_scalar_axis(self, axis))})

    def astype(self, dtype, copy=True):
        name = dtype_name(dtype)
        if name == self._expr.dtype and not copy:
            return self
        if (_inference.is_complex(self._expr.dtype) and not _inference.is_complex(name)
                and name != "bool"):
            import warnings

            warnings.warn("Casting complex values to real discards the imaginary part",
                          getattr(np, "exceptions", np).ComplexWarning, stacklevel=2)
        return apply("cast", (self,), {"dtype": name})

    def copy(self, order="C"):
        """A writable copy (custom kernels may write it; see the module doc)."""
        return RemoteArray(self.session, self._expr, writable=True)

    # -- math ----------------------------------------------------------------------------------

    def sum(self, axis=None, dtype=None, out=None, keepdims=False):
        return reduce("sum", self, axis, keepdims, dtype=dtype, out=out)

    def prod(self, axis=None, dtype=None, out=None, keepdims=False):
        return reduce("prod", self, axis, keepdims, dtype=dtype, out=out)

    def mean(self, axis=None, dtype=None, out=None, keepdims=False):
        return reduce("mean", self, axis, keepdims, dtype=dtype, out=out)

    def var(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        x = self if dtype is None else self.astype(dtype)
        return reduce("var", x, axis, keepdims, out=out, ddof=float(ddof) if ddof else None)

    def std(self, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        x = self if dtype is None else self.astype(dtype)
        return reduce("std", x, axis, keepdims, out=out, ddof=float(ddof) if ddof else None)

    def min(self, axis=None, out=None, keepdims=False):
        return reduce("min", self, axis, keepdims, out=out)

    def max(self, axis=None, out=None, keepdims=False):
        return reduce("max", self, axis, keepdims, out=out)

    def any(self, axis=None, out=None, keepdims=False):
        return reduce("any", self, axis, keepdims, out=out)

    def all(self, axis=None, out=None, keepdims=False):
        return reduce("all", self, axis, keepdims, out=out)

    def argmin(self, axis=None, out=None, keepdims=False, *, dtype=None):
        return arg_reduce("argmin", self, axis, keepdims, out, dtype)

    def argmax(self, axis=None, out=None, keepdims=False, *, dtype=None):
        return arg_reduce("argmax", self, axis, keepdims, out, dtype)

    def cumsum(self, axis=None, dtype=None, out=None):
        return scan("cumsum", self, axis, dtype, out)

    def cumprod(self, axis=None, dtype=None, out=None):
        return scan("cumprod", self, axis, dtype, out)

    def clip(self, min=None, max=None, out=None, **kwargs):
        from gpuflow import functions

        return functions.clip(self, min, max, out=out, **kwargs)

    def round(self, decimals=0, out=None):
        from gpuflow import functions

        return functions.round(self, decimals, out=out)

    def dot(self, b, out=None):
        from gpuflow import functions

        return functions.dot(self, b, out=out)


# Binary operators: op name for the direct form (one node); the in-place
# forms go through the ufunc with out=self (NumPy's same_kind cast back).
_OPERATORS = {
    "add": ("add", "add"), "sub": ("sub", "subtract"), "mul": ("mul", "multiply"),
    "truediv": ("div", "divide"), "floordiv": ("floordiv", "floor_divide"),
    "mod": ("mod", "remainder"), "pow": ("pow", "power"), "matmul": ("matmul", "matmul"),
    "and": ("bitwise_and", "bitwise_and"), "or": ("bitwise_or", "bitwise_or"),
    "xor": ("bitwise_xor", "bitwise_xor"), "lshift": (None, "left_shift"),
    "rshift": (None, "right_shift"),
}
_COMPARISONS = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}


def _operator(op, ufunc_name, reflected):
    def method(self, other):
        a, b = (other, self) if reflected else (self, other)
        if op is not None:
            return _binop(op, a, b)
        from gpuflow import _ufunc

        try:
            return _ufunc.UFUNCS[ufunc_name](a, b)
        except UnsupportedOperand:
            return NotImplemented

    return method


def _inplace(ufunc_name):
    def method(self, other):
        from gpuflow import _ufunc

        try:
            return _ufunc.UFUNCS[ufunc_name](self, other, out=self)
        except UnsupportedOperand:
            return NotImplemented

    return method


for _name, (_op, _ufunc_name) in _OPERATORS.items():
    setattr(RemoteArray, f"__{_name}__", _operator(_op, _ufunc_name, False))
    setattr(RemoteArray, f"__r{_name}__", _operator(_op, _ufunc_name, True))
    setattr(RemoteArray, f"__i{_name}__", _inplace(_ufunc_name))
for _name, _op in _COMPARISONS.items():
    setattr(RemoteArray, f"__{_name}__", _operator(_op, None, False))


def _clamp64(v):
    return max(_INT64_MIN, min(_INT64_MAX, v))


def _layout_order(order, what):
    """NumPy's check of a reshape/ravel ``order``, which is "C" or "F": "A"
    and "K" follow the memory layout of the array NumPy or CuPy would hold
    (a transposed one is F-ordered there), which a RemoteArray does not
    have, so they are refused rather than answered in C order."""
    if order is None:
        return "C"
    if not isinstance(order, str):
        raise TypeError(f"order must be str, not {type(order).__name__}")
    if order.upper() not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be one of 'C', 'F', 'A', or 'K' (got {order!r})")
    order = order.upper()
    if order == "K" and what == "reshape":
        raise ValueError("order 'K' is not permitted for reshaping")
    if order in ("A", "K"):
        raise NotImplementedError(f"{what}(order={order!r}) follows a memory layout, which "
                                  "gpuflow's arrays do not have: use order 'C' or 'F'")
    return order


def _scalar_axis(a, axis):
    """NumPy's leniency for 0-d arrays: an int ``axis`` of 0 or -1 means the
    one (absent) axis, as None does."""
    if getattr(a, "ndim", None) == 0 and not isinstance(axis, (tuple, list)) and axis is not None:
        if operator.index(axis) in (0, -1):
            return None
    return axis


def reduce(op, a, axis=None, keepdims=False, *, dtype=None, out=None, **attrs):
    """A reduction node (sum, prod, mean, var, std, min, max, any, all,
    logsumexp) over ``axis`` (None: all; an int or a tuple)."""
    if op not in ("mean", "var", "std"):  # NumPy's mean of a 0-d array takes no axis 0
        axis = _scalar_axis(a, axis)
    attrs.update(
        axes=axes_attr(axis),
        keepdims=True if keepdims else None,
        dtype=dtype_name(dtype) if dtype is not None else None,
    )
    return rebind_out(out, apply(op, (a,), attrs), op)


def arg_reduce(op, a, axis=None, keepdims=False, out=None, dtype=None):
    """An argmin/argmax node over ``axis`` (None: the flattened array);
    ``dtype`` (CuPy's) casts the int64 indices."""
    axis = _scalar_axis(a, axis)
    attrs = {"axis": None if axis is None else operator.index(axis), "keepdims": keepdims or None}
    result = apply(op, (a,), attrs)
    if dtype is not None:
        result = result.astype(dtype)
    return rebind_out(out, result, op)


def scan(op, a, axis=None, dtype=None, out=None):
    """A cumsum/cumprod node along ``axis`` (None: the flattened array)."""
    axis = _scalar_axis(a, axis)
    attrs = {
        "axis": None if axis is None else operator.index(axis),
        "dtype": dtype_name(dtype) if dtype is not None else None,
    }
    return rebind_out(out, apply(op, (a,), attrs), op)


def asarray(obj, dtype=None, session=None):
    """A RemoteArray for ``obj`` in ``session`` (default: the RemoteArray's
    own, else the current session): numpy arrays, CPU or CUDA torch tensors,
    DLPack/``__array__`` objects, lists and scalars are uploaded as a
    temporary array. ``dtype="bfloat16"`` takes uint16 words or converts
    floats."""
    if isinstance(obj, RemoteArray):
        session = session if session is not None else obj.session
        session._check_open()
        if obj.session is not session:
            host = obj.get()
            obj = RemoteArray(session, _upload_temp(session, host, obj._expr.dtype))
        return obj if dtype is None else obj.astype(dtype, copy=False)
    session = session_of((), session)
    if dtype is not None and dtype_name(dtype) != "bfloat16" and _is_python_data(obj):
        # Straight to the dtype, as numpy.array(obj, dtype) does: through
        # float64 first, 2**64 - 1 would not survive into uint64.
        host = np.asarray(obj, dtype=dtype_name(dtype))
        return RemoteArray(session, _upload_temp(session, host, host.dtype.name))
    from gpuflow import _cuda_ipc

    device = _cuda_ipc.device_array(obj)
    if (device is not None and (dtype is None or dtype_name(dtype) == device.dtype)
            and session._use_ipc("auto", device)):
        return RemoteArray(session, _upload_temp(session, obj, device.dtype))  # device to device
    host, name = host_array(obj)
    if dtype is not None:
        target = dtype_name(dtype)
        if target == "bfloat16" and name != "bfloat16":
            if host.dtype != np.uint16:
                host = dtypes.float32_to_bfloat16(host.astype(np.float32))
            name = "bfloat16"
        elif target != name:
            if name == "bfloat16":
                host = dtypes.bfloat16_to_float32(host)
            host, name = host.astype(target), target
    return RemoteArray(session, _upload_temp(session, host, name))


def _is_python_data(obj):
    """Lists, tuples and Python or numpy scalars (not arrays of any kind)."""
    if isinstance(obj, (list, tuple)):
        return all(_is_python_data(v) for v in obj)
    return isinstance(obj, (bool, int, float, np.generic))


def to_numpy(x):
    """A numpy array for a RemoteArray (evaluated), torch tensor or
    array-like (bfloat16 as uint16 words)."""
    if isinstance(x, RemoteArray):
        return x.get()
    return host_array(x)[0]


def _to_torch_by_ipc(x, device, torch):
    """``x`` evaluated straight into a new CUDA tensor on ``device`` by CUDA
    IPC (device to device), or None when that cannot be done (the caller then
    goes through host memory)."""
    from gpuflow import _cuda_ipc

    dtype = getattr(torch, x._expr.dtype, None)
    if not isinstance(dtype, torch.dtype):
        return None
    index = device.index if device.index is not None else torch.cuda.current_device()
    out = torch.empty(x.shape, dtype=dtype, device=torch.device("cuda", index))
    session = x.session
    if out.numel() == 0 or not session._use_ipc("auto", _cuda_ipc.device_array(out)):
        return None
    e = x._expr
    if e.op is None:  # a session array: written as it is
        session.download_into(e.array_name, out, transport="cuda_ipc")
        return out
    temp = session._new_temp_name()
    _execute(session, [e], [temp])
    try:
        session.download_into(temp, out, transport="cuda_ipc")
    finally:
        session.delete(temp)
    return out


def to_torch(x, device=None):
    """A torch tensor holding ``x`` (a RemoteArray, evaluated, or any
    array-like), on ``device`` when given (e.g. "cuda"). bfloat16 arrays
    become torch.bfloat16. For a RemoteArray and a CUDA ``device`` that is
    the server's GPU, with ``--allow_cuda_ipc``, the result is written
    straight into the new tensor by CUDA IPC, never through host memory.
    Needs PyTorch; the rest of gpuflow does not."""
    try:
        import torch
    except ImportError:
        raise ImportError("gpuflow.to_torch needs PyTorch, which is not installed") from None
    if isinstance(x, RemoteArray) and device is not None and torch.device(device).type == "cuda":
        tensor = _to_torch_by_ipc(x, torch.device(device), torch)
        if tensor is not None:
            return tensor
    if isinstance(x, RemoteArray):
        host, name = x.get(), x._expr.dtype
    else:
        host, name = host_array(x)
    host = np.ascontiguousarray(host)
    if name == "bfloat16":
        tensor = torch.from_numpy(host.view(np.int16)).view(torch.bfloat16)
    else:
        tensor = torch.from_numpy(host)
    return tensor if device is None else tensor.to(device)
