"""cupy.get_default_memory_pool and cupy.get_default_pinned_memory_pool.

gpuflow's device memory belongs to the server: a session's arrays count
against its quota and are freed when their RemoteArrays are dropped or the
session closes, so the client holds no blocks of its own. The pools answer
CuPy's calls as a pool with no cached blocks would: ``free_all_blocks`` has
nothing to free, ``used_bytes`` and ``total_bytes`` are the current
session's bytes on the server (0 without a current session).
"""


def _session_bytes():
    from gpuflow.client import current_session

    session = current_session()
    return session.memory_used if session is not None else 0


class MemoryPool:
    """The device pool as ``cupy.cuda.MemoryPool`` presents it."""

    def free_all_blocks(self, stream=None):
        """Nothing to free: the server frees dropped arrays itself."""

    def free_all_free(self):
        """CuPy's old name for :meth:`free_all_blocks`."""

    def n_free_blocks(self):
        return 0

    def used_bytes(self):
        """Bytes the current session holds on the server."""
        return _session_bytes()

    def free_bytes(self):
        return 0

    def total_bytes(self):
        """Bytes the current session holds (no cached blocks on top)."""
        return _session_bytes()

    def get_limit(self):
        """0 (no pool limit: a session's quota is set when it is opened)."""
        return 0

    def set_limit(self, size=None, fraction=None):
        raise NotImplementedError(
            "gpuflow's memory limit is the session's: client.session(memory_limit=...)")


class PinnedMemoryPool:
    """The pinned host pool as ``cupy.cuda.PinnedMemoryPool`` presents it
    (gpuflow's uploads stage their own buffers)."""

    def free_all_blocks(self):
        """Nothing to free."""

    def n_free_blocks(self):
        return 0


_DEFAULT = MemoryPool()
_DEFAULT_PINNED = PinnedMemoryPool()


def get_default_memory_pool():
    """cupy.get_default_memory_pool: the one :class:`MemoryPool`."""
    return _DEFAULT


def get_default_pinned_memory_pool():
    """cupy.get_default_pinned_memory_pool: the one :class:`PinnedMemoryPool`."""
    return _DEFAULT_PINNED
