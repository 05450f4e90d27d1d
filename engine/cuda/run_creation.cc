// arange, random_uniform and random_normal (codegen_creation.cc): a thread
// per element.
#include <algorithm>
#include <optional>

#include "engine/cuda/codegen.h"
#include "engine/cuda/step_runner.h"

namespace gpuflow::cuda {

namespace {

absl::StatusOr<std::shared_ptr<const std::optional<CreationKernel>>> Generate(
    StepCompileContext& ctx) {
  return ctx.Generated<std::optional<CreationKernel>>(
      "creation", [&]() -> absl::StatusOr<std::optional<CreationKernel>> {
        return GenerateCreation(ctx.graph, ctx.step);
      });
}

}  // namespace

absl::StatusOr<bool> RunCreation(StepRunContext& ctx) {
  absl::StatusOr<std::shared_ptr<const std::optional<CreationKernel>>> k = Generate(ctx);
  if (!k.ok()) return k.status();
  if (!(*k)->has_value()) return false;
  const CreationKernel& c = ***k;
  const auto n = static_cast<int64_t>(c.words[1]);
  if (n == 0) return true;
  absl::StatusOr<cudaKernel_t> kernel = ctx.Kernel(c.source, c.name);
  if (!kernel.ok()) return kernel.status();
  std::vector<uint64_t> words = c.words;
  words[0] = reinterpret_cast<uint64_t>(ctx.out);
  const int64_t blocks = std::clamp<int64_t>((n + 255) / 256, 1, ctx.device.sms() * 32);
  if (absl::Status s = ctx.device.Launch(*kernel, Blocks(blocks), dim3(256), words, ctx.stream);
      !s.ok()) {
    return s;
  }
  return true;
}

absl::Status CompileCreation(StepCompileContext& ctx) {
  absl::StatusOr<std::shared_ptr<const std::optional<CreationKernel>>> k = Generate(ctx);
  if (!k.ok()) return k.status();
  if (!(*k)->has_value() || ctx.root().type.output.shape.num_elements() == 0) {
    return absl::OkStatus();
  }
  return ctx.Kernel((**k)->source, (**k)->name).status();
}

}  // namespace gpuflow::cuda
