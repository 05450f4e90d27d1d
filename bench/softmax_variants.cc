// Tiled softmax kernel shapes on a real device (SoftmaxTiling in
// engine/cuda/codegen.h): each shape's generated kernel for the harness's
// two tiled workloads (softmax(axis=-1) of (64, 2^20) and softmax(axis=0) of
// (8192, 8192), float32), launched as RunSoftmax launches it (a memset of
// the counters, then the grid), GPU median of 30 runs between events.
// A benchmark (figures, not a test); the defaults of SoftmaxTiling come from
// its run on the H200 (bench/RESULTS.md):
//
//   build/bin/softmax_variants
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/nvrtc_compiler.h"
#include "engine/ir/validate.h"
#include "engine/plan/plan.h"

namespace gpuflow::cuda {
namespace {

#define CHECK_CUDA(call)                                              \
  do {                                                                \
    const cudaError_t e = (call);                                     \
    if (e != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e)); \
      return -1.0;                                                    \
    }                                                                 \
  } while (0)

// The GPU median (ms) of `k` over x (n floats), or a negative number.
double TimeKernel(const SoftmaxKernel& k, const void* x, void* out) {
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> module = CompileToCubin(k.source, "variant.cu", options);
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n", std::string(module.status().message()).c_str());
    return -1.0;
  }
  cudaLibrary_t library = nullptr;
  CHECK_CUDA(cudaLibraryLoadData(&library, module->cubin.data(), nullptr, nullptr, 0, nullptr,
                                 nullptr, 0));
  cudaKernel_t kernel = nullptr;
  CHECK_CUDA(cudaLibraryGetKernel(&kernel, library, k.name.c_str()));
  void* scratch = nullptr;
  CHECK_CUDA(cudaMalloc(&scratch, TiledScratchBytes(k)));
  std::vector<uint64_t> words = {reinterpret_cast<uint64_t>(x), reinterpret_cast<uint64_t>(out),
                                 static_cast<uint64_t>(k.rows),
                                 reinterpret_cast<uint64_t>(scratch)};
  void* args[] = {words.data()};
  cudaEvent_t begin, end;
  CHECK_CUDA(cudaEventCreate(&begin));
  CHECK_CUDA(cudaEventCreate(&end));
  std::vector<float> ms;
  for (int run = 0; run < 35; ++run) {
    CHECK_CUDA(cudaEventRecord(begin));
    CHECK_CUDA(cudaMemsetAsync(scratch, 0, TiledCounterBytes(k)));
    CHECK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(kernel),
                                dim3(static_cast<unsigned>(TiledBlocks(k))), dim3(k.block), args, 0,
                                nullptr));
    CHECK_CUDA(cudaEventRecord(end));
    CHECK_CUDA(cudaEventSynchronize(end));
    float t = 0;
    CHECK_CUDA(cudaEventElapsedTime(&t, begin, end));
    if (run >= 5) ms.push_back(t);
  }
  cudaFuncAttributes attrs{};
  cudaFuncGetAttributes(&attrs, reinterpret_cast<const void*>(kernel));
  int per_sm = 0;
  cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reinterpret_cast<const void*>(kernel),
                                                k.block, 0);
  std::printf("  regs %d, blocks/SM %d, ", attrs.numRegs, per_sm);
  cudaFree(scratch);
  cudaLibraryUnload(library);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int Main() {
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis;
  };
  const Case cases[] = {{{64, 1 << 20}, -1}, {{8192, 8192}, 0}};
  const int64_t n = int64_t{64} << 20;
  void *x = nullptr, *out = nullptr;
  if (cudaMalloc(&x, n * 4) != cudaSuccess || cudaMalloc(&out, n * 4) != cudaSuccess) return 1;
  {
    // Uniform on [-8, 8), as the harness draws.
    std::vector<float> host(n);
    uint64_t state = 88172645463325252ull;
    for (float& f : host) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      f = static_cast<float>((state >> 40) * (16.0 / (1 << 24)) - 8.0);
    }
    if (cudaMemcpy(x, host.data(), n * 4, cudaMemcpyHostToDevice) != cudaSuccess) return 1;
  }
  std::vector<SoftmaxTiling> tilings;
  for (int block : {256, 512, 1024}) {
    for (int values : {8, 16, 32}) {
      for (int min_blocks : {1, 2, 3, 4, 6}) {
        for (bool vectorize : {false, true}) {
          if (block * min_blocks > 2048) continue;
          tilings.push_back(SoftmaxTiling{.other_axis = true,
                                          .block = block,
                                          .values_last_axis = values,
                                          .values_other_axis = values,
                                          .vectorize = vectorize,
                                          .min_blocks_per_sm = min_blocks});
        }
      }
    }
  }
  for (const Case& c : cases) {
    Graph g;
    Node sm;
    sm.id = "s";
    sm.op = "softmax";
    sm.inputs = {Input::Array("x")};
    sm.attrs["axis"] = c.axis;
    g.nodes.push_back(sm);
    ArrayTypeLookup lookup = [&](const std::string&) -> absl::StatusOr<ValueType> {
      return ValueType{DType::kFloat32, *Shape::Create(c.shape), false};
    };
    absl::StatusOr<ValidatedGraph> v = ValidateGraph(g, lookup, {});
    if (!v.ok()) return 1;
    absl::StatusOr<std::shared_ptr<const Plan>> plan = BuildPlan(*v, {0}, {});
    if (!plan.ok()) return 1;
    std::printf("softmax(axis=%lld) of (%lld, %lld) float32 (%.0f MB read + written):\n",
                static_cast<long long>(c.axis), static_cast<long long>(c.shape[0]),
                static_cast<long long>(c.shape[1]), 2.0 * n * 4 / 1e6);
    for (const SoftmaxTiling& t : tilings) {
      absl::StatusOr<std::optional<SoftmaxKernel>> k =
          GenerateSoftmax(*v, (*plan)->steps[0], "variant", t);
      if (!k.ok() || !k->has_value() || !(*k)->tiled) continue;
      if (t.vectorize && (*k)->vector_width == 0) continue;  // the same kernel as without
      std::printf("block %4d, values %2d, min blocks %d, vectors %d, parts %3lld:", t.block,
                  (*k)->values_per_thread, t.min_blocks_per_sm, (*k)->vector_width,
                  static_cast<long long>((*k)->parts));
      const double ms = TimeKernel(**k, x, out);
      std::printf("%.4f ms, %.2f TB/s\n", ms, 2.0 * n * 4 / (ms / 1e3) / 1e12);
    }
  }
  return 0;
}

}  // namespace
}  // namespace gpuflow::cuda

int main() { return gpuflow::cuda::Main(); }
