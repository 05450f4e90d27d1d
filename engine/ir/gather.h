// The geometry of the gather ops, take and take_along_axis, shared by every
// backend so they read the same elements and report the same errors.
//
//   absl::StatusOr<GatherLayout> g = GatherLayoutOf(node);
//   // output element at coordinates c (over g->dims) is
//   //   src[sum(c_d * src_strides_d) + j * axis_stride]
//   // with j = indices[sum(c_d * index_strides_d)], negative j counted from
//   // axis_size, and j outside [0, axis_size) an error (GatherIndexError).
//
// Pure functions; thread-safe.
#ifndef GPUFLOW_ENGINE_IR_GATHER_H_
#define GPUFLOW_ENGINE_IR_GATHER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/ir/validate.h"

namespace gpuflow {

struct GatherLayout {
  // The output's dims; per output dim, the element strides of the source
  // (0 along the index dims and where the source is broadcast) and of the
  // indices (0 where they are broadcast). Both are C-contiguous.
  std::vector<int64_t> dims;
  std::vector<int64_t> src_strides;
  std::vector<int64_t> index_strides;
  // The indexed axis: its length and the source elements between
  // neighbours along it (the flattened source: its size and 1).
  int64_t axis_size = 0;
  int64_t axis_stride = 1;
  // The axis errors name (0 for the flattened source, as NumPy 2 says:
  // "index 9 is out of bounds for axis 0 with size 6").
  int64_t error_axis = 0;
};

// `node` must be a validated take or take_along_axis node.
absl::StatusOr<GatherLayout> GatherLayoutOf(const ValidatedNode& node);

// NumPy's IndexError text for `index`: "index 7 is out of bounds for axis 0
// with size 5" (NumPy 2's text; NumPy 1 said "for size 5" for
// take_along_axis of the flattened array). The index as
// the indices' dtype holds it: `index_bits` is the element zero-extended
// (unsigned dtypes) or sign-extended (signed) to 64 bits.
std::string GatherIndexError(const GatherLayout& layout, DType index_dtype, uint64_t index_bits);

// INVALID_ARGUMENT with that text.
absl::Status GatherIndexStatus(const GatherLayout& layout, DType index_dtype, uint64_t index_bits);

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_IR_GATHER_H_
