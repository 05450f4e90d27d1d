// scatter, flatnonzero, compress and histogram on the device (codegen_select.h): scratch words
// from the stream's pool, data-dependent errors through the run's checks.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen_select.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/device_errors.h"
#include "engine/cuda/step_runner.h"
#include "engine/ir/echo.h"
#include "engine/ir/gather.h"

namespace gpuflow::cuda {
namespace {

// false: both ops run on the host path (engine/cuda/run_host.cc), as before
// the device kernels; for telling a device kernel's fault from the op's.
constexpr bool kSelectionOnDevice = true;

std::string NodePrefix(const ValidatedNode& node) {
  return absl::StrCat("node ", Echo(node.id), " (", node.op->name, "): ");
}

// The errors the host kernels give, word for word.
RunChecks::ErrorFn ScatterError(const ValidatedNode& node, int64_t size) {
  return [prefix = NodePrefix(node), dtype = node.input_types[1].dtype, size](uint64_t index) {
    GatherLayout layout;
    layout.axis_size = size;
    return absl::InvalidArgumentError(absl::StrCat(prefix, GatherIndexError(layout, dtype, index)));
  };
}

RunChecks::ErrorFn CountError(const ValidatedNode& node, int64_t size) {
  return [prefix = NodePrefix(node), size](uint64_t word) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "flatnonzero: the input has ", word - 1,
                                                   " nonzero elements, but the node's size is ",
                                                   size));
  };
}

absl::StatusOr<std::shared_ptr<const std::optional<SelectKernels>>> Generate(
    StepCompileContext& ctx) {
  return ctx.Generated<std::optional<SelectKernels>>(
      "select", [&] { return GenerateSelectKernels(ctx.root()); });
}

absl::Status Launch(StepRunContext& ctx, const SelectKernels& k, const std::string& name,
                    int64_t blocks, int threads, std::vector<uint64_t>& words) {
  absl::StatusOr<cudaKernel_t> kernel = ctx.Kernel(k.source, name);
  if (!kernel.ok()) return kernel.status();
  return ctx.device.Launch(*kernel, Blocks(blocks), dim3(threads), words, ctx.stream);
}

absl::Status RunScatter(StepRunContext& ctx, const SelectKernels& k) {
  const ValidatedNode& node = ctx.root();
  const int64_t bytes = k.size * ItemSize(node.type.output.dtype);
  absl::StatusOr<const void*> src = ctx.ptr(node.inputs[0]);
  if (!src.ok()) return src.status();
  if (bytes > 0) {
    GPUFLOW_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(ctx.out, *src, bytes, cudaMemcpyDeviceToDevice, ctx.stream.get()));
  }
  if (k.count == 0) return absl::OkStatus();
  absl::StatusOr<const void*> indices = ctx.ptr(node.inputs[1]);
  if (!indices.ok()) return indices.status();
  absl::StatusOr<const void*> updates = ctx.ptr(node.inputs[2]);
  if (!updates.ok()) return updates.status();
  if (ctx.checks == nullptr) return absl::InternalError("a scatter step without run checks");
  absl::StatusOr<uint64_t> error_word = ctx.checks->Add(ScatterError(node, k.size));
  if (!error_word.ok()) return error_word.status();
  std::vector<uint64_t> words = k.words;
  words[0] = reinterpret_cast<uint64_t>(ctx.out);
  words[1] = reinterpret_cast<uint64_t>(*indices);
  words[2] = reinterpret_cast<uint64_t>(*updates);
  words[3] = *error_word;
  const int64_t blocks = std::clamp<int64_t>((k.count + 255) / 256, 1, ctx.device.sms() * 32);
  if (k.kind == SelectKernels::Kind::kScatterCombine) {
    return Launch(ctx, k, k.names[0], blocks, 256, words);
  }
  // One winner word per element of A; freed in stream order.
  const int64_t winner_bytes = k.size * k.winner_bytes;
  absl::StatusOr<std::unique_ptr<CudaBuffer>> winners =
      ctx.device.AllocateOn(winner_bytes, ctx.stream);
  if (!winners.ok()) return winners.status();
  GPUFLOW_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync((*winners)->data(), 0, winner_bytes, ctx.stream.get()));
  words[4] = reinterpret_cast<uint64_t>((*winners)->data());
  for (const std::string& name : k.names) {
    if (absl::Status s = Launch(ctx, k, name, blocks, 256, words); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status RunFlatNonzero(StepRunContext& ctx, const SelectKernels& k) {
  const ValidatedNode& node = ctx.root();
  if (k.count == 0) return absl::OkStatus();  // inference made the size 0
  const int64_t tiles = static_cast<int64_t>(k.words[6]);
  absl::StatusOr<const void*> in = ctx.ptr(node.inputs[0]);
  if (!in.ok()) return in.status();
  if (ctx.checks == nullptr) return absl::InternalError("a flatnonzero step without run checks");
  absl::StatusOr<uint64_t> error_word = ctx.checks->Add(CountError(node, k.size));
  if (!error_word.ok()) return error_word.status();
  absl::StatusOr<std::unique_ptr<CudaBuffer>> counts = ctx.device.AllocateOn(tiles * 8, ctx.stream);
  if (!counts.ok()) return counts.status();
  std::vector<uint64_t> words = k.words;
  words[0] = reinterpret_cast<uint64_t>(*in);
  words[1] = reinterpret_cast<uint64_t>(ctx.out);
  words[2] = reinterpret_cast<uint64_t>((*counts)->data());
  words[3] = *error_word;
  if (absl::Status s = Launch(ctx, k, k.names[0], tiles, 256, words); !s.ok()) return s;
  if (absl::Status s = Launch(ctx, k, k.names[1], 1, 1024, words); !s.ok()) return s;
  if (k.size == 0) return absl::OkStatus();
  return Launch(ctx, k, k.names[2], tiles, 256, words);
}

absl::StatusOr<std::shared_ptr<const std::optional<HistogramKernels>>> GenerateHistogram(
    StepCompileContext& ctx) {
  return ctx.Generated<std::optional<HistogramKernels>>(
      "histogram", [&] { return GenerateHistogramKernels(ctx.root()); });
}

// Partials past this many bytes (blocks x bins x 8) send the step to the host.
constexpr int64_t kMaxHistogramPartials = int64_t{1} << 30;

absl::StatusOr<bool> RunHistogram(StepRunContext& ctx, const HistogramKernels& k) {
  const ValidatedNode& node = ctx.root();
  if (k.weighted && k.chunks * k.bins * 8 > kMaxHistogramPartials) return false;
  const int64_t out_bytes = k.bins * ItemSize(node.type.output.dtype);
  if (!k.weighted && out_bytes > 0) {
    GPUFLOW_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(ctx.out, 0, out_bytes, ctx.stream.get()));
  }
  if (k.bins == 0 || (k.n == 0 && !k.weighted)) return true;
  std::vector<uint64_t> words = k.words;
  for (int i = 0; i < static_cast<int>(node.inputs.size()); ++i) {
    absl::StatusOr<const void*> p = ctx.ptr(node.inputs[i]);
    if (!p.ok()) return p.status();
    words[i == 2 ? 7 : i] = reinterpret_cast<uint64_t>(*p);
  }
  words[2] = reinterpret_cast<uint64_t>(ctx.out);
  // Scratch: the edges as compared (8 bytes each at most), the partials.
  const int64_t edge_bytes = k.shared ? 0 : (k.bins + 1) * 8;
  const int64_t partial_bytes = k.weighted ? std::max<int64_t>(k.chunks, 1) * k.bins * 8 : 0;
  std::unique_ptr<CudaBuffer> scratch;
  if (edge_bytes + partial_bytes > 0) {
    absl::StatusOr<std::unique_ptr<CudaBuffer>> b =
        ctx.device.AllocateOn(edge_bytes + partial_bytes, ctx.stream);
    if (!b.ok()) return b.status();
    scratch = *std::move(b);
    char* base = static_cast<char*>(scratch->data());
    words[9] = reinterpret_cast<uint64_t>(base);
    words[8] = reinterpret_cast<uint64_t>(base + edge_bytes);
    if (k.weighted && !k.shared) {
      GPUFLOW_CUDA_RETURN_IF_ERROR(
          cudaMemsetAsync(base + edge_bytes, 0, partial_bytes, ctx.stream.get()));
    }
  }
  size_t next = 0;
  auto launch = [&](int64_t blocks) -> absl::Status {
    absl::StatusOr<cudaKernel_t> kernel = ctx.Kernel(k.source, k.names[next++]);
    if (!kernel.ok()) return kernel.status();
    return ctx.device.Launch(*kernel, Blocks(std::max<int64_t>(blocks, 1)), dim3(256), words,
                             ctx.stream);
  };
  if (!k.shared) {
    if (absl::Status s = launch((k.bins + 256) / 256); !s.ok()) return s;
  }
  if (!k.weighted) {
    // Enough blocks to fill the GPU, each counting fewer than 2^32 elements.
    const int64_t blocks = std::max<int64_t>(
        std::clamp<int64_t>((k.n + 4095) / 4096, 1, ctx.device.sms() * 8), (k.n >> 31) + 1);
    if (absl::Status s = launch(blocks); !s.ok()) return s;
    return true;
  }
  if (k.chunks > 0) {
    if (absl::Status s = launch(k.chunks); !s.ok()) return s;
  } else {
    ++next;
  }
  if (absl::Status s = launch((k.bins + 255) / 256); !s.ok()) return s;
  return true;
}

absl::StatusOr<std::shared_ptr<const std::optional<CompressKernels>>> GenerateCompress(
    StepCompileContext& ctx) {
  return ctx.Generated<std::optional<CompressKernels>>(
      "compress", [&] { return GenerateCompressKernels(ctx.graph, ctx.step); });
}

}  // namespace

absl::StatusOr<bool> RunCompress(StepRunContext& ctx) {
  absl::StatusOr<std::shared_ptr<const std::optional<CompressKernels>>> made =
      GenerateCompress(ctx);
  if (!made.ok()) return made.status();
  if (!(*made)->has_value()) return false;
  const CompressKernels& k = ***made;
  if (k.n == 0) return true;  // inference made the size 0
  if (ctx.checks == nullptr) return absl::InternalError("a compress step without run checks");
  absl::StatusOr<uint64_t> error_word =
      ctx.checks->Add(CountError(ctx.graph.nodes[k.flatnonzero], k.size));
  if (!error_word.ok()) return error_word.status();
  absl::StatusOr<std::unique_ptr<CudaBuffer>> counts =
      ctx.device.AllocateOn(k.tiles * 8, ctx.stream);
  if (!counts.ok()) return counts.status();
  std::vector<uint64_t> words = {reinterpret_cast<uint64_t>(ctx.out),
                                 0,
                                 reinterpret_cast<uint64_t>((*counts)->data()),
                                 *error_word,
                                 static_cast<uint64_t>(k.n),
                                 static_cast<uint64_t>(k.size),
                                 static_cast<uint64_t>(k.tiles)};
  if (absl::Status s = PointerWords(ctx, k.inputs, words); !s.ok()) return s;
  ScalarWords(ctx, k.inputs, words);
  auto launch = [&](const std::string& name, int64_t blocks, int threads) -> absl::Status {
    absl::StatusOr<cudaKernel_t> kernel = ctx.Kernel(k.source, name);
    if (!kernel.ok()) return kernel.status();
    return ctx.device.Launch(*kernel, Blocks(blocks), dim3(threads), words, ctx.stream);
  };
  if (absl::Status s = launch(k.names[0], k.tiles, 256); !s.ok()) return s;
  if (absl::Status s = launch(k.names[1], 1, 1024); !s.ok()) return s;
  if (k.size > 0) {
    if (absl::Status s = launch(k.names[2], k.tiles, 256); !s.ok()) return s;
  }
  return true;
}

absl::Status CompileCompress(StepCompileContext& ctx) {
  absl::StatusOr<std::shared_ptr<const std::optional<CompressKernels>>> made =
      GenerateCompress(ctx);
  if (!made.ok()) return made.status();
  if (!(*made)->has_value()) return absl::OkStatus();
  for (const std::string& name : (**made)->names) {
    if (absl::Status s = ctx.Kernel((**made)->source, name).status(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> RunSelection(StepRunContext& ctx) {
  if (!kSelectionOnDevice || ctx.step.nodes.size() != 1) return false;
  if (ctx.root().op->name == "histogram") {
    absl::StatusOr<std::shared_ptr<const std::optional<HistogramKernels>>> h =
        GenerateHistogram(ctx);
    if (!h.ok()) return h.status();
    if (!(*h)->has_value()) return false;
    return RunHistogram(ctx, ***h);
  }
  absl::StatusOr<std::shared_ptr<const std::optional<SelectKernels>>> k = Generate(ctx);
  if (!k.ok()) return k.status();
  if (!(*k)->has_value()) return false;
  const SelectKernels& kernels = ***k;
  absl::Status s = kernels.kind == SelectKernels::Kind::kFlatNonzero ? RunFlatNonzero(ctx, kernels)
                                                                     : RunScatter(ctx, kernels);
  if (!s.ok()) return s;
  return true;
}

absl::Status CompileSelection(StepCompileContext& ctx) {
  if (!kSelectionOnDevice || ctx.step.nodes.size() != 1) return absl::OkStatus();
  if (ctx.root().op->name == "histogram") {
    absl::StatusOr<std::shared_ptr<const std::optional<HistogramKernels>>> h =
        GenerateHistogram(ctx);
    if (!h.ok()) return h.status();
    if (!(*h)->has_value()) return absl::OkStatus();
    for (const std::string& name : (**h)->names) {
      if (absl::Status s = ctx.Kernel((**h)->source, name).status(); !s.ok()) return s;
    }
    return absl::OkStatus();
  }
  absl::StatusOr<std::shared_ptr<const std::optional<SelectKernels>>> k = Generate(ctx);
  if (!k.ok()) return k.status();
  if (!(*k)->has_value()) return absl::OkStatus();
  for (const std::string& name : (**k)->names) {
    if (absl::Status s = ctx.Kernel((**k)->source, name).status(); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace gpuflow::cuda
