"""CUDA IPC between this process's device memory and a gpuflowd on the same
GPU (docs/shared-memory.md, "CUDA IPC").

A CUDA array of this process (a torch tensor, a CuPy array, anything with
``__cuda_array_interface__``) lives inside one cudaMalloc allocation. Its
handle (cuIpcGetMemHandle of the allocation's base) is registered in the
session as a region; uploads and downloads then name the region and the
array's offset in it, and the server copies device to device. Nothing
touches host memory.

The driver is reached through ctypes (libcuda.so.1), so neither torch nor
CuPy is needed here; each call runs in the device's primary context, the one
the CUDA runtime (and so torch and CuPy) uses.
"""

import ctypes
import threading

from gpuflow import dtypes

_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
_HANDLE_BYTES = 64


class IpcUnavailable(Exception):
    """This process cannot hand the memory over by CUDA IPC (no driver, not
    cudaMalloc memory, ...); the message says why."""


class _Driver:
    """The few driver calls CUDA IPC needs, loaded on first use."""

    _lock = threading.Lock()
    _loaded = None

    @classmethod
    def get(cls):
        with cls._lock:
            if cls._loaded is None:
                cls._loaded = cls()
            return cls._loaded

    def __init__(self):
        try:
            lib = ctypes.CDLL("libcuda.so.1")
        except OSError as err:
            raise IpcUnavailable(f"no CUDA driver in this process ({err})") from None
        self._lib = lib
        self._check(lib.cuInit(0), "cuInit")

    def _check(self, result, call):
        if result != 0:
            name = ctypes.c_char_p()
            self._lib.cuGetErrorName(result, ctypes.byref(name))
            text = name.value.decode() if name.value else str(result)
            raise IpcUnavailable(f"{call} failed: {text}")

    def call(self, name, *args):
        self._check(getattr(self._lib, name)(*args), name)

    def context(self, ordinal):
        """A context manager running its body in device ``ordinal``'s primary
        context."""
        return _PrimaryContext(self, ordinal)

    def device_of(self, ptr):
        ordinal = ctypes.c_int()
        self.call("cuPointerGetAttribute", ctypes.byref(ordinal),
                  _CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ctypes.c_uint64(ptr))
        return ordinal.value

    def uuid(self, ordinal):
        """Device ``ordinal``'s UUID as nvidia-smi (and ServerInfo.device_uuid)
        writes it."""
        device = ctypes.c_int()
        self.call("cuDeviceGet", ctypes.byref(device), ordinal)
        raw = (ctypes.c_ubyte * 16)()
        self.call("cuDeviceGetUuid_v2", raw, device)
        h = bytes(raw).hex()
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


class _PrimaryContext:
    def __init__(self, driver, ordinal):
        self._driver = driver
        self._ordinal = ordinal
        self._device = ctypes.c_int()
        self._ctx = ctypes.c_void_p()

    def __enter__(self):
        d = self._driver
        d.call("cuDeviceGet", ctypes.byref(self._device), self._ordinal)
        d.call("cuDevicePrimaryCtxRetain", ctypes.byref(self._ctx), self._device)
        try:
            d.call("cuCtxPushCurrent_v2", self._ctx)
        except IpcUnavailable:
            d.call("cuDevicePrimaryCtxRelease_v2", self._device)
            raise
        return self

    def __exit__(self, *exc):
        d = self._driver
        popped = ctypes.c_void_p()
        d.call("cuCtxPopCurrent_v2", ctypes.byref(popped))
        d.call("cuDevicePrimaryCtxRelease_v2", self._device)


class DeviceArray:
    """A C-contiguous CUDA array of this process: its address, bytes, gpuflow
    dtype name, shape and device ordinal (None when unknown: no driver, or
    no memory), and what keeps it alive (``owner``)."""

    def __init__(self, ptr, nbytes, dtype, shape, device, owner):
        self.ptr = ptr
        self.nbytes = nbytes
        self.dtype = dtype
        self.shape = tuple(shape)
        self.device = device
        self.owner = owner


def _torch_tensor(obj):
    cls = type(obj)
    return cls.__module__.startswith("torch") and cls.__name__ in ("Tensor", "Parameter")


def device_array(obj, *, contiguous_copy=True):
    """The :class:`DeviceArray` of ``obj`` when it is CUDA device memory (a
    torch tensor on a CUDA device, an object with ``__cuda_array_interface__``),
    else None. A non-contiguous torch tensor is copied to a contiguous one on
    its device when ``contiguous_copy`` (else ValueError)."""
    if _torch_tensor(obj):
        if obj.device.type != "cuda":
            return None
        t = obj.detach()
        if not t.is_contiguous():
            if not contiguous_copy:
                raise ValueError("the tensor must be contiguous")
            t = t.contiguous()
        name = str(t.dtype).removeprefix("torch.")
        if name not in dtypes.DTYPES:
            raise TypeError(f"gpuflow has no dtype {name!r} (from a torch tensor)")
        return DeviceArray(t.data_ptr(), t.numel() * t.element_size(), name, t.shape,
                           t.device.index, t)
    cai = getattr(obj, "__cuda_array_interface__", None)
    if cai is None:
        return None
    import numpy as np

    dtype = np.dtype(cai["typestr"])
    shape = tuple(cai["shape"])
    strides = cai.get("strides")
    if strides is not None:
        expected, step = [], dtype.itemsize
        for n in reversed(shape):
            expected.insert(0, step)
            step *= n
        if any(n > 1 and s != e for n, s, e in zip(shape, strides, expected)):
            raise ValueError("the CUDA array must be C-contiguous (copy it with .copy() first)")
    if dtype.name not in dtypes.DTYPES:
        raise TypeError(f"gpuflow has no dtype {dtype.name!r}")
    ptr = cai["data"][0]
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    try:
        device = _Driver.get().device_of(ptr) if ptr else None
    except IpcUnavailable:
        device = None  # no driver here: only the host path can take it
    return DeviceArray(ptr, nbytes, dtype.name, shape, device, obj)


def synchronize(device):
    """Waits for all work on ``device`` in this process (so the producer's
    writes are in memory before the server reads them)."""
    d = _Driver.get()
    with d.context(device):
        d.call("cuCtxSynchronize")


def export(array):
    """(handle bytes, allocation size, offset of the array in it) for a
    :class:`DeviceArray`. IpcUnavailable when its memory cannot be shared
    (not from cudaMalloc: e.g. torch's expandable segments or a
    cudaMallocAsync pool)."""
    d = _Driver.get()
    base = ctypes.c_uint64()
    size = ctypes.c_size_t()
    handle = (ctypes.c_ubyte * _HANDLE_BYTES)()
    with d.context(array.device):
        d.call("cuMemGetAddressRange_v2", ctypes.byref(base), ctypes.byref(size),
               ctypes.c_uint64(array.ptr))
        d.call("cuIpcGetMemHandle", handle, base)
    return bytes(handle), size.value, array.ptr - base.value


def device_uuid(device):
    return _Driver.get().uuid(device)


def copy_from_host(array, host):
    """Copies the C-contiguous numpy array ``host`` (``array.nbytes`` bytes)
    into the :class:`DeviceArray` ``array`` and waits."""
    d = _Driver.get()
    with d.context(array.device):
        d.call("cuMemcpyHtoD_v2", ctypes.c_uint64(array.ptr), ctypes.c_void_p(host.ctypes.data),
               ctypes.c_size_t(array.nbytes))
