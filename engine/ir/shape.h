// Array shapes: 0-d (no dimensions), empty (a zero dimension) and large
// (more than 2^31 elements) are all legal; sizes are int64 and every product
// is overflow-checked where a shape enters the system.
//
//   absl::StatusOr<Shape> s = Shape::Create({2, 3});
//   s->num_elements();        // 6
//   s->ToString();            // "(2, 3)"
//   ByteSize(*s, DType::kFloat32);  // 24
#ifndef GPUFLOW_ENGINE_IR_SHAPE_H_
#define GPUFLOW_ENGINE_IR_SHAPE_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/ir/dtype.h"

namespace gpuflow {

// The largest element count or byte size gpuflow accepts (2^62), so that
// sums of a few sizes never overflow int64.
inline constexpr int64_t kMaxElements = int64_t{1} << 62;

// The largest rank of any array: uploads, literals and every inferred shape.
// The one constant every module uses.
inline constexpr int kMaxRank = 64;

// Product of `dims`. INVALID_ARGUMENT for a negative dimension or a product
// above kMaxElements. An empty array (a zero dimension) has 0 elements
// whatever its other dimensions are, so they may exceed 2^62 themselves:
// code that multiplies a subset of a shape's dimensions must check too.
absl::StatusOr<int64_t> CheckedNumElements(absl::Span<const int64_t> dims);

// A validated list of dimensions. Immutable value type.
class Shape {
 public:
  // The 0-d shape.
  Shape() = default;

  // Validates dims (see CheckedNumElements) and the rank (at most
  // kMaxRank).
  static absl::StatusOr<Shape> Create(absl::Span<const int64_t> dims);
  static absl::StatusOr<Shape> Create(std::initializer_list<int64_t> dims) {
    return Create(absl::Span<const int64_t>(dims.begin(), dims.size()));
  }

  int rank() const { return static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[i]; }
  absl::Span<const int64_t> dims() const { return dims_; }
  int64_t num_elements() const { return num_elements_; }

  // NumPy's repr of a shape tuple: "()", "(5,)", "(2, 3)".
  std::string ToString() const;

  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }

 private:
  std::vector<int64_t> dims_;
  int64_t num_elements_ = 1;
};

// num_elements * itemsize. INVALID_ARGUMENT above kMaxElements bytes.
absl::StatusOr<int64_t> ByteSize(const Shape& shape, DType dtype);

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_IR_SHAPE_H_
