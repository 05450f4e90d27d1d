// The op registry: the single source of truth for each op's name, family,
// arity, attributes, dtype rule and shape rule. Validation, planning, the
// backends and GetServerInfo all read it. docs/ops.md documents every op.
//
//   const OpDef* add = OpRegistry::Default().Find("add");
//   AttrMap attrs;
//   absl::StatusOr<InferredNode> t = add->infer({{DType::kInt8, s}, kWeakInt}, attrs);
//   // t->output.dtype == kInt8 (weak scalar), t->compute_dtype == kInt8
//
// Immutable after construction; thread-safe.
#ifndef GPUFLOW_ENGINE_IR_OP_REGISTRY_H_
#define GPUFLOW_ENGINE_IR_OP_REGISTRY_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/ir/dtype.h"
#include "engine/ir/graph.h"
#include "engine/ir/shape.h"

namespace gpuflow {

enum class OpFamily : uint8_t {
  kElementwise,  // unary, binary, where, clip, cast
  kReduction,    // sum ... logsumexp, softmax, log_softmax
  kScan,         // cumsum, cumprod
  kLinalg,       // matmul, dot
  kShape,     // reshape, transpose, broadcast_to, expand_dims, squeeze, slice, concatenate, stack,
              // take, take_along_axis, scatter, flatnonzero, histogram
  kCreation,  // full, arange, random_uniform, random_normal
  kCustom,    // elementwise_kernel, reduction_kernel, raw_kernel
  kSort,      // sort, argsort, searchsorted
};
absl::string_view OpFamilyName(OpFamily family);

// The type of a value flowing through a graph. `weak` marks a Python scalar
// literal (0-d, dtype bool/int64/uint64/float64 standing for "some bool /
// int / float"), which NumPy 2 promotion treats specially.
struct ValueType {
  DType dtype = DType::kFloat32;
  Shape shape;
  bool weak = false;
};

// What inference decides for a node.
struct InferredNode {
  ValueType output;  // never weak
  // The dtype the op computes in:
  //  - elementwise: the dtype inputs are converted to before the operation
  //    (NumPy's loop dtype). add(int8, int8) -> int8; div(int32, int32) ->
  //    float64; eq(int8, float32) -> float32 (output bool); float16 and
  //    bfloat16 are still reported as themselves (backends compute them in
  //    float32 registers and round once per op);
  //  - reductions and scans: the accumulator dtype (sum of int8 -> int64,
  //    sum of float32 -> float32, mean of int32 -> float64);
  //  - others: the output dtype.
  DType compute_dtype = DType::kFloat32;
};

// Canonical attributes after infer, which backends may rely on:
//  - sum prod min max mean var std any all logsumexp: "axes" (ints: sorted,
//    unique, non-negative; every axis when absent), "keepdims" (bool);
//    var/std also "ddof" (float).
//  - argmin argmax: "keepdims" (bool), and "axis" (int, non-negative) unless
//    the reduction is over the flattened array (then "axis" is absent).
//  - softmax log_softmax: "axis" (int, non-negative).
//  - cumsum cumprod: "axis" (int, non-negative) unless over the flattened
//    array (absent; the output is then 1-D).
//  - reshape broadcast_to: "shape" (ints, resolved). transpose: "axes" (a full
//    permutation). expand_dims squeeze: "axes" (sorted non-negative; for
//    expand_dims in the output's rank, for squeeze in the input's).
//  - slice: "starts", "steps" (ints, one per input axis): the first index
//    taken and the step; the output shape gives each axis' count.
//  - concatenate: "axis" (int, non-negative in the inputs' rank); stack:
//    "axis" (int, non-negative in the output's rank).
//  - take take_along_axis: "axis" (int, non-negative; take of a 0-d array:
//    0) unless over the flattened array (absent). engine/ir/gather.h gives
//    their geometry.
//  - scatter: "mode" (string: set, add, mul, min or max; default set).
//  - histogram: "uniform" (bool); when true also "first_edge", "norm_denom"
//    (floats), "sub_dtype", "div_dtype" (float dtypes).
//  - sort argsort: "axis" (int, non-negative) unless over the flattened
//    array (absent; the output is then 1-D). searchsorted: "side" ("left"
//    or "right"); compute_dtype is the dtype both inputs are compared in.
//  - cast full arange random_uniform random_normal: "dtype" (the output
//    dtype); full/random also "shape"; arange "start", "stop", "step"
//    (floats); random_uniform "seed" (int), "low", "high" (floats);
//    random_normal "seed", "mean", "std".
//  - sum prod mean cumsum cumprod: "dtype" is removed (it is reflected in
//    output.dtype and compute_dtype).
struct AttrDef {
  std::string name;
  AttrType type = AttrType::kInt;
  bool required = false;
  std::string doc;
};

struct OpDef {
  std::string name;
  OpFamily family = OpFamily::kElementwise;
  int min_inputs = 1;
  int max_inputs = 1;  // -1: variadic
  std::vector<AttrDef> attrs;
  std::string doc;
  // Infers the output type from the input types and attributes. The
  // attributes have been checked against `attrs` (names, types, required)
  // before this is called; infer checks values and ranges, and rewrites
  // `attrs` into canonical form: defaults filled in, axes normalised to
  // sorted non-negative lists, reshape's -1 resolved. Errors are
  // INVALID_ARGUMENT with the reason only (the caller adds node id and op).
  std::function<absl::StatusOr<InferredNode>(absl::Span<const ValueType> inputs, AttrMap& attrs)>
      infer;
};

class OpRegistry {
 public:
  // The registry of every op gpuflow knows.
  static const OpRegistry& Default();

  // nullptr when unknown.
  const OpDef* Find(absl::string_view name) const;
  // Sorted by name.
  const std::vector<OpDef>& ops() const { return ops_; }

  explicit OpRegistry(std::vector<OpDef> ops);

 private:
  std::vector<OpDef> ops_;
};

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_IR_OP_REGISTRY_H_
