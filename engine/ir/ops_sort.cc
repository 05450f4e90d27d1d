// The sorting ops: sort and argsort (along an axis, or over the flattened
// array) and searchsorted (positions in a sorted 1-D array).
//
// The order is NumPy's: NaN after everything else whatever its sign bit,
// -0.0 equal to 0.0, and every sort stable (argsort's ties keep their
// index order, as kind="stable").
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/ops_internal.h"
#include "engine/ir/promotion.h"
#include "engine/ir/status_macros_internal.h"

namespace gpuflow::internal {
namespace {

absl::Status CheckSortable(DType dtype, absl::string_view op) {
  switch (KindOf(dtype)) {
    case DTypeKind::kBool:
    case DTypeKind::kSigned:
    case DTypeKind::kUnsigned:
    case DTypeKind::kFloat:
      return absl::OkStatus();
    case DTypeKind::kComplex:  // NumPy's lexicographic order: not yet
      break;
  }
  return Invalid(op, " does not take dtype ", DTypeName(dtype));
}

// sort argsort: "axis" normalised, or absent for the flattened array (a 1-D
// result). A 0-d array has no axis to sort along (NumPy's AxisError).
InferFn SortInfer(std::string op, bool indices) {
  return [op = std::move(op), indices](Inputs in, AttrMap& attrs) -> absl::StatusOr<InferredNode> {
    const ValueType& a = in[0];
    GPUFLOW_IR_RETURN_IF_ERROR(CheckSortable(a.dtype, op));
    const DType out = indices ? DType::kInt64 : a.dtype;
    const std::optional<int64_t> axis = Get<int64_t>(attrs, "axis");
    if (!axis.has_value()) {
      GPUFLOW_IR_ASSIGN_OR_RETURN(Shape flat, Shape::Create({a.shape.num_elements()}));
      return Inferred(out, std::move(flat), a.dtype);
    }
    GPUFLOW_IR_ASSIGN_OR_RETURN(const int64_t ax, NormalizeAxis(*axis, a.shape.rank()));
    attrs["axis"] = ax;
    return Inferred(out, a.shape, a.dtype);
  };
}

// searchsorted: both inputs compared in their promoted dtype (NumPy casts
// the values and the sorted array to a common type, a Python scalar taken
// at its own dtype, not weakly: int8 against 1000 compares in int64);
// "side" is "left" or "right" (default "left", always present after
// infer).
absl::StatusOr<InferredNode> InferSearchSorted(Inputs in, AttrMap& attrs) {
  const ValueType& a = in[0];
  const ValueType& v = in[1];
  GPUFLOW_IR_RETURN_IF_ERROR(CheckSortable(a.dtype, "searchsorted"));
  GPUFLOW_IR_RETURN_IF_ERROR(CheckSortable(v.dtype, "searchsorted"));
  if (a.shape.rank() != 1) {
    return Invalid("searchsorted's sorted input must be 1-D, got shape ",
                   FormatDims(a.shape.dims()));
  }
  const std::string side = Get<std::string>(attrs, "side").value_or("left");
  if (side != "left" && side != "right") {
    return Invalid("side must be 'left' or 'right' (got '", side, "')");
  }
  attrs["side"] = side;
  return Inferred(DType::kInt64, v.shape, PromoteDTypes(a.dtype, v.dtype));
}

}  // namespace

void AddSortOps(std::vector<OpDef>& ops) {
  const AttrDef axis =
      Attr("axis", AttrType::kInt, false, "the axis sorted along (absent: the flattened array)");
  ops.push_back(MakeOp("sort", OpFamily::kSort, 1, 1, {axis},
                       "numpy.sort(a, axis, kind='stable'): NaN last, -0.0 equal to 0.0; same "
                       "dtype (absent axis: the flattened array, 1-D)",
                       SortInfer("sort", false)));
  ops.push_back(MakeOp("argsort", OpFamily::kSort, 1, 1, {axis},
                       "numpy.argsort(a, axis, kind='stable'): the indices that sort `a` along "
                       "axis, ties in index order, NaN last; int64",
                       SortInfer("argsort", true)));
  ops.push_back(MakeOp(
      "searchsorted", OpFamily::kSort, 2, 2,
      {Attr("side", AttrType::kString, false,
            "\"left\" (default: the first suitable position) or \"right\" (the last)")},
      "numpy.searchsorted(a, v, side): where the values `v` (any shape) would go in the sorted "
      "1-D `a` (NaN after everything, as sort orders it), compared in the promoted dtype; int64 "
      "of v's shape",
      InferSearchSorted));
}

}  // namespace gpuflow::internal
