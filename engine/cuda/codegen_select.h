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
#include "engine/cuda/codegen.h"
#include "engine/ir/validate.h"
#include "engine/plan/plan.h"

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

// histogram (codegen_histogram.cc): the host kernel's bins on the device.
// Counts: one kernel, each block counting into 32-bit bins in shared
// memory (the edges there too) and adding them to the int64 output
// (zeroed first) with atomics; past kHistogramSharedBins bins an edges
// kernel converts the edges into scratch and the counts go straight to the
// output with atomics. Weights (uniform bins only; the cumulative path of
// given edges runs on the host): a block per numpy block of
// kHistogramChunk elements sums its bins in float64 (shared-memory atomics,
// so in no fixed order), into a partials array (blocks x bins, scratch),
// then a thread per bin adds the blocks in order in the weights' dtype.
struct HistogramKernels {
  std::string source;
  // In launch order: [edges] count, or [edges] partial combine.
  std::vector<std::string> names;
  bool weighted = false;
  bool shared = true;
  int64_t n = 0;
  int64_t bins = 0;
  int64_t chunks = 0;  // numpy blocks of kHistogramChunk
  // [a] [edges] [out] [n] [bins] [first_edge bits] [norm_denom bits]
  // [weights] [partials] [edges scratch] [chunks]
  std::vector<uint64_t> words;
};

inline constexpr int64_t kHistogramSharedBins = 2047;
inline constexpr int64_t kHistogramChunk = 65536;  // numpy.histogram's BLOCK

// Empty for a node that is not histogram, or one the host must run.
absl::StatusOr<std::optional<HistogramKernels>> GenerateHistogramKernels(const ValidatedNode& node);

// Empty for a node that is not scatter or flatnonzero, or reads complex
// values (the host path runs those).
absl::StatusOr<std::optional<SelectKernels>> GenerateSelectKernels(const ValidatedNode& node);

// The three stream-compaction kernels `name`_count, _scan and _write over
// elements e < n in tiles of kSelectTile: `decl` declares what `flag` (code
// setting bool f for element e) and `write` (a statement storing element e
// at output position pos) read, from words other than 2..6; words 2..6 are
// [tile counts] [error word] [n] [size] [tiles] (the scan stores count + 1
// into the error word when the count is not `size`); `words` in all.
std::string CompactionKernels(const std::string& name, const std::string& decl,
                              const std::string& flag, const std::string& write, int words);

// A compress step (the planner's fusion of take(a, flatnonzero(mask, size))
// over the flattened a, mask of a's shape, with the mask's elementwise
// producers): the compaction kernels writing a's selected elements
// straight to the output, the mask computed in them. Words: [out] [unused]
// [tile counts] [error word] [n] [size] [tiles] [pointer inputs] [scalars].
// Empty when the step is not one.
struct CompressKernels {
  std::string source;
  std::vector<std::string> names;  // count, scan, write
  std::vector<StepInput> inputs;
  int flatnonzero = -1;  // the flatnonzero node (its errors)
  int64_t n = 0;
  int64_t size = 0;
  int64_t tiles = 0;
};
absl::StatusOr<std::optional<CompressKernels>> GenerateCompressKernels(const ValidatedGraph& graph,
                                                                       const Step& step);

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_CODEGEN_SELECT_H_
