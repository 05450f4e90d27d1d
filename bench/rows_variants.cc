// Row-program kernels (GenerateRows, engine/cuda/codegen_rows.cc) on a
// real device: the harness's layer norm `(x - mean) / sqrt(var + 1e-5) * g
// + b` of (4096, 16384) bfloat16 and the same shape in float32, each
// generated kernel launched as RunRows launches it, GPU median of 30 runs
// between events; then variants of the bfloat16 kernel's source that each
// leave one cost out, so the differences place the time (no hardware
// counters needed). A benchmark (figures, not a test):
//
//   build/bin/rows_variants              # time on the device
//   build/bin/rows_variants --dump DIR   # write the sources, no device
//   build/bin/rows_variants --extra DIR  # also time DIR/*.cu: hand-written
//       kernels `variant` with the bfloat16 kernel's arguments (a line
//       "// block N" gives the block), their words checked against it
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
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

constexpr int64_t kRows = 4096;
constexpr int64_t kLength = 16384;

// The harness's layer norm over the last axis of (rows, length) `dtype`.
absl::StatusOr<ValidatedGraph> LayerNorm(DType dtype, int64_t rows, int64_t length) {
  Graph g;
  auto op = [&](const std::string& name, std::vector<Input> inputs, AttrMap attrs = {}) {
    Node n;
    n.id = absl::StrCat("n", g.nodes.size());
    n.op = name;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    g.nodes.push_back(n);
    return Input::Node(n.id);
  };
  auto mean = [&](Input x) {
    return op("mean", {x}, {{"axes", std::vector<int64_t>{-1}}, {"keepdims", true}});
  };
  const Input x = Input::Array("x");
  const Input c = op("sub", {x, mean(x)});
  const Input v = mean(op("mul", {c, c}));
  const Input s = op("sqrt", {op("add", {v, Input::FromScalar(Scalar::Float(1e-5))})});
  op("add", {op("mul", {op("div", {c, s}), Input::Array("g")}), Input::Array("b")});
  ArrayTypeLookup lookup = [&](const std::string& name) -> absl::StatusOr<ValueType> {
    if (name == "x") return ValueType{dtype, *Shape::Create({rows, length}), false};
    return ValueType{dtype, *Shape::Create({length}), false};
  };
  return ValidateGraph(g, lookup, {});
}

// The GPU median (ms) of `source`'s kernel `k.name`, launched as RunRows does.
double TimeKernel(const RowsKernel& k, const std::string& source, const ValidatedGraph& graph,
                  const std::vector<void*>& arrays, void* out) {
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> module = CompileToCubin(source, "variant.cu", options);
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n", std::string(module.status().message()).c_str());
    return -1.0;
  }
  cudaLibrary_t library = nullptr;
  CHECK_CUDA(cudaLibraryLoadData(&library, module->cubin.data(), nullptr, nullptr, 0, nullptr,
                                 nullptr, 0));
  cudaKernel_t kernel = nullptr;
  CHECK_CUDA(cudaLibraryGetKernel(&kernel, library, k.name.c_str()));
  std::vector<uint64_t> words;
  for (const StepInput& in : k.inputs) {
    if (!in.by_value) words.push_back(reinterpret_cast<uint64_t>(arrays[in.ref.index]));
  }
  words.push_back(reinterpret_cast<uint64_t>(out));
  words.push_back(static_cast<uint64_t>(k.rows));
  for (const StepInput& in : k.inputs) {
    if (in.by_value) words.push_back(LiteralWord(graph.literals[in.ref.index]));
  }
  void* args[] = {words.data()};
  cudaEvent_t begin, end;
  CHECK_CUDA(cudaEventCreate(&begin));
  CHECK_CUDA(cudaEventCreate(&end));
  std::vector<float> ms;
  for (int run = 0; run < 35; ++run) {
    CHECK_CUDA(cudaEventRecord(begin));
    CHECK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(kernel),
                                dim3(static_cast<unsigned>(k.rows)), dim3(k.block), args, 0,
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
  std::printf("regs %3d, local %4zu B, blocks/SM %d, ", attrs.numRegs, attrs.localSizeBytes,
              per_sm);
  cudaEventDestroy(begin);
  cudaEventDestroy(end);
  cudaLibraryUnload(library);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int64_t Differ(const std::vector<uint16_t>& a, const std::vector<uint16_t>& b) {
  int64_t differ = 0;
  for (size_t i = 0; i < a.size(); ++i) differ += a[i] != b[i];
  return differ;
}

struct Variant {
  std::string label;
  DType dtype;
  int per_thread_16bit;
  // Source edits: each `from` must occur in the source.
  std::vector<std::pair<std::string, std::string>> edits;
  RowsLayout layout = RowsLayout::kAuto;
  int64_t rows = kRows;
  int64_t length = kLength;
};

int Main(int argc, char** argv) {
  const char* dump = argc == 3 && std::strcmp(argv[1], "--dump") == 0 ? argv[2] : nullptr;
  const char* extra = argc == 3 && std::strcmp(argv[1], "--extra") == 0 ? argv[2] : nullptr;
  const std::vector<Variant> variants = {
      {"float32, as generated", DType::kFloat32, 16, {}},
      {"float32, registers", DType::kFloat32, 16, {}, RowsLayout::kRegisters},
      {"float32 (16384, 4096), as generated",
       DType::kFloat32,
       16,
       {},
       RowsLayout::kAuto,
       16384,
       4096},
      {"float32 (16384, 4096), streamed",
       DType::kFloat32,
       16,
       {},
       RowsLayout::kStream,
       16384,
       4096},
      {"bfloat16 (16384, 4096), as generated",
       DType::kBFloat16,
       16,
       {},
       RowsLayout::kAuto,
       16384,
       4096},
      {"bfloat16 (16384, 4096), streamed",
       DType::kBFloat16,
       16,
       {},
       RowsLayout::kStream,
       16384,
       4096},
      {"bfloat16, registers", DType::kBFloat16, 16, {}, RowsLayout::kRegisters},
      {"bfloat16, as generated", DType::kBFloat16, 16, {}},
      {"bfloat16, 32 a thread (registers)", DType::kBFloat16, 32, {}},
      {"bfloat16, streamed, 3 blocks/SM bound",
       DType::kBFloat16,
       16,
       {{"__launch_bounds__(256)", "__launch_bounds__(256, 6)"}}},
  };
  std::vector<void*> arrays(3, nullptr);
  void* out = nullptr;
  if (dump == nullptr) {
    const int64_t n = kRows * kLength;
    for (void*& a : arrays) {
      if (cudaMalloc(&a, n * 4) != cudaSuccess) return 1;
    }
    if (cudaMalloc(&out, n * 4) != cudaSuccess) return 1;
    // Values as bfloat16 and float32 words alike would read them: small
    // uniform numbers, written as bytes the two dtypes both take as finite.
    std::vector<uint16_t> host(2 * n);
    uint64_t state = 88172645463325252ull;
    for (uint16_t& h : host) {
      state ^= state << 13;
      state ^= state >> 7;
      state ^= state << 17;
      h = static_cast<uint16_t>(0x3E00u + ((state >> 40) & 0x1FFu));  // [0.125, 0.5) in bf16
    }
    for (void* a : arrays) {
      if (cudaMemcpy(a, host.data(), n * 4, cudaMemcpyHostToDevice) != cudaSuccess) return 1;
    }
  }
  int index = 0;
  const int64_t n = kRows * kLength;
  std::vector<uint16_t> want, got(dump == nullptr ? n : 0);
  for (const Variant& v : variants) {
    absl::StatusOr<ValidatedGraph> graph = LayerNorm(v.dtype, v.rows, v.length);
    if (!graph.ok()) {
      std::fprintf(stderr, "%s\n", std::string(graph.status().message()).c_str());
      return 1;
    }
    absl::StatusOr<std::shared_ptr<const Plan>> plan = BuildPlan(*graph, {8}, {});
    if (!plan.ok() || (*plan)->steps.size() != 1) return 1;
    absl::StatusOr<std::optional<RowsKernel>> k =
        GenerateRows(*graph, (*plan)->steps[0], "variant", v.per_thread_16bit, v.layout);
    if (!k.ok() || !k->has_value()) return 1;
    std::string source = (*k)->source;
    for (const auto& [from, to] : v.edits) {
      if (source.find(from) == std::string::npos) {
        std::fprintf(stderr, "%s: no \"%s\" in the source\n", v.label.c_str(), from.c_str());
        return 1;
      }
      source = absl::StrReplaceAll(source, {{from, to}});
    }
    std::printf("%-44s block %4d, vectors %d: ", v.label.c_str(), (*k)->block, (*k)->vector_width);
    if (dump != nullptr) {
      std::ofstream(absl::StrCat(dump, "/rows_variant", index++, ".cu")) << source;
      std::printf("written\n");
      continue;
    }
    if (cudaMemset(out, 0xFF, kRows * kLength * 4) != cudaSuccess) return 1;
    const double ms = TimeKernel(**k, source, *graph, arrays, out);
    const double bytes = 2.0 * v.rows * v.length * static_cast<double>(ItemSize(v.dtype));
    std::printf("%.4f ms, %.2f TB/s", ms, bytes / (ms / 1e3) / 1e12);
    // The bfloat16 register layout's words are the reference for the other
    // bfloat16 kernels of that shape (generated or written by hand).
    const bool reference_shape = v.dtype == DType::kBFloat16 && v.length == kLength;
    if (reference_shape) {
      if (cudaMemcpy(got.data(), out, n * 2, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
      if (want.empty()) {
        if (v.layout != RowsLayout::kRegisters || !v.edits.empty()) return 1;  // listed first
        want = got;
      } else {
        std::printf(", %lld words differ", static_cast<long long>(Differ(want, got)));
      }
    }
    std::printf("\n");
    if (extra == nullptr || !reference_shape || v.layout != RowsLayout::kRegisters) continue;
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(extra)) {
      if (e.path().extension() == ".cu") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::stringstream text;
      text << std::ifstream(f).rdbuf();
      const std::string hand = text.str();
      RowsKernel hk = **k;
      hk.name = "variant";
      const size_t at = hand.find("// block ");
      if (at != std::string::npos) hk.block = std::atoi(hand.c_str() + at + 9);
      if (cudaMemset(out, 0xFF, n * 2) != cudaSuccess) return 1;
      std::printf("  %-42s block %4d: ", f.filename().c_str(), hk.block);
      const double hms = TimeKernel(hk, hand, *graph, arrays, out);
      if (cudaMemcpy(got.data(), out, n * 2, cudaMemcpyDeviceToHost) != cudaSuccess) return 1;
      std::printf("%.4f ms, %.2f TB/s, %lld words differ\n", hms, bytes / (hms / 1e3) / 1e12,
                  static_cast<long long>(Differ(want, got)));
    }
  }
  return 0;
}

}  // namespace
}  // namespace gpuflow::cuda

int main(int argc, char** argv) { return gpuflow::cuda::Main(argc, argv); }
