#!/usr/bin/python3
"""Prints numpy_reference_tables.inc: NumPy's dtype rules, the reference for
the promotion and op registry tests.

Run with NumPy >= 1.24 (NumPy 2 promotion is switched on below; on NumPy 2 it
is the default):
    /usr/bin/python3 tests/engine/ir/numpy_reference_tables.py \
        > tests/engine/ir/numpy_reference_tables.inc

Codes: b1 bool, i1..i8 int8..int64, u1..u8 uint8..uint64, f2 float16,
f4 float32, f8 float64 ("--": NumPy has no loop / raises). bfloat16 is not in
NumPy; the tests check it against docs/ops.md separately.
An entry "OUT" means output and computation dtype are both OUT; "OUT:CMP" means
the ufunc's loop computes in CMP (NumPy's resolve_dtypes input dtype).
"""
import warnings

import numpy as np

if hasattr(np, "_set_promotion_state"):
    np._set_promotion_state("weak")
warnings.simplefilter("ignore")

DTYPES = ["?", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8"]
CODE = {np.dtype(d): c for d, c in zip(
    DTYPES, ["b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8"])}

UNARY = {  # gpuflow op -> NumPy ufunc
    "neg": np.negative, "abs": np.absolute, "sign": np.sign, "square": np.square,
    "sqrt": np.sqrt, "exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1,
    "sin": np.sin, "cos": np.cos, "tanh": np.tanh, "reciprocal": np.reciprocal,
    "isnan": np.isnan, "isinf": np.isinf, "logical_not": np.logical_not,
    "bitwise_not": np.invert,
}
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
    "minimum": np.minimum, "div": np.true_divide, "floordiv": np.floor_divide,
    "mod": np.remainder, "pow": np.power, "atan2": np.arctan2, "eq": np.equal,
    "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
    "ge": np.greater_equal, "logical_and": np.logical_and, "logical_or": np.logical_or,
    "logical_xor": np.logical_xor, "bitwise_and": np.bitwise_and,
    "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor,
}
REDUCTIONS = {
    "sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max, "mean": np.mean,
    "var": np.var, "std": np.std, "argmin": np.argmin, "argmax": np.argmax,
    "any": np.any, "all": np.all, "cumsum": np.cumsum, "cumprod": np.cumprod,
}


def entry(resolve):
    try:
        dtypes = resolve()
    except Exception:  # no loop
        return "--"
    out, cmp = CODE[dtypes[-1]], CODE[dtypes[0]]
    return out if out == cmp else f"{out}:{cmp}"


def weak_bool_entry(ufunc, d):
    # resolve_dtypes has no weak bool; a bool never widens, so a weak bool
    # resolves as a bool array does. Check that against running the ufunc.
    got = entry(lambda: ufunc.resolve_dtypes((np.dtype(d), np.dtype("?"), None)))
    try:
        out = CODE[ufunc(np.ones(2, d), True).dtype]
    except Exception:
        out = "--"
    assert got.split(":")[0] == out, (ufunc, d, got, out)
    return got


INT64_MAX = 2**63 - 1
INT64_MIN = -2**63


def print_shape_cases():
    print("// Slicing one axis: {len, start, stop, step, first, count} from Python's")
    print("// slice(start, stop, step).indices(len) and len(range(...)); no bound is")
    print("// INT64_MAX / INT64_MIN as docs/ops.md says.")
    print("constexpr int64_t kPythonSlices[][6] = {")
    cases = []
    for n in (0, 1, 5, 7):
        for start, stop, step in [
                (0, INT64_MAX, 1), (INT64_MAX, INT64_MIN, -1), (1, 4, 1), (1, 4, 2), (-3, -1, 1),
                (-100, 100, 3), (100, -100, -2), (4, 1, -1), (2, 2, 1), (5, 0, -2), (-1, INT64_MIN, -1),
                (INT64_MIN, INT64_MAX, INT64_MAX), (INT64_MAX, INT64_MIN, INT64_MIN), (3, 1, 1),
                (0, 7, 7), (6, -8, -3)]:
            def py(v):
                return None if v in (INT64_MAX, INT64_MIN) else v
            # Python's own None handling matches the extremes' clamping.
            first, _, _ = slice(start, stop, step).indices(n)
            count = len(range(*slice(start, stop, step).indices(n)))
            assert count == len(range(*slice(py(start), py(stop), step).indices(n)))
            cases.append((n, start, stop, step, first if count else 0, count))
    for c in cases:
        vals = ", ".join("INT64_MAX" if v == INT64_MAX else "INT64_MIN" if v == INT64_MIN else str(v)
                         for v in c)
        print(f"    {{{vals}}},")
    print("};")

    print("// numpy.arange: {start, stop, step, all given as ints, length}.")
    print("struct ArangeCase { double start, stop, step; bool ints; int64_t length; };")
    print("constexpr ArangeCase kNumpyArange[] = {")
    for start, stop, step in [(0, 5, 1), (0, 0, 1), (5, 0, 1), (5, 0, -1), (-3, 8, 2), (0, 10, 3),
                              (10, -10, -7), (0.0, 1.0, 0.1), (0, 1, 0.3), (0.5, 5, 1),
                              (-1.5, 1.5, 0.5), (1, 0, 0.25), (0, 2**40, 2**20)]:
        n = len(np.arange(start, stop, step)) if abs((stop - start) / step) < 1e7 else \
            int(np.ceil((stop - start) / step))
        ints = all(isinstance(v, int) for v in (start, stop, step))
        print(f"    {{{float(start).hex()}, {float(stop).hex()}, {float(step).hex()}, "
              f"{'true' if ints else 'false'}, {n}}},")
    print("};")

    print("// numpy.matmul and numpy.dot: {a shape, b shape, result shape or \"error\"}.")
    print("constexpr const char* kNumpyMatmul[][3] = {")
    fmt = lambda s: ",".join(map(str, s))
    shapes = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
              ((5, 2, 3), (3, 4)), ((2, 3), (5, 3, 4)), ((5, 1, 2, 3), (7, 3, 4)),
              ((4, 2, 3), (5, 3, 4)), ((2, 3), (4, 5)), ((3,), (4,)), ((0, 3), (3, 0)),
              ((2, 0), (0, 4)), ((6, 2, 3), (3,)), ((3,), (6, 3, 4))]
    for a, b in shapes:
        try:
            r = fmt(np.matmul(np.ones(a), np.ones(b)).shape)
        except ValueError:
            r = "error"
        print(f'    {{"{fmt(a)}", "{fmt(b)}", "{r}"}},')
    print("};")
    print("constexpr const char* kNumpyDot[][3] = {")
    for a, b in [((), (3,)), ((2, 3), ()), ((), ()), ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)),
                 ((2, 3), (3, 4)), ((2, 3), (2, 3)), ((3,), (4,)), ((0,), (0,)), ((2, 0), (0, 5))]:
        try:
            r = fmt(np.dot(np.ones(a), np.ones(b)).shape)
        except ValueError:
            r = "error"
        print(f'    {{"{fmt(a)}", "{fmt(b)}", "{r}"}},')
    print("};")

    print("// numpy.float16(value).view(uint16) for doubles and ints (one rounding,")
    print("// ties to even).")
    print("constexpr std::pair<double, uint16_t> kNumpyFloat16FromDouble[] = {")
    for v in [0.0, -0.0, 1.0, -2.5, 0.1, 1 / 3, 65504.0, 65519.99, 65520.0, 1e5, -1e300,
              2.0**-24, 2.0**-25, 2.0**-25 * 1.0000001, 3 * 2.0**-25, 6.103515625e-05,
              1 + 2.0**-11, 1 + 3 * 2.0**-11, 1e-8, 5e-324, float("inf"), float("-inf")]:
        bits = int(np.float16(v).view(np.uint16))
        lit = float(v).hex() if np.isfinite(v) else (
            ("-" if v < 0 else "") + "std::numeric_limits<double>::infinity()")
        print(f"    {{{lit}, 0x{bits:04x}}},")
    print("};")
    print("constexpr std::pair<int64_t, uint16_t> kNumpyFloat16FromInt[] = {")
    for v in [0, 1, -1, 2049, 2051, 65504, 65519, 65520, -70000, INT64_MAX, INT64_MIN]:
        bits = int(np.float16(float(v) if abs(v) > 2**53 else v).view(np.uint16))
        lit = "INT64_MAX" if v == INT64_MAX else "INT64_MIN" if v == INT64_MIN else str(v)
        print(f"    {{{lit}, 0x{bits:04x}}},")
    print("};")


def main():
    print("// Generated by tests/engine/ir/numpy_reference_tables.py with NumPy",
          np.__version__, "(NumPy 2 promotion). Do not edit.")
    print("// clang-format off")
    print("// promote_types: row i, column j = np.promote_types(DTYPES[i], DTYPES[j]).")
    print("constexpr const char* kNumpyPromoteTypes[] = {")
    for a in DTYPES:
        print('    "' + " ".join(CODE[np.promote_types(a, b)] for b in DTYPES) + '",')
    print("};")
    print("// result_type of three: row 12 * i + j, column k = np.result_type(D[i], D[j], D[k]).")
    print("constexpr const char* kNumpyResultType3[] = {")
    for a in DTYPES:
        for b in DTYPES:
            print('    "' + " ".join(CODE[np.result_type(np.dtype(a), np.dtype(b), np.dtype(c))]
                                     for c in DTYPES) + '",')
    print("};")
    print("// np.result_type(dtype, 1), (dtype, 1.0), (dtype, True): weak Python scalars.")
    for name, value in [("Int", 1), ("Float", 1.0), ("Bool", True)]:
        print(f"constexpr const char* kNumpyWeak{name} =")
        print('    "' + " ".join(CODE[np.result_type(np.dtype(d), value)] for d in DTYPES) + '";')
    print("// Unary ufuncs: one entry per input dtype.")
    print("constexpr std::pair<const char*, const char*> kNumpyUnary[] = {")
    for op, f in UNARY.items():
        row = " ".join(entry(lambda: f.resolve_dtypes((np.dtype(d), None))) for d in DTYPES)
        print(f'    {{"{op}", "{row}"}},')
    print("};")
    print("// Binary ufuncs: 12 rows (first input) of 12 entries (second input), then")
    print("// 3 rows: second input a weak int, a weak float, a weak bool.")
    print("constexpr std::pair<const char*, const char*> kNumpyBinary[] = {")
    for op, f in BINARY.items():
        rows = []
        for a in DTYPES:
            rows.append(" ".join(
                entry(lambda: f.resolve_dtypes((np.dtype(a), np.dtype(b), None))) for b in DTYPES))
        for weak in (int, float):
            rows.append(" ".join(
                entry(lambda: f.resolve_dtypes((np.dtype(a), weak, None))) for a in DTYPES))
        rows.append(" ".join(weak_bool_entry(f, a) for a in DTYPES))
        print(f'    {{"{op}",')
        for r in rows:
            print(f'     "{r}\\n"')
        print("    },")
    print("};")
    print("// Reductions and scans over all axes: output dtype per input dtype.")
    print("constexpr std::pair<const char*, const char*> kNumpyReductions[] = {")
    for op, f in REDUCTIONS.items():
        row = []
        for d in DTYPES:
            try:
                row.append(CODE[np.asarray(f(np.ones((2, 3), d))).dtype])
            except Exception:
                row.append("--")
        print(f'    {{"{op}", "{" ".join(row)}"}},')
    print("};")
    print_shape_cases()
    print("// clang-format on")


if __name__ == "__main__":
    main()
