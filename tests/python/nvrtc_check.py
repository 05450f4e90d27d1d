"""Compiles CUDA C++ for sm_90 as gpuflowd does, without a GPU: libnvrtc
through ctypes, or nvcc when only it is there (tests that need one are
marked ``needs_compiler`` and skip when the CUDA toolkit is missing).
Code that includes ``<cupy/complex.cuh>`` gets the server's device library
in its place, as the server compiles raw kernels. Shared by the gpuflow.jit
tests (test_jit.py, test_jit_cupy_examples.py, test_jit_complex.py)."""

import ctypes
import os
import re
import shutil
import subprocess
import tempfile

import pytest

CUDA_HOME = os.environ.get("CUDA_HOME", "/usr/local/cuda")

# engine/cuda/nvrtc_compiler.cc: NvrtcOptions, for an sm_90 device.
NVRTC_OPTIONS = ["--gpu-architecture=sm_90", "--std=c++17", "-default-device", "-prec-div=true",
                 "-prec-sqrt=true", "-ftz=false", "-fmad=false", f"-I{CUDA_HOME}/include",
                 f"-I{CUDA_HOME}/include/cccl"]


def _load_nvrtc():
    for name in ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12"):
        try:
            return ctypes.CDLL(os.path.join(CUDA_HOME, "lib64", name))
        except OSError:
            continue
    return None


# The device library's text, from the sources the server is built from.
_ENGINE_CUDA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "engine",
                            "cuda")
_CUPY_COMPLEX_INCLUDE = re.compile(r'^\s*#\s*include\s*(<cupy/complex\.cuh>|"cupy/complex\.cuh")'
                                   r'\s*$')


def _raw_string(filename, name):
    with open(os.path.join(_ENGINE_CUDA, filename)) as f:
        text = f.read()
    start = text.index(f'const char {name}[] = R"CUDA(') + len(f'const char {name}[] = R"CUDA(')
    return text[start:text.index(')CUDA";', start)]


def raw_kernel_source(code):
    """``code`` as the server compiles a raw kernel (engine/cuda/device_library_cupy.cc,
    RawKernelSource): its first ``#include <cupy/complex.cuh>`` becomes the device
    library with both complex libraries, and a #line directive keeps line numbers."""
    lines = code.split("\n")
    if not any(_CUPY_COMPLEX_INCLUDE.match(line) for line in lines):
        return code
    library = "".join(_raw_string(f, n) for f, n in (
        ("device_library.cc", "kDeviceLibrary"),
        ("device_library_complex.cc", "kDeviceComplexLibrary"),
        ("device_library_cupy.cc", "kDeviceCupyComplexLibrary")))
    out, included = [], False
    for k, line in enumerate(lines, 1):
        if not _CUPY_COMPLEX_INCLUDE.match(line):
            out.append(line)
            continue
        if not included:
            out.append(library)
            included = True
        out.append(f"#line {k + 1}")
    return "\n".join(out)


NVRTC = _load_nvrtc()
NVCC = shutil.which("nvcc") or (os.path.join(CUDA_HOME, "bin", "nvcc")
                                if os.path.exists(os.path.join(CUDA_HOME, "bin", "nvcc"))
                                else None)
needs_compiler = pytest.mark.skipif(NVRTC is None and NVCC is None,
                                    reason="no CUDA toolkit (NVRTC or nvcc) here")


def compile_log(source):
    """(ok, log) of compiling ``source`` for sm_90 like the server."""
    source = raw_kernel_source(source)
    if NVRTC is not None:
        prog = ctypes.c_void_p()
        assert NVRTC.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"jit.cu", 0, None,
                                        None) == 0
        opts = [o.encode() for o in NVRTC_OPTIONS]
        res = NVRTC.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
        size = ctypes.c_size_t()
        NVRTC.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        NVRTC.nvrtcGetProgramLog(prog, log)
        NVRTC.nvrtcDestroyProgram(ctypes.byref(prog))
        return res == 0, log.value.decode(errors="replace")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "jit.cu")
        with open(path, "w") as f:
            f.write(source)
        proc = subprocess.run([NVCC, "-arch=sm_90", "-std=c++17", "--cubin", "-o", os.devnull,
                               path], capture_output=True, text=True)
        return proc.returncode == 0, proc.stdout + proc.stderr


def assert_compiles(source):
    """``source``, after checking that it compiles for sm_90 without errors."""
    ok, log = compile_log(source)
    assert ok, f"{log}\n---- source ----\n{source}"
    assert "error" not in log, log
    return source
