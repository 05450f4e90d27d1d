"""The ndarray members a CuPy user reaches for beyond shape and dtype:
``flags``, ``strides``, ``base``, ``real``, ``imag``, ``mT``, ``fill``,
``view``, ``nonzero``, ``put``, ``compress``, CuPy's ``scatter_add``,
``scatter_max``, ``scatter_min`` and JAX's ``at``. RemoteArray inherits them (gpuflow.remote_array).

gpuflow arrays are C-contiguous values without views: ``base`` is None,
``flags.owndata`` is True, and ``strides`` are those of a C-ordered array.
"""

import math

from gpuflow import _inference


def _apply(op, operands):
    from gpuflow.remote_array import apply

    return apply(op, operands)


def _imag_set_error(dtype):
    """What NumPy raises for ``a.imag = 0`` of a real array of ``dtype``
    (bfloat16 as float32, its nearest NumPy dtype)."""
    import numpy as np

    host = np.zeros(0, "float32" if dtype == "bfloat16" else dtype)
    return (_inference.numpy_error(setattr, host, "imag", 0)
            or TypeError("array does not have imaginary part to set"))


def c_strides(shape, dtype):
    if math.prod(shape) == 0:
        return (0,) * len(shape)  # NumPy's strides for an empty array
    stride, out = _inference.itemsize(dtype), []
    for d in reversed(shape):
        out.append(stride)
        stride *= d
    return tuple(reversed(out))


class Flags:
    """``RemoteArray.flags``: NumPy's flags object, by attribute or key."""

    _KEYS = {"C_CONTIGUOUS": "c_contiguous", "C": "c_contiguous", "CONTIGUOUS": "c_contiguous",
             "F_CONTIGUOUS": "f_contiguous", "F": "f_contiguous", "FORTRAN": "f_contiguous",
             "OWNDATA": "owndata", "O": "owndata", "WRITEABLE": "writeable", "W": "writeable",
             "ALIGNED": "aligned", "A": "aligned", "WRITEBACKIFCOPY": "writebackifcopy",
             "X": "writebackifcopy"}

    def __init__(self, array):
        self.c_contiguous = True
        self.f_contiguous = array.size == 0 or sum(1 for d in array.shape if d > 1) <= 1
        self.contiguous = True
        self.fortran = False  # F-contiguous and not C-contiguous
        self.owndata = self.writeable = self.aligned = True
        self.writebackifcopy = False

    def __getitem__(self, key):
        try:
            return getattr(self, self._KEYS[key.upper()])
        except (KeyError, AttributeError):
            raise KeyError("Unknown flag") from None

    def __repr__(self):
        names = ("C_CONTIGUOUS", "F_CONTIGUOUS", "OWNDATA", "WRITEABLE", "ALIGNED",
                 "WRITEBACKIFCOPY")
        return "".join(f"  {n} : {self[n]}\n" for n in names)


def _dtype_name(dtype):
    from gpuflow.remote_array import dtype_name

    return dtype_name(dtype)


def _with_part(array, value, imag):
    """``array`` (complex) with its real or imaginary part replaced by
    ``value``, every other part's bits kept (gpuflow._bits)."""
    import warnings

    import numpy as np

    from gpuflow import _bits
    from gpuflow.remote_array import RemoteArray

    if isinstance(value, RemoteArray):
        is_complex = _inference.is_complex(value._expr.dtype)
    else:
        is_complex = isinstance(value, complex) or np.asarray(value).dtype.kind == "c"
    if is_complex:
        # NumPy 1.x warns and drops the imaginary part; NumPy 2.5 refuses
        # complex scalars and sequences (float(complex)): what the running
        # NumPy does with the value itself (a host scalar or sequence, into
        # a host array of its shape) or, for arrays, with one element of
        # the value's dtype.
        if isinstance(value, RemoteArray):
            target, sample = np.zeros(1, array._expr.dtype), np.zeros(1, value._expr.dtype)
        elif isinstance(value, np.ndarray):
            target, sample = np.zeros(1, array._expr.dtype), np.zeros(1, value.dtype)
        else:
            target, sample = np.zeros(np.shape(value) or (2,), array._expr.dtype), value
        error = _inference.numpy_error(setattr, target, "imag" if imag else "real", sample)
        if error is not None:
            raise error
        warning = getattr(np, "exceptions", np).ComplexWarning  # moved in NumPy 2
        warnings.warn("Casting complex values to real discards the imaginary part", warning,
                      stacklevel=3)
        value = (value if isinstance(value, (RemoteArray, complex, np.generic))
                 else np.asarray(value)).real
    part = _apply("imag" if imag else "real", (array,))
    part[...] = value  # NumPy's broadcasting and conversions
    other = _apply("real" if imag else "imag", (array,))
    re, im = (other, part) if imag else (part, other)
    return _bits.complex_from_parts(re, im, array._expr.dtype)


class ArrayMembers:
    """ndarray members of RemoteArray (which supplies session, _expr, shape,
    dtype, astype, swapaxes and item assignment)."""

    __slots__ = ()

    def _same(self):
        return type(self)(self.session, self._expr)

    @property
    def mT(self):
        """The matrix transpose (the last two axes swapped)."""
        if self.ndim < 2:
            raise ValueError("matrix transpose with ndim < 2 is undefined")
        return self.swapaxes(-1, -2)

    @property
    def strides(self):
        """C-order strides in bytes (gpuflow arrays are C-contiguous)."""
        return c_strides(self.shape, self._expr.dtype)

    @property
    def flags(self):
        """NumPy's flags: C-contiguous always, F-contiguous when at most one
        axis is longer than 1, owning its data (no views), writeable."""
        return Flags(self)

    @property
    def base(self):
        """None: every RemoteArray holds a value of its own (views do not
        alias; see docs/python.md)."""
        return None

    @property
    def real(self):
        """The real part (float32 for complex64, float64 for complex128); a
        real array itself (the same object, as NumPy's ``x.real is x``)."""
        if _inference.is_complex(self._expr.dtype):
            return _apply("real", (self,))
        return self

    @real.setter
    def real(self, value):
        """Rebinds the array (as assignment does) to ``value`` (broadcast,
        converted as ``a[...] = value``) in its real part; a real array
        takes ``value`` whole."""
        if _inference.is_complex(self._expr.dtype):
            self._expr = _with_part(self, value, imag=False)._expr
        else:
            self[...] = value

    @property
    def imag(self):
        """The imaginary part of a complex array; zeros of a real array's
        dtype and shape."""
        if _inference.is_complex(self._expr.dtype):
            return _apply("imag", (self,))
        from gpuflow import functions

        return functions.zeros(self.shape, self.dtype, session=self.session)

    @imag.setter
    def imag(self, value):
        """Rebinds a complex array to ``value`` in its imaginary part; a real
        array has none (the running NumPy's TypeError, whose text differs
        between versions)."""
        if not _inference.is_complex(self._expr.dtype):
            raise _imag_set_error(self._expr.dtype)
        self._expr = _with_part(self, value, imag=True)._expr

    def conj(self):
        """numpy.conjugate: the complex conjugate (real arrays unchanged)."""
        from gpuflow import _ufunc

        return _ufunc.UFUNCS["conjugate"](self)

    conjugate = conj

    @property
    def at(self):
        """JAX's functional updates: ``x.at[idx].set(v)``, ``.add(v)``, ...
        (new arrays; ``x`` is unchanged)."""
        from gpuflow import _indexing

        return _indexing.At(self)

    def fill(self, value):
        """Rebinds the array to ``value`` everywhere, converted to its dtype as
        NumPy's ``fill`` converts it."""
        self[...] = value

    def nonzero(self):
        """numpy.ndarray.nonzero (one Execute learns the count)."""
        from gpuflow import _select

        return _select.nonzero(self)

    def put(self, indices, values, mode="raise"):
        """numpy.ndarray.put: rebinds the array (one scatter)."""
        from gpuflow import _select

        _select.put(self, indices, values, mode)

    def compress(self, condition, axis=None, out=None):
        """numpy.ndarray.compress."""
        from gpuflow import _select

        return _select.compress(condition, self, axis, out)

    def scatter_add(self, slices, value):
        """cupy.ndarray.scatter_add: every duplicate index adds (rebinds)."""
        from gpuflow import _select

        self._expr = _select.scatter_key(self, slices, value, "add")._expr

    def scatter_max(self, slices, value):
        """cupy.ndarray.scatter_max (rebinds)."""
        from gpuflow import _select

        self._expr = _select.scatter_key(self, slices, value, "max")._expr

    def scatter_min(self, slices, value):
        """cupy.ndarray.scatter_min (rebinds)."""
        from gpuflow import _select

        self._expr = _select.scatter_key(self, slices, value, "min")._expr

    def diagonal(self, offset=0, axis1=0, axis2=1):
        """numpy.ndarray.diagonal."""
        from gpuflow import _shapes

        return _shapes.diagonal(self, offset, axis1, axis2)

    def trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
        """numpy.ndarray.trace."""
        from gpuflow import _shapes

        return _shapes.trace(self, offset, axis1, axis2, dtype, out)

    def choose(self, choices, out=None, mode="raise"):
        """numpy.ndarray.choose: this array holds the indices."""
        from gpuflow import _misc

        return _misc.choose(self, choices, out, mode)

    def repeat(self, repeats, axis=None):
        """numpy.ndarray.repeat."""
        from gpuflow import functions

        return functions.repeat(self, repeats, axis)

    def sort(self, axis=-1, kind=None, order=None, *, stable=None):
        """numpy.ndarray.sort: NumPy sorts in place; here the array is
        rebound to its sorted value (as assignment rebinds, docs/python.md)."""
        from gpuflow import _sorting

        if axis is None:
            raise TypeError("'NoneType' object cannot be interpreted as an integer")
        self._expr = _sorting.sort(self, axis, kind, order, stable=stable)._expr

    def argsort(self, axis=-1, kind=None, order=None, *, stable=None):
        """numpy.ndarray.argsort (stable whatever the kind)."""
        from gpuflow import _sorting

        return _sorting.argsort(self, axis, kind, order, stable=stable)

    def searchsorted(self, v, side="left", sorter=None):
        """numpy.ndarray.searchsorted."""
        from gpuflow import _sorting

        return _sorting.searchsorted(self, v, side, sorter)

    def partition(self, kth, axis=-1, kind="introselect", order=None):
        """numpy.ndarray.partition: rebinds the array to a full sort."""
        from gpuflow import _sorting

        self._expr = _sorting.partition(self, kth, axis, kind, order)._expr

    def argpartition(self, kth, axis=-1, kind="introselect", order=None):
        """numpy.ndarray.argpartition."""
        from gpuflow import _sorting

        return _sorting.argpartition(self, kth, axis, kind, order)

    def view(self, dtype=None, type=None):
        """A new array with the same bytes read as ``dtype``, as NumPy reads
        them (little-endian): the server's ``bitcast`` for dtypes of the same
        item size; a different item size scales the last axis (float32
        (..., n) as uint8 is (..., 4n)), built from bitcasts, divisions by
        powers of two and casts (gpuflow._bits). bool views read any nonzero
        byte as True."""
        if type is not None:
            raise NotImplementedError("gpuflow has one array type: view(type=) is not supported")
        if dtype is None or _dtype_name(dtype) == self._expr.dtype:
            return self._same()
        from gpuflow import _bits

        return _bits.view_as(self, _dtype_name(dtype))
