"""Mapping between NumPy dtypes and gpuflow's wire dtypes.

bfloat16 has no NumPy dtype: upload it as a uint16 array of raw bfloat16
words with ``dtype="bfloat16"``; downloads of bfloat16 arrays return uint16
arrays of those words (see :func:`gpuflow.bfloat16_to_float32`).
"""

import numpy as np

from gpuflow.v1 import types_pb2

# gpuflow dtype name -> (wire enum, numpy dtype used to hold the bytes)
_TABLE = {
    "bool": (types_pb2.DTYPE_BOOL, np.dtype(np.bool_)),
    "int8": (types_pb2.DTYPE_INT8, np.dtype(np.int8)),
    "int16": (types_pb2.DTYPE_INT16, np.dtype(np.int16)),
    "int32": (types_pb2.DTYPE_INT32, np.dtype(np.int32)),
    "int64": (types_pb2.DTYPE_INT64, np.dtype(np.int64)),
    "uint8": (types_pb2.DTYPE_UINT8, np.dtype(np.uint8)),
    "uint16": (types_pb2.DTYPE_UINT16, np.dtype(np.uint16)),
    "uint32": (types_pb2.DTYPE_UINT32, np.dtype(np.uint32)),
    "uint64": (types_pb2.DTYPE_UINT64, np.dtype(np.uint64)),
    "float16": (types_pb2.DTYPE_FLOAT16, np.dtype(np.float16)),
    "bfloat16": (types_pb2.DTYPE_BFLOAT16, np.dtype(np.uint16)),
    "float32": (types_pb2.DTYPE_FLOAT32, np.dtype(np.float32)),
    "float64": (types_pb2.DTYPE_FLOAT64, np.dtype(np.float64)),
    "complex64": (types_pb2.DTYPE_COMPLEX64, np.dtype(np.complex64)),
    "complex128": (types_pb2.DTYPE_COMPLEX128, np.dtype(np.complex128)),
}
_BY_ENUM = {enum: name for name, (enum, _) in _TABLE.items()}

DTYPES = tuple(_TABLE)


def to_proto(name):
    """gpuflow dtype name (or numpy dtype) -> wire enum value."""
    key = name if isinstance(name, str) else np.dtype(name).name
    if key not in _TABLE:
        raise TypeError(f"gpuflow has no dtype {name!r}; supported: {', '.join(DTYPES)}")
    return _TABLE[key][0]


def name_of(proto_value):
    """Wire enum value -> gpuflow dtype name."""
    try:
        return _BY_ENUM[proto_value]
    except KeyError:
        raise ValueError(f"unknown wire dtype {proto_value}") from None


def numpy_dtype(name):
    """The little-endian numpy dtype holding a gpuflow dtype's bytes."""
    return _TABLE[name][1].newbyteorder("<")


def bfloat16_to_float32(words):
    """Raw bfloat16 words (uint16) -> float32 values."""
    words = np.asarray(words, dtype=np.uint16)
    return (words.astype(np.uint32) << 16).view(np.float32)


def float32_to_bfloat16(values):
    """float32 values -> raw bfloat16 words (uint16), rounding to nearest even."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    nan = np.isnan(np.asarray(values, dtype=np.float32))
    out = rounded.astype(np.uint16)
    out[nan] = 0x7FC0
    return out
