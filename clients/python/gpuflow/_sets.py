"""NumPy's set operations on 1-D arrays (numpy/lib/_arraysetops_impl.py),
composed of the server's sort, argsort, searchsorted, take and flatnonzero:

    gf.intersect1d(a, b, return_indices=True); gf.union1d(a, b)
    gf.setdiff1d(a, b); gf.setxor1d(a, b); gf.isin(x, labels, invert=True)

Membership is a sort of the test values and one searchsorted (is the value
at the found position the value itself?), so it needs no round trip; a
result whose length depends on the data (intersect1d, setdiff1d, setxor1d)
learns it with one Execute, as ``unique`` does (gpuflow._select). NumPy
first takes the unique values of each operand (one Execute each); here the
first element of each run of equal values in the sorted operand stands for
it, so every function evaluates once. NaN is never a member (NaN != NaN)
and equal NaNs collapse as in ``unique``, as NumPy's results have it.
"""

import warnings

from gpuflow import _inference
from gpuflow._ufunc import type_of
from gpuflow.remote_array import apply, as_remote, reduce, session_of

_KINDS = (None, "sort", "table")


_remote = as_remote  # an array-like as a RemoteArray (remote_array.as_remote)


def _flat_pair(ar1, ar2):
    session = session_of((ar1, ar2))
    return _remote(ar1, session).reshape(-1), _remote(ar2, session).reshape(-1)


def _promoted(a, b):
    return _inference.promote_types([type_of(a), type_of(b)])


def _zeros(n, dtype, session):
    from gpuflow import functions

    return functions.zeros(n, dtype, session=session)


def _sort(a):
    from gpuflow import _sorting

    return _sorting.sort(a, kind="stable")


def _run_starts(s):
    """Whether each element of the sorted 1-D ``s`` starts a run of equal
    values (equal NaNs in one run, as ``unique``'s)."""
    from gpuflow import functions

    if s.size == 0:
        return _zeros(0, "bool", s.session)
    new = s[1:] != s[:-1]
    if _inference.is_float(s._expr.dtype):
        both_nan = functions.logical_and(functions.isnan(s[1:]), functions.isnan(s[:-1]))
        new = functions.logical_and(new, functions.logical_not(both_nan))
    return functions.concatenate([functions.ones(1, "bool", session=s.session), new])


def _found(t, v):
    """Whether each value of ``v`` (any shape) is in the sorted 1-D ``t``:
    the value at its searchsorted position equals it (compared in the
    promoted dtype)."""
    from gpuflow import _sorting

    if t.size == 0 or v.size == 0:
        return _zeros(v.shape, "bool", v.session)
    pos = apply("minimum", (_sorting.searchsorted(t, v), t.size - 1))
    return t.take(pos) == v


def _kept(values, keep):
    """``values[keep]`` for a bool RemoteArray ``keep`` (one Execute)."""
    from gpuflow import _select as select

    return values.take(select.flatnonzero(keep))


def _check_kind(kind, e, t):
    if kind not in _KINDS:
        raise ValueError(f"Invalid kind: '{kind}'. Please use None, 'sort' or 'table'.")
    if kind == "table" and not all(_inference.kind(x._expr.dtype) in "uib" for x in (e, t)):
        raise ValueError("The 'table' method is only supported for boolean or integer arrays. "
                         "Please select 'sort' or None for kind.")


def _members(e, t):
    """Whether each element of ``e`` (any shape) is in the 1-D ``t``: one
    reduction over t where t is small against e (NumPy's rule
    ``len(t) < 10 * len(e) ** 0.145``) or complex, else a sort of t and a
    searchsorted."""
    if t.size == 0:
        return _zeros(e.shape, "bool", e.session)
    complex_ = _inference.is_complex(e._expr.dtype) or _inference.is_complex(t._expr.dtype)
    if complex_ or t.size < 10 * e.size ** 0.145:
        return reduce("any", e.reshape(e.shape + (1,)) == t, -1)
    return _found(_sort(t), e)


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """numpy.isin: whether each element (element's shape) is among the test
    elements. ``kind`` is checked as NumPy checks it; every kind gives the
    same answer (a sort and a searchsorted, or one reduction over few test
    elements), and kind="table" never raises NumPy's RuntimeError for a
    range too wide for the table. ``assume_unique`` changes nothing."""
    session = session_of((element, test_elements))
    e = _remote(element, session)
    t = _remote(test_elements, session).reshape(-1)
    _check_kind(kind, e, t)
    hits = _members(e, t)
    return apply("logical_not", (hits,)) if invert else hits


def in1d(ar1, ar2, assume_unique=False, invert=False, *, kind=None):
    """numpy.in1d (deprecated in NumPy 2, still in CuPy): isin of the
    flattened ``ar1``; NumPy 2's DeprecationWarning."""
    warnings.warn("`in1d` is deprecated. Use `np.isin` instead.", DeprecationWarning,
                  stacklevel=2)
    a, _ = _flat_pair(ar1, ar2)
    return isin(a, ar2, assume_unique, invert, kind=kind)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False):
    """numpy.intersect1d: the sorted values in both (the promoted dtype),
    and with ``return_indices`` the int64 index in each flattened operand
    (the first occurrence, unless ``assume_unique``). One Execute."""
    from gpuflow import _select as select
    from gpuflow import _sorting, functions

    a, b = _flat_pair(ar1, ar2)
    dtype = _promoted(a, b)
    session = a.session
    if a.size == 0 or b.size == 0 or (assume_unique and a.size + b.size < 2):
        empty = _zeros(0, dtype, session)
        return (empty, _zeros(0, "int64", session), _zeros(0, "int64", session)) \
            if return_indices else empty
    if assume_unique:
        # NumPy's own: equal neighbours of the sorted concatenation.
        aux = functions.concatenate([a, b])
        order = _sorting.argsort(aux, kind="stable")
        aux = aux.take(order)
        idx = select.flatnonzero(aux[1:] == aux[:-1])
        values = aux.take(idx)
        if not return_indices:
            return values
        return values, order.take(idx), order.take(idx + 1) - a.size
    o1 = _sorting.argsort(a, kind="stable")
    s1 = a.take(o1)
    keep = functions.logical_and(_run_starts(s1), _found(_sort(b), s1))
    idx = select.flatnonzero(keep)
    values = s1.take(idx)
    values = values if values._expr.dtype == dtype else values.astype(dtype)
    if not return_indices:
        return values
    o2 = _sorting.argsort(b, kind="stable")
    first2 = o2.take(_sorting.searchsorted(b.take(o2), values))
    return values, o1.take(idx), first2


def union1d(ar1, ar2):
    """numpy.union1d: ``unique`` of both flattened operands together."""
    from gpuflow import _select as select
    from gpuflow import functions

    a, b = _flat_pair(ar1, ar2)
    return select.unique(functions.concatenate([a, b]))


def setdiff1d(ar1, ar2, assume_unique=False):
    """numpy.setdiff1d: the unique values of ``ar1`` (its dtype, sorted) not
    in ``ar2``; with ``assume_unique`` the elements of the flattened ar1 in
    their order. One Execute."""
    from gpuflow import functions

    a, b = _flat_pair(ar1, ar2)
    if assume_unique:
        if a.size == 0:
            return a
        return _kept(a, functions.logical_not(_members(a, b)))
    if a.size == 0:
        return a
    s1 = _sort(a)
    keep = functions.logical_and(_run_starts(s1), functions.logical_not(_found(_sort(b), s1)))
    return _kept(s1, keep)


def setxor1d(ar1, ar2, assume_unique=False):
    """numpy.setxor1d: the sorted unique values in exactly one of the
    operands (the promoted dtype; a NaN of each operand stays, as NumPy's).
    One Execute."""
    from gpuflow import functions

    a, b = _flat_pair(ar1, ar2)
    if a.size + b.size == 0:
        return functions.concatenate([a, b])
    if assume_unique:
        # NumPy's own: the elements of the sorted concatenation equal to
        # neither neighbour.
        aux = _sort(functions.concatenate([a, b]))
        true = functions.ones(1, "bool", session=aux.session)
        flag = functions.concatenate([true, aux[1:] != aux[:-1], true])
        return _kept(aux, functions.logical_and(flag[1:], flag[:-1]))
    s1, s2 = _sort(a), _sort(b)
    k1 = functions.logical_and(_run_starts(s1), functions.logical_not(_found(s2, s1)))
    k2 = functions.logical_and(_run_starts(s2), functions.logical_not(_found(s1, s2)))
    both = functions.concatenate([s1, s2])
    return _sort(_kept(both, functions.concatenate([k1, k2])))


__all__ = ["in1d", "intersect1d", "isin", "setdiff1d", "setxor1d", "union1d"]
