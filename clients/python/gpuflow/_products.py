"""NumPy's products built on the server's matmul and broadcasting:

    gf.outer(u, v); gf.inner(a, b); gf.vdot(a, b); gf.tensordot(a, b, axes=2)
    gf.kron(a, b); gf.cross(u, v)

tensordot and inner are one transpose/reshape per operand and one matmul,
as NumPy writes them; outer and kron are one broadcast multiplication.
"""

import math
import operator

from gpuflow import _inference
from gpuflow.remote_array import RemoteArray, asarray, rebind_out, session_of


def _pair(a, b):
    session = session_of((a, b))
    wrap = [x if isinstance(x, RemoteArray) else asarray(x, session=session) for x in (a, b)]
    return wrap[0], wrap[1]


def outer(a, b, out=None):
    """numpy.outer: the flattened operands' products, (a.size, b.size)."""
    a, b = _pair(a, b)
    return rebind_out(out, a.reshape(-1, 1) * b.reshape(1, -1), "outer")


def vdot(a, b):
    """numpy.vdot of real arrays: the flattened dot product (0-d)."""
    from gpuflow import functions

    a, b = _pair(a, b)
    if a.size != b.size:
        raise ValueError("cannot reshape array: vdot needs arrays of one size")
    return functions.matmul(a.reshape(-1), b.reshape(-1))


def tensordot(a, b, axes=2):
    """numpy.tensordot: sums over ``axes`` (an int: the last of a with the
    first of b; or two sequences)."""
    from gpuflow import functions

    a, b = _pair(a, b)
    if isinstance(axes, (int,)) or hasattr(axes, "__index__"):
        n = operator.index(axes)
        axes_a, axes_b = list(range(a.ndim - n, a.ndim)), list(range(n))
        if n < 0:
            raise ValueError("negative axes are not allowed")
    else:
        axes_a, axes_b = axes
        axes_a = list(axes_a) if isinstance(axes_a, (list, tuple)) else [axes_a]
        axes_b = list(axes_b) if isinstance(axes_b, (list, tuple)) else [axes_b]
    if len(axes_a) != len(axes_b):
        raise ValueError("shape-mismatch for sum")
    axes_a = [_inference.normalize_axis(x, a.ndim) for x in axes_a]
    axes_b = [_inference.normalize_axis(x, b.ndim) for x in axes_b]
    for x, y in zip(axes_a, axes_b):
        if a.shape[x] != b.shape[y]:
            raise ValueError("shape-mismatch for sum")
    free_a = [i for i in range(a.ndim) if i not in axes_a]
    free_b = [i for i in range(b.ndim) if i not in axes_b]
    k = math.prod(a.shape[i] for i in axes_a)
    left = a.transpose(free_a + axes_a).reshape(math.prod(a.shape[i] for i in free_a), k)
    right = b.transpose(axes_b + free_b).reshape(k, math.prod(b.shape[i] for i in free_b))
    product = functions.matmul(left, right)
    return product.reshape([a.shape[i] for i in free_a] + [b.shape[i] for i in free_b])


def inner(a, b):
    """numpy.inner: sums over the last axes (a scalar operand multiplies)."""
    a, b = _pair(a, b)
    if a.ndim == 0 or b.ndim == 0:
        return a * b
    if a.shape[-1] != b.shape[-1]:
        raise ValueError(f"shapes {a.shape} and {b.shape} not aligned: {a.shape[-1]} (dim "
                         f"{a.ndim - 1}) != {b.shape[-1]} (dim {b.ndim - 1})")
    return tensordot(a, b, axes=([-1], [-1]))


def kron(a, b):
    """numpy.kron: one broadcast product of interleaved axes, reshaped."""
    a, b = _pair(a, b)
    nd = max(a.ndim, b.ndim)
    sa = (1,) * (nd - a.ndim) + a.shape
    sb = (1,) * (nd - b.ndim) + b.shape
    spread_a = [v for d in sa for v in (d, 1)]
    spread_b = [v for d in sb for v in (1, d)]
    product = a.reshape(spread_a) * b.reshape(spread_b)
    return product.reshape([x * y for x, y in zip(sa, sb)])


def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """numpy.cross of 2- or 3-component vectors (a 2-component pair gives
    the z component alone, as NumPy)."""
    from gpuflow import functions

    a, b = _pair(a, b)
    if axis is not None:
        axisa = axisb = axisc = axis
    a = functions.moveaxis(a, axisa, -1)
    b = functions.moveaxis(b, axisb, -1)
    if a.shape[-1] not in (2, 3) or b.shape[-1] not in (2, 3):
        raise ValueError("incompatible dimensions for cross product\n(dimension must be 2 or 3)")

    def part(v, i):
        return v[..., i] if i < v.shape[-1] else None

    a0, a1, a2 = (part(a, i) for i in range(3))
    b0, b1, b2 = (part(b, i) for i in range(3))
    z = a0 * b1 - a1 * b0
    if a2 is None and b2 is None:
        return z

    def mul(x, y):
        return None if x is None or y is None else x * y

    def sub(x, y):
        if x is None:
            return -y
        return x if y is None else x - y

    cx = sub(mul(a1, b2), mul(a2, b1))
    cy = sub(mul(a2, b0), mul(a0, b2))
    shape = _inference.broadcast_shapes(cx.shape, cy.shape, z.shape)
    parts = [functions.broadcast_to(c, shape) for c in (cx, cy, z)]
    return functions.moveaxis(functions.stack(parts, axis=-1), -1, axisc)


__all__ = ["cross", "inner", "kron", "outer", "tensordot", "vdot"]
