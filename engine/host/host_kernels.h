// Host implementations of every op in the registry except the custom CUDA
// kernels: the CPU backend runs a plan by calling RunNodeOnHost for each
// node, and these results are the reference the CUDA backend is tested
// against.
//
//   std::vector<HostConstView> in = {{x.dtype, x.shape, x_bytes}};
//   HostView out{node.type.output.dtype, node.type.output.shape, out_bytes};
//   absl::Status s = RunNodeOnHost(node, in, out, {});
#ifndef GPUFLOW_ENGINE_HOST_HOST_KERNELS_H_
#define GPUFLOW_ENGINE_HOST_HOST_KERNELS_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "engine/ir/dtype.h"
#include "engine/ir/shape.h"
#include "engine/ir/validate.h"

namespace gpuflow {

// A C-contiguous array in host memory.
struct HostConstView {
  DType dtype = DType::kFloat32;
  Shape shape;
  const std::byte* data = nullptr;
};
struct HostView {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::byte* data = nullptr;
};

struct HostKernelOptions {
  // Worker threads for large arrays; 0: std::thread::hardware_concurrency().
  int threads = 0;
  // Below this many output elements an op runs on the calling thread.
  int64_t min_elements_per_thread = int64_t{1} << 16;
};

// Computes `node` from `inputs` (one per node.inputs, with the types in
// node.input_types; weak scalars arrive as 0-d bool/int64/uint64/float64)
// into `out` (node.type.output's dtype and shape, memory provided by the
// caller). FAILED_PRECONDITION for the custom CUDA kernel ops;
// INVALID_ARGUMENT for data-dependent errors (an empty min/max/argmin).
absl::Status RunNodeOnHost(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                           const HostView& out, const HostKernelOptions& options);

// random_uniform(low, high) in `dtype` (a float dtype): the largest value a
// draw may take. Rounding to the dtype can carry a draw up to `high`; it
// then takes the dtype's largest value below `high` (never below `low`).
// Every backend clamps with this value, so they draw the same numbers.
double RandomUniformTop(double low, double high, DType dtype);

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_HOST_HOST_KERNELS_H_
