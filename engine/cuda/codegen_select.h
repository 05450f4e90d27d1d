// The selection ops' kernels (codegen_select.cc), NVRTC generated:
//
//  - scatter: the output starts as a copy of A (cudaMemcpyAsync); mode
//    "set" then runs a claim pass (each update k stores k + 1 into its
//    target's winner word, 32 bits below 2^30 indices, with atomicMax) and a write pass (the update
//    whose k + 1 is its target's winner writes), so the last duplicate in C order wins, as NumPy
//    and the host kernel; the combining modes run one pass of atomics (native atomicAdd where the
//    hardware has it, else a compare-and-swap on the aligned 32- or 64-bit word holding the
//    element: 8- and 16-bit types, float16, bfloat16, mul, min, max).
//    Out-of-bounds indices store the index into the error word.
//  - flatnonzero: stream compaction in three kernels: per-tile counts
//    (tiles of kTile elements), one block scanning the counts (and storing
//    count + 1 into the error word when the count is not the node's size),
//    and a write pass ranking each tile's nonzero elements with warp ballots
//    so the indices come out in C order.
#ifndef GPUFLOW_ENGINE_CUDA_CODEGEN_SELECT_H_
#define GPUFLOW_ENGINE_CUDA_CODEGEN_SELECT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/ir/validate.h"

namespace gpuflow::cuda {

struct SelectKernels {
  enum class Kind : uint8_t { kScatterSet, kScatterCombine, kFlatNonzero };
  Kind kind = Kind::kScatterSet;
  // One source holding every kernel of the node, and their names in launch
  // order: scatter set: claim, write; combine: combine; flatnonzero: count,
  // scan, write.
  std::string source;
  std::vector<std::string> names;
  // Scatter: the number of indices, A's elements and the launch words after
  // the pointers. Kernel words:
  //   [out] [indices] [updates] [error word] [winners] [count] [size]
  //   [index dims (rank)] [update strides (rank)]
  // flatnonzero ([input] [out] [tile counts] [error word] [n] [size]
  //   [tiles]).
  int64_t count = 0;
  int64_t size = 0;
  // Scatter set: the bytes of a winner word (4 below 2^30 indices, else 8).
  int winner_bytes = 8;
  std::vector<uint64_t> words;
};

// Elements per flatnonzero tile: 256 threads of 8 elements.
inline constexpr int64_t kSelectTile = 2048;

// Empty for a node that is not scatter or flatnonzero.
absl::StatusOr<std::optional<SelectKernels>> GenerateSelectKernels(const ValidatedNode& node);

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_CODEGEN_SELECT_H_
