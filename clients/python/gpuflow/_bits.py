"""Bit-level compositions on the server's ``bitcast`` (the same bytes read as
another dtype of the same item size): ``view(dtype)`` across item sizes,
``packbits`` / ``unpackbits``, and complex arrays built from their parts.

    x.view(np.uint8)              # float32 (..., n) -> uint8 (..., 4n), little-endian bytes
    b.view(np.float32)            # uint8 (..., 4n) -> float32 (..., n)
    gf.packbits(mask, axis=-1)    # bool (..., n) -> uint8 (..., ceil(n / 8))
    gf.unpackbits(packed, count=n, bitorder="little")

There are no shift ops on the server: on unsigned ints a right shift by k
bits is a floor division by 2**k and a left shift a multiplication (which
wraps), and a cast to a narrower unsigned int keeps the low bytes.
"""

import math
import operator

import numpy as np

from gpuflow import _inference

__all__ = ["packbits", "unpackbits"]

_UINT = {1: "uint8", 2: "uint16", 4: "uint32", 8: "uint64"}


def _apply(op, operands, attrs=None):
    from gpuflow.remote_array import apply

    return apply(op, operands, attrs or {})


def _cast(x, dtype):
    return x if x._expr.dtype == dtype else _apply("cast", (x,), {"dtype": dtype})


def _bitcast(x, dtype):
    return x if x._expr.dtype == dtype else _apply("bitcast", (x,), {"dtype": dtype})


def _last(x, n):
    """``x`` with its last axis split into (-1, n)."""
    return x.reshape(x.shape[:-1] + (x.shape[-1] // n, n))


def _joined(x):
    """``x`` with its last two axes merged."""
    return x.reshape(x.shape[:-2] + (x.shape[-2] * x.shape[-1],))


def _stack_last(pieces):
    from gpuflow import functions

    return functions.stack(pieces, axis=-1)


# ---- complex values from their parts --------------------------------------------------


def complex_from_parts(re, im, dtype):
    """``re + 1j * im`` as ``dtype`` (complex64 or complex128) with every
    part exact: signed zeros, infinities and NaN as they are (``re`` and
    ``im`` are RemoteArrays of the same shape; they are cast to the real
    dtype first). complex64 is one bitcast of the two float32 bit patterns
    in a uint64 (the real part in the low half, as it lies in memory);
    complex128 has no integer of its size, so it is built by arithmetic
    whose every case is exact (below)."""
    part = _inference.real_dtype(dtype)
    re, im = _cast(re, part), _cast(im, part)
    if dtype == "complex64":
        lo = _cast(_bitcast(re, "uint32"), "uint64")
        hi = _cast(_bitcast(im, "uint32"), "uint64") * np.uint64(1 << 32)
        return _bitcast(_apply("bitwise_or", (lo, hi)), "complex64")
    from gpuflow import _ufunc

    signbit = _ufunc.UFUNCS["signbit"]

    def pick(cond, a, b):
        return _apply("where", (cond, a, b))

    # (re, -0): adding x + -0 gives x for every x, signed zeros included.
    base = _apply("conj", (_cast(re, dtype),))
    # (+-0, im) for a finite nonzero im: the product's imaginary part is
    # im * 1 + 0 * 0 = im, its real part im * 0 - 0 * 1 a zero.
    turned = _cast(im, dtype) * 1j
    general = base + turned  # right unless re is a zero (re + +0 loses -0)
    # A zero re: (+0, im) from +0 + (+-0) = +0, and (-0, im) as -conj of it.
    zero_re = np.complex128(complex(0.0, -0.0)) + turned
    zero_re = pick(signbit(re), -_apply("conj", (zero_re,)), zero_re)
    # im zero, infinite or NaN: add (-0, im) from constants.

    def const(value):
        return np.complex128(complex(-0.0, value))

    special = pick(_apply("isnan", (im,)),
                   pick(signbit(im), const(-math.nan), const(math.nan)),
                   pick(_apply("isinf", (im,)),
                        pick(im > 0, const(math.inf), const(-math.inf)),
                        pick(signbit(im), const(-0.0), const(0.0))))
    finite_nonzero = _apply("logical_and", (_ufunc.UFUNCS["isfinite"](im), im != 0))
    return pick(finite_nonzero, pick(re == 0, zero_re, general), base + special)


# ---- view(dtype) across item sizes -------------------------------------------------------


def _to_words(x, w):
    """``x``'s bytes as unsigned ints of ``w`` bytes (w <= the item size):
    shape (..., n * itemsize / w), little-endian (the low word first)."""
    src = x._expr.dtype
    if src == "bool":
        x, src = _cast(x, "uint8"), "uint8"
    size = _inference.itemsize(src)
    if _inference.is_complex(src) and (size > w or size == 16):
        parts = _stack_last([_apply("real", (x,)), _apply("imag", (x,))])
        return _to_words(_joined(parts), w)
    u = _bitcast(x, _UINT[size])
    if size == w:
        return u
    pieces = []
    for j in range(size // w):
        shifted = u if j == 0 else _apply("floordiv", (u, np.dtype(_UINT[size]).type(
            1 << (8 * w * j))))  # u >> 8wj
        pieces.append(_cast(shifted, _UINT[w]))  # the low w bytes
    return _joined(_stack_last(pieces))


def _from_words(words, dst):
    """The inverse of _to_words: unsigned ints of w bytes (w <= dst's item
    size, the last axis a multiple of itemsize / w) read as ``dst``."""
    w = _inference.itemsize(words._expr.dtype)
    size = _inference.itemsize(dst)
    if dst == "bool":
        return words != 0  # NumPy's view keeps the byte; any nonzero byte is True
    if dst == "complex128":
        parts = _last(_from_words(words, "float64"), 2)
        return complex_from_parts(parts[..., 0], parts[..., 1], dst)
    wide = _UINT[size]
    k = size // w
    if k == 1:
        u = words
    else:
        grouped = _last(words, k)
        u = None
        for j in range(k):
            piece = _cast(grouped[..., j], wide)
            if j:
                piece = piece * np.dtype(wide).type(1 << (8 * w * j))
            u = piece if u is None else _apply("bitwise_or", (u, piece))
    return _bitcast(u, dst)


def view_as(x, dst):
    """``x.view(dst)`` as NumPy 1.24 reads the bytes (gpuflow arrays are
    C-contiguous, so the last axis always is): the last axis scales by the
    ratio of the item sizes."""
    src = x._expr.dtype
    s, d = _inference.itemsize(src), _inference.itemsize(dst)
    if s == d:
        if dst == "bool":
            return x != 0
        return _cast(x, dst) if src == "bool" else _bitcast(x, dst)
    if x.ndim == 0:
        raise ValueError("Changing the dtype of a 0d array is only supported if the itemsize is "
                         "unchanged")
    if d > s and (x.shape[-1] * s) % d:
        raise ValueError("When changing to a larger dtype, its size must be a divisor of the total "
                         "size in bytes of the last axis of the array.")
    return _from_words(_to_words(x, min(s, d)), dst)


# ---- packbits / unpackbits -------------------------------------------------------------


def _remote(a):
    from gpuflow import remote_array

    return a if isinstance(a, remote_array.RemoteArray) else remote_array.asarray(a)


def _weights(little):
    w = [1 << i for i in range(8)]
    return np.array(w if little else w[::-1], np.uint8)


def _along_last(a, axis):
    """(a with ``axis`` moved last, the axis) -- ``axis=None`` flattens."""
    from gpuflow import functions

    if axis is None:
        return a.reshape(-1), None
    if a.ndim == 0:
        a = a.reshape(1)
    axis = _inference.normalize_axis(axis, a.ndim)
    return functions.moveaxis(a, axis, -1), axis


def _back(a, axis):
    from gpuflow import functions

    return a if axis is None else functions.moveaxis(a, -1, axis)


def packbits(a, axis=None, bitorder="big"):
    """numpy.packbits: each run of 8 values along ``axis`` (the flattened
    array for None) as one uint8, the first value in the high bit
    ('big') or the low bit ('little'); the last byte is padded with zeros.
    Takes integers and bool (nonzero is a 1 bit)."""
    from gpuflow import functions

    if not isinstance(bitorder, str):
        raise TypeError(f"pack() argument 3 must be str, not {_type_name(bitorder)}")
    if bitorder.startswith("little"):
        little = True
    elif bitorder.startswith("big"):
        little = False
    else:
        raise ValueError("'order' must be either 'little' or 'big'")
    a = _remote(a)
    if _inference.kind(a._expr.dtype) not in "biu":
        raise TypeError("Expected an input array of integer or boolean data type")
    bits, axis = _along_last(a, axis)
    bits = _cast(bits != 0, "uint8")
    n = bits.shape[-1]
    pad = -n % 8
    if pad:
        zeros = functions.zeros(bits.shape[:-1] + (pad,), "uint8", session=a.session)
        bits = functions.concatenate([bits, zeros], axis=-1)
    packed = (_last(bits, 8) * _weights(little)).sum(axis=-1, dtype="uint8")
    return _back(packed, axis)


def unpackbits(a, axis=None, count=None, bitorder="big"):
    """numpy.unpackbits: each uint8 along ``axis`` (the flattened array for
    None) as 8 uint8 bits, high bit first ('big') or low bit first
    ('little'); ``count`` keeps the first count bits (padding with zeros
    past the end), a negative one drops -count from the end."""
    from gpuflow import functions

    if not isinstance(bitorder, str):
        raise TypeError(f"unpack() argument 4 must be str, not {_type_name(bitorder)}")
    if bitorder[:1] not in ("l", "b"):
        raise ValueError("'order' must begin with 'l' or 'b'")
    a = _remote(a)
    if a._expr.dtype != "uint8":
        raise TypeError("Expected an input array of unsigned byte data type")
    if count is not None:
        count = operator.index(count)
    x, axis = _along_last(a, axis)
    n = 8 * x.shape[-1]
    if count is not None and count < 0 and -count > n:
        raise ValueError("-count larger than number of elements")
    expanded = x.reshape(x.shape + (1,))
    bits = _apply("bitwise_and", (_apply("floordiv", (expanded, _weights(bitorder[0] == "l"))),
                                  np.uint8(1)))
    bits = _joined(bits)
    if count is not None:
        keep = count if count >= 0 else n + count
        if keep < n:
            bits = bits[..., :keep]
        elif keep > n:
            zeros = functions.zeros(bits.shape[:-1] + (keep - n,), "uint8", session=a.session)
            bits = functions.concatenate([bits, zeros], axis=-1)
    return _back(bits, axis)


def _type_name(value):
    return "None" if value is None else type(value).__name__
