// The shape ops: reshape, transpose, broadcast_to, expand_dims, squeeze,
// slice, concatenate and stack, and the gathers take and take_along_axis.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/broadcast.h"
#include "engine/ir/ops_internal.h"
#include "engine/ir/promotion.h"
#include "engine/ir/status_macros_internal.h"

namespace gpuflow::internal {
namespace {

// Non-ufunc ops (reductions, shape ops, matmul, ...) see a Python scalar as
// NumPy's asarray does: a strong array of the literal's own dtype.
std::vector<ValueType> AsStrong(Inputs in) {
  std::vector<ValueType> out(in.begin(), in.end());
  for (ValueType& t : out) t.weak = false;
  return out;
}

absl::StatusOr<InferredNode> InferReshape(Inputs in, AttrMap& attrs) {
  const Shape& shape = in[0].shape;
  const std::vector<int64_t> requested = *Get<std::vector<int64_t>>(attrs, "shape");
  if (requested.size() > static_cast<size_t>(kMaxRank)) {
    return Invalid("shape has ", requested.size(), " dimensions, more than the maximum of ",
                   kMaxRank);
  }
  std::vector<int64_t> dims = requested;
  const auto cannot = [&] {
    return Invalid("cannot reshape array of size ", shape.num_elements(), " into shape ",
                   FormatDims(requested));
  };
  int unknown = -1;
  int64_t known = 1;  // product of the other dims, saturated above kMaxElements
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (unknown >= 0) return Invalid("can only specify one unknown dimension (-1)");
      unknown = static_cast<int>(i);
    } else if (dims[i] < 0) {
      return Invalid("negative dimension ", dims[i], " in shape ", FormatDims(dims));
    } else if (dims[i] == 0 || known == 0) {
      known = 0;
    } else {
      known = known > kMaxElements / dims[i] ? kMaxElements + 1 : known * dims[i];
    }
  }
  if (unknown >= 0) {
    if (known == 0 || shape.num_elements() % known != 0) return cannot();
    dims[unknown] = shape.num_elements() / known;
  } else if (known != shape.num_elements()) {
    return cannot();
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  attrs["shape"] = dims;
  return Inferred(in[0].dtype, std::move(out), in[0].dtype);
}

absl::StatusOr<InferredNode> InferTranspose(Inputs in, AttrMap& attrs) {
  const Shape& shape = in[0].shape;
  const int rank = shape.rank();
  std::vector<int64_t> perm;
  if (std::optional<std::vector<int64_t>> axes = Get<std::vector<int64_t>>(attrs, "axes")) {
    if (static_cast<int>(axes->size()) != rank) {
      return Invalid("axes ", FormatDims(*axes), " don't match an array of rank ", rank);
    }
    std::vector<bool> seen(rank, false);
    for (int64_t axis : *axes) {
      GPUFLOW_IR_ASSIGN_OR_RETURN(const int64_t a, NormalizeAxis(axis, rank));
      if (seen[a]) return Invalid("repeated axis ", a, " in transpose axes ", FormatDims(*axes));
      seen[a] = true;
      perm.push_back(a);
    }
  } else {
    for (int i = rank - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<int64_t> dims;
  for (int64_t a : perm) dims.push_back(shape.dim(static_cast<int>(a)));
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  attrs["axes"] = perm;
  return Inferred(in[0].dtype, std::move(out), in[0].dtype);
}

absl::StatusOr<InferredNode> InferBroadcastTo(Inputs in, AttrMap& attrs) {
  const std::vector<int64_t> dims = *Get<std::vector<int64_t>>(attrs, "shape");
  for (int64_t d : dims) {
    if (d < 0) return Invalid("negative dimension ", d, " in shape ", FormatDims(dims));
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  GPUFLOW_IR_RETURN_IF_ERROR(CheckBroadcastableTo(in[0].shape, out));
  return Inferred(in[0].dtype, std::move(out), in[0].dtype);
}

absl::StatusOr<InferredNode> InferExpandDims(Inputs in, AttrMap& attrs) {
  const Shape& shape = in[0].shape;
  const std::vector<int64_t> given = *Get<std::vector<int64_t>>(attrs, "axes");
  if (given.size() > static_cast<size_t>(kMaxRank - shape.rank())) {
    return Invalid("expand_dims to rank ", static_cast<int64_t>(shape.rank() + given.size()),
                   " is over the maximum of ", kMaxRank);
  }
  const int out_rank = shape.rank() + static_cast<int>(given.size());
  GPUFLOW_IR_ASSIGN_OR_RETURN(const std::vector<int64_t> axes,
                              NormalizeAxes(given, out_rank, "axes"));
  std::vector<int64_t> dims;
  int next = 0;
  for (int i = 0; i < out_rank; ++i) {
    dims.push_back(std::binary_search(axes.begin(), axes.end(), i) ? 1 : shape.dim(next++));
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  attrs["axes"] = axes;
  return Inferred(in[0].dtype, std::move(out), in[0].dtype);
}

absl::StatusOr<InferredNode> InferSqueeze(Inputs in, AttrMap& attrs) {
  const Shape& shape = in[0].shape;
  std::vector<int64_t> axes;
  if (std::optional<std::vector<int64_t>> given = Get<std::vector<int64_t>>(attrs, "axes")) {
    GPUFLOW_IR_ASSIGN_OR_RETURN(axes, NormalizeAxes(*given, shape.rank(), "axes"));
    for (int64_t a : axes) {
      if (shape.dim(static_cast<int>(a)) != 1) {
        return Invalid("cannot squeeze axis ", a, " of size ", shape.dim(static_cast<int>(a)),
                       " (only axes of size 1)");
      }
    }
  } else {
    for (int i = 0; i < shape.rank(); ++i) {
      if (shape.dim(i) == 1) axes.push_back(i);
    }
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, ReducedShape(shape, axes, /*keepdims=*/false));
  attrs["axes"] = axes;
  return Inferred(in[0].dtype, std::move(out), in[0].dtype);
}

// Python's slice.indices(): the first index taken and the count, for one axis
// of size `len` (step != 0). Bounds are clamped; no arithmetic overflows for
// any int64 start, stop and step.
std::pair<int64_t, int64_t> SliceAxis(int64_t start, int64_t stop, int64_t step, int64_t len) {
  const auto clamp = [&](int64_t v, int64_t lo, int64_t hi) {
    if (v < 0) v = v < -len ? lo : v + len;  // v + len cannot overflow: v >= -len
    return std::clamp(v, lo, hi);
  };
  if (step > 0) {
    start = clamp(start, 0, len);
    stop = clamp(stop, 0, len);
    if (start >= stop) return {0, 0};
    const uint64_t span = static_cast<uint64_t>(stop - start);
    return {start, static_cast<int64_t>((span - 1) / static_cast<uint64_t>(step) + 1)};
  }
  start = clamp(start, -1, len - 1);
  stop = clamp(stop, -1, len - 1);
  if (stop >= start) return {0, 0};
  const uint64_t span = static_cast<uint64_t>(start - stop);
  const uint64_t magnitude = 0 - static_cast<uint64_t>(step);  // exact for INT64_MIN too
  return {start, static_cast<int64_t>((span - 1) / magnitude + 1)};
}

absl::StatusOr<InferredNode> InferSlice(Inputs in, AttrMap& attrs) {
  const Shape& shape = in[0].shape;
  const int rank = shape.rank();
  const std::vector<int64_t> starts = *Get<std::vector<int64_t>>(attrs, "starts");
  const std::vector<int64_t> stops = *Get<std::vector<int64_t>>(attrs, "stops");
  const size_t k = starts.size();
  const std::vector<int64_t> steps =
      Get<std::vector<int64_t>>(attrs, "steps").value_or(std::vector<int64_t>(k, 1));
  if (stops.size() != k || steps.size() != k) {
    return Invalid("'starts', 'stops' and 'steps' must have the same length, got ", k, ", ",
                   stops.size(), " and ", steps.size());
  }
  std::vector<int64_t> axes;
  if (std::optional<std::vector<int64_t>> given = Get<std::vector<int64_t>>(attrs, "axes")) {
    if (given->size() != k) {
      return Invalid("'axes' must have one entry per start (", k, "), got ", given->size());
    }
    for (int64_t axis : *given) {
      GPUFLOW_IR_ASSIGN_OR_RETURN(const int64_t a, NormalizeAxis(axis, rank));
      if (std::find(axes.begin(), axes.end(), a) != axes.end()) {
        return Invalid("'axes' names axis ", a, " more than once");
      }
      axes.push_back(a);
    }
  } else {
    if (static_cast<int64_t>(k) > rank) {
      return Invalid("too many indices: ", k, " slices for an array of dimension ", rank);
    }
    axes = AllAxes(static_cast<int>(k));
  }
  std::vector<int64_t> first(rank, 0), step_out(rank, 1),
      dims(shape.dims().begin(), shape.dims().end());
  for (size_t i = 0; i < k; ++i) {
    if (steps[i] == 0) return Invalid("slice step cannot be zero");
    const int a = static_cast<int>(axes[i]);
    const auto [start, count] = SliceAxis(starts[i], stops[i], steps[i], shape.dim(a));
    first[a] = count == 0 ? 0 : start;
    step_out[a] = steps[i];
    dims[a] = count;
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  attrs.erase("stops");
  attrs.erase("axes");
  attrs["starts"] = first;
  attrs["steps"] = step_out;
  return Inferred(in[0].dtype, std::move(out), in[0].dtype);
}

absl::StatusOr<InferredNode> InferConcatenate(Inputs in, AttrMap& attrs) {
  const Shape& first = in[0].shape;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].shape.rank() == 0) {
      return Invalid("zero-dimensional arrays cannot be concatenated (input ", i, ")");
    }
    if (in[i].shape.rank() != first.rank()) {
      return Invalid(
          "all the input arrays must have the same number of dimensions, but input 0 "
          "has ",
          first.rank(), " and input ", i, " has ", in[i].shape.rank());
    }
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(const int64_t axis,
                              NormalizeAxis(Get<int64_t>(attrs, "axis").value_or(0), first.rank()));
  std::vector<int64_t> dims(first.dims().begin(), first.dims().end());
  dims[axis] = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const Shape& s = in[i].shape;
    for (int d = 0; d < s.rank(); ++d) {
      if (d != axis && s.dim(d) != first.dim(d)) {
        return Invalid(
            "all the input array dimensions except for the concatenation axis must "
            "match exactly, but along dimension ",
            d, ", input 0 has size ", first.dim(d), " and input ", i, " has size ", s.dim(d));
      }
    }
    // An axis of an empty input may be as long as INT64_MAX: check before
    // adding.
    if (s.dim(static_cast<int>(axis)) > kMaxElements - dims[axis]) {
      return Invalid("concatenated axis is too long (more than 2^62)");
    }
    dims[axis] += s.dim(static_cast<int>(axis));
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  GPUFLOW_IR_ASSIGN_OR_RETURN(const DType dtype, PromoteTypes(AsStrong(in)));
  attrs["axis"] = axis;
  return Inferred(dtype, std::move(out), dtype);
}

absl::StatusOr<InferredNode> InferStack(Inputs in, AttrMap& attrs) {
  const Shape& first = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) {
    if (!(in[i].shape == first)) {
      return Invalid("all input arrays must have the same shape, but input 0 has shape ",
                     first.ToString(), " and input ", i, " has shape ", in[i].shape.ToString());
    }
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(
      const int64_t axis, NormalizeAxis(Get<int64_t>(attrs, "axis").value_or(0), first.rank() + 1));
  std::vector<int64_t> dims(first.dims().begin(), first.dims().end());
  dims.insert(dims.begin() + axis, static_cast<int64_t>(in.size()));
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  GPUFLOW_IR_ASSIGN_OR_RETURN(const DType dtype, PromoteTypes(AsStrong(in)));
  attrs["axis"] = axis;
  return Inferred(dtype, std::move(out), dtype);
}

// NumPy's shape as the "shape mismatch" message prints it: "(2,1)", "(3,)".
std::string CompactDims(absl::Span<const int64_t> dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) absl::StrAppend(&out, i ? "," : "", dims[i]);
  return absl::StrCat(out, dims.size() == 1 ? ",)" : ")");
}

absl::StatusOr<InferredNode> InferTake(Inputs in, AttrMap& attrs) {
  const ValueType& a = in[0];
  const ValueType& idx = in[1];
  if (!IsInteger(idx.dtype) && idx.dtype != DType::kBool) {
    return Invalid("Cannot cast array data from dtype('", DTypeName(idx.dtype),
                   "') to dtype('int64') according to the rule 'same_kind'");
  }
  std::vector<int64_t> dims;
  int64_t axis_size = a.shape.num_elements();
  if (std::optional<int64_t> axis = Get<int64_t>(attrs, "axis")) {
    // NumPy takes a 0-d array as one of shape (1,) here.
    GPUFLOW_IR_ASSIGN_OR_RETURN(const int64_t ax,
                                NormalizeAxis(*axis, std::max(a.shape.rank(), 1)));
    attrs["axis"] = ax;
    const auto& ad = a.shape.dims();
    if (a.shape.rank() > 0) {
      dims.assign(ad.begin(), ad.begin() + ax);
      axis_size = a.shape.dim(static_cast<int>(ax));
    }
    dims.insert(dims.end(), idx.shape.dims().begin(), idx.shape.dims().end());
    if (a.shape.rank() > 0) dims.insert(dims.end(), ad.begin() + ax + 1, ad.end());
  } else {
    dims.assign(idx.shape.dims().begin(), idx.shape.dims().end());
  }
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return Invalid("take's result has ", dims.size(), " dimensions, more than the maximum of ",
                   kMaxRank);
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  if (axis_size == 0 && idx.shape.num_elements() > 0) {
    return Invalid("cannot do a non-empty take from an empty axes.");
  }
  return Inferred(a.dtype, std::move(out), a.dtype);
}

absl::StatusOr<InferredNode> InferTakeAlongAxis(Inputs in, AttrMap& attrs) {
  const ValueType& a = in[0];
  const ValueType& idx = in[1];
  if (!IsInteger(idx.dtype)) return Invalid("`indices` must be an integer array");
  std::vector<int64_t> src(a.shape.dims().begin(), a.shape.dims().end());
  int64_t axis = 0;
  if (std::optional<int64_t> given = Get<int64_t>(attrs, "axis")) {
    GPUFLOW_IR_ASSIGN_OR_RETURN(axis, NormalizeAxis(*given, a.shape.rank()));
    attrs["axis"] = axis;
  } else {
    src = {a.shape.num_elements()};  // the flattened array
  }
  if (static_cast<int>(src.size()) != idx.shape.rank()) {
    return Invalid("`indices` and `arr` must have the same number of dimensions");
  }
  std::vector<int64_t> dims;
  bool fits = true;
  for (int d = 0; d < idx.shape.rank(); ++d) {
    const int64_t i = idx.shape.dim(d);
    if (d == axis || src[d] == i || src[d] == 1) {
      dims.push_back(i);
    } else if (i == 1) {
      dims.push_back(src[d]);
    } else {
      fits = false;
    }
  }
  if (!fits) {
    // NumPy's fancy index: an arange along each other axis, the indices along `axis`.
    std::string shapes;
    for (int d = 0; d < idx.shape.rank(); ++d) {
      std::vector<int64_t> s(idx.shape.rank(), 1);
      if (d == axis) {
        s.assign(idx.shape.dims().begin(), idx.shape.dims().end());
      } else {
        s[d] = src[d];
      }
      absl::StrAppend(&shapes, CompactDims(s), " ");
    }
    return Invalid("shape mismatch: indexing arrays could not be broadcast together with shapes ",
                   shapes);
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create(dims));
  if (src[axis] == 0 && out.num_elements() > 0) {
    return Invalid("index out of bounds: a non-empty take_along_axis from axis ", axis,
                   " of size 0");
  }
  return Inferred(a.dtype, std::move(out), a.dtype);
}

}  // namespace

void AddShapeOps(std::vector<OpDef>& ops) {
  ops.push_back(MakeOp("reshape", OpFamily::kShape, 1, 1,
                       {Attr("shape", AttrType::kInts, true, "new shape; one entry may be -1")},
                       "same elements in a new shape (C order)", InferReshape));
  ops.push_back(
      MakeOp("transpose", OpFamily::kShape, 1, 1,
             {Attr("axes", AttrType::kInts, false, "permutation of the axes (absent: reversed)")},
             "permutes the axes", InferTranspose));
  ops.push_back(MakeOp("broadcast_to", OpFamily::kShape, 1, 1,
                       {Attr("shape", AttrType::kInts, true, "target shape")},
                       "NumPy broadcasting to `shape`", InferBroadcastTo));
  ops.push_back(
      MakeOp("expand_dims", OpFamily::kShape, 1, 1,
             {Attr("axes", AttrType::kInts, true, "positions of the new axes in the result")},
             "inserts axes of size 1, as numpy.expand_dims", InferExpandDims));
  ops.push_back(MakeOp(
      "squeeze", OpFamily::kShape, 1, 1,
      {Attr("axes", AttrType::kInts, false, "axes of size 1 to remove (absent: all of them)")},
      "removes axes of size 1", InferSqueeze));
  ops.push_back(
      MakeOp("slice", OpFamily::kShape, 1, 1,
             {Attr("starts", AttrType::kInts, true, "start per sliced axis (Python semantics)"),
              Attr("stops", AttrType::kInts, true,
                   "stop per sliced axis; INT64_MAX / INT64_MIN for no bound"),
              Attr("steps", AttrType::kInts, false, "step per sliced axis, not 0 (default 1)"),
              Attr("axes", AttrType::kInts, false, "the sliced axes (default 0, 1, ...)")},
             "Python slicing x[start:stop:step] on each named axis, bounds clamped", InferSlice));
  const AttrDef join_axis = Attr("axis", AttrType::kInt, false, "the axis (default 0)");
  ops.push_back(MakeOp("concatenate", OpFamily::kShape, 1, -1, {join_axis},
                       "joins arrays along an existing axis; promoted dtype", InferConcatenate));
  ops.push_back(MakeOp("stack", OpFamily::kShape, 1, -1, {join_axis},
                       "joins arrays of one shape along a new axis; promoted dtype", InferStack));
  ops.push_back(MakeOp(
      "take", OpFamily::kShape, 2, 2,
      {Attr("axis", AttrType::kInt, false, "the axis indexed (absent: the flattened array)")},
      "numpy.take(a, indices, axis) with mode 'raise': the elements of `a` at integer (or bool) "
      "`indices` along `axis`; negative indices count from the end, out-of-bounds ones are an "
      "error; same dtype",
      InferTake));
  ops.push_back(MakeOp(
      "take_along_axis", OpFamily::kShape, 2, 2,
      {Attr("axis", AttrType::kInt, false,
            "the axis indexed (absent: the flattened array; the indices must be 1-D)")},
      "numpy.take_along_axis(arr, indices, axis): integer `indices` of arr's rank, broadcast "
      "with arr along the other axes; negative indices count from the end, out-of-bounds ones "
      "are an error; same dtype",
      InferTakeAlongAxis));
}

}  // namespace gpuflow::internal
