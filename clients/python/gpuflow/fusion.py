"""``gpuflow.fuse``: CuPy's ``cupy.fuse`` decorator.

    @gpuflow.fuse()
    def squared_diff(x, y):
        return (x - y) * (x - y)

    z = squared_diff(a, b)       # a RemoteArray, like any other operation
    z.get()                      # one Execute, one fused kernel

The function is traced once per input signature (each RemoteArray
argument's dtype and shape, each scalar argument's type and value), with
stand-ins for its array arguments; the last 256 signatures are kept. A
later call with the same signature replays the trace on the new arrays
without running the Python function or any client-side inference. Its
evaluation goes to the server by the handle of a prepared graph
(gpuflow._prepared), whose structure leaves scalar values out: new scalar
values trace again on the client but reuse the server's validated,
planned and compiled graph.

As in CuPy, the function should compute only with array operations on its
arguments: Python control flow and side effects happen at a trace only. A
function whose result is not a RemoteArray (or a tuple of them) is simply
called each time.
"""

import collections
import functools
import threading

import numpy as np

from gpuflow import _prepared
from gpuflow import remote_array as _ra

# Signatures one fused function keeps traces for, least recently used first
# out.
_MAX_TRACES = 256


def _signature(args):
    """What a trace depends on, per argument: a RemoteArray's dtype and
    shape, a scalar's type and exact value. TypeError for an argument fuse
    cannot take."""
    parts = []
    for value in args:
        if isinstance(value, _ra.RemoteArray):
            parts.append(("array", value._expr.dtype, value._expr.shape))
        elif isinstance(value, (bool, int, float, np.generic)):
            parts.append((type(value), _prepared._exact(value)))
        else:
            raise TypeError(f"fuse takes RemoteArrays and scalars, got {type(value).__name__}")
    return tuple(parts)


class _Trace:
    """The exprs a function made from stand-ins: replayed on new arguments."""

    def __init__(self, stand_ins, leaves, outputs, single):
        # The stand-ins stay alive with the trace (their exprs' ids key it).
        self.stand_ins = stand_ins
        self.leaves = leaves  # id(stand-in leaf expr) -> argument position
        self.outputs = outputs  # the exprs returned
        self.single = single  # returned one RemoteArray, not a tuple

    def replay(self, args, session):
        exprs = {}
        for expr_id, position in self.leaves.items():
            exprs[expr_id] = args[position]._expr

        def clone(root):
            stack = [root]
            while stack:
                e = stack[-1]
                if id(e) in exprs:
                    stack.pop()
                    continue
                pending = [x for x in e.inputs
                           if isinstance(x, _ra._Expr) and id(x) not in exprs]
                if e.op is None or not pending:
                    stack.pop()
                    if e.op is None:  # an array the function read from elsewhere
                        exprs[id(e)] = e
                    else:
                        exprs[id(e)] = _ra._Expr(
                            e.op, [exprs[id(x)] if isinstance(x, _ra._Expr) else x
                                   for x in e.inputs], e.attrs, e.dtype, e.shape)
                else:
                    stack.extend(pending)
            return exprs[id(root)]

        results = tuple(_ra.RemoteArray(session, clone(e)) for e in self.outputs)
        return results[0] if self.single else results


class Fusion:
    """A function fused with :func:`fuse`; call it like the function."""

    def __init__(self, func, kernel_name=None):
        functools.update_wrapper(self, func)
        self._func = func
        self.kernel_name = kernel_name or getattr(func, "__name__", "fused")
        self._traces = collections.OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, *args, **kwargs):
        if kwargs:
            raise TypeError(f"{self.kernel_name}: fuse takes positional arguments only")
        session = _ra.session_of(args)
        signature = _signature(args)
        with self._lock:
            trace = self._traces.get(signature)
            if trace is not None:
                self._traces.move_to_end(signature)
        if trace is None:
            trace = self._trace(args, session)
            if trace is None:  # not an array result: nothing to replay
                return self._func(*args)
            with self._lock:
                self._traces[signature] = trace
                while len(self._traces) > _MAX_TRACES:
                    self._traces.popitem(last=False)
        return trace.replay(args, session)

    def _trace(self, args, session):
        stand_ins = []
        leaves = {}
        for position, value in enumerate(args):
            if isinstance(value, _ra.RemoteArray):
                e = value._expr
                leaf = _ra._Expr(None, (), {}, e.dtype, e.shape, array_name=f"_fuse.arg{position}")
                leaves[id(leaf)] = position
                stand_ins.append(_ra.RemoteArray(session, leaf))
            else:
                stand_ins.append(value)
        result = self._func(*stand_ins)
        single = isinstance(result, _ra.RemoteArray)
        outputs = (result,) if single else result
        if not isinstance(outputs, tuple) or not outputs or not all(
                isinstance(r, _ra.RemoteArray) for r in outputs):
            return None
        for r in outputs:
            if r.session is not session:
                raise ValueError(f"{self.kernel_name}: the result belongs to another session")
        return _Trace(stand_ins, leaves, [r._expr for r in outputs], single)

    def clear_cache(self):
        """Forgets every trace."""
        with self._lock:
            self._traces.clear()


def fuse(*args, kernel_name=None):
    """Decorator fusing a function of RemoteArrays and scalars (CuPy's
    ``cupy.fuse``); usable as ``@fuse``, ``@fuse()`` or
    ``@fuse(kernel_name="name")``. See the module's documentation."""
    if len(args) == 1 and callable(args[0]) and kernel_name is None:
        return Fusion(args[0])
    if args:
        raise TypeError("fuse takes a function, or only keyword arguments")
    return lambda func: Fusion(func, kernel_name)


__all__ = ["Fusion", "fuse"]
