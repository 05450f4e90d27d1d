"""Same-host transfers through POSIX shared memory (docs/shared-memory.md).

Each session that uses them keeps one staging region: a shared-memory
object named ``gpuflow_<128 random bits>``, registered with the server
under ``_gpuflow.stage``. An upload copies the array into it and asks the
server to store it from there (UploadFromSharedMemory); a download asks the
server to write into it (DownloadToSharedMemory) and copies out. The region
grows as arrays need (to twice the largest, within what /dev/shm has free)
and goes with the session.
"""

import concurrent.futures
import os
import secrets
import threading
from multiprocessing import shared_memory

import numpy as np

from gpuflow import dtypes
from gpuflow.errors import Error, InvalidArgumentError
from gpuflow.v1 import service_pb2

REGION = "_gpuflow.stage"
_MIN_BYTES = 1 << 20
_SHM_DIR = "/dev/shm"


class ShmUnavailable(Error):
    """Shared memory cannot be used for this transfer (the server has it off,
    is on another host, or /dev/shm has no room)."""


# Copies of at least this many bytes run in pieces on several threads
# (numpy lets go of the GIL while it copies): one core's copy, with the page
# faults of fresh memory, is a third of what the host's memory can do.
_PARALLEL_BYTES = 32 << 20
_MAX_COPY_THREADS = 8
_copy_pool = None
_copy_pool_lock = threading.Lock()


def _copy(dst, src):
    """``dst[:] = src`` for flat uint8 arrays of one size."""
    n = src.nbytes
    workers = min(_MAX_COPY_THREADS, os.cpu_count() or 1)
    if n < _PARALLEL_BYTES or workers < 2:
        dst[:] = src
        return
    global _copy_pool
    with _copy_pool_lock:
        if _copy_pool is None:
            _copy_pool = concurrent.futures.ThreadPoolExecutor(
                max_workers=workers, thread_name_prefix="gpuflow-copy")
        pool = _copy_pool
    step = (-(-n // workers) + 4095) // 4096 * 4096
    pieces = [pool.submit(np.copyto, dst[i:i + step], src[i:i + step]) for i in range(0, n, step)]
    for piece in pieces:
        piece.result()


def _free_bytes():
    try:
        st = os.statvfs(_SHM_DIR)
    except OSError:
        return 0
    return st.f_bavail * st.f_frsize


class Stage:
    """A session's staging region. Thread-safe: transfers take turns."""

    def __init__(self, session, rpc):
        self._session = session
        self._rpc = rpc
        # Held by a transfer, or by an Execute writing results here until
        # they are read (Stage.read).
        self.lock = threading.RLock()
        self._shm = None
        self.usable = None  # None: not tried yet

    def grow(self, nbytes):
        """Makes the region hold at least ``nbytes``; ShmUnavailable when it
        cannot."""
        if self._shm is not None and self._shm.size >= nbytes:
            return
        size = max(_MIN_BYTES, nbytes, 2 * (self._shm.size if self._shm else 0))
        size = (size + _MIN_BYTES - 1) // _MIN_BYTES * _MIN_BYTES
        have = self._shm.size if self._shm else 0
        free = _free_bytes()
        if size - have > free:
            size = (nbytes + _MIN_BYTES - 1) // _MIN_BYTES * _MIN_BYTES
            if size - have > free:  # writing past the room would be SIGBUS
                raise ShmUnavailable(f"{_SHM_DIR} has {free} bytes free, {nbytes} are needed")
        self._release()
        shm = shared_memory.SharedMemory(name=f"gpuflow_{secrets.token_hex(16)}", create=True,
                                         size=size)
        try:
            self._rpc(self._session._stub.RegisterSharedMemory,
                      service_pb2.RegisterSharedMemoryRequest(
                          session_id=self._session.id, region=REGION, key=shm.name,
                          byte_size=size))
        except Error:
            shm.close()
            shm.unlink()
            raise
        self._shm = shm

    def _release(self, unregister=True):
        shm, self._shm = self._shm, None
        if shm is None:
            return
        try:
            if not unregister:
                raise Error("the session is closed")
            self._rpc(self._session._stub.UnregisterSharedMemory,
                      service_pb2.UnregisterSharedMemoryRequest(session_id=self._session.id,
                                                                region=REGION))
        except Error:
            pass  # the session is gone, and the region with it
        shm.close()
        shm.unlink()

    def probe(self):
        """Whether shared memory works for this session (tried once; the
        caller must not hold ``lock``)."""
        with self.lock:
            if self.usable is None:
                try:
                    self.grow(_MIN_BYTES)
                    self.usable = True
                except (Error, OSError):
                    self.usable = False
            return self.usable

    def upload(self, array, name, wire_dtype):
        """Stores ``array`` (C-contiguous) as ``name``; returns the reply."""
        flat = array.reshape(-1).view(np.uint8)
        with self.lock:
            self.grow(flat.nbytes)
            _copy(np.frombuffer(self._shm.buf, dtype=np.uint8, count=flat.nbytes), flat)
            return self._rpc(self._session._stub.UploadFromSharedMemory,
                             service_pb2.SharedMemoryUploadRequest(
                                 session_id=self._session.id, name=name, dtype=wire_dtype,
                                 shape=list(array.shape), region=REGION, offset=0))

    def download(self, name, info=None):
        """The array ``name`` as (ArrayInfo message, numpy array)."""
        with self.lock:
            if info is not None:
                self.grow(max(info.num_bytes, 1))
            elif self._shm is None:
                self.grow(_MIN_BYTES)
            request = service_pb2.SharedMemoryDownloadRequest(
                session_id=self._session.id, name=name, region=REGION, offset=0)
            try:
                reply = self._rpc(self._session._stub.DownloadToSharedMemory, request)
            except InvalidArgumentError:
                if info is not None:
                    raise
                # Larger than the region: learn its size, grow, once more.
                size = self._rpc(self._session._stub.GetArrayInfo, service_pb2.GetArrayInfoRequest(
                    session_id=self._session.id, name=name)).num_bytes
                self.grow(max(size, 1))
                reply = self._rpc(self._session._stub.DownloadToSharedMemory, request)
            out = np.empty(reply.num_bytes, dtype=np.uint8)
            _copy(out, np.frombuffer(self._shm.buf, dtype=np.uint8, count=reply.num_bytes))
        dtype = dtypes.numpy_dtype(dtypes.name_of(reply.dtype))
        return reply, out.view(dtype).reshape(tuple(reply.shape))

    def read(self, info, offset):
        """A copy of the array an Execute wrote at ``offset`` (its ArrayInfo
        message ``info``); the caller holds ``lock``."""
        dtype = dtypes.numpy_dtype(dtypes.name_of(info.dtype))
        out = np.empty(info.num_bytes, dtype=np.uint8)
        _copy(out, np.frombuffer(self._shm.buf, dtype=np.uint8, count=info.num_bytes,
                                 offset=offset))
        return out.view(dtype).reshape(tuple(info.shape))

    def close(self):
        """Frees the region; the server let go of it with the session."""
        with self.lock:
            self._release(unregister=False)
            self.usable = False
