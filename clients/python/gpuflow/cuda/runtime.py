"""gpuflow.cuda.runtime: ``cupy.cuda.runtime``'s platform flag.

``is_hip`` is False: gpuflow's servers run the CUDA backend (or the CPU
one), never ROCm/HIP, so code that branches on ``runtime.is_hip`` takes its
CUDA path.
"""

is_hip = False

__all__ = ["is_hip"]
