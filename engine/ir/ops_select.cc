// The selection ops: scatter (writes into a copy of an array at flat
// indices) and flatnonzero (the flat indices of the nonzero elements, with
// the count fixed by the client in advance).
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "engine/ir/broadcast.h"
#include "engine/ir/ops_internal.h"
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
}

}  // namespace gpuflow::internal
