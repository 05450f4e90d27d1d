// The launch log: with GPUFLOW_LAUNCH_LOG=<dir> in its environment, a
// process writes every kernel launch, cuBLAS call and device copy the CUDA
// backend issues, every kernel it asks the loader for and every step it runs
// on the host, a line each, to <dir>/launches-<pid>.log. Device addresses
// are written as "P", so the logs of two builds over the same requests are
// equal when the two issue the same work: scripts/compare_launch_logs.py
// compares them (a refactor's check that generated sources and launch words
// are byte-identical; engine/cuda/README.md). Off (one branch) otherwise.
//
//   launch_log::Kernel(func, grid, block, shared_bytes, words);
//   // K gf_elementwise grid=1056,1,1 block=256,1,1 shared=0 words=P,P,1024,...
#ifndef GPUFLOW_ENGINE_CUDA_LAUNCH_LOG_H_
#define GPUFLOW_ENGINE_CUDA_LAUNCH_LOG_H_

#include <cuda_runtime_api.h>

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace gpuflow::cuda::launch_log {

// Whether GPUFLOW_LAUNCH_LOG is set (read once).
bool Enabled();

// A kernel launch: `func` as passed to cudaLaunchKernel, and its argument
// words (one 8-byte word per slot; device addresses are written as "P").
void Kernel(const void* func, dim3 grid, dim3 block, size_t shared_bytes,
            absl::Span<const uint64_t> words);

// A kernel asked of the loader: its name and a digest of its module (the
// NVRTC options and the whole source).
void Source(absl::string_view name, absl::string_view module_key);

// Any other work: a cuBLAS call, a copy, a host step.
void Note(absl::string_view line);

}  // namespace gpuflow::cuda::launch_log

#endif  // GPUFLOW_ENGINE_CUDA_LAUNCH_LOG_H_
