// CuPy's custom-kernel signatures: parameter lists such as
// "T x, raw T y, float64 threshold", type placeholders bound from the
// arguments' dtypes, and the loop shape. Shared by inference
// (ops_custom_kernel.cc) and the CUDA code generator, so both read a kernel
// node the same way.
//
//   absl::StatusOr<KernelSignature> sig =
//       ResolveKernelSignature(node.input_types, node.attrs, KernelForm::kElementwise);
//   // sig->out_dtypes[0], sig->placeholders ("T" -> float32), sig->shape
//
// Pure functions; thread-safe.
#ifndef GPUFLOW_ENGINE_IR_CUSTOM_KERNEL_H_
#define GPUFLOW_ENGINE_IR_CUSTOM_KERNEL_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/ir/dtype.h"
#include "engine/ir/graph.h"
#include "engine/ir/op_registry.h"
#include "engine/ir/shape.h"

namespace gpuflow {

// One parameter: "[raw] TYPE NAME". TYPE is a dtype name ("float32") or a
// type placeholder (an identifier that is not a dtype or C type name).
struct KernelParam {
  bool raw = false;
  std::string type;
  std::string name;
};

// Parses a comma-separated parameter list; `what` names it in errors
// ("in_params"). An empty or blank list is empty.
absl::StatusOr<std::vector<KernelParam>> ParseKernelParams(absl::string_view text,
                                                           absl::string_view what);

enum class KernelForm : uint8_t { kElementwise, kReduction };

// A custom kernel node with every type resolved.
struct KernelSignature {
  std::vector<KernelParam> in;
  std::vector<KernelParam> out;
  std::vector<DType> in_dtypes;   // each in param's type
  std::vector<DType> out_dtypes;  // each out param's type
  // Placeholders in the order they were bound, with their dtypes.
  std::vector<std::pair<std::string, DType>> placeholders;
  // The node's inputs hold initial output values after the in params
  // (elementwise kernels only).
  bool outputs_given = false;
  // The loop shape: the non-raw arguments broadcast together (or (size,),
  // or the first non-raw output given). For reductions, the shape before
  // reducing.
  Shape shape;
  // Each out param's shape: the loop shape, or a raw output's own (its
  // given array's, which the kernel indexes as `y[j]`; elementwise only).
  std::vector<Shape> out_shapes;
  // Reductions: the accumulator's dtype (reduce_type, default the output's).
  DType reduce_dtype = DType::kFloat32;
};

// Resolves an elementwise_kernel or reduction_kernel node from its input
// types and attributes: counts, names, placeholders (bound by array
// arguments first, then by Python scalars: int -> int64, float -> float64),
// raw arguments (arrays of exactly the declared dtype), output dtypes and the
// loop shape. INVALID_ARGUMENT with the reason otherwise.
absl::StatusOr<KernelSignature> ResolveKernelSignature(absl::Span<const ValueType> inputs,
                                                       const AttrMap& attrs, KernelForm form);

// The C type used for a dtype inside custom kernels ("float", "__half",
// "long long", "bool"; CuPy's "complex<float>" and "complex<double>", which
// a backend's custom kernels must define as CuPy does).
const char* KernelCTypeName(DType dtype);

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_IR_CUSTOM_KERNEL_H_
