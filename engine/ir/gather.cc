#include "engine/ir/gather.h"

#include <string>
#include <variant>

#include "absl/strings/str_cat.h"

namespace gpuflow {
namespace {

std::vector<int64_t> ContiguousStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.rank(), 1);
  for (int d = shape.rank() - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape.dim(d + 1);
  return strides;
}

const int64_t* AxisAttr(const ValidatedNode& node) {
  const auto it = node.attrs.find("axis");
  if (it == node.attrs.end()) return nullptr;
  return std::get_if<int64_t>(&it->second);
}

}  // namespace

absl::StatusOr<GatherLayout> GatherLayoutOf(const ValidatedNode& node) {
  if (node.op == nullptr || node.input_types.size() != 2 ||
      (node.op->name != "take" && node.op->name != "take_along_axis")) {
    return absl::InvalidArgumentError("not a take or take_along_axis node");
  }
  const Shape& src = node.input_types[0].shape;
  const Shape& idx = node.input_types[1].shape;
  const Shape& out = node.type.output.shape;
  const std::vector<int64_t> src_strides = ContiguousStrides(src);
  const std::vector<int64_t> idx_strides = ContiguousStrides(idx);
  GatherLayout g;
  g.dims.assign(out.dims().begin(), out.dims().end());
  const int64_t* axis = AxisAttr(node);
  const bool take = node.op->name == "take";
  if (axis == nullptr || (take && src.rank() == 0)) {
    // The flattened source (a 0-d source is one element along axis 0).
    if (!(out == idx)) return absl::InvalidArgumentError("gather output is not the indices' shape");
    g.src_strides.assign(out.rank(), 0);
    g.index_strides = idx_strides;
    g.axis_size = src.num_elements();
    g.axis_stride = 1;
    g.error_axis = 0;
    return g;
  }
  const int64_t a = *axis;
  if (a < 0 || a >= src.rank()) return absl::InvalidArgumentError("gather axis out of range");
  g.axis_size = src.dim(static_cast<int>(a));
  g.axis_stride = src_strides[a];
  g.error_axis = a;
  if (take) {
    // src[:a] + indices + src[a+1:].
    if (out.rank() != src.rank() - 1 + idx.rank()) {
      return absl::InvalidArgumentError("take output rank does not match");
    }
    for (int d = 0; d < out.rank(); ++d) {
      if (d < a) {
        g.src_strides.push_back(src_strides[d]);
        g.index_strides.push_back(0);
      } else if (d < a + idx.rank()) {
        g.src_strides.push_back(0);
        g.index_strides.push_back(idx_strides[d - a]);
      } else {
        g.src_strides.push_back(src_strides[d - idx.rank() + 1]);
        g.index_strides.push_back(0);
      }
    }
    return g;
  }
  if (out.rank() != src.rank() || idx.rank() != src.rank()) {
    return absl::InvalidArgumentError("take_along_axis ranks do not match");
  }
  for (int d = 0; d < out.rank(); ++d) {
    g.src_strides.push_back(d == a || src.dim(d) == 1 ? 0 : src_strides[d]);
    g.index_strides.push_back(idx.dim(d) == 1 ? 0 : idx_strides[d]);
  }
  return g;
}

std::string GatherIndexError(const GatherLayout& layout, DType index_dtype, uint64_t index_bits) {
  const std::string index = KindOf(index_dtype) == DTypeKind::kUnsigned
                                ? absl::StrCat(index_bits)
                                : absl::StrCat(static_cast<int64_t>(index_bits));
  return absl::StrCat("index ", index, " is out of bounds for axis ", layout.error_axis,
                      " with size ", layout.axis_size);
}

absl::Status GatherIndexStatus(const GatherLayout& layout, DType index_dtype, uint64_t index_bits) {
  return absl::InvalidArgumentError(GatherIndexError(layout, index_dtype, index_bits));
}

}  // namespace gpuflow
