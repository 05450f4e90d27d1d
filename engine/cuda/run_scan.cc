// Scan steps (cumsum, cumprod; codegen_scan.cc): one kernel, or, when the
// rows are cut into parts, part totals and their prefixes first.
#include <optional>

#include "engine/cuda/codegen.h"
#include "engine/cuda/step_runner.h"

namespace gpuflow::cuda {

namespace {

absl::StatusOr<std::shared_ptr<const std::optional<ScanKernel>>> Generate(StepCompileContext& ctx) {
  return ctx.Generated<std::optional<ScanKernel>>(
      "scan", [&] { return GenerateScan(ctx.graph, ctx.step); });
}

}  // namespace

absl::StatusOr<bool> RunScan(StepRunContext& ctx) {
  // An empty output needs no kernel.
  if (ctx.root().type.output.shape.num_elements() == 0) return true;
  absl::StatusOr<std::shared_ptr<const std::optional<ScanKernel>>> scan = Generate(ctx);
  if (!scan.ok()) return scan.status();
  if (!(*scan)->has_value()) return false;
  const ScanKernel& k = ***scan;
  const ScanLaunch launch = ScanLaunchFor(k, ctx.device.sms());
  absl::StatusOr<const void*> in = ctx.ptr(k.input.ref);
  if (!in.ok()) return in.status();
  std::unique_ptr<CudaBuffer> carry;
  if (launch.chunks > 1) {
    absl::StatusOr<std::unique_ptr<CudaBuffer>> buffer =
        ctx.device.AllocateOn(k.rows * launch.chunks * k.accumulator_bytes, ctx.stream);
    if (!buffer.ok()) return buffer.status();
    carry = *std::move(buffer);
  }
  std::vector<uint64_t> words = {reinterpret_cast<uint64_t>(*in),
                                 reinterpret_cast<uint64_t>(ctx.out),
                                 reinterpret_cast<uint64_t>(carry ? carry->data() : nullptr),
                                 static_cast<uint64_t>(k.rows),
                                 static_cast<uint64_t>(k.length),
                                 static_cast<uint64_t>(k.stride),
                                 static_cast<uint64_t>(launch.chunks),
                                 static_cast<uint64_t>(launch.chunk)};
  if (launch.chunks > 1) {
    absl::StatusOr<cudaKernel_t> reduce = ctx.Kernel(k.split_source, k.reduce_name);
    if (!reduce.ok()) return reduce.status();
    if (absl::Status s =
            ctx.device.Launch(*reduce, Blocks(launch.blocks), dim3(k.block), words, ctx.stream);
        !s.ok()) {
      return s;
    }
    absl::StatusOr<cudaKernel_t> prefixes = ctx.Kernel(k.split_source, k.carry_name);
    if (!prefixes.ok()) return prefixes.status();
    if (absl::Status s = ctx.device.Launch(*prefixes, Blocks(launch.carry_blocks), dim3(k.block),
                                           words, ctx.stream);
        !s.ok()) {
      return s;
    }
  }
  absl::StatusOr<cudaKernel_t> kernel = ctx.Kernel(k.source, k.name);
  if (!kernel.ok()) return kernel.status();
  if (absl::Status s =
          ctx.device.Launch(*kernel, Blocks(launch.blocks), dim3(k.block), words, ctx.stream);
      !s.ok()) {
    return s;
  }
  // `carry` is freed in stream order, after the kernels that use it.
  return true;
}

absl::Status CompileScan(StepCompileContext& ctx) {
  absl::StatusOr<std::shared_ptr<const std::optional<ScanKernel>>> scan = Generate(ctx);
  if (!scan.ok()) return scan.status();
  if (!(*scan)->has_value()) return absl::OkStatus();  // runs on the host
  const ScanKernel& k = ***scan;
  if (ScanLaunchFor(k, ctx.device.sms()).chunks > 1) {
    if (absl::Status s = ctx.Kernel(k.split_source, k.reduce_name).status(); !s.ok()) return s;
    if (absl::Status s = ctx.Kernel(k.split_source, k.carry_name).status(); !s.ok()) return s;
  }
  return ctx.Kernel(k.source, k.name).status();
}

}  // namespace gpuflow::cuda
