// What the op family files (ops_<family>.cc) share: building an OpDef, reading
// attributes, normalising axes, and the adders that op_registry.cc's
// BuildOps() calls. Not for use outside engine/ir.
//
//   void AddLinalgOps(std::vector<OpDef>& ops) {
//     ops.push_back(MakeOp("dot", OpFamily::kLinalg, 2, 2, {}, "numpy.dot ...", InferDot));
//   }
#ifndef GPUFLOW_ENGINE_IR_OPS_INTERNAL_H_
#define GPUFLOW_ENGINE_IR_OPS_INTERNAL_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/ir/graph.h"
#include "engine/ir/op_registry.h"
#include "engine/ir/shape.h"

namespace gpuflow::internal {

// ---- the family adders ------------------------------------------------------
// Each appends its family's OpDefs to `ops`, in the order BuildOps() has
// always listed them (OpRegistry sorts by name afterwards).

void AddElementwiseOps(std::vector<OpDef>& ops);   // ops_elementwise.cc
void AddReductionOps(std::vector<OpDef>& ops);     // ops_reduction.cc, scans included
void AddLinalgOps(std::vector<OpDef>& ops);        // ops_linalg.cc
void AddShapeOps(std::vector<OpDef>& ops);         // ops_shape.cc
void AddSelectionOps(std::vector<OpDef>& ops);     // ops_select.cc
void AddCreationOps(std::vector<OpDef>& ops);      // ops_creation.cc
void AddCustomKernelOps(std::vector<OpDef>& ops);  // ops_custom_kernel.cc
void AddSortOps(std::vector<OpDef>& ops);          // ops_sort.cc

// ---- building an OpDef ------------------------------------------------------

using Inputs = absl::Span<const ValueType>;
using InferFn = std::function<absl::StatusOr<InferredNode>(Inputs, AttrMap&)>;

AttrDef Attr(std::string name, AttrType type, bool required, std::string doc);

// An OpDef whose infer checks arity and attribute types itself (CheckArity,
// CheckAttrs), runs `infer` on a copy of the attributes (the caller's are
// replaced only on success), and ends with float attributes as doubles.
OpDef MakeOp(std::string name, OpFamily family, int min_inputs, int max_inputs,
             std::vector<AttrDef> attrs, std::string doc, InferFn infer);

// The dtype rule of the float-valued ops (FloatResultDType), appended to the
// docs of sqrt ... erf, logsumexp, softmax and log_softmax.
inline constexpr char kFloatResultDoc[] =
    "; floats keep their dtype, bool/int8/uint8 -> float16, int16/uint16 -> float32, wider "
    "ints -> float64";

// The "axes" and "keepdims" attributes of the reductions and reduction_kernel.
AttrDef ReductionAxesAttr();
AttrDef KeepdimsAttr();

// ---- results and errors -------------------------------------------------------

template <typename... Args>
absl::Status Invalid(const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat(args...));
}

InferredNode Inferred(DType dtype, Shape shape, DType compute);

// "(4, -1)": a dims list as NumPy prints a shape tuple. A list from a
// request may be long: past kMaxRank entries it is cut ("(1, 2, ..., 1000
// entries)").
std::string FormatDims(absl::Span<const int64_t> dims);

// ---- attribute access (types were checked by CheckAttrs) -------------------

template <typename T>
std::optional<T> Get(const AttrMap& attrs, absl::string_view name) {
  const auto it = attrs.find(name);
  if (it == attrs.end()) return std::nullopt;
  if (const T* v = std::get_if<T>(&it->second)) return *v;
  return std::nullopt;
}

// A float attribute, which may hold an int.
std::optional<double> GetFloat(const AttrMap& attrs, absl::string_view name);

// ---- axes -----------------------------------------------------------------

// `axis` in [0, rank), or INVALID_ARGUMENT "axis 3 is out of bounds for array
// of dimension 2".
absl::StatusOr<int64_t> NormalizeAxis(int64_t axis, int rank);

// Normalised, sorted axes; an axis may not repeat (`attr` names the
// attribute in that error).
absl::StatusOr<std::vector<int64_t>> NormalizeAxes(absl::Span<const int64_t> axes, int rank,
                                                   absl::string_view attr);

// 0, 1, ..., rank - 1.
std::vector<int64_t> AllAxes(int rank);

// `shape` without the (sorted, normalised) `axes`, or with them set to 1.
// Fails when a zero-length axis of an empty array is reduced away and the
// remaining dimensions multiply past kMaxElements: [0, 2^63 - 1] summed over
// axis 0 would be 2^63 - 1 elements.
absl::StatusOr<Shape> ReducedShape(const Shape& shape, absl::Span<const int64_t> axes,
                                   bool keepdims);

// Reads "axes" (every axis when absent) and "keepdims", and writes both back
// in canonical form.
struct ReductionAxes {
  std::vector<int64_t> axes;
  bool keepdims = false;
};
absl::StatusOr<ReductionAxes> CanonicalReductionAxes(const Shape& shape, AttrMap& attrs);

}  // namespace gpuflow::internal

#endif  // GPUFLOW_ENGINE_IR_OPS_INTERNAL_H_
