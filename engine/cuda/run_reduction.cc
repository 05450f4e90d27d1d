// Reduction and softmax steps (codegen_reduce.cc): the launch grid of a
// reduction (split over more blocks when the outputs alone do not fill the
// device, a finalize kernel then combining the parts), softmax rows in one
// kernel or, when long, in three passes over parts, and row programs
// (codegen_rows.cc) in one kernel.
#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/step_runner.h"

namespace gpuflow::cuda {

namespace {

// How a generated reduction is launched on a device with `sms` SMs (Run
// and Compile must agree: the grid decides which kernels exist).
struct ReductionGrid {
  int64_t blocks_x = 1;
  // Parts the reduced range is split into; above 1, a finalize kernel
  // combines them.
  int64_t splits = 1;
  // Few outputs: a block combines each output's partials; many: a thread.
  bool finalize_by_block = false;
};

ReductionGrid ReductionGridFor(const ReductionKernel& k, int64_t sms, int64_t blocks_per_sm) {
  const int64_t m = k.outputs;
  const int64_t r = k.reduced;
  const bool outer = k.strategy == ReductionKernel::Strategy::kOuter;
  ReductionGrid grid;
  grid.blocks_x = outer ? std::min<int64_t>((m + k.block - 1) / k.block, sms * 32)
                        : std::min<int64_t>(m, sms * 32);
  // Enough blocks to fill the device: split the reduced range when the
  // outputs alone do not. Contiguous (inner) ranges of many elements take up
  // to 16 blocks per SM, about 32K elements each: more blocks than fit at
  // once even out the SMs' finishing times (a 2^28-element sum: 0.260 ms at
  // 4 blocks per SM, 0.249 at 16, CUB 0.248; bench/sum_variants.cu on the
  // H200, 2026-11-29).
  if (grid.blocks_x < 2 * sms) {
    int64_t target = blocks_per_sm * sms;
    if (!outer)
      target = std::clamp<int64_t>(m * r / 32768, target, std::max<int64_t>(target, 16 * sms));
    int64_t splits = (target + grid.blocks_x - 1) / grid.blocks_x;
    splits = std::clamp<int64_t>(splits, 1, std::max<int64_t>(1, r / (outer ? 64 : 2048)));
    grid.splits = std::min<int64_t>(splits, 65535);
  }
  grid.finalize_by_block = m < 4 * sms;
  return grid;
}

std::string FinalizeKernelName(const ReductionKernel& k, const ReductionGrid& grid) {
  return k.name + (grid.finalize_by_block ? "_finalize_block" : "_finalize");
}

absl::StatusOr<std::shared_ptr<const std::optional<SoftmaxKernel>>> GenerateSoftmaxStep(
    StepCompileContext& ctx) {
  return ctx.Generated<std::optional<SoftmaxKernel>>(
      "softmax", [&] { return GenerateSoftmax(ctx.graph, ctx.step); });
}

absl::StatusOr<std::shared_ptr<const std::optional<ReductionKernel>>> GenerateReductionStep(
    StepCompileContext& ctx) {
  return ctx.Generated<std::optional<ReductionKernel>>(
      "reduction", [&] { return GenerateReduction(ctx.graph, ctx.step); });
}

absl::Status RunSoftmax(StepRunContext& ctx, const SoftmaxKernel& k) {
  const int64_t sms = ctx.device.sms();
  absl::StatusOr<cudaKernel_t> kernel = ctx.Kernel(k.source, k.name);
  if (!kernel.ok()) return kernel.status();
  if (k.tiled && k.parts > 1) {
    // A row's blocks must all fit on the device at once, or every one of
    // them waits its 5 ms before computing the others' parts (a device with
    // few SMs): then the untiled layouts instead. Asked once per plan step.
    absl::StatusOr<std::shared_ptr<const bool>> fits =
        ctx.Generated<bool>("softmax_tiles_fit", [&]() -> absl::StatusOr<bool> {
          int per_sm = 0;
          if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                  &per_sm, reinterpret_cast<const void*>(*kernel), k.block, 0) != cudaSuccess) {
            cudaGetLastError();  // not sticky; the tiled kernel still runs
            return true;
          }
          return per_sm * sms >= k.parts;
        });
    if (!fits.ok()) return fits.status();
    if (!**fits) {
      absl::StatusOr<std::shared_ptr<const std::optional<SoftmaxKernel>>> untiled =
          ctx.Generated<std::optional<SoftmaxKernel>>("softmax_untiled", [&] {
            // Named apart: the step's kernel table is keyed by name.
            return GenerateSoftmax(ctx.graph, ctx.step, "gf_softmax_untiled",
                                   SoftmaxTiling{.enabled = false});
          });
      if (!untiled.ok()) return untiled.status();
      if ((*untiled)->has_value() && !(**untiled)->tiled) return RunSoftmax(ctx, ***untiled);
    }
  }
  std::vector<uint64_t> words;
  if (absl::Status s = PointerWords(ctx, k.inputs, words); !s.ok()) return s;
  words.push_back(reinterpret_cast<uint64_t>(ctx.out));
  words.push_back(static_cast<uint64_t>(k.rows));
  if (k.tiled) {
    const int64_t blocks = TiledBlocks(k);
    if (blocks > (int64_t{1} << 31) - 1) {
      return absl::InvalidArgumentError(absl::StrCat("softmax of ", k.rows, " rows of ",
                                                     k.row_length, " is too large for one grid"));
    }
    absl::StatusOr<std::unique_ptr<CudaBuffer>> scratch =
        ctx.device.AllocateOn(TiledScratchBytes(k), ctx.stream);
    if (!scratch.ok()) return scratch.status();
    GPUFLOW_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync((*scratch)->data(), 0, TiledCounterBytes(k), ctx.stream.get()));
    words.push_back(reinterpret_cast<uint64_t>((*scratch)->data()));
    ScalarWords(ctx, k.inputs, words);
    // `scratch` is freed in stream order, after the kernel.
    return ctx.device.Launch(*kernel, Blocks(blocks), dim3(k.block), words, ctx.stream);
  }
  if (!k.split) {
    ScalarWords(ctx, k.inputs, words);
    const int64_t blocks = k.thread_per_row
                               ? std::min<int64_t>((k.rows + 31) / 32, int64_t{1} << 30)
                               : std::min<int64_t>(k.rows, int64_t{1} << 30);
    return ctx.device.Launch(*kernel, Blocks(blocks), dim3(k.block), words, ctx.stream);
  }
  // Long rows: about four blocks per SM over all the rows' parts, parts
  // of at least 16K elements.
  const int64_t parts = std::clamp<int64_t>((4 * sms + k.rows - 1) / k.rows, 1,
                                            std::max<int64_t>(1, k.row_length / 16384));
  absl::StatusOr<std::unique_ptr<CudaBuffer>> scratch =
      ctx.device.AllocateOn(2 * k.rows * parts * k.accumulator_bytes, ctx.stream);
  if (!scratch.ok()) return scratch.status();
  words.push_back(static_cast<uint64_t>(parts));
  words.push_back(reinterpret_cast<uint64_t>((*scratch)->data()));
  ScalarWords(ctx, k.inputs, words);
  const int64_t blocks = std::min<int64_t>(k.rows * parts, int64_t{1} << 30);
  for (const char* suffix : {"_pmax", "_psum"}) {
    absl::StatusOr<cudaKernel_t> pass = ctx.Kernel(k.source, k.name + suffix);
    if (!pass.ok()) return pass.status();
    if (absl::Status s = ctx.device.Launch(*pass, Blocks(blocks), dim3(k.block), words, ctx.stream);
        !s.ok()) {
      return s;
    }
  }
  // `scratch` is freed in stream order, after the kernels that use it.
  return ctx.device.Launch(*kernel, Blocks(blocks), dim3(k.block), words, ctx.stream);
}

absl::StatusOr<std::shared_ptr<const std::optional<RowsKernel>>> GenerateRowsStep(
    StepCompileContext& ctx) {
  return ctx.Generated<std::optional<RowsKernel>>("rows", [&] {
    return GenerateRows(ctx.graph, ctx.step, "gf_rows", ctx.rows_elements_per_thread_16bit);
  });
}

}  // namespace

absl::StatusOr<bool> RunRows(StepRunContext& ctx) {
  if (ctx.root().type.output.shape.num_elements() == 0) return true;
  absl::StatusOr<std::shared_ptr<const std::optional<RowsKernel>>> rows = GenerateRowsStep(ctx);
  if (!rows.ok()) return rows.status();
  if (!(*rows)->has_value()) return false;
  const RowsKernel& k = ***rows;
  absl::StatusOr<cudaKernel_t> kernel = ctx.Kernel(k.source, k.name);
  if (!kernel.ok()) return kernel.status();
  std::vector<uint64_t> words;
  if (absl::Status s = PointerWords(ctx, k.inputs, words); !s.ok()) return s;
  words.push_back(reinterpret_cast<uint64_t>(ctx.out));
  words.push_back(static_cast<uint64_t>(k.rows));
  ScalarWords(ctx, k.inputs, words);
  const int64_t blocks = std::min<int64_t>(k.rows, int64_t{1} << 30);
  if (absl::Status s = ctx.device.Launch(*kernel, Blocks(blocks), dim3(k.block), words, ctx.stream);
      !s.ok()) {
    return s;
  }
  return true;
}

absl::Status CompileRows(StepCompileContext& ctx) {
  if (ctx.root().type.output.shape.num_elements() == 0) return absl::OkStatus();
  absl::StatusOr<std::shared_ptr<const std::optional<RowsKernel>>> rows = GenerateRowsStep(ctx);
  if (!rows.ok()) return rows.status();
  if (!(*rows)->has_value()) return absl::OkStatus();  // runs on the host
  return ctx.Kernel((**rows)->source, (**rows)->name).status();
}

absl::StatusOr<bool> RunReduction(StepRunContext& ctx) {
  // An empty output needs no kernel.
  if (ctx.root().type.output.shape.num_elements() == 0) return true;
  const int64_t sms = ctx.device.sms();

  absl::StatusOr<std::shared_ptr<const std::optional<SoftmaxKernel>>> softmax =
      GenerateSoftmaxStep(ctx);
  if (!softmax.ok()) return softmax.status();
  if ((*softmax)->has_value()) {
    if (absl::Status s = RunSoftmax(ctx, ***softmax); !s.ok()) return s;
    return true;
  }

  absl::StatusOr<std::shared_ptr<const std::optional<ReductionKernel>>> reduction =
      GenerateReductionStep(ctx);
  if (!reduction.ok()) return reduction.status();
  if (!(*reduction)->has_value()) return false;
  const ReductionKernel& k = ***reduction;
  const int64_t m = k.outputs;
  const int64_t r = k.reduced;
  const ReductionGrid grid = ReductionGridFor(k, sms, ctx.reduction_blocks_per_sm);
  const int64_t blocks_x = grid.blocks_x;
  const int64_t splits = grid.splits;
  const int64_t chunk = (r + splits - 1) / splits;
  std::unique_ptr<CudaBuffer> scratch;
  if (splits > 1) {
    absl::StatusOr<std::unique_ptr<CudaBuffer>> buffer =
        ctx.device.AllocateOn(splits * m * k.accumulator_bytes, ctx.stream);
    if (!buffer.ok()) return buffer.status();
    scratch = *std::move(buffer);
  }
  absl::StatusOr<cudaKernel_t> partial = ctx.Kernel(k.source, k.name);
  if (!partial.ok()) return partial.status();
  std::vector<uint64_t> words;
  if (absl::Status s = PointerWords(ctx, k.prologue_inputs, words); !s.ok()) return s;
  if (absl::Status s = PointerWords(ctx, k.epilogue_inputs, words); !s.ok()) return s;
  words.push_back(reinterpret_cast<uint64_t>(ctx.out));
  words.push_back(reinterpret_cast<uint64_t>(scratch ? scratch->data() : nullptr));
  words.push_back(static_cast<uint64_t>(m));
  words.push_back(static_cast<uint64_t>(r));
  words.push_back(static_cast<uint64_t>(splits));
  words.push_back(static_cast<uint64_t>(chunk));
  for (size_t d = 0; d < k.kept_dims.size(); ++d) {
    words.push_back(static_cast<uint64_t>(k.kept_dims[d]));
    words.push_back(static_cast<uint64_t>(k.kept_strides[d]));
  }
  for (size_t d = 0; d < k.reduced_dims.size(); ++d) {
    words.push_back(static_cast<uint64_t>(k.reduced_dims[d]));
    words.push_back(static_cast<uint64_t>(k.reduced_strides[d]));
  }
  ScalarWords(ctx, k.prologue_inputs, words);
  ScalarWords(ctx, k.epilogue_inputs, words);
  if (absl::Status s =
          ctx.device.Launch(*partial, Blocks(blocks_x, splits), dim3(k.block), words, ctx.stream);
      !s.ok()) {
    return s;
  }
  if (splits > 1) {
    const bool by_block = grid.finalize_by_block;
    absl::StatusOr<cudaKernel_t> finalize = ctx.Kernel(k.source, FinalizeKernelName(k, grid));
    if (!finalize.ok()) return finalize.status();
    const int64_t finalize_blocks = by_block ? m : std::min<int64_t>((m + 255) / 256, sms * 32);
    if (absl::Status s =
            ctx.device.Launch(*finalize, Blocks(finalize_blocks), dim3(256), words, ctx.stream);
        !s.ok()) {
      return s;
    }
  }
  // `scratch` is freed in stream order, after the kernels that use it.
  return true;
}

absl::Status CompileReduction(StepCompileContext& ctx) {
  if (ctx.root().type.output.shape.num_elements() == 0) return absl::OkStatus();  // nothing
  absl::StatusOr<std::shared_ptr<const std::optional<SoftmaxKernel>>> softmax =
      GenerateSoftmaxStep(ctx);
  if (!softmax.ok()) return softmax.status();
  if ((*softmax)->has_value()) {
    const SoftmaxKernel& k = ***softmax;
    if (k.split) {
      for (const char* suffix : {"_pmax", "_psum"}) {
        if (absl::Status s = ctx.Kernel(k.source, k.name + suffix).status(); !s.ok()) return s;
      }
    }
    return ctx.Kernel(k.source, k.name).status();
  }
  absl::StatusOr<std::shared_ptr<const std::optional<ReductionKernel>>> reduction =
      GenerateReductionStep(ctx);
  if (!reduction.ok()) return reduction.status();
  if (!(*reduction)->has_value()) return absl::OkStatus();  // runs on the host
  const ReductionKernel& k = ***reduction;
  if (absl::Status s = ctx.Kernel(k.source, k.name).status(); !s.ok()) return s;
  const ReductionGrid grid = ReductionGridFor(k, ctx.device.sms(), ctx.reduction_blocks_per_sm);
  if (grid.splits == 1) return absl::OkStatus();
  return ctx.Kernel(k.source, FinalizeKernelName(k, grid)).status();
}

}  // namespace gpuflow::cuda
