// Shape steps (reshape, transpose, slice, concatenate, ...) and `full` as
// strided copies (codegen_layout.cc); same-dtype contiguous copies are
// cudaMemcpyAsync.
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/launch_log.h"
#include "engine/cuda/step_runner.h"

namespace gpuflow::cuda {

namespace {

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
