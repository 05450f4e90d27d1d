"""NumPy's type names, dtype utilities and constants re-exported by gpuflow
as CuPy re-exports them (gpuflow.dtype is numpy.dtype): only those the
running numpy has, and issubdtype/promote_types for RemoteArray dtypes,
bfloat16 included."""

import itertools

import numpy as np
import pytest

import gpuflow as gf

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")

NAMES = [
    "dtype", "finfo", "iinfo", "min_scalar_type", "common_type", "obj2sctype", "number",
    "integer", "signedinteger", "unsignedinteger", "floating", "complexfloating", "inexact",
    "generic", "byte", "ubyte", "short", "ushort", "intc", "uintc", "intp", "uintp", "int_",
    "uint", "longlong", "ulonglong", "half", "single", "double", "csingle", "cdouble", "float_",
    "complex_", "e", "pi", "inf", "nan", "euler_gamma", "PINF", "NINF",
]
# Removed in NumPy 2: re-exported only where the running numpy has them.
NUMPY1_ONLY = ["float_", "complex_", "obj2sctype", "PINF", "NINF"]
ABSTRACT = ["number", "integer", "signedinteger", "unsignedinteger", "floating",
            "complexfloating", "inexact", "generic"]


@pytest.mark.parametrize("name", NAMES)
def test_names_are_numpys(name):
    if name in np.__dict__:
        value = getattr(gf, name)
        assert value is np.__dict__[name] or (isinstance(value, float) and np.isnan(value)
                                              and np.isnan(np.__dict__[name]))
        assert name in gf.__all__
    else:
        assert name in NUMPY1_ONLY
        assert not hasattr(gf, name) and name not in gf.__all__


def test_not_exported():
    # Not CuPy's or not the server's: bool is Python's, longdouble has no server dtype.
    assert "longdouble" not in gf.__all__ and not hasattr(gf, "longdouble")
    assert gf.bool_ is np.bool_ and gf.float32 is np.float32 and gf.complex128 is np.complex128
    assert "issubdtype" in gf.__all__ and "promote_types" in gf.__all__
    assert len(gf.__all__) == len(set(gf.__all__))


def test_utilities():
    assert gf.dtype("float32") == np.float32 and gf.dtype(gf.int16).itemsize == 2
    assert gf.finfo(gf.float32).eps == np.finfo(np.float32).eps
    assert gf.iinfo(gf.int8).min == -128 and gf.iinfo(gf.uint16).max == 65535
    assert gf.min_scalar_type(300) == np.uint16 and gf.min_scalar_type(-1.5) == np.float16
    assert gf.common_type(np.zeros(2, np.float32), np.zeros(2, np.int8)) is np.float64
    assert gf.pi == np.pi and gf.e == np.e and gf.inf == np.inf and np.isnan(gf.nan)
    assert gf.euler_gamma == np.euler_gamma


def test_issubdtype_of_remote_dtypes(session):
    abstract = [getattr(np, n) for n in ABSTRACT]
    for name in gf.DTYPES:
        if name == "bfloat16":
            x = session.asarray(np.zeros(3, np.uint16), dtype="bfloat16")
            assert x.dtype == "bfloat16"
            got = [gf.issubdtype(x.dtype, t) for t in abstract]
            assert got == [True, False, False, False, True, False, True, True]
            assert gf.issubdtype(x.dtype, "bfloat16")
            assert not gf.issubdtype(x.dtype, np.float32)
            assert not gf.issubdtype(np.float32, "bfloat16")
            continue
        x = session.asarray(np.zeros(3, name))
        for t in abstract + [np.float32, np.int64, np.complex64, np.bool_]:
            assert gf.issubdtype(x.dtype, t) == np.issubdtype(np.dtype(name), t), (name, t)
    x = session.asarray(np.ones(4, np.float16))
    assert gf.issubdtype(x.dtype, gf.floating) and not gf.issubdtype(x.dtype, gf.integer)
    with pytest.raises(TypeError):
        gf.issubdtype("no such type", gf.floating)


def test_promote_types():
    names = [n for n in gf.DTYPES if n != "bfloat16"]
    for a, b in itertools.product(names, repeat=2):
        assert gf.promote_types(a, b) == np.promote_types(a, b), (a, b)
        assert gf.promote_types(np.dtype(a), np.dtype(b).type) == np.promote_types(a, b)
    for other in names:
        assert gf.promote_types("bfloat16", other) == gf.result_type("bfloat16", other), other
        assert gf.promote_types(other, "bfloat16") == gf.result_type(other, "bfloat16"), other
    assert gf.promote_types("bfloat16", "bfloat16") == "bfloat16"
    assert gf.promote_types("bfloat16", np.float16) == np.float32
    assert gf.promote_types(np.uint8, "bfloat16") == "bfloat16"
    with pytest.raises(TypeError):
        gf.promote_types(np.float32, "no such type")


@pytest.mark.parametrize("module", [gf, gf.functions], ids=["gpuflow", "gpuflow.functions"])
def test_all_lists_each_name_once_and_every_name_exists(module):
    # Each submodule adds its names to functions.__all__; a name two of them
    # export (one shadowing the other) must not hide behind a set().
    seen = set()
    twice = sorted({n for n in module.__all__ if n in seen or seen.add(n)})
    assert twice == []
    assert [n for n in module.__all__ if not hasattr(module, n)] == []
