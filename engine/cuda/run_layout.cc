// Shape steps (reshape, transpose, slice, concatenate, ...) and `full` as
// strided copies (codegen_layout.cc); same-dtype contiguous copies are
// cudaMemcpyAsync. take and take_along_axis are gathers whose
// out-of-bounds indices the run's checks report (device_errors.h).
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/device_errors.h"
#include "engine/cuda/launch_log.h"
#include "engine/cuda/step_runner.h"
#include "engine/ir/echo.h"
#include "engine/ir/gather.h"

namespace gpuflow::cuda {

namespace {

// The error of a gather whose kernel stored an out-of-bounds index: NumPy's
// text, naming the node as the host kernels do.
RunChecks::ErrorFn GatherError(const ValidatedNode& node) {
  return [id = node.id, op = node.op->name, layout = GatherLayoutOf(node),
          dtype = node.input_types[1].dtype](uint64_t index) {
    const std::string what =
        layout.ok() ? GatherIndexError(*layout, dtype, index) : "an index is out of bounds";
    return absl::InvalidArgumentError(absl::StrCat("node ", Echo(id), " (", op, "): ", what));
  };
}

absl::StatusOr<std::shared_ptr<const std::optional<std::vector<LayoutCopy>>>> Generate(
    StepCompileContext& ctx) {
  return ctx.Generated<std::optional<std::vector<LayoutCopy>>>(
      "layout", [&] { return GenerateLayoutCopies(ctx.graph, ctx.step); });
}

}  // namespace

absl::StatusOr<bool> RunLayout(StepRunContext& ctx) {
  absl::StatusOr<std::shared_ptr<const std::optional<std::vector<LayoutCopy>>>> copies =
      Generate(ctx);
  if (!copies.ok()) return copies.status();
  if (!(*copies)->has_value()) return false;
  const ValidatedNode& node = ctx.root();
  const int64_t item = ItemSize(node.type.output.dtype);
  const int64_t sms = ctx.device.sms();
  for (const LayoutCopy& c : ***copies) {
    if (c.num_elements == 0) continue;
    absl::StatusOr<const void*> src = ctx.ptr(node.inputs[c.input]);
    if (!src.ok()) return src.status();
    if (c.memcpy) {
      const auto src_base = static_cast<int64_t>(c.words[3]);
      const auto dst_base = static_cast<int64_t>(c.words[4]);
      launch_log::Note(absl::StrCat("memcpy d2d ", c.num_elements * item, " from ", src_base * item,
                                    " to ", dst_base * item));
      GPUFLOW_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(static_cast<char*>(ctx.out) + dst_base * item,
                                                   static_cast<const char*>(*src) + src_base * item,
                                                   c.num_elements * item, cudaMemcpyDeviceToDevice,
                                                   ctx.stream.get()));
      continue;
    }
    absl::StatusOr<cudaKernel_t> kernel = ctx.Kernel(c.source, c.name);
    if (!kernel.ok()) return kernel.status();
    std::vector<uint64_t> words = c.words;
    words[0] = reinterpret_cast<uint64_t>(*src);
    words[1] = reinterpret_cast<uint64_t>(ctx.out);
    if (c.index_input >= 0) {
      absl::StatusOr<const void*> indices = ctx.ptr(node.inputs[c.index_input]);
      if (!indices.ok()) return indices.status();
      if (ctx.checks == nullptr) return absl::InternalError("a gather step without run checks");
      absl::StatusOr<uint64_t> error_word = ctx.checks->Add(GatherError(node));
      if (!error_word.ok()) return error_word.status();
      words[2] = reinterpret_cast<uint64_t>(*indices);
      words[3] = *error_word;
    }
    const int64_t blocks = std::clamp<int64_t>((c.num_elements + 255) / 256, 1, sms * 32);
    if (absl::Status st = ctx.device.Launch(*kernel, Blocks(blocks), dim3(256), words, ctx.stream);
        !st.ok()) {
      return st;
    }
  }
  return true;
}

absl::Status CompileLayout(StepCompileContext& ctx) {
  absl::StatusOr<std::shared_ptr<const std::optional<std::vector<LayoutCopy>>>> copies =
      Generate(ctx);
  if (!copies.ok()) return copies.status();
  if (!(*copies)->has_value()) return absl::OkStatus();  // runs on the host
  for (const LayoutCopy& c : ***copies) {
    if (c.num_elements == 0 || c.memcpy) continue;  // Run launches nothing
    if (absl::Status s = ctx.Kernel(c.source, c.name).status(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace gpuflow::cuda
