#include "engine/host/host_kernels.h"

#include <new>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/host/host_kernels_internal.h"
#include "engine/ir/echo.h"

namespace gpuflow {
namespace {

using host_internal::RunCreation;
using host_internal::RunElementwise;
using host_internal::RunMatmul;
using host_internal::RunReduction;
using host_internal::RunScan;
using host_internal::RunShapeOp;
using host_internal::RunSoftmax;
using host_internal::RunSortOp;

enum class HostFamily : uint8_t {
  kElementwise,
  kReduction,
  kSoftmax,
  kScan,
  kLinalg,
  kShape,
  kCreation,
  kCustom,
  kSort,
};

const absl::flat_hash_map<std::string, HostFamily>& HostFamilies() {
  static const auto* families = [] {
    auto* m = new absl::flat_hash_map<std::string, HostFamily>;
    for (const char* op :
         {"neg",         "abs",         "sign",        "square",     "sqrt",        "rsqrt",
          "exp",         "log",         "log1p",       "expm1",      "sin",         "cos",
          "tanh",        "sigmoid",     "gelu",        "erf",        "floor",       "ceil",
          "round",       "relu",        "reciprocal",  "isnan",      "isinf",       "logical_not",
          "bitwise_not", "add",         "sub",         "mul",        "div",         "floordiv",
          "mod",         "pow",         "maximum",     "minimum",    "atan2",       "eq",
          "ne",          "lt",          "le",          "gt",         "ge",          "logical_and",
          "logical_or",  "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "where",
          "clip",        "cast",        "real",        "imag",       "conj",        "angle",
          "asin",        "acos",        "atan",        "asinh",      "acosh",       "atanh",
          "gcd",         "lcm",         "bitcast"}) {
      (*m)[op] = HostFamily::kElementwise;
    }
    for (const char* op : {"sum", "prod", "min", "max", "mean", "var", "std", "argmin", "argmax",
                           "any", "all", "logsumexp"}) {
      (*m)[op] = HostFamily::kReduction;
    }
    (*m)["softmax"] = HostFamily::kSoftmax;
    (*m)["log_softmax"] = HostFamily::kSoftmax;
    (*m)["cumsum"] = HostFamily::kScan;
    (*m)["cumprod"] = HostFamily::kScan;
    (*m)["matmul"] = HostFamily::kLinalg;
    (*m)["dot"] = HostFamily::kLinalg;
    for (const char* op :
         {"reshape", "transpose", "broadcast_to", "expand_dims", "squeeze", "slice", "concatenate",
          "stack", "take", "take_along_axis", "scatter", "flatnonzero", "histogram"}) {
      (*m)[op] = HostFamily::kShape;
    }
    for (const char* op : {"full", "arange", "random_uniform", "random_normal"}) {
      (*m)[op] = HostFamily::kCreation;
    }
    for (const char* op : {"sort", "argsort", "searchsorted"}) (*m)[op] = HostFamily::kSort;
    for (const char* op : {"elementwise_kernel", "reduction_kernel", "raw_kernel"}) {
      (*m)[op] = HostFamily::kCustom;
    }
    return m;
  }();
  return *families;
}

// Checks that the buffers are what the node says they are, so that a kernel
// never reads or writes outside them.
absl::Status CheckViews(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                        const HostView& out) {
  if (inputs.size() != node.input_types.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected ", node.input_types.size(), " inputs, got ", inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueType& t = node.input_types[i];
    if (inputs[i].dtype != t.dtype || !(inputs[i].shape == t.shape)) {
      return absl::InvalidArgumentError(
          absl::StrCat("input ", i, " is ", DTypeName(inputs[i].dtype), inputs[i].shape.ToString(),
                       ", the node expects ", DTypeName(t.dtype), t.shape.ToString()));
    }
    if (inputs[i].data == nullptr && inputs[i].shape.num_elements() > 0) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " has no data"));
    }
  }
  const ValueType& t = node.type.output;
  if (out.dtype != t.dtype || !(out.shape == t.shape)) {
    return absl::InvalidArgumentError(absl::StrCat("output is ", DTypeName(out.dtype),
                                                   out.shape.ToString(), ", the node makes ",
                                                   DTypeName(t.dtype), t.shape.ToString()));
  }
  if (out.data == nullptr && out.shape.num_elements() > 0) {
    return absl::InvalidArgumentError("the output has no data");
  }
  return absl::OkStatus();
}

absl::Status Dispatch(HostFamily family, const ValidatedNode& node,
                      absl::Span<const HostConstView> inputs, const HostView& out,
                      const HostKernelOptions& options) {
  const size_t arity = family == HostFamily::kLinalg ? 2 : 1;
  switch (family) {
    case HostFamily::kElementwise:
      return RunElementwise(node, inputs, out, options);
    case HostFamily::kShape:
      return RunShapeOp(node, inputs, out, options);
    case HostFamily::kCreation:
      return RunCreation(node, inputs, out, options);
    case HostFamily::kSort:
      return RunSortOp(node, inputs, out, options);
    case HostFamily::kCustom:
      break;  // refused before
    case HostFamily::kReduction:
    case HostFamily::kSoftmax:
    case HostFamily::kScan:
    case HostFamily::kLinalg:
      if (inputs.size() != arity) {
        return absl::InvalidArgumentError(
            absl::StrCat("expected ", arity, " input(s), got ", inputs.size()));
      }
      if (family == HostFamily::kReduction) return RunReduction(node, inputs[0], out, options);
      if (family == HostFamily::kSoftmax) return RunSoftmax(node, inputs[0], out, options);
      if (family == HostFamily::kScan) return RunScan(node, inputs[0], out, options);
      return RunMatmul(node, inputs[0], inputs[1], out, options);
  }
  return absl::InternalError("custom kernel dispatched");
}

}  // namespace

absl::Status RunNodeOnHost(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                           const HostView& out, const HostKernelOptions& options) {
  if (node.op == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("node ", Echo(node.id), " has no op"));
  }
  const std::string& name = node.op->name;
  auto it = HostFamilies().find(name);
  if (it == HostFamilies().end()) {
    return absl::UnimplementedError(
        absl::StrCat("node ", Echo(node.id), " (", name, "): no host kernel for this op"));
  }
  absl::Status s;
  if (it->second == HostFamily::kCustom) {
    s = absl::FailedPreconditionError(
        "custom CUDA kernels need the cuda backend; this server runs on the CPU");
  } else {
    s = CheckViews(node, inputs, out);
  }
  if (s.ok()) {
    try {
      s = Dispatch(it->second, node, inputs, out, options);
    } catch (const std::bad_alloc&) {
      // Scratch buffers (matmul's converted operands, reduction partials).
      s = absl::ResourceExhaustedError("out of host memory for scratch buffers");
    }
  }
  if (s.ok()) return s;
  return absl::Status(s.code(),
                      absl::StrCat("node ", Echo(node.id), " (", name, "): ", s.message()));
}

}  // namespace gpuflow
