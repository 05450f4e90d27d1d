"""Indexing RemoteArrays: NumPy's basic indexing, assignment and JAX's ``.at``.

    y = x[1:, None, ::-2]        # one slice node (then squeeze/expand_dims)
    x[0] = 5                     # rebinds x: where(mask, 5, x), one fused node
    x[:, 1::2] = rows            # the rows are laid out along the axis, then where
    x[x < 0] = 0                 # a boolean mask (RemoteArray or numpy) and a scalar
    z = x.at[2:].add(1)          # JAX: a new array; x is left alone

    y = x[idx]                   # integer arrays: a take node (numpy, list or RemoteArray)
    y = x[:, idx]                # ... along axis 1
    y = x[i0, :, i1]             # several broadcast together, NumPy's placement rules

    y = x[x > 0]                 # a boolean mask: one Execute learns the count (_select)
    x[idx] = v                   # integer arrays or masks with values: one scatter node

Assignment rebinds the Python object to a new value: a RemoteArray taken
from ``x`` earlier (``v = x[0]``) keeps the old value (no views alias; see
docs/python.md, "Differences from CuPy").
"""

import operator

import numpy as np

from gpuflow import _inference

_INT64_MAX = _inference.INT64_MAX
_INT64_MIN = _inference.INT64_MIN


def _clamp64(v):
    return max(_INT64_MIN, min(_INT64_MAX, v))


def _is_bool_index(k):
    from gpuflow.remote_array import RemoteArray

    if isinstance(k, RemoteArray):
        return k.dtype == np.bool_
    if isinstance(k, np.ndarray):
        return k.dtype == np.bool_
    return False


_BOOL_MASK = ("a scalar boolean index (x[True], x[False]) is not supported by gpuflow; use "
              "x[None] and a mask of shape (1,)")
_VALID = ("only integers, slices (`:`), ellipsis (`...`), numpy.newaxis (`None`) and integer or "
          "boolean arrays are valid indices")


def _refuse_advanced(k):
    if _is_bool_index(k):
        raise IndexError(_BOOL_MASK)
    raise IndexError(_VALID)


def expand_key(shape, key):
    """The index as one entry per axis of the result's making: slices,
    integers (normalised, checked) and None, with ``...`` expanded."""
    key = key if isinstance(key, tuple) else (key,)
    ndim = len(shape)
    ellipses = sum(1 for k in key if k is Ellipsis)
    if ellipses > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if real > ndim:
        raise IndexError(
            f"too many indices for array: array is {ndim}-dimensional, but {real} were indexed")
    full = [slice(None)] * (ndim - real)
    expanded = []
    for k in key:
        expanded.extend(full if k is Ellipsis else [k])
    if not ellipses:
        expanded.extend(full)
    out, axis = [], 0
    for k in expanded:
        if k is None:
            out.append(None)
            continue
        dim = shape[axis]
        if isinstance(k, slice):
            step = 1 if k.step is None else operator.index(k.step)
            if step == 0:
                raise ValueError("slice step cannot be zero")
            out.append(slice(None if k.start is None else operator.index(k.start),
                             None if k.stop is None else operator.index(k.stop), step))
        else:
            if isinstance(k, (bool, np.bool_)):
                raise IndexError(_BOOL_MASK)
            try:
                i = operator.index(k)
            except TypeError:
                _refuse_advanced(k)
            if i < -dim or i >= dim:
                raise IndexError(f"index {i} is out of bounds for axis {axis} with size {dim}")
            out.append(i + dim if i < 0 else i)
        axis += 1
    return out


def getitem(a, key):
    """``a[key]``: basic indexing (one slice node, then squeeze and
    expand_dims), or NumPy's advanced indexing with integer arrays
    (_advanced)."""
    from gpuflow import _gather, _select

    masked = _select.getitem_mask(a, key)
    if masked is not None:
        return masked
    advanced = _gather.advanced_key(a, key)
    if advanced is not None:
        return _gather.getitem_advanced(a, advanced)
    return _basic_getitem(a, key)


def _basic_getitem(a, key):
    from gpuflow.remote_array import RemoteArray, apply

    starts, stops, steps, axes, squeezed, new_axes = [], [], [], [], [], []
    axis = out_axis = 0
    for k in expand_key(a.shape, key):
        if k is None:
            new_axes.append(out_axis)
            out_axis += 1
            continue
        if isinstance(k, slice):
            step = k.step
            if not (k.start is None and k.stop is None and step == 1):
                start = k.start if k.start is not None else (0 if step > 0 else _INT64_MAX)
                stop = k.stop if k.stop is not None else (_INT64_MAX if step > 0 else _INT64_MIN)
                starts.append(_clamp64(start))
                stops.append(_clamp64(stop))
                steps.append(_clamp64(step))
                axes.append(axis)
            out_axis += 1
        else:
            starts.append(k)
            stops.append(k + 1)
            steps.append(1)
            axes.append(axis)
            squeezed.append(axis)
        axis += 1
    out = a
    if axes:
        attrs = {"starts": starts, "stops": stops, "axes": axes}
        if any(s != 1 for s in steps):
            attrs["steps"] = steps
        out = apply("slice", (out,), attrs)
    if squeezed:
        out = apply("squeeze", (out,), {"axes": squeezed})
    if new_axes:
        out = apply("expand_dims", (out,), {"axes": new_axes})
    return out if out is not a else RemoteArray(a.session, a._expr)


# ---- assignment ---------------------------------------------------------------------


def _value(a, value):
    """``value`` as an operand of ``a``'s dtype: Python and numpy scalars
    converted as NumPy's assignment converts them (OverflowError for an int
    out of bounds, ValueError for NaN into an integer), arrays cast unsafely."""
    from gpuflow import functions
    from gpuflow.remote_array import RemoteArray, asarray

    dtype = a._expr.dtype
    if isinstance(value, (bool, int, float, np.generic)) and not isinstance(value, np.ndarray):
        converted = _inference.convert_scalar(value, dtype)
        if dtype == "bfloat16":
            return functions.astype(converted, dtype)
        return converted
    if not isinstance(value, RemoteArray):
        value = asarray(value, session=a.session)
    return value if value._expr.dtype == dtype else value.astype(dtype)


def _shape_of(v):
    return tuple(np.shape(v)) if not hasattr(v, "_expr") else v.shape


def _scatter_axis(v, axis, start, step, dim):
    """``v`` (n along ``axis``, at positions start, start + step, ...; step
    > 0) laid out on an axis of length ``dim`` with zeros between."""
    from gpuflow import functions

    n = v.shape[axis]
    if step > 1:
        gaps = list(v.shape)
        gaps.insert(axis + 1, step - 1)
        v = functions.expand_dims(v, axis + 1)
        v = functions.concatenate([v, functions.zeros(gaps, v.dtype, session=v.session)],
                                  axis=axis + 1)
        merged = list(v.shape[:axis]) + [n * step] + list(v.shape[axis + 2:])
        v = v.reshape(merged)
        length = min(n * step, dim - start)
        if length < n * step:
            key = [slice(None)] * v.ndim
            key[axis] = slice(0, length)
            v = v[tuple(key)]
    pieces = []
    for size in (start, None, dim - start - v.shape[axis]):
        if size is None:
            pieces.append(v)
        elif size:
            shape = list(v.shape)
            shape[axis] = size
            pieces.append(functions.zeros(shape, v.dtype, session=v.session))
    return pieces[0] if len(pieces) == 1 else functions.concatenate(pieces, axis=axis)


def assign_basic(a, key, value):
    """The value ``a`` has after ``a[key] = value`` (a basic index)."""
    from gpuflow import functions
    from gpuflow.remote_array import RemoteArray, apply

    expanded = expand_key(a.shape, key)
    selection, target, new_axes = [], [], []
    axis = 0
    for k in expanded:
        if k is None:
            new_axes.append(len(target))
            target.append(1)
            continue
        dim = a.shape[axis]
        if isinstance(k, slice):
            start, stop, step = k.indices(dim)
            n = len(range(start, stop, step))
            selection.append((start, step, n, False, k))
            target.append(n)
        else:
            selection.append((k, 1, 1, True, k))
        axis += 1
    v = _value(a, value)
    vshape = list(_shape_of(v))
    while len(vshape) > len(target) and vshape[0] == 1:
        vshape.pop(0)  # NumPy drops leading unit dimensions of the value
    try:
        fits = (len(vshape) <= len(target)
                and _inference.broadcast_shapes(tuple(vshape), tuple(target)) == tuple(target))
    except ValueError:
        fits = False
    if not fits:
        raise ValueError(f"could not broadcast input array from shape "
                         f"{_inference.format_shape(_shape_of(v))} into shape {_inference.format_shape(target)}")
    if any(n == 0 for _, _, n, _, _ in selection) or 0 in target:
        return RemoteArray(a.session, a._expr)
    everything = all(not is_int and start == 0 and step == 1 and n == dim
                     for (start, step, n, is_int, _), dim in zip(selection, a.shape))
    if not isinstance(v, RemoteArray):  # a numpy scalar of a's dtype
        return functions.full(a.shape, v, a.dtype, session=a.session) if everything else \
            _masked(a, selection, v)
    vshape = [1] * (len(target) - len(vshape)) + vshape
    vshape = [d for i, d in enumerate(vshape) if i not in new_axes]
    it = iter(vshape)
    vshape = [1 if is_int else next(it) for _, _, _, is_int, _ in selection]
    if v.shape != tuple(vshape):
        v = v.reshape(vshape)
    if everything:
        return functions.broadcast_to(v, a.shape)  # a[...] = v
    return _masked(a, selection, v)


def _masked(a, selection, v):
    """where(the selected elements, v laid out on a's shape, a)."""
    from gpuflow import functions
    from gpuflow.remote_array import RemoteArray, apply

    masks = []
    for axis, ((start, step, n, is_int, k), dim) in enumerate(zip(selection, a.shape)):
        if isinstance(v, RemoteArray) and v.shape[axis] > 1:
            if step < 0:
                v = functions.flip(v, axis)
                start, step = start + step * (n - 1), -step
            if not (start == 0 and step == 1 and n == dim):
                v = _scatter_axis(v, axis, start, step, dim)
        covered = np.zeros(dim, np.bool_)
        covered[k] = True
        if not covered.all():
            shape = [1] * a.ndim
            shape[axis] = dim
            masks.append(covered.reshape(shape))
    mask = masks[0]
    for m in masks[1:]:
        mask = apply("logical_and", (mask, m), session=a.session)
    return apply("where", (mask, v, a))


def _bool_key(a, key):
    """The mask of ``a[mask] = v`` (a bool RemoteArray or numpy array, or a
    list of bools), or None for any other index."""
    if isinstance(key, list) and key and all(isinstance(k, (bool, np.bool_)) for k in key):
        key = np.asarray(key)
    if not _is_bool_index(key):
        return None
    for i, (d, m) in enumerate(zip(a.shape, key.shape)):
        if d != m:
            raise IndexError(f"boolean index did not match indexed array along axis {i}; size of "
                             f"axis is {d} but size of corresponding boolean axis is {m}")
    if key.ndim > a.ndim:
        raise IndexError(f"too many indices for array: array is {a.ndim}-dimensional, but "
                         f"{key.ndim} were indexed")
    return key


def _mask_value(a, mask, value):
    """``value`` shaped to broadcast against ``a`` where ``mask`` selects,
    when it reaches every selected element alike (a scalar, or a row of the
    trailing dimensions); None when it does not."""
    v = _value(a, value)
    trailing = a.shape[mask.ndim:]
    vshape = list(_shape_of(v))
    if len(vshape) == len(trailing) + 1 and vshape[0] == 1:
        vshape.pop(0)
    try:
        ok = (len(vshape) <= len(trailing)
              and _inference.broadcast_shapes(tuple(vshape), trailing) == trailing)
    except ValueError:
        ok = False
    if not ok:
        return None  # one value per selected element: a scatter
    if tuple(vshape) != _shape_of(v):
        v = v.reshape(vshape) if hasattr(v, "_expr") else np.reshape(v, vshape)
    return v


def _expanded_mask(mask, ndim):
    from gpuflow.remote_array import RemoteArray, apply

    extra = ndim - mask.ndim
    if not extra:
        return mask
    if isinstance(mask, RemoteArray):
        return apply("expand_dims", (mask,), {"axes": list(range(mask.ndim, ndim))})
    return mask.reshape(mask.shape + (1,) * extra)


def assign(a, key, value):
    """The value ``a`` has after ``a[key] = value``."""
    from gpuflow.remote_array import apply

    if isinstance(key, (bool, np.bool_)):
        key = np.asarray(key)
    from gpuflow import _select

    mask = _bool_key(a, key)
    if mask is None:
        if _select.has_array_entry(key):
            return _select.scatter_key(a, key, value)
        return assign_basic(a, key, value)
    v = _mask_value(a, mask, value)
    if v is not None:
        return apply("where", (_expanded_mask(mask, a.ndim), v, a), session=a.session)
    flat = _select.positions(a, key)
    v = _value(a, value)
    if _shape_of(v)[:1] != flat.shape[:1] and flat.ndim:
        raise ValueError(f"NumPy boolean array indexing assignment cannot assign "
                         f"{_shape_of(v)[0] if _shape_of(v) else 1} input values to the "
                         f"{flat.shape[0]} output values where the mask is true")
    return _select.scatter(a, flat, v)


# ---- JAX's .at ---------------------------------------------------------------------


class At:
    """``x.at[idx]``: JAX's functional updates. ``x.at[idx].set(v)`` is the
    array ``x`` would be after ``x[idx] = v``, and ``add``, ``multiply``,
    ``divide``, ``power``, ``min``, ``max`` combine the selected elements
    with ``v`` first (through integer arrays, add, multiply, min and max
    combine every duplicate index, one scatter; divide and power read, combine
    and write back, so the last duplicate wins); ``get()`` is ``x[idx]``.
    ``x`` itself is unchanged; results keep ``x``'s dtype."""

    __slots__ = ("_array",)

    def __init__(self, array):
        self._array = array

    def __getitem__(self, index):
        return _AtIndex(self._array, index)


class _AtIndex:
    __slots__ = ("_array", "_index")

    def __init__(self, array, index):
        self._array = array
        self._index = index

    def get(self):
        return self._array[self._index]

    def set(self, values):
        return assign(self._array, self._index, values)

    def apply(self, ufunc):
        return self._combine(lambda cur, _: ufunc(cur), None)

    def _combine(self, fn, values, mode=None):
        from gpuflow import _select
        from gpuflow.remote_array import apply

        a, index = self._array, self._index
        key = np.asarray(index) if isinstance(index, (bool, np.bool_)) else index
        mask = _bool_key(a, key)
        if mask is None and mode is not None and _select.has_array_entry(index):
            return _select.scatter_key(a, index, values, mode)  # duplicates all combine
        shared = None if mask is None or values is None else _mask_value(a, mask, values)
        if mask is None or (values is not None and shared is None):
            return assign(a, index, fn(a[index], values))
        updated = fn(a, shared)
        if updated.dtype != a.dtype:
            updated = updated.astype(a.dtype)
        return apply("where", (_expanded_mask(mask, a.ndim), updated, a), session=a.session)

    def add(self, values):
        return self._combine(lambda cur, v: cur + v, values, "add")

    def multiply(self, values):
        return self._combine(lambda cur, v: cur * v, values, "mul")

    def divide(self, values):
        return self._combine(lambda cur, v: cur / v, values)

    def power(self, values):
        return self._combine(lambda cur, v: cur ** v, values)

    def min(self, values):
        from gpuflow import functions

        return self._combine(functions.minimum, values, "min")

    def max(self, values):
        from gpuflow import functions

        return self._combine(functions.maximum, values, "max")
