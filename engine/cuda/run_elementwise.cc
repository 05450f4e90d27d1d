// Fused elementwise steps: one generated kernel (codegen.cc), launched with
// its pointers, sizes, collapsed dims and strides and by-value scalars.
#include <algorithm>

#include "engine/cuda/codegen.h"
#include "engine/cuda/step_runner.h"

namespace gpuflow::cuda {

namespace {

absl::StatusOr<std::shared_ptr<const ElementwiseKernel>> Generate(StepCompileContext& ctx) {
  return ctx.Generated<ElementwiseKernel>("elementwise",
                                          [&] { return GenerateElementwise(ctx.graph, ctx.step); });
}

}  // namespace

absl::Status RunElementwise(StepRunContext& ctx) {
  absl::StatusOr<std::shared_ptr<const ElementwiseKernel>> k = Generate(ctx);
  if (!k.ok()) return k.status();
  const ElementwiseKernel* const e = k->get();
  if (e->num_elements == 0) return absl::OkStatus();
  std::vector<const void*> pointers(e->inputs.size(), nullptr);
  for (size_t i = 0; i < e->inputs.size(); ++i) {
    if (e->inputs[i].by_value) continue;
    absl::StatusOr<const void*> p = ctx.ptr(e->inputs[i].ref);
    if (!p.ok()) return p.status();
    pointers[i] = *p;
  }
  absl::StatusOr<cudaKernel_t> kernel = ctx.Kernel(e->source, e->name);
  if (!kernel.ok()) return kernel.status();
  std::vector<uint64_t> words;
  words.reserve(e->num_words);
  std::vector<uint64_t> scalars;
  for (size_t i = 0; i < e->inputs.size(); ++i) {
    const StepInput& in = e->inputs[i];
    if (in.by_value) {
      scalars.push_back(LiteralWord(ctx.graph.literals[in.ref.index]));
    } else {
      words.push_back(reinterpret_cast<uint64_t>(pointers[i]));
    }
  }
  words.push_back(reinterpret_cast<uint64_t>(ctx.out));
  words.push_back(static_cast<uint64_t>(e->num_elements));
  for (int64_t d : e->dims) words.push_back(static_cast<uint64_t>(d));
  for (int64_t s : e->strides) words.push_back(static_cast<uint64_t>(s));
  words.insert(words.end(), scalars.begin(), scalars.end());
  if (static_cast<int>(words.size()) != e->num_words) {
    return absl::InternalError("elementwise kernel argument layout mismatch");
  }
  const int64_t work = e->vectorized ? e->num_elements / e->elements_per_vector : e->num_elements;
  constexpr int kBlock = 256;
  const int64_t max_blocks = ctx.device.sms() * 32;
  const int blocks =
      static_cast<int>(std::clamp<int64_t>((work + kBlock - 1) / kBlock, 1, max_blocks));
  return ctx.device.Launch(*kernel, dim3(blocks), dim3(kBlock), words, ctx.stream);
}

absl::Status CompileElementwise(StepCompileContext& ctx) {
  absl::StatusOr<std::shared_ptr<const ElementwiseKernel>> k = Generate(ctx);
  if (!k.ok()) return k.status();
  if ((*k)->num_elements == 0) return absl::OkStatus();  // Run launches nothing
  return ctx.Kernel((*k)->source, (*k)->name).status();
}

}  // namespace gpuflow::cuda
