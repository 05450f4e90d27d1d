// The custom kernel ops: elementwise_kernel, reduction_kernel and raw_kernel
// (CUDA backend only; docs/custom_kernels.md). Their CuPy-style signatures are
// parsed by custom_kernel.h.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "engine/ir/custom_kernel.h"
#include "engine/ir/echo.h"
#include "engine/ir/ops_internal.h"
#include "engine/ir/status_macros_internal.h"

namespace gpuflow::internal {
namespace {

absl::StatusOr<InferredNode> InferElementwiseKernel(Inputs in, AttrMap& attrs) {
  GPUFLOW_IR_ASSIGN_OR_RETURN(const KernelSignature sig,
                              ResolveKernelSignature(in, attrs, KernelForm::kElementwise));
  const int64_t output = Get<int64_t>(attrs, "output").value_or(0);
  if (output < 0 || output >= static_cast<int64_t>(sig.out.size())) {
    return Invalid("'output' must be in [0, ", sig.out.size(), "), got ", output);
  }
  attrs["output"] = output;
  for (const char* name : {"preamble", "loop_prep", "after_loop"}) {
    if (!attrs.contains(name)) attrs[name] = std::string();
  }
  if (!attrs.contains("name")) attrs["name"] = std::string("kernel");
  const DType dtype = sig.out_dtypes[output];
  return Inferred(dtype, sig.out_shapes[output], dtype);
}

absl::StatusOr<InferredNode> InferReductionKernel(Inputs in, AttrMap& attrs) {
  GPUFLOW_IR_ASSIGN_OR_RETURN(const KernelSignature sig,
                              ResolveKernelSignature(in, attrs, KernelForm::kReduction));
  GPUFLOW_IR_ASSIGN_OR_RETURN(const ReductionAxes r, CanonicalReductionAxes(sig.shape, attrs));
  if (!attrs.contains("name")) attrs["name"] = std::string("reduce_kernel");
  if (!attrs.contains("preamble")) attrs["preamble"] = std::string();
  GPUFLOW_IR_ASSIGN_OR_RETURN(Shape out, ReducedShape(sig.shape, r.axes, r.keepdims));
  const DType dtype = sig.out_dtypes[0];
  return Inferred(dtype, std::move(out), sig.reduce_dtype);
}

absl::StatusOr<InferredNode> InferRawKernel(Inputs in, AttrMap& attrs) {
  // The extern "C" function to launch: a C identifier (which also keeps the
  // backend's messages about it short and plain).
  const std::string name = *Get<std::string>(attrs, "name");
  const bool identifier = !name.empty() && name.size() <= 1024 &&
                          !absl::ascii_isdigit(static_cast<unsigned char>(name[0])) &&
                          std::all_of(name.begin(), name.end(), [](char c) {
                            return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
                          });
  if (!identifier) return Invalid("'name' ", Echo(name), " is not a C identifier");
  for (const char* name : {"grid", "block"}) {
    const std::vector<int64_t> dims = *Get<std::vector<int64_t>>(attrs, name);
    if (dims.empty() || dims.size() > 3) {
      return Invalid("'", name, "' must have 1 to 3 entries, got ", dims.size());
    }
    for (int64_t d : dims) {
      if (d < 1 || d > std::numeric_limits<int32_t>::max()) {
        return Invalid("'", name, "' entries must be in [1, 2^31), got ", FormatDims(dims));
      }
    }
  }
  const std::vector<int64_t> block = *Get<std::vector<int64_t>>(attrs, "block");
  // Entries are below 2^31: three of them multiply exactly in 128 bits.
  unsigned __int128 threads = 1;
  for (int64_t d : block) threads *= static_cast<uint64_t>(d);
  if (threads > 1024) {
    return Invalid("'block' ", FormatDims(block), " has ", static_cast<double>(threads),
                   " threads; a block has at most 1024");
  }
  const int64_t shared_mem = Get<int64_t>(attrs, "shared_mem").value_or(0);
  if (shared_mem < 0) return Invalid("'shared_mem' must be >= 0, got ", shared_mem);
  attrs["shared_mem"] = shared_mem;
  if (!attrs.contains("options")) attrs["options"] = std::vector<std::string>();
  const int64_t output = *Get<int64_t>(attrs, "output");
  if (output < 0 || output >= static_cast<int64_t>(in.size())) {
    return Invalid("'output' must index one of the ", in.size(), " arguments, got ", output);
  }
  const ValueType& out = in[output];
  if (out.weak) {
    return Invalid("argument ", output, " ('output') must be an array, got a Python scalar");
  }
  // The arguments the kernel may write: each gets a private copy for the
  // launch. Absent: every array argument (the backend decides which are
  // arrays). Kept sorted, without repeats, with `output` among them.
  if (std::optional<std::vector<int64_t>> writes = Get<std::vector<int64_t>>(attrs, "writes")) {
    std::vector<int64_t> sorted = *writes;
    sorted.push_back(output);
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    for (int64_t w : sorted) {
      if (w < 0 || w >= static_cast<int64_t>(in.size())) {
        return Invalid("'writes' must index the ", in.size(), " arguments, got ", w);
      }
      if (in[w].weak) {
        return Invalid("argument ", w, " in 'writes' must be an array, got a Python scalar");
      }
    }
    attrs["writes"] = std::move(sorted);
  }
  return Inferred(out.dtype, out.shape, out.dtype);
}

}  // namespace

void AddCustomKernelOps(std::vector<OpDef>& ops) {
  const AttrDef in_params =
      Attr("in_params", AttrType::kString, true, "CuPy input parameters, e.g. 'T x, raw T y'");
  const AttrDef out_params =
      Attr("out_params", AttrType::kString, true, "CuPy output parameters, e.g. 'T z'");
  const AttrDef preamble =
      Attr("preamble", AttrType::kString, false, "code placed before the kernel");
  ops.push_back(MakeOp(
      "elementwise_kernel", OpFamily::kCustom, 0, -1,
      {in_params, out_params,
       Attr("operation", AttrType::kString, true, "CUDA statement(s) for element i"),
       Attr("name", AttrType::kString, false, "kernel name (default 'kernel')"), preamble,
       Attr("loop_prep", AttrType::kString, false, "code run by each thread before the loop"),
       Attr("after_loop", AttrType::kString, false, "code run by each thread after the loop"),
       Attr("size", AttrType::kInt, false,
            "loop size when no non-raw array argument gives the shape"),
       Attr("output", AttrType::kInt, false, "which out param is the node's value (default 0)")},
      "a cupy.ElementwiseKernel: inputs are the in params, optionally followed by the out "
      "params' initial values (CUDA backend only)",
      InferElementwiseKernel));
  ops.push_back(MakeOp(
      "reduction_kernel", OpFamily::kCustom, 1, -1,
      {in_params, out_params, Attr("map_expr", AttrType::kString, true, "mapping expression"),
       Attr("reduce_expr", AttrType::kString, true, "reduction expression of a and b"),
       Attr("post_map_expr", AttrType::kString, true, "statement of a writing the output"),
       Attr("identity", AttrType::kString, true, "identity value of the reduction"),
       Attr("reduce_type", AttrType::kString, false,
            "dtype or placeholder of a and b (default the output's)"),
       Attr("name", AttrType::kString, false, "kernel name (default 'reduce_kernel')"), preamble,
       ReductionAxesAttr(), KeepdimsAttr()},
      "a cupy.ReductionKernel (CUDA backend only)", InferReductionKernel));
  ops.push_back(MakeOp(
      "raw_kernel", OpFamily::kCustom, 1, -1,
      {Attr("code", AttrType::kString, true, "CUDA source"),
       Attr("name", AttrType::kString, true, "the extern \"C\" __global__ function to launch"),
       Attr("grid", AttrType::kInts, true, "grid size, 1 to 3 entries"),
       Attr("block", AttrType::kInts, true, "block size, 1 to 3 entries"),
       Attr("shared_mem", AttrType::kInt, false, "dynamic shared memory bytes (default 0)"),
       Attr("output", AttrType::kInt, true,
            "the argument whose contents after the launch are the node's value (it is copied "
            "first, so arrays stay immutable)"),
       Attr("options", AttrType::kStrings, false, "extra NVRTC options"),
       Attr("writes", AttrType::kInts, false,
            "the arguments the kernel may write, each given a private copy for the launch so "
            "no array it reads changes (default: every array argument)")},
      "a cupy.RawKernel launch: arrays by pointer, literals by value (CUDA backend only; "
      "gpuflowd --allow_raw_kernels)",
      InferRawKernel));
}

}  // namespace gpuflow::internal
