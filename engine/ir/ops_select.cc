// The selection ops: scatter (writes into a copy of an array at flat
// indices), flatnonzero (the flat indices of the nonzero elements, with
// the count fixed by the client in advance) and histogram (counts or
// weight sums per bin between given edges).
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "engine/ir/broadcast.h"
#include "engine/ir/ops_internal.h"
#include "engine/ir/promotion.h"
#include "engine/ir/status_macros_internal.h"

namespace gpuflow::internal {
namespace {

absl::StatusOr<InferredNode> InferScatter(Inputs in, AttrMap& attrs) {
  const ValueType& a = in[0];
  const ValueType& idx = in[1];
  const ValueType& updates = in[2];
  if (a.weak) return Invalid("scatter writes into an array, not a Python scalar");
  if (!IsInteger(idx.dtype)) {
    return Invalid("Cannot cast array data from dtype('", DTypeName(idx.dtype),
                   "') to dtype('int64') according to the rule 'same_kind'");
  }
  const std::string mode = Get<std::string>(attrs, "mode").value_or("set");
  if (mode != "set" && mode != "add" && mode != "mul" && mode != "min" && mode != "max") {
    return Invalid("scatter mode must be one of 'set', 'add', 'mul', 'min' or 'max', got '", mode,
                   "'");
  }
  attrs["mode"] = mode;
  if (absl::Status s = CheckBroadcastableTo(updates.shape, idx.shape); !s.ok()) {
    return Invalid("shape mismatch: value array of shape ", updates.shape.ToString(),
                   " could not be broadcast to indexing result of shape ", idx.shape.ToString());
  }
  if (a.shape.num_elements() == 0 && idx.shape.num_elements() > 0) {
    return Invalid("cannot replace elements of an empty array");
  }
  return Inferred(a.dtype, a.shape, a.dtype);
}

absl::StatusOr<InferredNode> InferFlatNonzero(Inputs in, AttrMap& attrs) {
  const int64_t size = *Get<int64_t>(attrs, "size");
  if (size < 0 || size > in[0].shape.num_elements()) {
    return Invalid("flatnonzero size ", size, " is outside [0, ", in[0].shape.num_elements(),
                   "], the input's number of elements");
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, Shape::Create({size}));
  return Inferred(DType::kInt64, std::move(out), DType::kInt64);
}

// histogram(a, edges[, weights]): numpy.histogram's counting once the
// client has its edges. "uniform" takes NumPy's equal-bins formula, whose
// arithmetic dtypes and values the client names ("sub_dtype",
// "div_dtype", "first_edge", "norm_denom"); compute_dtype is the dtype the
// values are compared to the edges in (the edges' for uniform bins, else
// the promotion of both, as searchsorted).
absl::StatusOr<InferredNode> InferHistogram(Inputs in, AttrMap& attrs) {
  const ValueType& a = in[0];
  const ValueType& edges = in[1];
  for (const ValueType* t : {&a, &edges}) {
    if (IsComplex(t->dtype)) {
      return Invalid("histogram does not take dtype ", DTypeName(t->dtype));
    }
  }
  if (edges.shape.rank() != 1 || edges.shape.dim(0) < 1) {
    return Invalid("histogram's edges must be 1-D with at least one element, got shape ",
                   FormatDims(edges.shape.dims()));
  }
  DType out = DType::kInt64;
  if (in.size() == 3) {
    const ValueType& w = in[2];
    if (!(w.shape == a.shape)) return Invalid("weights should have the same shape as a.");
    if (IsComplex(w.dtype)) {
      return Invalid("histogram weights of dtype ", DTypeName(w.dtype), " are not supported");
    }
    out = w.dtype;
  }
  const bool uniform = Get<bool>(attrs, "uniform").value_or(false);
  attrs["uniform"] = uniform;
  DType compute = PromoteDTypes(a.dtype, edges.dtype);
  if (uniform) {
    if (!IsFloat(edges.dtype) || edges.shape.dim(0) < 2) {
      return Invalid("uniform histogram bins need at least two float edges, got ",
                     DTypeName(edges.dtype), FormatDims(edges.shape.dims()));
    }
    const std::optional<double> first = GetFloat(attrs, "first_edge");
    const std::optional<double> denom = GetFloat(attrs, "norm_denom");
    if (!first.has_value() || !denom.has_value()) {
      return Invalid("uniform histogram bins need 'first_edge' and 'norm_denom'");
    }
    if (!std::isfinite(*first) || !std::isfinite(*denom) || !(*denom > 0)) {
      return Invalid(
          "uniform histogram bins need a finite 'first_edge' and a positive finite "
          "'norm_denom', got ",
          *first, " and ", *denom);
    }
    for (const char* name : {"sub_dtype", "div_dtype"}) {
      const DType d = Get<DType>(attrs, name).value_or(edges.dtype);
      if (!IsFloat(d)) return Invalid("histogram's ", name, " must be a float dtype");
      attrs[name] = d;
    }
    compute = edges.dtype;
  } else if (out == DType::kBool) {
    // numpy's cumulative path adds int64 cumulative sums into bool counts.
    return Invalid(
        "Cannot cast ufunc 'add' output from dtype('int64') to dtype('bool') with casting rule "
        "'same_kind'");
  }
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape shape, Shape::Create({edges.shape.dim(0) - 1}));
  return Inferred(out, std::move(shape), compute);
}

}  // namespace

void AddSelectionOps(std::vector<OpDef>& ops) {
  ops.push_back(MakeOp(
      "scatter", OpFamily::kShape, 3, 3,
      {Attr("mode", AttrType::kString, false,
            "'set' (default; the last of duplicate indices wins), 'add', 'mul', 'min' or 'max' "
            "(every duplicate combines, as numpy.ufunc.at)")},
      "a copy of `a` whose element a.flat[indices[k]] is set to (or combined with) updates[k]; "
      "integer indices, negative ones counting from the end, out-of-bounds ones an error; "
      "updates broadcast to the indices' shape and converted to a's dtype as cast does; same "
      "dtype and shape as a",
      InferScatter));
  ops.push_back(MakeOp(
      "flatnonzero", OpFamily::kShape, 1, 1,
      {Attr("size", AttrType::kInt, true,
            "the number of nonzero elements (checked when the node runs)")},
      "numpy.flatnonzero(a): the int64 flat indices of a's nonzero elements in C order (NaN is "
      "nonzero), shape (size,); a run whose input has another count fails",
      InferFlatNonzero));
  ops.push_back(MakeOp(
      "histogram", OpFamily::kShape, 2, 3,
      {Attr("uniform", AttrType::kBool, false,
            "numpy.histogram's equal-bins formula (default false: each value's bin found by "
            "binary search in the edges)"),
       Attr("first_edge", AttrType::kFloat, false, "uniform: the range's first edge"),
       Attr("norm_denom", AttrType::kFloat, false,
            "uniform: last_edge - first_edge as numpy computes it"),
       Attr("sub_dtype", AttrType::kDType, false,
            "uniform: the dtype of (x - first_edge) (default: the edges')"),
       Attr("div_dtype", AttrType::kDType, false,
            "uniform: the dtype of (x - first_edge) / norm_denom * bins (default: the edges')")},
      "numpy.histogram(a, bins=edges, weights=weights)[0] for non-decreasing `edges` (1-D, "
      "len(edges) - 1 bins, the last closed, values outside and NaN ignored): int64 counts, or "
      "per-bin weight sums in the weights' dtype summed as numpy sums them; shape "
      "(len(edges) - 1,)",
      InferHistogram));
}

}  // namespace gpuflow::internal
