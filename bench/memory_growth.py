"""Memory-growth soak of gpuflowd (the idea of Triton's L0_memory_growth).

Starts its own gpuflowd, runs N client threads (each over its own channel,
through the gpuflow Python client and, for the abusive calls, its raw stubs)
for D seconds of mixed traffic, samples the server's RSS (/proc/PID/status
VmRSS and VmHWM) and GetServerInfo's active_sessions every second, and
reports the RSS after warm-up, its growth over the second half of the run
and the RSS once every session is closed and the server has idled:

    PYTHONPATH=clients/python /usr/bin/python3 bench/memory_growth.py \
        --duration 600 --clients 64 --out /tmp/soak

The traffic, per session (each worker loops: open, 3-40 calls, close):
uploads of 1 KiB-8 MiB arrays of every dtype (chunk sizes varied),
downloads (checked bit for bit), list / info / delete / keep-alive, Execute
of elementwise chains, reductions, matmul, softmax, creation ops and mixed
graphs (inline and store_as outputs, some results checked against numpy),
Benchmark with 2-8 repeats, and abuse: graphs that do not validate,
uploads over the session quota and over --max_array_bytes, short uploads,
uploads cancelled midway, downloads cancelled midway, sessions closed while
one of their uploads is in flight, calls naming unknown sessions, and
sessions abandoned (never closed) to expire under --session_idle_ttl.

It exits 1 when the RSS grew more than --max-growth-mib over the second
half (mean of the last 10% of the run minus mean of the 50-60% window), or
ended more than --max-final-mib above the post-warm-up baseline after every
session closed, or the server crashed, hung or exited non-zero on SIGTERM,
or a call failed unexpectedly (more than --max-unexpected-errors).
--leak-every N preloads bench/leak_preload.c (built into build/ when
missing) to make the server leak 4 KiB every Nth malloc: the check must
then fail. bench/README.md says how to read the output.
"""

import argparse
import collections
import csv
import datetime
import json
import math
import os
import pathlib
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "clients" / "python"))

import grpc  # noqa: E402
import gpuflow  # noqa: E402
from gpuflow.v1 import service_pb2, service_pb2_grpc  # noqa: E402

KiB = 1 << 10
MiB = 1 << 20

# Request kinds whose failure is the point; the value is the status codes
# that count as the expected answer (anything else, success included, is an
# unexpected outcome).
ABUSE = {
    "bad_graph": {"INVALID_ARGUMENT", "NOT_FOUND", "OUT_OF_RANGE", "FAILED_PRECONDITION"},
    "inline_too_large": {"RESOURCE_EXHAUSTED", "INVALID_ARGUMENT", "OUT_OF_RANGE"},
    "over_quota_upload": {"RESOURCE_EXHAUSTED"},
    "over_max_array_upload": {"RESOURCE_EXHAUSTED", "INVALID_ARGUMENT"},
    "short_upload": {"INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE", "DATA_LOSS"},
    "long_upload": {"INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE", "DATA_LOSS"},
    "cancelled_upload": {"CANCELLED"},
    "cancelled_download": {"CANCELLED"},
    "close_during_upload": {"NOT_FOUND", "CANCELLED", "ABORTED", "FAILED_PRECONDITION"},
    "unknown_session": {"NOT_FOUND"},
}

# Dtypes uploaded; the float ones are also computed on.
UPLOAD_DTYPES = ["float32", "float64", "float16", "bfloat16", "int8", "int16", "int32",
                 "int64", "uint8", "uint16", "uint32", "uint64", "bool"]
ITEMSIZE = {"bfloat16": 2, "bool": 1}
# Array sizes: 2^k and 3*2^k bytes from 1 KiB to 8 MiB, log-uniform.
SIZES = sorted({s for k in range(10, 24) for s in (1 << k, 3 << (k - 1)) if KiB <= s <= 8 * MiB})
COLS = [1, 16, 64, 256, 1024]  # 1: a 1-D array

UNARY = ["sqrt", "exp", "tanh", "sigmoid", "square", "log1p", "relu", "sin", "cos", "abs", "neg"]
NP_UNARY = {
    "sqrt": np.sqrt, "exp": np.exp, "tanh": np.tanh, "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "square": np.square, "log1p": np.log1p, "relu": lambda x: np.maximum(x, 0), "sin": np.sin,
    "cos": np.cos, "abs": np.abs, "neg": np.negative,
}


class WrongResult(Exception):
    pass


# ------------------------------------------------------------------ stats


class Stats:
    """Counts per request kind: ok, expected errors and unexpected outcomes
    (by status code), and the time spent."""

    def __init__(self):
        self.lock = threading.Lock()
        self.kinds = collections.defaultdict(
            lambda: {"ok": 0, "expected": collections.Counter(), "unexpected": collections.Counter(),
                     "seconds": 0.0})
        self.examples = []  # (kind, code, message), the first few unexpected ones
        self.total = 0
        self.unexpected = 0

    def record(self, kind, code, seconds, message=""):
        expected = ABUSE.get(kind)
        with self.lock:
            k = self.kinds[kind]
            k["seconds"] += seconds
            self.total += 1
            if expected is None:
                if code == "OK":
                    k["ok"] += 1
                    return
            elif code in expected:
                k["expected"][code] += 1
                return
            k["unexpected"][code] += 1
            self.unexpected += 1
            if sum(1 for e in self.examples if e[:2] == (kind, code)) < 3 and len(self.examples) < 60:
                self.examples.append((kind, code, message[:600]))

    def expected_only(self, kind, code, seconds):
        """An error that is expected for this call though its kind is not abuse
        (a session meant to be abandoned that expired under a slow call)."""
        with self.lock:
            k = self.kinds[kind]
            k["seconds"] += seconds
            k["expected"][code] += 1
            self.total += 1

    def snapshot(self):
        with self.lock:
            return {
                kind: {"ok": v["ok"], "expected": dict(v["expected"]),
                       "unexpected": dict(v["unexpected"]), "seconds": round(v["seconds"], 3)}
                for kind, v in sorted(self.kinds.items())
            }

    def errors_total(self):
        with self.lock:
            return sum(sum(v["expected"].values()) + sum(v["unexpected"].values())
                       for v in self.kinds.values())


def code_of(exc):
    if isinstance(exc, gpuflow.Error):
        return exc.code.name, exc.details or ""
    if isinstance(exc, grpc.RpcError):
        code = exc.code() if callable(getattr(exc, "code", None)) else None
        details = exc.details() if callable(getattr(exc, "details", None)) else str(exc)
        return (code.name if code else "UNKNOWN"), details or ""
    if isinstance(exc, grpc.FutureCancelledError):
        return "CANCELLED", "future cancelled"
    if isinstance(exc, WrongResult):
        return "WRONG_RESULT", str(exc)
    return "CLIENT_" + type(exc).__name__, "".join(traceback.format_exception_only(type(exc), exc)).strip()


# ------------------------------------------------------------------ data

class Pools:
    """Read-only random data; arrays are views into it (no copy per upload),
    so a worker can regenerate what it uploaded to check a download."""

    def __init__(self, seed):
        rng = np.random.default_rng(seed)
        n = 16 * MiB
        self.raw = rng.integers(0, 256, n, dtype=np.uint8)
        self.boolean = (self.raw & 1).astype(np.bool_)
        self.f32 = rng.random(n // 4, dtype=np.float32)
        self.f64 = rng.random(n // 8)

    def view(self, dtype, offset, shape):
        count = int(np.prod(shape)) if shape else 1
        if dtype == "float32":
            flat = self.f32[offset // 4: offset // 4 + count]
        elif dtype == "float64":
            flat = self.f64[offset // 8: offset // 8 + count]
        elif dtype == "bool":
            flat = self.boolean[offset: offset + count]
        else:
            np_dtype = np.uint16 if dtype == "bfloat16" else np.dtype(dtype)
            size = np.dtype(np_dtype).itemsize
            flat = self.raw[offset: offset + count * size].view(np_dtype)
        return flat.reshape(shape)


def itemsize(dtype):
    return ITEMSIZE.get(dtype) or np.dtype(dtype).itemsize


class Tracked:
    """What a worker knows about one array of its session."""

    __slots__ = ("dtype", "shape", "nbytes", "offset")

    def __init__(self, dtype, shape, nbytes, offset=None):
        self.dtype, self.shape, self.nbytes, self.offset = dtype, tuple(shape), nbytes, offset


# ------------------------------------------------------------------ workers


class Worker(threading.Thread):
    def __init__(self, index, target, args, pools, stats, stop, seed):
        super().__init__(name=f"soak-{index}", daemon=True)
        self.index = index
        self.target = target
        self.args = args
        self.pools = pools
        self.stats = stats
        self.stop = stop
        self.rng = random.Random(seed)
        self.current = "starting"  # what it is doing now (reported on a crash or hang)
        self.last_progress = time.monotonic()
        self.sessions = 0
        self.fatal = None
        self.counter = 0

    # -- helpers --

    def call(self, kind, fn, *, session=None):
        """Runs fn(); records its outcome under kind. Returns (ok, value)."""
        self.current = f"{kind} (session {session.id if session else '-'})"
        t0 = time.monotonic()
        try:
            value = fn()
        except Exception as exc:  # noqa: BLE001 - every outcome is counted
            code, message = code_of(exc)
            seconds = time.monotonic() - t0
            if (session is not None and getattr(session, "_soak_abandon", False)
                    and code == "NOT_FOUND" and "expired" in message.lower()):
                self.stats.expected_only(kind, "NOT_FOUND(expired)", seconds)
                session._soak_dead = True
            else:
                self.stats.record(kind, code, seconds, f"{self.current}: {message}")
            return False, None
        finally:
            self.last_progress = time.monotonic()
        self.stats.record(kind, "OK", time.monotonic() - t0)
        return True, value

    def new_name(self, prefix="a"):
        self.counter += 1
        return f"{prefix}.{self.counter}"

    def pick_shape(self, dtype, max_bytes=8 * MiB):
        size = self.rng.choice([s for s in SIZES if s <= max_bytes])
        n = max(1, size // itemsize(dtype))
        cols = self.rng.choice(COLS)
        if cols == 1 or n < cols:
            return (n,)
        return (n // cols, cols)

    # -- the loop --

    def run(self):
        try:
            client = gpuflow.connect(self.target, timeout=60)
        except Exception as exc:  # noqa: BLE001
            self.fatal = f"connect: {exc}"
            return
        self.client = client
        self.stub = client.stub
        try:
            while not self.stop.is_set():
                self.one_session()
        except Exception:  # noqa: BLE001 - a bug here, reported
            self.fatal = traceback.format_exc()
        finally:
            self.current = "done"
            client.close()

    def one_session(self):
        rng = self.rng
        abandon = rng.random() < self.args.abandon_fraction
        # Sessions that will be abandoned take the server's (short) idle TTL,
        # so that they expire during the run; the others ask for a long one,
        # so that a slow moment on a loaded machine does not expire them.
        ok, s = self.call("create_session", lambda: self.client.session(
            label=f"soak-{self.index}", idle_ttl=None if abandon else 120.0))
        if not ok:
            time.sleep(0.5)
            return
        self.sessions += 1
        s._soak_abandon = abandon
        s._soak_dead = False
        arrays = {}
        n_calls = rng.randint(1, 6) if abandon else rng.randint(3, 40)
        for _ in range(n_calls):
            if self.stop.is_set() or s._soak_dead:
                break
            op = rng.choices(OPS, WEIGHTS)[0]
            try:
                if op(self, s, arrays) == "closed":
                    return
            except Exception as exc:  # noqa: BLE001 - a bug of this script: counted, not fatal
                self.stats.record(op.__name__, "CLIENT_BUG", 0.0,
                                  "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-600:])
        if abandon:
            self.stats.record("abandon_session", "OK", 0.0)
            return
        self.check_accounting(s, arrays)
        self.call("close_session", s.close, session=s)

    def check_accounting(self, s, arrays):
        """The session's memory_used must be what its arrays hold (uploads that
        failed or were cancelled must have given their reservations back)."""
        expect = sum(a.nbytes for a in arrays.values())
        deadline = time.monotonic() + 5
        while True:
            ok, used = self.call("keep_alive", lambda: s.memory_used, session=s)
            if not ok or used == expect:
                return
            if time.monotonic() > deadline:
                self.stats.record("accounting", "MISMATCH", 0.0,
                                  f"session {s.id}: memory_used {used}, arrays hold {expect}")
                return
            time.sleep(0.1)

    # -- operations (each returns "closed" when it closed the session) --

    def any_array(self, arrays, floats_only=False, max_bytes=None):
        names = [n for n, a in arrays.items()
                 if (not floats_only or (a.dtype in ("float32", "float64") and a.shape))
                 and (max_bytes is None or a.nbytes <= max_bytes)]
        return self.rng.choice(names) if names else None

    def make_room(self, s, arrays, nbytes, keep=()):
        """Deletes arrays (other than those in keep) until nbytes more fit in
        the working-set bound."""
        while True:
            victims = [n for n in arrays if n not in keep]
            if not victims or (len(arrays) < self.args.max_arrays and
                               sum(a.nbytes for a in arrays.values()) + nbytes <= self.args.working_set):
                return
            victim = self.rng.choice(victims)
            ok, _ = self.call("delete", lambda: s.delete(victim), session=s)
            if s._soak_dead:
                return
            arrays.pop(victim, None)

    def op_upload(self, s, arrays, float_bias=False):
        rng = self.rng
        dtype = rng.choice(["float32", "float64"]) if float_bias or rng.random() < 0.5 \
            else rng.choice(UPLOAD_DTYPES)
        shape = self.pick_shape(dtype)
        nbytes = int(np.prod(shape)) * itemsize(dtype)
        self.make_room(s, arrays, nbytes)
        max_off = 8 * MiB
        offset = rng.randrange(0, max_off // 8) * 8
        data = self.pools.view(dtype, offset, shape)
        name = self.new_name("up") if rng.random() < 0.8 or not arrays else rng.choice(list(arrays))
        chunk = rng.choice([64 * KiB, 1 * MiB, 4 * MiB])
        ok, info = self.call("upload", lambda: s.upload(
            data, name, dtype="bfloat16" if dtype == "bfloat16" else None, chunk_bytes=chunk),
            session=s)
        if ok:
            arrays[name] = Tracked(dtype, shape, info.nbytes, offset)
        elif not s._soak_dead:
            # A failed replacing upload leaves the old array in place.
            pass

    def op_download(self, s, arrays):
        name = self.any_array(arrays)
        if name is None:
            return self.op_upload(s, arrays)
        a = arrays[name]
        chunk = self.rng.choice([0, 256 * KiB, 4 * MiB])

        def fetch():
            got = s.download(name, chunk_bytes=chunk)
            if got.shape != a.shape:
                raise WrongResult(f"download {name}: shape {got.shape}, uploaded {a.shape}")
            if a.offset is not None:
                want = self.pools.view(a.dtype, a.offset, a.shape)
                if not np.array_equal(got.view(np.uint8), np.ascontiguousarray(want).view(np.uint8)):
                    raise WrongResult(f"download {name} ({a.dtype}{list(a.shape)}): bytes differ")
            return got

        self.call("download", fetch, session=s)

    def op_list(self, s, arrays):
        def check():
            names = sorted(i.name for i in s.list())
            if names != sorted(arrays):
                raise WrongResult(f"list: {names[:5]}..., expected {sorted(arrays)[:5]}...")
        self.call("list", check, session=s)
        name = self.any_array(arrays)
        if name is not None:
            self.call("info", lambda: s.info(name), session=s)

    def op_delete(self, s, arrays):
        name = self.any_array(arrays)
        if name is None:
            return
        ok, _ = self.call("delete", lambda: s.delete(name), session=s)
        if ok or not s._soak_dead:
            arrays.pop(name, None)

    def op_keep_alive(self, s, arrays):
        self.call("keep_alive", s.keep_alive, session=s)

    def float_input(self, s, arrays, max_bytes=8 * MiB):
        name = self.any_array(arrays, floats_only=True, max_bytes=max_bytes)
        if name is None:
            self.op_upload(s, arrays, float_bias=True)
            name = self.any_array(arrays, floats_only=True, max_bytes=max_bytes)
        return name

    def store_or_inline(self, s, arrays, kind, g, nodes, out_bytes, check=None, keep=()):
        """Executes with the outputs inline when they fit, else stored (then
        sometimes downloaded, and deleted or kept)."""
        rng = self.rng
        inline = out_bytes <= self.args.inline_bytes and rng.random() < 0.7
        if inline:
            def run():
                out = s.execute(g, outputs=nodes)
                if check is not None:
                    check(out)
                return out
            self.call(kind, run, session=s)
            return
        names = {self.new_name("r"): n for n in nodes}
        self.make_room(s, arrays, out_bytes, keep)
        ok, out = self.call(kind, lambda: s.execute(g, outputs=names), session=s)
        if not ok:
            return
        for (name, _), info in zip(names.items(), out):
            arrays[name] = Tracked(info.dtype, info.shape, info.nbytes)
        if rng.random() < 0.5:
            name = rng.choice(list(names))
            ok, got = self.call("download", lambda: s.download(name), session=s)
            if ok and check is not None and len(names) == 1:
                try:
                    check([got])
                except WrongResult as exc:
                    self.stats.record(kind, "WRONG_RESULT", 0.0, str(exc))
        if rng.random() < 0.6:
            for name in names:
                if self.call("delete", lambda n=name: s.delete(n), session=s)[0]:
                    arrays.pop(name, None)

    def op_elementwise(self, s, arrays):
        name = self.float_input(s, arrays)
        if name is None:
            return
        a = arrays[name]
        g = gpuflow.Graph()
        x = g.array(name)
        chain = [self.rng.choice(UNARY) for _ in range(self.rng.randint(1, 6))]
        y = g.mul(x, 0.5)
        for op in chain:
            y = g.op(op, y)
        y = g.add(g.mul(y, 2), 1)
        check = None
        if a.offset is not None and int(np.prod(a.shape)) <= 65536:
            # numpy in float64 rounded to the dtype after each op (the CPU
            # backend's rule), checked only at the elements where it agrees
            # with the same chain in long double: log1p(-cos(x)) near x = 0,
            # or sin of exp(exp(x)), amplify any rounding difference.
            src = self.pools.view(a.dtype, a.offset, a.shape)
            tol = 1e-4 if a.dtype == "float32" else 1e-7
            with np.errstate(all="ignore"):
                lo = (src.astype(np.float64) * 0.5).astype(a.dtype)
                hi = src.astype(np.longdouble) * 0.5
                for op in chain:
                    lo = NP_UNARY[op](lo.astype(np.float64)).astype(a.dtype)
                    hi = NP_UNARY[op](hi)
                lo = (lo.astype(np.float64) * 2 + 1).astype(a.dtype)
                hi = hi * 2 + 1
                well = np.isfinite(lo) & (np.abs(lo - hi) <= 0.1 * tol * (1 + np.abs(hi)))

            def check(out, ref=lo, well=well):
                got = np.asarray(out[0])
                bad = well & ~np.isclose(got, ref, rtol=tol, atol=tol)
                if bad.any():
                    i = int(np.argmax(bad.ravel()))
                    raise WrongResult(f"elementwise {chain} on {a.dtype}{list(a.shape)}: "
                                      f"element {i} is {got.ravel()[i]!r}, numpy {ref.ravel()[i]!r}")
        self.store_or_inline(s, arrays, "execute_elementwise", g, [y], a.nbytes, check, keep={name})

    def op_reduction(self, s, arrays):
        name = self.float_input(s, arrays)
        if name is None:
            return
        a = arrays[name]
        rng = self.rng
        g = gpuflow.Graph()
        x = g.array(name)
        red = rng.choice(["sum", "mean", "max", "min", "std", "logsumexp", "argmax", "cumsum"])
        axes = None if len(a.shape) == 1 or rng.random() < 0.3 else [rng.choice([0, -1])]
        if red == "argmax":
            y = g.argmax(x, axis=None if axes is None else axes[0])
        elif red == "cumsum":
            y = g.cumsum(x, axis=None if axes is None else axes[0])
        else:
            y = g.op(red, x, axes=axes)
        out_bytes = a.nbytes if red == "cumsum" else (
            8 if axes is None else a.nbytes // a.shape[axes[0]])
        check = None
        if red == "sum" and a.offset is not None:
            src = self.pools.view(a.dtype, a.offset, a.shape)

            def check(out, src=src):
                ref = src.astype(np.float64).sum(axis=None if axes is None else axes[0])
                if not np.allclose(out[0], ref, rtol=1e-4, atol=1e-3):
                    raise WrongResult(f"sum over {axes} of {a.dtype}{list(a.shape)} differs from numpy")
        self.store_or_inline(s, arrays, "execute_reduction", g, [y], out_bytes, check, keep={name})

    def op_matmul(self, s, arrays):
        name = self.float_input(s, arrays)
        if name is None:
            return
        a = arrays[name]
        rng = self.rng
        g = gpuflow.Graph()
        x = g.array(name)
        if len(a.shape) == 1:
            k = min(a.shape[0], rng.choice([16, 64, 256]))
            n = max(1, min(a.shape[0] // k, 64))
            m = g.reshape(g.slice(x, starts=[0], stops=[n * k]), shape=[n, k])
        else:
            n = min(a.shape[0], rng.choice([8, 32, 128]))
            k = min(a.shape[1], 256)
            m = g.slice(x, starts=[0, 0], stops=[n, k])
        w = g.random_normal(shape=[k, rng.choice([8, 32, 128])], seed=rng.randrange(1 << 30),
                            dtype=a.dtype)
        y = g.matmul(m, w)
        if rng.random() < 0.5:
            y = g.relu(g.add(y, 0.1))
        self.store_or_inline(s, arrays, "execute_matmul", g, [y], n * 128 * itemsize(a.dtype),
                             keep={name})

    def op_softmax(self, s, arrays):
        name = self.float_input(s, arrays, max_bytes=4 * MiB)
        if name is None:
            return
        a = arrays[name]
        g = gpuflow.Graph()
        x = g.array(name)
        axis = -1 if len(a.shape) == 1 or self.rng.random() < 0.7 else 0
        y = g.softmax(x, axis=axis) if self.rng.random() < 0.7 else g.log_softmax(x, axis=axis)

        def check(out):
            # Pool data only: a stored result may hold inf (exp chains), whose
            # softmax is NaN.
            if g.proto.nodes[-1].op == "softmax" and a.offset is not None:
                sums = np.asarray(out[0], dtype=np.float64).sum(axis=axis)
                if not np.allclose(sums, 1, rtol=1e-3):
                    raise WrongResult(f"softmax rows of {a.dtype}{list(a.shape)} do not sum to 1")
        self.store_or_inline(s, arrays, "execute_softmax", g, [y], a.nbytes, check, keep={name})

    def op_creation(self, s, arrays):
        rng = self.rng
        dtype = rng.choice(["float32", "float64"])
        shape = list(self.pick_shape(dtype, 4 * MiB))
        g = gpuflow.Graph()
        which = rng.choice(["random_uniform", "random_normal", "arange", "full"])
        n = int(np.prod(shape))
        if which == "arange":
            y = g.reshape(g.arange(stop=float(n), dtype=dtype), shape=shape)
        elif which == "full":
            y = g.full(np.array(1.5, dtype=dtype), shape=shape)
        else:
            y = g.op(which, shape=shape, seed=rng.randrange(1 << 30), dtype=dtype)
        self.store_or_inline(s, arrays, "execute_creation", g, [y], n * itemsize(dtype))

    def op_mixed(self, s, arrays):
        """Several outputs from one graph, some inline, some stored."""
        name = self.float_input(s, arrays, max_bytes=2 * MiB)
        if name is None:
            return
        a = arrays[name]
        g = gpuflow.Graph()
        x = g.array(name)
        h = g.sqrt(g.add(g.mul(x, x), 1))
        outs = [g.sum(h), g.max(x), g.mul(h, 2)]
        request = service_pb2.ExecuteRequest(session_id=s.id, graph=g.proto)
        request.outputs.add(node=outs[0].id, return_inline=True)
        request.outputs.add(node=outs[1].id, return_inline=True)
        stored = self.new_name("m")
        request.outputs.add(node=outs[2].id, store_as=stored)
        self.make_room(s, arrays, a.nbytes, keep={name})
        ok, reply = self.call("execute_mixed", lambda: self.stub.Execute(request, timeout=120), session=s)
        if ok:
            arrays[stored] = Tracked(a.dtype, a.shape, reply.outputs[2].info.num_bytes)

    def op_benchmark(self, s, arrays):
        name = self.float_input(s, arrays, max_bytes=1 * MiB)
        if name is None:
            return
        g = gpuflow.Graph()
        x = g.array(name)
        y = g.softmax(g.add(g.mul(x, 2), 1), axis=-1) if self.rng.random() < 0.5 else g.sum(g.exp(x))
        request = service_pb2.BenchmarkRequest(
            session_id=s.id, graph=g.proto, output_nodes=[y.id],
            n_warmup=1, n_repeat=self.rng.randint(2, 8), name="soak")
        request.max_duration.FromNanoseconds(int(1e9))
        self.call("benchmark", lambda: self.stub.Benchmark(request, timeout=120), session=s)

    # -- abuse --

    def op_bad_graph(self, s, arrays):
        rng = self.rng
        g = gpuflow.Graph()
        name = self.any_array(arrays)
        x = g.array(name) if name else g.array("missing")
        variant = rng.randrange(8)
        if variant == 0:
            y = g.op("no_such_op", x)
        elif variant == 1:
            y = g.add(g.array("no_such_array"), 1)
        elif variant == 2:
            y = g.add(g.random_uniform(shape=[3, 5], seed=1), np.ones(4, dtype=np.float32))
        elif variant == 3:
            y = g.matmul(g.random_uniform(shape=[3, 5], seed=1), g.random_uniform(shape=[4, 2], seed=2))
        elif variant == 4:
            y = g.reshape(g.random_uniform(shape=[3, 5], seed=1), shape=[7, 2])
        elif variant == 5:
            y = g.sum(g.random_uniform(shape=[3, 5], seed=1), axes=[4])
        elif variant == 6:
            y = g.softmax(x)
            node = g.proto.nodes.add(id="dangling", op="neg")
            node.inputs.add(node="does_not_exist")
            y = gpuflow.graph.Node(g, id="dangling")
        else:
            y = g.random_uniform(shape=[4], seed=1, dtype="int32")  # not a float dtype
        self.call("bad_graph", lambda: s.execute(g, outputs=[y]), session=s)

    def op_inline_too_large(self, s, arrays):
        g = gpuflow.Graph()
        n = self.args.inline_bytes // 4 + 1024
        y = g.random_uniform(shape=[n], seed=3)
        self.call("inline_too_large", lambda: s.execute(g, outputs=[y]), session=s)

    def raw_upload(self, s, header, chunks):
        def requests():
            yield service_pb2.UploadArrayRequest(header=header)
            for c in chunks:
                yield service_pb2.UploadArrayRequest(chunk=c)
        return self.stub.UploadArray(requests(), timeout=120)

    def op_over_quota(self, s, arrays):
        rng = self.rng
        if rng.random() < 0.7:
            # More than what is left of the quota: refused at the header.
            used = sum(a.nbytes for a in arrays.values())
            n = (s.memory_limit - used) // 4 + rng.randint(1, 1 << 20)
            header = service_pb2.UploadHeader(session_id=s.id, name=self.new_name("q"),
                                              dtype=gpuflow.dtypes.to_proto("float32"), shape=[n])
            self.call("over_quota_upload", lambda: self.raw_upload(s, header, [b"\0" * 4096]), session=s)
        else:
            header = service_pb2.UploadHeader(session_id=s.id, name=self.new_name("q"),
                                              dtype=gpuflow.dtypes.to_proto("float64"),
                                              shape=[self.args.max_array_bytes // 8 + 1])
            self.call("over_max_array_upload", lambda: self.raw_upload(s, header, []), session=s)

    def op_bad_length(self, s, arrays):
        rng = self.rng
        n = rng.choice([1024, 65536, 1 << 20])
        header = service_pb2.UploadHeader(session_id=s.id, name=self.new_name("bad"),
                                          dtype=gpuflow.dtypes.to_proto("uint8"), shape=[n])
        if rng.random() < 0.5:
            self.call("short_upload", lambda: self.raw_upload(s, header, [b"\1" * (n // 2)]), session=s)
        else:
            self.call("long_upload", lambda: self.raw_upload(s, header, [b"\1" * n, b"\1" * 17]), session=s)

    def stalled_upload(self, s, nbytes, chunks_before):
        """Starts an upload that sends its header and `chunks_before` 256 KiB
        chunks, then waits for `release` before sending the rest. Returns
        (future, sent, release)."""
        sent, release = threading.Event(), threading.Event()
        header = service_pb2.UploadHeader(session_id=s.id, name=self.new_name("stall"),
                                          dtype=gpuflow.dtypes.to_proto("uint8"), shape=[nbytes])
        chunk = b"\7" * (256 * KiB)
        total = nbytes // len(chunk)

        def requests():
            yield service_pb2.UploadArrayRequest(header=header)
            for i in range(total):
                if i == chunks_before:
                    sent.set()
                    if not release.wait(60):
                        return
                yield service_pb2.UploadArrayRequest(chunk=chunk)

        future = self.stub.UploadArray.future(requests(), timeout=120)
        return future, sent, release

    def op_cancelled_upload(self, s, arrays):
        nbytes = self.rng.choice([1, 2, 4]) * MiB
        self.make_room(s, arrays, nbytes)

        def run():
            future, sent, release = self.stalled_upload(s, nbytes, self.rng.randint(1, 3))
            try:
                if not sent.wait(60):
                    raise TimeoutError("upload never got going")
                time.sleep(self.rng.random() * 0.05)
                future.cancel()
                return future.result()
            finally:
                release.set()

        self.call("cancelled_upload", run, session=s)

    def op_cancelled_download(self, s, arrays):
        name = self.any_array(arrays, max_bytes=None)
        if name is None or arrays[name].nbytes < 512 * KiB:
            return self.op_download(s, arrays)

        def run():
            stream = self.stub.DownloadArray(service_pb2.DownloadArrayRequest(
                session_id=s.id, name=name, chunk_bytes=64 * KiB), timeout=120)
            next(stream)  # header
            next(stream)  # a first chunk
            stream.cancel()
            for _ in stream:
                pass
            raise RuntimeError("a cancelled download kept going")

        self.call("cancelled_download", run, session=s)

    def op_close_during_upload(self, s, arrays):
        """Closes the session while one of its uploads is in flight, then lets
        the upload send the rest. The session is gone afterwards."""
        nbytes = self.rng.choice([1, 2, 4]) * MiB
        self.make_room(s, arrays, nbytes)
        future, sent, release = self.stalled_upload(s, nbytes, self.rng.randint(1, 2))
        if not sent.wait(60):
            release.set()
            self.stats.record("close_during_upload", "CLIENT_TIMEOUT", 60, "upload never got going")
            return
        self.call("close_session", s.close, session=s)
        release.set()
        self.call("close_during_upload", lambda: future.result(timeout=120), session=s)
        return "closed"

    def op_unknown_session(self, s, arrays):
        bogus = "%032x" % self.rng.getrandbits(128)
        g = gpuflow.Graph()
        y = g.add(g.array("x"), 1)
        request = service_pb2.ExecuteRequest(session_id=bogus, graph=g.proto)
        request.outputs.add(node=y.id, return_inline=True)
        self.call("unknown_session", lambda: self.stub.Execute(request, timeout=60))


# (operation, weight)
_MIX = [
    (Worker.op_upload, 16), (Worker.op_download, 10), (Worker.op_list, 4), (Worker.op_delete, 4),
    (Worker.op_keep_alive, 2),
    (Worker.op_elementwise, 12), (Worker.op_reduction, 8), (Worker.op_matmul, 5),
    (Worker.op_softmax, 5), (Worker.op_creation, 4), (Worker.op_mixed, 4), (Worker.op_benchmark, 3),
    (Worker.op_bad_graph, 3), (Worker.op_inline_too_large, 1), (Worker.op_over_quota, 2),
    (Worker.op_bad_length, 2), (Worker.op_cancelled_upload, 2), (Worker.op_cancelled_download, 1),
    (Worker.op_close_during_upload, 1), (Worker.op_unknown_session, 1),
]
OPS = [op for op, _ in _MIX]
WEIGHTS = [w for _, w in _MIX]


# ------------------------------------------------------------------ server


def parse_size(text):
    units = {"": 1, "k": KiB, "kib": KiB, "ki": KiB, "m": MiB, "mib": MiB, "mi": MiB,
             "g": 1 << 30, "gib": 1 << 30, "gi": 1 << 30}
    t = text.strip().lower()
    digits = t.rstrip("abcdefghijklmnopqrstuvwxyz")
    return int(float(digits) * units[t[len(digits):]])


def build_leak_shim():
    src = ROOT / "bench" / "leak_preload.c"
    out = ROOT / "build" / "leak_preload.so"
    if not out.exists() or out.stat().st_mtime < src.stat().st_mtime:
        out.parent.mkdir(exist_ok=True)
        cmd = ["gcc", "-shared", "-fPIC", "-O2", "-o", str(out), str(src), "-ldl"]
        print("building the leak shim:", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    return out


def start_server(args, out_dir):
    binary = pathlib.Path(args.server)
    deadline = time.monotonic() + 120
    while not (binary.exists() and os.access(binary, os.X_OK)):  # others may be relinking it
        if time.monotonic() > deadline:
            sys.exit(f"gpuflowd not found at {binary}")
        time.sleep(2)
    port_file = out_dir / "port"
    port_file.unlink(missing_ok=True)
    cmd = [str(binary), "--port=0", f"--port_file={port_file}", "--metrics_port=0",
           f"--backend={args.backend}", f"--session_idle_ttl={args.idle_ttl}",
           "--session_reap_interval=500ms", f"--max_sessions={args.max_sessions}",
           f"--default_session_memory_limit={args.session_quota}",
           f"--max_session_memory_limit={args.session_quota}",
           f"--max_array_bytes={args.max_array_bytes}",
           f"--max_inline_bytes={args.inline_bytes}", "--max_benchmark_duration=2s",
           "--log_level=warning", *args.server_arg]
    env = dict(os.environ)
    for item in args.server_env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            sys.exit(f"--server-env wants KEY=VALUE, got {item!r}")
        env[key] = value
    if args.leak_every:
        shim = build_leak_shim()
        env["LD_PRELOAD"] = str(shim) + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
        env["GPUFLOW_LEAK_EVERY"] = str(args.leak_every)
        env["GPUFLOW_LEAK_BYTES"] = str(args.leak_bytes)
        env["GPUFLOW_LEAK_REPORT"] = "1"
    log = open(out_dir / "server.log", "w")
    for attempt in range(3):
        # When it was built (others rebuild it): what the soak measured.
        args.binary_mtime = datetime.datetime.fromtimestamp(binary.stat().st_mtime).isoformat(
            timespec="seconds")
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text().strip():
            if proc.poll() is not None:
                break
            if time.monotonic() > deadline:
                proc.kill()
                sys.exit("gpuflowd did not start; see " + str(out_dir / "server.log"))
            time.sleep(0.05)
        if proc.poll() is None:
            return proc, int(port_file.read_text()), cmd, env, log
        time.sleep(3)  # e.g. a binary caught mid-link
    log.flush()
    sys.exit(f"gpuflowd exited with {proc.returncode}:\n" + (out_dir / "server.log").read_text()[-3000:])


def read_status(pid):
    values = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM", "Threads", "RssAnon", "RssFile"):
                    values[key] = int(rest.split()[0])
    except OSError:
        return None
    return values


def cpu_seconds(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


class Sampler(threading.Thread):
    """Every `interval` seconds: the server's RSS/HWM/threads, CPU time and
    active_sessions (GetServerInfo over its own channel)."""

    def __init__(self, proc, target, stats, interval):
        super().__init__(name="sampler", daemon=True)
        self.proc, self.stats, self.interval = proc, stats, interval
        self.samples = []
        self.phase = "run"
        self.t0 = time.monotonic()
        self.stop_event = threading.Event()
        self.lock = threading.Lock()
        self.info_failures = 0
        self.channel = grpc.insecure_channel(target)
        self.stub = service_pb2_grpc.GpuFlowStub(self.channel)

    def run(self):
        next_t = time.monotonic()
        while not self.stop_event.is_set():
            self.sample()
            next_t += self.interval
            self.stop_event.wait(max(0.0, next_t - time.monotonic()))

    def sample(self):
        now = time.monotonic() - self.t0
        status = read_status(self.proc.pid) if self.proc.poll() is None else None
        if status is None:
            return
        try:
            info = self.stub.GetServerInfo(service_pb2.GetServerInfoRequest(), timeout=5)
            sessions = info.active_sessions
        except grpc.RpcError:
            sessions = -1
            self.info_failures += 1
        row = {
            "t_s": round(now, 2), "phase": self.phase,
            "rss_mib": round(status.get("VmRSS", 0) / 1024, 2),
            "hwm_mib": round(status.get("VmHWM", 0) / 1024, 2),
            "rss_anon_mib": round(status.get("RssAnon", 0) / 1024, 2),
            "threads": status.get("Threads", 0), "active_sessions": sessions,
            "server_cpu_s": round(cpu_seconds(self.proc.pid), 2),
            "requests": self.stats.total, "errors": self.stats.errors_total(),
        }
        with self.lock:
            self.samples.append(row)

    def rows(self):
        with self.lock:
            return list(self.samples)


# ------------------------------------------------------------------ analysis


def window(rows, lo, hi):
    return [r for r in rows if lo <= r["t_s"] < hi]


def mean(rows, key="rss_mib"):
    return float(np.mean([r[key] for r in rows])) if rows else float("nan")


def analyse(rows, duration, warmup):
    run = [r for r in rows if r["phase"] == "run"]
    idle = [r for r in rows if r["phase"] == "idle"]
    d = duration
    w = warmup
    base_rows = window(run, w, w + 0.1 * d)
    half = window(run, 0.5 * d, d + 1)
    early = window(run, 0.5 * d, 0.6 * d)
    late = window(run, 0.9 * d, d + 1)
    result = {
        "samples": len(rows),
        "rss_first_mib": run[0]["rss_mib"] if run else None,
        "rss_start_mib": mean(base_rows),
        "rss_start_window_s": [round(w, 1), round(w + 0.1 * d, 1)],
        "rss_mean_50_60_mib": mean(early),
        "rss_mean_last10_mib": mean(late),
        "growth_second_half_mib": mean(late) - mean(early),
        "slope_second_half_mib_per_min": float("nan"),
        "slope_after_warmup_mib_per_min": float("nan"),
        "rss_max_run_mib": max((r["rss_mib"] for r in run), default=float("nan")),
        "hwm_mib": max((r["hwm_mib"] for r in rows), default=float("nan")),
        "rss_end_of_run_mib": run[-1]["rss_mib"] if run else float("nan"),
        "rss_final_mib": mean(idle[-5:]) if idle else float("nan"),
        "threads_start": base_rows[0]["threads"] if base_rows else None,
        "threads_end": run[-1]["threads"] if run else None,
        "threads_final": idle[-1]["threads"] if idle else None,
        "max_active_sessions": max((r["active_sessions"] for r in run), default=0),
        "final_active_sessions": idle[-1]["active_sessions"] if idle else None,
    }
    for key, sub in (("slope_second_half_mib_per_min", half),
                     ("slope_after_warmup_mib_per_min", window(run, w, d + 1))):
        if len(sub) >= 3:
            t = np.array([r["t_s"] for r in sub]) / 60
            y = np.array([r["rss_mib"] for r in sub])
            result[key] = float(np.polyfit(t, y, 1)[0])
    result["final_over_start_mib"] = result["rss_final_mib"] - result["rss_start_mib"]
    return result


def fmt(v, nd=1):
    if v is None:
        return "-"
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.{nd}f}"
    return str(v)


def git_commit():
    try:
        return subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


# ------------------------------------------------------------------ main


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--server", default=str(ROOT / "build" / "bin" / "gpuflowd"),
                   help="the gpuflowd binary (default build/bin/gpuflowd)")
    p.add_argument("--backend", default="cpu", help="passed to gpuflowd --backend (default cpu)")
    p.add_argument("--server-env", action="append", default=[], metavar="KEY=VALUE",
                   help="an environment variable for gpuflowd only, e.g. "
                        "GLIBC_TUNABLES=glibc.malloc.mmap_threshold=131072 (repeatable)")
    p.add_argument("--server-arg", action="append", default=[],
                   help="one more gpuflowd flag, e.g. --server-arg=--compute_threads=2 (repeatable; "
                        "later flags win over the soak's own)")
    p.add_argument("--clients", type=int, default=64,
                   help="client threads, each with its own channel (default 64)")
    p.add_argument("--duration", type=float, default=600, help="seconds of traffic (default 600)")
    p.add_argument("--warmup", type=float, default=None,
                   help="seconds before the baseline window (default: 10%% of the run, at least "
                        "60 s and at most half of it: glibc's heap keeps growing to its "
                        "high-water mark for a while, see bench/README.md)")
    p.add_argument("--idle-ttl", default="5s", help="gpuflowd --session_idle_ttl (abandoned sessions)")
    p.add_argument("--abandon-fraction", type=float, default=0.1,
                   help="fraction of sessions abandoned instead of closed (default 0.1)")
    p.add_argument("--settle", type=float, default=10,
                   help="seconds of idling after every session is gone before the final RSS")
    p.add_argument("--session-quota", default="128MiB",
                   help="each session's memory limit (default 128MiB: a worker keeps at most "
                        "--working-set in arrays, plus what a call in flight needs)")
    p.add_argument("--max-array-bytes", default="32MiB", help="gpuflowd --max_array_bytes")
    p.add_argument("--inline-bytes", default="4MiB", help="gpuflowd --max_inline_bytes")
    p.add_argument("--max-sessions", type=int, default=512, help="gpuflowd --max_sessions")
    p.add_argument("--max-arrays", type=int, default=6, help="arrays a worker keeps in its session")
    p.add_argument("--working-set", default="24MiB", help="bytes a worker keeps in its session")
    p.add_argument("--max-growth-mib", type=float, default=64,
                   help="fail when the RSS grows more than this over the second half (default 64)")
    p.add_argument("--max-final-mib", type=float, default=128,
                   help="fail when the RSS after all sessions close is more than this above the "
                        "post-warm-up baseline (default 128)")
    p.add_argument("--max-unexpected-errors", type=int, default=0,
                   help="fail when more calls than this fail unexpectedly (default 0)")
    p.add_argument("--leak-every", type=int, default=0,
                   help="preload build/leak_preload.so: leak --leak-bytes every Nth malloc")
    p.add_argument("--leak-bytes", type=int, default=4096, help="bytes leaked each time (default 4096)")
    p.add_argument("--sample-interval", type=float, default=1.0, help="seconds between samples")
    p.add_argument("--seed", type=int, default=1, help="seeds the data and every worker's choices")
    p.add_argument("--out", default=None, help="output directory (default: a new one under /tmp)")
    args = p.parse_args(argv)
    args.session_quota_bytes = parse_size(args.session_quota)
    args.max_array_bytes = parse_size(args.max_array_bytes)
    args.inline_bytes = parse_size(args.inline_bytes)
    args.working_set = parse_size(args.working_set)
    args.session_quota = args.session_quota_bytes
    if args.warmup is None:
        args.warmup = max(0.1 * args.duration, min(60.0, 0.5 * args.duration))

    out_dir = pathlib.Path(args.out or tempfile.mkdtemp(prefix="gpuflow-memory-growth-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    started_at = datetime.datetime.now().isoformat(timespec="seconds")
    commit = git_commit()

    print(f"memory_growth: {args.clients} clients, {args.duration:.0f} s, backend {args.backend}"
          f"{f', leak every {args.leak_every} mallocs' if args.leak_every else ''}; out {out_dir}",
          flush=True)
    pools = Pools(args.seed)
    proc, port, cmd, env, log = start_server(args, out_dir)
    target = f"localhost:{port}"
    stats = Stats()
    sampler = Sampler(proc, target, stats, args.sample_interval)
    sampler.start()

    stop = threading.Event()
    workers = [Worker(i, target, args, pools, stats, stop, args.seed * 1000 + i)
               for i in range(args.clients)]
    for w in workers:
        w.start()
        time.sleep(0.01)

    failures = []
    crashed = None
    t_end = sampler.t0 + args.duration
    next_report = time.monotonic() + 30
    while time.monotonic() < t_end:
        time.sleep(0.5)
        if proc.poll() is not None:
            crashed = proc.returncode
            break
        if time.monotonic() >= next_report:
            next_report += 30
            rows = sampler.rows()
            last = rows[-1] if rows else {}
            stalled = [w for w in workers if w.is_alive() and time.monotonic() - w.last_progress > 120]
            print(f"  t={time.monotonic() - sampler.t0:6.0f}s rss={last.get('rss_mib', 0):8.1f} MiB "
                  f"sessions={last.get('active_sessions', '-'):>4} requests={stats.total} "
                  f"unexpected={stats.unexpected}"
                  + (f" stalled={len(stalled)}" if stalled else ""), flush=True)
    stop.set()
    in_flight = {w.name: w.current for w in workers}

    if crashed is not None:
        failures.append(f"gpuflowd died (exit status {crashed}) at t={time.monotonic() - sampler.t0:.0f}s")
    # Let the workers finish their call and close their sessions.
    join_deadline = time.monotonic() + 180
    for w in workers:
        w.join(max(0.1, join_deadline - time.monotonic()))
    hung = [f"{w.name}: {w.current}" for w in workers if w.is_alive()]
    if hung and crashed is None:
        failures.append(f"{len(hung)} clients still in a call 180 s after the end: {hung[:5]}")
    fatal = [f"{w.name}: {w.fatal}" for w in workers if w.fatal]
    if fatal:
        failures.append(f"{len(fatal)} client threads failed: {fatal[0][:500]}")

    # Idle: wait for the abandoned sessions to expire, then settle.
    sampler.phase = "drain"
    drain_start = time.monotonic()
    if crashed is None:
        while time.monotonic() - drain_start < 120:
            rows = sampler.rows()
            if rows and rows[-1]["phase"] == "drain" and rows[-1]["active_sessions"] == 0:
                break
            if proc.poll() is not None:
                break
            time.sleep(0.5)
        drain_seconds = time.monotonic() - drain_start
        sampler.phase = "idle"
        time.sleep(args.settle)
    else:
        drain_seconds = 0.0
    sampler.stop_event.set()
    sampler.join(10)
    rows = sampler.rows()

    # Stop the server.
    exit_code = proc.poll()
    if exit_code is None:
        proc.send_signal(signal.SIGTERM)
        try:
            exit_code = proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            exit_code = proc.wait()
            failures.append("gpuflowd ignored SIGTERM for 60 s")
    log.close()
    server_log = (out_dir / "server.log").read_text(errors="replace")
    if exit_code != 0 and crashed is None:
        failures.append(f"gpuflowd exited with {exit_code} on SIGTERM")
    leak_line = next((l for l in server_log.splitlines() if l.startswith("leak_preload:")), None)

    result = analyse(rows, args.duration, args.warmup)
    result["drain_seconds"] = round(drain_seconds, 1)
    if result["final_active_sessions"] not in (0, None):
        failures.append(f"{result['final_active_sessions']} sessions still open "
                        f"{drain_seconds:.0f} s after every client closed or abandoned its own")
    if result["growth_second_half_mib"] > args.max_growth_mib:
        failures.append(f"RSS grew {result['growth_second_half_mib']:.1f} MiB over the second half "
                        f"(limit {args.max_growth_mib:g})")
    if not math.isnan(result["final_over_start_mib"]) and result["final_over_start_mib"] > args.max_final_mib:
        failures.append(f"RSS after every session closed is {result['final_over_start_mib']:.1f} MiB over "
                        f"the post-warm-up baseline (limit {args.max_final_mib:g})")
    if math.isnan(result["growth_second_half_mib"]) and crashed is None:
        failures.append("too few samples for the second half")
    if stats.unexpected > args.max_unexpected_errors:
        failures.append(f"{stats.unexpected} calls failed unexpectedly (limit {args.max_unexpected_errors})")
    if stats.total == 0:
        failures.append("no requests completed")

    # Outputs: the CSV of samples, the JSON summary, the table.
    with open(out_dir / "samples.csv", "w", newline="") as f:
        fields = ["t_s", "phase", "rss_mib", "hwm_mib", "rss_anon_mib", "threads", "active_sessions",
                  "server_cpu_s", "requests", "errors"]
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    kinds = stats.snapshot()
    summary = {
        "started_at": started_at, "commit": commit, "host": os.uname().nodename,
        "cpus": os.cpu_count(), "server_cmd": cmd,
        "server_binary_mtime": args.binary_mtime,
        "server_env": {k: env[k] for k in ("LD_PRELOAD", "GPUFLOW_LEAK_EVERY", "GPUFLOW_LEAK_BYTES",
                                           "GLIBC_TUNABLES", "MALLOC_ARENA_MAX")
                       if k in env} | dict(kv.partition("=")[::2] for kv in args.server_env),
        "leak_report": leak_line,
        "args": {k: v for k, v in vars(args).items()},
        "result": result,
        "requests_total": stats.total, "unexpected_total": stats.unexpected,
        "requests": kinds, "unexpected_examples": stats.examples,
        "server_exit_code": exit_code, "crashed": crashed is not None,
        "in_flight_at_end": in_flight if crashed is not None or hung else None,
        "failures": failures, "passed": not failures,
    }
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")

    r = result
    print()
    print(f"commit {commit} (gpuflowd built {args.binary_mtime}), {args.clients} clients, {args.duration:.0f} s, backend {args.backend}"
          + (f", leak every {args.leak_every} mallocs x {args.leak_bytes} B" if args.leak_every else ""))
    print(f"{'RSS':<44} {'MiB':>10}")
    for label, value in [
        ("first sample", r["rss_first_mib"]),
        (f"start (mean over {r['rss_start_window_s'][0]:.0f}-{r['rss_start_window_s'][1]:.0f} s)",
         r["rss_start_mib"]),
        ("mean over 50-60% of the run", r["rss_mean_50_60_mib"]),
        ("mean over the last 10% of the run", r["rss_mean_last10_mib"]),
        ("second-half growth (last 10% - 50-60%)", r["growth_second_half_mib"]),
        ("second-half slope (MiB/min, linear fit)", r["slope_second_half_mib_per_min"]),
        ("max during the run", r["rss_max_run_mib"]),
        ("peak (VmHWM)", r["hwm_mib"]),
        ("end of traffic", r["rss_end_of_run_mib"]),
        (f"final (sessions closed, idle {args.settle:.0f} s)", r["rss_final_mib"]),
        ("final - start", r["final_over_start_mib"]),
    ]:
        print(f"  {label:<42} {fmt(value, 2 if 'slope' in label else 1):>10}")
    print(f"  threads start/end/final: {r['threads_start']}/{r['threads_end']}/{r['threads_final']}; "
          f"max active sessions {r['max_active_sessions']}; drain {drain_seconds:.1f} s")
    if leak_line:
        print(f"  {leak_line}")
    print()
    print(f"{'request':<24} {'ok':>8} {'expected err':>13} {'unexpected':>11}  codes")
    for kind, v in kinds.items():
        codes = ", ".join(f"{c}={n}" for c, n in sorted({**v["expected"], **v["unexpected"]}.items()))
        print(f"  {kind:<22} {v['ok']:>8} {sum(v['expected'].values()):>13} "
              f"{sum(v['unexpected'].values()):>11}  {codes}")
    print(f"  {'total':<22} {stats.total:>8}   ({stats.unexpected} unexpected)")
    for kind, code, message in stats.examples[:10]:
        print(f"  unexpected: {kind} {code}: {message}")
    if crashed is not None or hung:
        print("in flight at the end:")
        for name, what in in_flight.items():
            print(f"  {name}: {what}")
    print()
    print(f"wrote {out_dir}/summary.json, samples.csv, server.log")
    if failures:
        print("FAIL: " + "; ".join(failures))
        return 1
    print(f"PASS: second-half growth {r['growth_second_half_mib']:.1f} MiB <= {args.max_growth_mib:g}, "
          f"final - start {r['final_over_start_mib']:.1f} MiB <= {args.max_final_mib:g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
