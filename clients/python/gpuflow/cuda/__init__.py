"""gpuflow.cuda: the parts of CuPy's ``cupy.cuda`` that code written for
CuPy asks about without driving a device itself.

gpuflow's devices belong to the server, so there are no streams, events,
devices or allocators to hold here: ``runtime`` answers the questions CuPy's
tests ask of the platform (``runtime.is_hip``), and ``MemoryPool`` /
``PinnedMemoryPool`` are the classes of ``gpuflow.get_default_memory_pool()``
and ``get_default_pinned_memory_pool()``.
"""

from gpuflow._memory_pool import MemoryPool, PinnedMemoryPool
from gpuflow.cuda import runtime

__all__ = ["MemoryPool", "PinnedMemoryPool", "runtime"]
