"""CuPy's host-interop names: moving arrays between the client and the
server, NumPy's file and text readers, and NumPy's printing, on fetched
values (re-exported by gpuflow._compat):

    gf.asnumpy(x); gf.get_array_module(x); gf.from_dlpack(torch_tensor)
    gf.save("x.npy", x); gf.load("x.npy"); gf.savez("xs.npz", a=x, b=y)
    gf.loadtxt("data.txt"); gf.frombuffer(b"\\x01\\x02", "uint8"); gf.array_str(x)

Readers run NumPy's function and upload its result to ``session=`` (default:
the current session); writers and printers fetch their RemoteArrays first
(one Execute for all of them). gpuflow arrays never alias one another
(each RemoteArray is its own value on the server), so ``shares_memory`` and
``may_share_memory`` are True only for one RemoteArray object given twice.
"""

import warnings

import numpy as np

from gpuflow.remote_array import RemoteArray, asarray, evaluate, session_of


def _host(x):
    return x.get() if isinstance(x, RemoteArray) else x


def _upload(value, session):
    if isinstance(value, np.ma.MaskedArray):
        raise NotImplementedError("gpuflow has no masked arrays: use usemask=False")
    if isinstance(value, (tuple, list)):
        return tuple(_upload(v, session) for v in value)
    return asarray(value, session=session_of((), session))


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    """cupy.asnumpy: ``numpy.asarray(a, order=order)`` of a RemoteArray's
    value (``.get()``) or of an array-like; with ``out`` (a numpy array)
    the value is copied into it. ``stream`` and ``blocking`` are accepted for
    CuPy's signature."""
    del stream, blocking
    value = np.asarray(a.get() if isinstance(a, RemoteArray) else a, order=order)
    if out is None:
        return value
    if out.shape != value.shape:
        raise ValueError(f"out has shape {out.shape}, the array has {value.shape}")
    np.copyto(out, value, casting="unsafe")
    return out


def get_array_module(*args):
    """cupy.get_array_module: the gpuflow module when any argument is a
    RemoteArray, else numpy."""
    import gpuflow

    return gpuflow if any(isinstance(a, RemoteArray) for a in args) else np


def from_dlpack(x, /, *, device=None, copy=None, session=None):
    """numpy.from_dlpack / cupy.from_dlpack: an object with ``__dlpack__``
    (a torch tensor on any device, a numpy or CuPy array, a JAX array)
    uploaded as a RemoteArray (asarray's path: CUDA memory goes over CUDA
    IPC where the server can take it). The upload is a copy, so
    ``copy=False`` raises BufferError; ``device`` must be None."""
    if device is not None:
        raise ValueError(f"gpuflow arrays have no device {device!r}: pass device=None")
    if isinstance(x, RemoteArray):
        return asarray(x, session=session)
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"{type(x).__name__} does not support the DLPack protocol "
                        "(no __dlpack__ method)")
    if copy is False:
        raise BufferError("gpuflow copies every array to the server: copy=False cannot be met")
    return asarray(x, session=session_of((), session))


def fromDlpack(dltensor, *, session=None):  # noqa: N802 - CuPy's name
    """cupy.fromDlpack (deprecated in CuPy): :func:`from_dlpack`, with
    CuPy's DeprecationWarning. A bare DLPack capsule cannot be read: pass
    the producing object."""
    warnings.warn("This function is deprecated in favor of cupy.from_dlpack", DeprecationWarning,
                  stacklevel=2)
    return from_dlpack(dltensor, session=session)


def isfortran(a):
    """numpy.isfortran: False for every RemoteArray (gpuflow keeps C
    order only); numpy's answer for numpy arrays."""
    return False if isinstance(a, RemoteArray) else np.isfortran(a)


def _shares(name, a, b, max_work):
    remote = isinstance(a, RemoteArray) or isinstance(b, RemoteArray)
    if not remote:
        return getattr(np, name)(a, b) if max_work is None else getattr(np, name)(a, b, max_work)
    return a is b and a.size > 0


def shares_memory(a, b, max_work=None):
    """numpy.shares_memory. RemoteArrays never alias (each is its own value
    on the server; views are copies): True only when ``a is b`` and it is
    not empty. Numpy arrays: numpy's answer."""
    return _shares("shares_memory", a, b, max_work)


def may_share_memory(a, b, max_work=None):
    """numpy.may_share_memory: as :func:`shares_memory`."""
    return _shares("may_share_memory", a, b, max_work)


def binary_repr(num, width=None):
    """numpy.binary_repr of an integer (a 0-d RemoteArray is fetched)."""
    return np.binary_repr(_host(num), width)


def base_repr(number, base=2, padding=0):
    """numpy.base_repr of an integer (a 0-d RemoteArray is fetched)."""
    return np.base_repr(_host(number), base, padding)


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """numpy.array_repr of the fetched value."""
    return np.array_repr(np.asarray(_host(arr)), max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """numpy.array_str of the fetched value."""
    return np.array_str(np.asarray(_host(a)), max_line_width, precision, suppress_small)


# ---- files ---------------------------------------------------------------------------


def _fetched(arrays):
    """The values of ``arrays`` (RemoteArrays fetched in one Execute)."""
    remote = [a for a in arrays if isinstance(a, RemoteArray)]
    values = iter(evaluate(*remote) if remote else ())
    return [next(values) if isinstance(a, RemoteArray) else a for a in arrays]


def save(file, arr, allow_pickle=True, fix_imports=True):
    """numpy.save of the fetched value (.npy)."""
    del fix_imports
    np.save(file, _fetched([arr])[0], allow_pickle=allow_pickle)


def _savez(writer, file, args, kwds):
    values = _fetched(list(args) + list(kwds.values()))
    writer(file, *values[:len(args)], **dict(zip(kwds, values[len(args):])))


def savez(file, *args, **kwds):
    """numpy.savez of the fetched values (.npz; one Execute for all)."""
    _savez(np.savez, file, args, kwds)


def savez_compressed(file, *args, **kwds):
    """numpy.savez_compressed of the fetched values."""
    _savez(np.savez_compressed, file, args, kwds)


class NpzFile:
    """cupy.lib.npyio.NpzFile: numpy's NpzFile whose members are uploaded
    as RemoteArrays when read (``f["x"]``), into the session ``load`` was
    given (else the current one at load time). A context manager."""

    def __init__(self, npz_file, session):
        self.npz_file = npz_file
        self._session = session

    def __enter__(self):
        self.npz_file.__enter__()
        return self

    def __exit__(self, typ, val, traceback):
        self.npz_file.__exit__(typ, val, traceback)

    def __getitem__(self, key):
        return asarray(self.npz_file[key], session=self._session)

    def __contains__(self, key):
        return key in self.npz_file

    def __iter__(self):
        return iter(self.npz_file)

    def __len__(self):
        return len(self.npz_file)

    @property
    def files(self):
        return self.npz_file.files

    def keys(self):
        return self.npz_file.keys()

    def close(self):
        self.npz_file.close()


def load(file, mmap_mode=None, allow_pickle=False, fix_imports=True, encoding="ASCII", *,
         session=None):
    """numpy.load: a .npy file's array uploaded as a RemoteArray, a .npz
    file as an :class:`NpzFile` (members uploaded when read). Pickles are
    refused: gpuflow has no object arrays, and allow_pickle=True raises
    ValueError before anything is read."""
    del fix_imports
    if allow_pickle:
        raise ValueError("gpuflow has no object arrays: allow_pickle=True is refused")
    session = session_of((), session)
    value = np.load(file, mmap_mode=mmap_mode, allow_pickle=False, encoding=encoding)
    if isinstance(value, np.ndarray):
        return asarray(value, session=session)
    return NpzFile(value, session)


def _reader(name):
    numpy_function = getattr(np, name)

    def read(*args, session=None, like=None, **kwargs):
        del like
        return _upload(numpy_function(*args, **kwargs), session)

    read.__name__ = read.__qualname__ = name
    read.__doc__ = (f"numpy.{name}, its result uploaded to ``session`` (default: the current "
                    "session); a tuple of arrays (``unpack=True``) as a tuple of RemoteArrays.")
    return read


fromfile = _reader("fromfile")
frombuffer = _reader("frombuffer")
fromiter = _reader("fromiter")
fromstring = _reader("fromstring")
loadtxt = _reader("loadtxt")
genfromtxt = _reader("genfromtxt")

ndindex = np.ndindex

__all__ = [
    "array_repr", "array_str", "asnumpy", "base_repr", "binary_repr", "from_dlpack",
    "fromDlpack", "frombuffer", "fromfile", "fromiter", "fromstring", "genfromtxt",
    "get_array_module", "isfortran", "load", "loadtxt", "may_share_memory", "ndindex", "save",
    "savez", "savez_compressed", "shares_memory",
]
