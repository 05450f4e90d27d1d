// sort and argsort steps on the device: CUB's radix sort for one row, its
// segmented sort for many (cub_sort.cu), the scratch (keys, indices,
// offsets and CUB's temporary storage) one buffer from the run's budget.
// searchsorted converts both inputs to its compute class and binary-searches
// a thread per value. Rows longer than INT32_MAX sort on the host.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "engine/cuda/cub_sort.h"
#include "engine/cuda/step_runner.h"

namespace gpuflow::cuda {

namespace {

SortKeyKind SortKindOf(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return SortKeyKind::kBool;
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
    case DType::kInt64:
      return SortKeyKind::kSigned;
    case DType::kFloat16:
      return SortKeyKind::kFloat16;
    case DType::kBFloat16:
      return SortKeyKind::kBFloat16;
    case DType::kFloat32:
      return SortKeyKind::kFloat32;
    case DType::kFloat64:
      return SortKeyKind::kFloat64;
    default:
      return SortKeyKind::kUnsigned;
  }
}

SearchElement SearchElementOf(DType dtype) {
  switch (dtype) {
    case DType::kBool:
      return SearchElement::kBool;
    case DType::kInt8:
      return SearchElement::kInt8;
    case DType::kInt16:
      return SearchElement::kInt16;
    case DType::kInt32:
      return SearchElement::kInt32;
    case DType::kInt64:
      return SearchElement::kInt64;
    case DType::kUInt8:
      return SearchElement::kUInt8;
    case DType::kUInt16:
      return SearchElement::kUInt16;
    case DType::kUInt32:
      return SearchElement::kUInt32;
    case DType::kUInt64:
      return SearchElement::kUInt64;
    case DType::kFloat16:
      return SearchElement::kFloat16;
    case DType::kBFloat16:
      return SearchElement::kBFloat16;
    case DType::kFloat32:
      return SearchElement::kFloat32;
    default:
      return SearchElement::kFloat64;
  }
}

SearchCompute SearchComputeOf(DType dtype) {
  switch (::gpuflow::KindOf(dtype)) {
    case DTypeKind::kBool:
      return SearchCompute::kBool;
    case DTypeKind::kSigned:
      return SearchCompute::kInt64;
    case DTypeKind::kUnsigned:
      return SearchCompute::kUInt64;
    case DTypeKind::kFloat:
    case DTypeKind::kComplex:  // not reached: sorts refuse complex
      break;
  }
  return SearchCompute::kFloat64;
}

absl::Status SortStatus(DeviceRuntime& device, const DeviceSortCall& c) {
  if (c.error == cudaSuccess) return absl::OkStatus();
  return device.Check(c.error, c.call);
}

}  // namespace

// searchsorted: both inputs converted to the compute class, then a binary
// search per value (cub_sort.h).
absl::StatusOr<bool> RunSearchSorted(StepRunContext& ctx) {
  const ValidatedNode& node = ctx.root();
  DeviceSearchArgs args;
  args.sorted_type = SearchElementOf(node.input_types[0].dtype);
  args.values_type = SearchElementOf(node.input_types[1].dtype);
  args.compute = SearchComputeOf(node.type.compute_dtype);
  const auto side = node.attrs.find("side");
  args.right = side != node.attrs.end() && std::holds_alternative<std::string>(side->second) &&
               std::get<std::string>(side->second) == "right";
  args.n = node.input_types[0].shape.num_elements();
  args.m = node.input_types[1].shape.num_elements();
  if (args.m == 0) return true;
  absl::StatusOr<const void*> sorted = ctx.ptr(node.inputs[0]);
  if (!sorted.ok()) return sorted.status();
  absl::StatusOr<const void*> values = ctx.ptr(node.inputs[1]);
  if (!values.ok()) return values.status();
  args.sorted = *sorted;
  args.values = *values;
  args.out = static_cast<int64_t*>(ctx.out);
  const size_t bytes = DeviceSearchScratchBytes(args);
  absl::StatusOr<std::unique_ptr<CudaBuffer>> scratch =
      ctx.device.AllocateOn(static_cast<int64_t>(bytes), ctx.stream);
  if (!scratch.ok()) return scratch.status();
  if (absl::Status s =
          SortStatus(ctx.device, DeviceSearchSorted(args, (*scratch)->data(), ctx.stream.get()));
      !s.ok()) {
    return s;
  }
  return true;
}

absl::StatusOr<bool> RunSort(StepRunContext& ctx) {
  const ValidatedNode& node = ctx.root();
  if (node.op->name == "searchsorted") return RunSearchSorted(ctx);
  if (node.op->name != "sort" && node.op->name != "argsort") return false;
  const ValueType& in = node.input_types[0];
  DeviceSortArgs args;
  args.kind = SortKindOf(in.dtype);
  args.key_bytes = static_cast<int>(ItemSize(in.dtype));
  args.indices = node.op->name == "argsort";
  args.length = in.shape.num_elements();
  if (auto it = node.attrs.find("axis"); it != node.attrs.end()) {
    const int64_t* axis = std::get_if<int64_t>(&it->second);
    if (axis == nullptr || *axis < 0 || *axis >= in.shape.rank()) {
      return absl::InternalError("sort without a canonical axis");
    }
    args.length = in.shape.dim(static_cast<int>(*axis));
    for (int d = 0; d < *axis; ++d) args.outer *= in.shape.dim(d);
    for (int d = static_cast<int>(*axis) + 1; d < in.shape.rank(); ++d) {
      args.inner *= in.shape.dim(d);
    }
  }
  if (in.shape.num_elements() == 0) return true;
  if (args.length > std::numeric_limits<int32_t>::max()) return false;
  absl::StatusOr<const void*> src = ctx.ptr(node.inputs[0]);
  if (!src.ok()) return src.status();
  args.in = *src;
  args.out = ctx.out;
  size_t bytes = 0;
  if (absl::Status s = SortStatus(ctx.device, DeviceSortScratchBytes(args, &bytes)); !s.ok()) {
    return s;
  }
  absl::StatusOr<std::unique_ptr<CudaBuffer>> scratch =
      ctx.device.AllocateOn(static_cast<int64_t>(bytes), ctx.stream);
  if (!scratch.ok()) return scratch.status();
  if (absl::Status s =
          SortStatus(ctx.device, DeviceSort(args, (*scratch)->data(), bytes, ctx.stream.get()));
      !s.ok()) {
    return s;
  }
  // `scratch` is freed in stream order, after the sort.
  return true;
}

absl::Status CompileSort(StepCompileContext&) {
  return absl::OkStatus();  // compiled ahead of time (cub_sort.cu)
}

}  // namespace gpuflow::cuda
