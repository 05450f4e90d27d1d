// Which runner takes a step (step_runner.h), for Run and for Precompile.
#include "absl/strings/str_cat.h"
#include "engine/cuda/step_runner.h"

namespace gpuflow::cuda {

absl::StatusOr<cudaKernel_t> StepCompileContext::Kernel(
    const std::string& source, const std::string& name,
    const std::vector<std::string>& extra_options) {
  const absl::Time now = absl::Now();
  if (code != nullptr) {
    absl::MutexLock lock(&code->mu);
    if (auto it = code->kernels.find(name);
        it != code->kernels.end() && now - it->second.looked_up < absl::Minutes(10)) {
      ++result.kernel_cache_hits;
      loader.CountMemoryHit();
      return it->second.kernel;
    }
  }
  absl::StatusOr<cudaKernel_t> kernel = loader.GetKernel(source, name, result, extra_options);
  if (kernel.ok() && code != nullptr) {
    absl::MutexLock lock(&code->mu);
    code->kernels[name] = StepCode::Kernel{*kernel, now};
  }
  return kernel;
}

absl::Status PointerWords(StepRunContext& ctx, const std::vector<StepInput>& inputs,
                          std::vector<uint64_t>& words) {
  for (const StepInput& in : inputs) {
    if (in.by_value) continue;
    absl::StatusOr<const void*> p = ctx.ptr(in.ref);
    if (!p.ok()) return p.status();
    words.push_back(reinterpret_cast<uint64_t>(*p));
  }
  return absl::OkStatus();
}

void ScalarWords(const StepRunContext& ctx, const std::vector<StepInput>& inputs,
                 std::vector<uint64_t>& words) {
  for (const StepInput& in : inputs) {
    if (in.by_value) words.push_back(LiteralWord(ctx.graph.literals[in.ref.index]));
  }
}

namespace {

// `full` is a layout copy of its fill value; the other creation ops have
// kernels of their own.
bool IsLayoutStep(const Step& step, const ValidatedNode& root) {
  return step.kind == StepKind::kShape ||
         (step.kind == StepKind::kCreation && root.op->name == "full");
}

}  // namespace

absl::StatusOr<bool> RunStep(StepRunContext& ctx) {
  const Step& step = ctx.step;
  const ValidatedNode& root = ctx.root();
  auto step_error = [&](const absl::Status& st) {
    return absl::Status(
        st.code(), absl::StrCat("step ", ctx.index, " (", step.description, "): ", st.message()));
  };
  // Complex values run in every family's kernels; a generator without a
  // complex case (selection, a gather of 16-byte elements) declines and the
  // step runs on the host path.
  if (step.kind == StepKind::kMatmul && TakesBlas(root)) return RunBlasMatmul(ctx);
  if (step.kind == StepKind::kElementwise) {
    if (absl::Status st = RunElementwise(ctx); !st.ok()) return step_error(st);
    return true;
  }
  if (step.kind == StepKind::kCustom) {
    if (absl::Status st = RunCustom(ctx); !st.ok()) {
      return absl::Status(
          st.code(), absl::StrCat("node '", root.id, "' (", root.op->name, "): ", st.message()));
    }
    return true;
  }
  absl::StatusOr<bool> ran = false;
  if (step.kind == StepKind::kReduction) {
    ran = RunReduction(ctx);
  } else if (step.kind == StepKind::kRows) {
    ran = RunRows(ctx);
  } else if (step.kind == StepKind::kScan) {
    ran = RunScan(ctx);
  } else if (step.kind == StepKind::kShape && step.nodes.size() > 1) {
    ran = RunCompress(ctx);
  } else if (IsLayoutStep(step, root)) {
    ran = RunLayout(ctx);
    if (ran.ok() && !*ran) ran = RunSelection(ctx);
  } else if (step.kind == StepKind::kCreation) {
    ran = RunCreation(ctx);
  } else if (step.kind == StepKind::kMatmul) {
    ran = RunGeneratedMatmul(ctx);
  } else if (step.kind == StepKind::kSort) {
    ran = RunSort(ctx);
  }
  if (!ran.ok()) return step_error(ran.status());
  return *ran;
}

absl::Status CompileStep(StepCompileContext& ctx) {
  const Step& step = ctx.step;
  if (step.kind == StepKind::kElementwise) return CompileElementwise(ctx);
  if (step.kind == StepKind::kScan) return CompileScan(ctx);
  if (step.kind == StepKind::kShape && step.nodes.size() > 1) return CompileCompress(ctx);
  if (IsLayoutStep(step, ctx.root())) {
    if (absl::Status s = CompileLayout(ctx); !s.ok()) return s;
    return CompileSelection(ctx);
  }
  if (step.kind == StepKind::kCreation) return CompileCreation(ctx);
  if (step.kind == StepKind::kCustom) return CompileCustom(ctx);
  if (step.kind == StepKind::kMatmul) return CompileMatmul(ctx);
  if (step.kind == StepKind::kReduction) return CompileReduction(ctx);
  if (step.kind == StepKind::kRows) return CompileRows(ctx);
  if (step.kind == StepKind::kSort) return CompileSort(ctx);
  return absl::OkStatus();  // the host
}

}  // namespace gpuflow::cuda
