#include "engine/ir/shape.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpuflow {

absl::StatusOr<int64_t> CheckedNumElements(absl::Span<const int64_t> dims) {
  int64_t n = 1;
  bool overflow = false;
  bool empty = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("dimension ", i, " is negative (", dims[i], ")"));
    }
    if (dims[i] == 0) {
      empty = true;
    } else if (!overflow && n > kMaxElements / dims[i]) {
      overflow = true;
    } else if (!overflow) {
      n *= dims[i];
    }
  }
  // An empty array has no elements whatever its other dimensions are.
  if (empty) return 0;
  if (overflow) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape (", absl::StrJoin(dims, ", "), ") has more than 2^62 elements"));
  }
  return n;
}

absl::StatusOr<Shape> Shape::Create(absl::Span<const int64_t> dims) {
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", dims.size(), " is over the maximum of ", kMaxRank));
  }
  absl::StatusOr<int64_t> n = CheckedNumElements(dims);
  if (!n.ok()) return n.status();
  Shape shape;
  shape.dims_.assign(dims.begin(), dims.end());
  shape.num_elements_ = *n;
  return shape;
}

std::string Shape::ToString() const {
  if (dims_.size() == 1) return absl::StrCat("(", dims_[0], ",)");
  return absl::StrCat("(", absl::StrJoin(dims_, ", "), ")");
}

absl::StatusOr<int64_t> ByteSize(const Shape& shape, DType dtype) {
  const int64_t itemsize = ItemSize(dtype);
  if (shape.num_elements() > kMaxElements / itemsize) {
    return absl::InvalidArgumentError(absl::StrCat("array of shape ", shape.ToString(),
                                                   " and dtype ", DTypeName(dtype),
                                                   " exceeds 2^62 bytes"));
  }
  return shape.num_elements() * itemsize;
}

}  // namespace gpuflow
