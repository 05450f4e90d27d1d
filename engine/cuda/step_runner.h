// The step runners: how each kind of plan step runs on the device, one file
// per family, behind one small dispatch (step_dispatch.cc):
//
//   | step                          | file                 |
//   | ----------------------------- | -------------------- |
//   | fused elementwise group       | run_elementwise.cc   |
//   | reduction, softmax, rows      | run_reduction.cc     |
//   | scan (cumsum, cumprod)        | run_scan.cc          |
//   | shape ops, gathers and `full` | run_layout.cc        |
//   | scatter, flatnonzero          | run_select.cc        |
//   | arange, random_*              | run_creation.cc      |
//   | matmul, dot                   | run_matmul.cc        |
//   | custom and raw kernels        | run_custom.cc        |
//   | sort, argsort (CUB)           | run_sort.cc          |
//   | what no runner takes          | run_host.cc          |
//
// Each family has a Run (launch the step's kernels) and a Compile (generate
// and load the same kernels without launching, for Precompile and for a
// plan's first run): the two live side by side so they agree on which
// kernels exist. A runner returns false, having done nothing, when its
// generator does not take the step; the dispatch then runs it on the host.
//
//   StepRunContext ctx{...};
//   absl::StatusOr<bool> on_device = RunStep(ctx);
//
// What a runner derives from a step is kept with the plan (StepCode), so a
// repeated plan neither regenerates sources nor looks kernels up by their
// sources: it only writes the launch words and launches.
#ifndef GPUFLOW_ENGINE_CUDA_STEP_RUNNER_H_
#define GPUFLOW_ENGINE_CUDA_STEP_RUNNER_H_

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/backend.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/device_errors.h"
#include "engine/cuda/device_runtime.h"
#include "engine/cuda/kernel_loader.h"
#include "engine/ir/validate.h"
#include "engine/plan/plan.h"

namespace gpuflow::cuda {

// What the backend derives from one step of a plan, kept with the plan (by
// Plan::id) so a repeated plan neither regenerates its sources nor looks
// its kernels up by their (20 KB) sources: the generators' outputs, by
// generator, and the loaded kernels, by kernel name.
struct StepCode {
  struct Kernel {
    cudaKernel_t kernel = nullptr;
    absl::Time looked_up;  // last lookup through the module cache
  };
  absl::Mutex mu;
  absl::flat_hash_map<std::string, std::shared_ptr<const void>> generated ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<std::string, Kernel> kernels ABSL_GUARDED_BY(mu);
};

struct PlanCode {
  explicit PlanCode(size_t n) : steps(std::make_unique<StepCode[]>(n)) {}
  std::unique_ptr<StepCode[]> steps;
  // Precompile has compiled every step's kernels.
  std::atomic<bool> compiled{false};
};

// The device address of a value a step reads (a literal is uploaded on
// first use).
using ValueAddress = std::function<absl::StatusOr<const void*>(const ValueRef&)>;

// What compiling a step needs: the device, the loader, the step and where
// its code is kept.
struct StepCompileContext {
  DeviceRuntime& device;
  KernelLoader& loader;
  // The step's code, kept with the plan; null for a plan made by hand.
  StepCode* code;
  const ValidatedGraph& graph;
  const Step& step;
  // The step's index in its plan (for errors).
  int index;
  // Counts kernel cache hits and compiles.
  RunResult& result;
  // CudaBackendOptions::reduction_blocks_per_sm.
  int64_t reduction_blocks_per_sm;
  // CudaBackendOptions::rows_elements_per_thread_16bit.
  int rows_elements_per_thread_16bit = 16;

  const ValidatedNode& root() const { return graph.nodes[step.root]; }

  // A generator's output for the step, made once per plan: `generate`
  // returns absl::StatusOr<T>; errors are not kept.
  template <typename T, typename F>
  absl::StatusOr<std::shared_ptr<const T>> Generated(const char* generator, F&& generate) {
    if (code != nullptr) {
      absl::MutexLock lock(&code->mu);
      if (auto it = code->generated.find(generator); it != code->generated.end()) {
        return std::static_pointer_cast<const T>(it->second);
      }
    }
    absl::StatusOr<T> made = generate();
    if (!made.ok()) return made.status();
    auto value = std::make_shared<const T>(*std::move(made));
    if (code != nullptr) {
      absl::MutexLock lock(&code->mu);
      auto [it, inserted] = code->generated.emplace(generator, value);
      return std::static_pointer_cast<const T>(it->second);
    }
    return value;
  }

  // The loader's GetKernel through the step's own table: a kernel the step
  // has used is found by name; every ten minutes it goes through the module
  // cache again, so its disk entry stays recent.
  absl::StatusOr<cudaKernel_t> Kernel(const std::string& source, const std::string& name,
                                      const std::vector<std::string>& extra_options = {});
};

// What running a step needs besides: where its inputs are, its stream and
// its output's memory (allocated by the caller).
struct StepRunContext : StepCompileContext {
  const ValueAddress& ptr;
  CudaStream& stream;
  void* out;
  bool allow_tf32;
  // The run's device-side checks (device_errors.h): a step whose kernels
  // find data-dependent errors (a gather's indices) adds its words here.
  RunChecks* checks = nullptr;
};

// A launch grid of x (and y) blocks, as every generated kernel takes it.
inline dim3 Blocks(int64_t x, int64_t y = 1) {
  return dim3(static_cast<unsigned>(x), static_cast<unsigned>(y));
}

// ---- the dispatch (step_dispatch.cc) ----------------------------------------

// Launch words of a generated kernel's inputs (codegen.h's StepInput): the
// device addresses of those passed by pointer, and the scalars of those
// passed by value, each in input order.
absl::Status PointerWords(StepRunContext& ctx, const std::vector<StepInput>& inputs,
                          std::vector<uint64_t>& words);
void ScalarWords(const StepRunContext& ctx, const std::vector<StepInput>& inputs,
                 std::vector<uint64_t>& words);

// Runs the step on the device when a runner takes it: true. False, having
// done nothing, when none does (the caller runs it with RunOnHost). Errors
// name the step (custom kernels: the node).
absl::StatusOr<bool> RunStep(StepRunContext& ctx);
// Generates and loads the kernels RunStep would launch, so a run finds them
// all in the step's code.
absl::Status CompileStep(StepCompileContext& ctx);

// ---- the runners, by family -------------------------------------------------

absl::Status RunElementwise(StepRunContext& ctx);
absl::Status CompileElementwise(StepCompileContext& ctx);

// Reductions and softmax.
absl::StatusOr<bool> RunReduction(StepRunContext& ctx);
absl::Status CompileReduction(StepCompileContext& ctx);
// Row programs (StepKind::kRows).
absl::StatusOr<bool> RunRows(StepRunContext& ctx);
absl::Status CompileRows(StepCompileContext& ctx);

absl::StatusOr<bool> RunScan(StepRunContext& ctx);
absl::Status CompileScan(StepCompileContext& ctx);

// Shape ops and `full` as strided copies.
absl::StatusOr<bool> RunLayout(StepRunContext& ctx);
absl::Status CompileLayout(StepCompileContext& ctx);

// scatter and flatnonzero (run_select.cc), tried after RunLayout.
absl::StatusOr<bool> RunSelection(StepRunContext& ctx);
absl::Status CompileSelection(StepCompileContext& ctx);
// A shape step of several nodes: take(a, flatnonzero(mask)) with the mask's
// producers (the planner's compress fusion), false for anything else.
absl::StatusOr<bool> RunCompress(StepRunContext& ctx);
absl::Status CompileCompress(StepCompileContext& ctx);

// arange, random_uniform, random_normal.
absl::StatusOr<bool> RunCreation(StepRunContext& ctx);
absl::Status CompileCreation(StepCompileContext& ctx);

// Whether cuBLAS takes the matmul or dot `node` (one float dtype
// throughout, batches equal or on one side).
bool TakesBlas(const ValidatedNode& node);
// cuBLAS (when TakesBlas) or the generated matmul kernel (integers, bool,
// mixed dtypes, broadcast batches); false for what neither takes (a 0-d
// dot). Errors of the cuBLAS path are returned as they are.
absl::StatusOr<bool> RunBlasMatmul(StepRunContext& ctx);
absl::StatusOr<bool> RunGeneratedMatmul(StepRunContext& ctx);
absl::Status CompileMatmul(StepCompileContext& ctx);

// sort and argsort through CUB, searchsorted by a binary search (cub_sort.h).
absl::StatusOr<bool> RunSort(StepRunContext& ctx);
absl::Status CompileSort(StepCompileContext& ctx);

// elementwise_kernel, reduction_kernel and raw_kernel (always on the device).
absl::Status RunCustom(StepRunContext& ctx);
absl::Status CompileCustom(StepCompileContext& ctx);

// The host path: stages the step's inputs through host memory, runs the
// reference kernels (engine/host) and copies the result back.
absl::Status RunOnHost(StepRunContext& ctx);

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_STEP_RUNNER_H_
