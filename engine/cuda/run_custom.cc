// Custom kernels (codegen_custom.cc, docs/custom_kernels.md):
// elementwise_kernel and reduction_kernel as generated loops around the
// user's code (a reduction split over more blocks, with a combine kernel,
// when its outputs are few), raw_kernel compiled as given.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/cuda_status.h"
#include "engine/cuda/device_library.h"
#include "engine/cuda/launch_log.h"
#include "engine/cuda/step_runner.h"

namespace gpuflow::cuda {

namespace {

// Parts a custom reduction kernel splits its reduced range into (Run and
// Compile must agree: above 1, a "_combine" kernel joins the parts).
int64_t CustomReductionSplits(const CustomKernel& k, int64_t sms) {
  const int64_t outputs = k.num_elements;
  int64_t splits = 1;
  if (outputs < sms * 2 && k.reduced > int64_t{k.block} * 8) {
    splits = std::min<int64_t>((sms * 4 + outputs - 1) / outputs,
                               (k.reduced + k.block * 8 - 1) / (k.block * 8));
    splits = std::clamp<int64_t>(splits, 1, 65535);
  }
  return splits;
}

absl::StatusOr<std::shared_ptr<const CustomKernel>> Generate(StepCompileContext& ctx) {
  return ctx.Generated<CustomKernel>(
      "custom", [&] { return GenerateCustomKernel(ctx.graph, ctx.step.root); });
}

// A raw kernel: compiled as given, launched with the arguments checked
// against (and fitted to) the kernel's parameter list.
absl::Status RunRawKernel(StepRunContext& ctx) {
  const ValidatedNode& node = ctx.root();
  const std::string source = RawKernelSource(std::get<std::string>(node.attrs.at("code")));
  const std::string& name = std::get<std::string>(node.attrs.at("name"));
  const auto& options = std::get<std::vector<std::string>>(node.attrs.at("options"));
  const int64_t output = std::get<int64_t>(node.attrs.at("output"));
  absl::StatusOr<cudaKernel_t> kernel = ctx.Kernel(source, name, options);
  if (!kernel.ok()) return kernel.status();
  const void* func = reinterpret_cast<const void*>(*kernel);

  // The kernel's parameter sizes, to check (and fit) the arguments.
  std::vector<size_t> param_sizes;
  bool know_params = true;
  for (size_t i = 0;; ++i) {
    size_t offset = 0;
    size_t size = 0;
    const cudaError_t e = cudaFuncGetParamInfo(func, i, &offset, &size);
    if (e == cudaSuccess) {
      param_sizes.push_back(size);
      continue;
    }
    cudaGetLastError();  // not sticky: clear it
    if (e != cudaErrorInvalidValue) know_params = false;
    break;
  }
  const size_t n = node.inputs.size();
  if (know_params && param_sizes.size() != n) {
    return absl::InvalidArgumentError(absl::StrCat("kernel '", name, "' takes ", param_sizes.size(),
                                                   " arguments, but ", n, " were given"));
  }
  // The arguments the kernel may write, besides the output: each gets a
  // private copy, so what the kernel does to it changes no array (a
  // session's, or another step's result). Without `writes`: every array.
  std::vector<bool> written(n, true);
  if (auto it = node.attrs.find("writes"); it != node.attrs.end()) {
    written.assign(n, false);
    for (int64_t w : std::get<std::vector<int64_t>>(it->second)) written[w] = true;
  }
  std::vector<std::unique_ptr<CudaBuffer>> scratch;  // freed in stream order, after the launch
  // One slot per argument: a device address or a scalar's bytes (up to a
  // complex128's 16, aligned as CUDA aligns it).
  struct alignas(16) Slot {
    unsigned char bytes[16] = {};
  };
  std::vector<Slot> values(n);
  std::vector<uint64_t> first_words(n, 0);  // each slot's first 8 bytes, for the launch log
  std::vector<void*> args(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    const ValueRef& ref = node.inputs[i];
    const ValueType& type = node.input_types[i];
    const bool by_value = ref.kind == ValueRef::Kind::kLiteral && type.shape.rank() == 0 &&
                          static_cast<int64_t>(i) != output;
    if (by_value) {
      const LiteralArray& literal = ctx.graph.literals[ref.index];
      const size_t size = literal.bytes.size();
      std::memcpy(values[i].bytes, literal.bytes.data(), std::min(size, sizeof(Slot)));
      if (know_params && param_sizes[i] != size) {
        // A Python scalar fits the parameter it is passed to (CuPy would
        // pass its bytes regardless); a typed scalar must match.
        if (!type.weak || param_sizes[i] > 8) {
          return absl::InvalidArgumentError(absl::StrCat(
              "argument ", i, " of kernel '", name, "' is a ", DTypeName(type.dtype), " scalar (",
              size, " bytes) but the parameter takes ", param_sizes[i], " bytes"));
        }
        if (type.dtype == DType::kFloat64 && param_sizes[i] == 4) {
          double d = 0;
          std::memcpy(&d, values[i].bytes, sizeof(d));
          const float f = static_cast<float>(d);
          values[i] = Slot{};
          std::memcpy(values[i].bytes, &f, sizeof(f));
        } else if (type.dtype == DType::kComplex128 && param_sizes[i] == 8) {
          // A Python complex for a complex<float> parameter.
          double parts[2] = {0, 0};
          std::memcpy(parts, values[i].bytes, sizeof(parts));
          const float f[2] = {static_cast<float>(parts[0]), static_cast<float>(parts[1])};
          values[i] = Slot{};
          std::memcpy(values[i].bytes, f, sizeof(f));
        } else if (type.dtype == DType::kInt64 || type.dtype == DType::kUInt64) {
          uint64_t w = 0;
          std::memcpy(&w, values[i].bytes, sizeof(w));
          const int bits = static_cast<int>(param_sizes[i] * 8);
          const int64_t v = static_cast<int64_t>(w);
          const bool fits =
              bits >= 64 || (type.dtype == DType::kInt64
                                 ? (v >= -(int64_t{1} << (bits - 1)) && v < (int64_t{1} << bits))
                                 : w < (uint64_t{1} << bits));
          if (!fits) {
            return absl::InvalidArgumentError(absl::StrCat("argument ", i, " of kernel '", name,
                                                           "' (", v, ") does not fit its ",
                                                           param_sizes[i], "-byte parameter"));
          }
          if (bits < 64) w &= (uint64_t{1} << bits) - 1;
          std::memcpy(values[i].bytes, &w, sizeof(w));
        }
      }
    } else {
      const void* p = nullptr;
      if (static_cast<int64_t>(i) == output) {
        // The output starts as a copy of its argument: arrays are immutable.
        absl::StatusOr<const void*> src = ctx.ptr(ref);
        if (!src.ok()) return src.status();
        const int64_t bytes = type.shape.num_elements() * ItemSize(type.dtype);
        if (bytes > 0) {
          launch_log::Note(absl::StrCat("memcpy d2d ", bytes, " raw_kernel output"));
          GPUFLOW_CUDA_RETURN_IF_ERROR(
              cudaMemcpyAsync(ctx.out, *src, bytes, cudaMemcpyDeviceToDevice, ctx.stream.get()));
        }
        p = ctx.out;
      } else {
        absl::StatusOr<const void*> src = ctx.ptr(ref);
        if (!src.ok()) return src.status();
        p = *src;
        const int64_t bytes = type.shape.num_elements() * ItemSize(type.dtype);
        if (written[i] && bytes > 0) {
          absl::StatusOr<std::unique_ptr<CudaBuffer>> copy =
              ctx.device.AllocateOn(bytes, ctx.stream);
          if (!copy.ok()) return copy.status();
          launch_log::Note(absl::StrCat("memcpy d2d ", bytes, " raw_kernel written argument"));
          GPUFLOW_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync((*copy)->data(), p, bytes,
                                                       cudaMemcpyDeviceToDevice, ctx.stream.get()));
          p = (*copy)->data();
          scratch.push_back(*std::move(copy));
        }
      }
      if (know_params && param_sizes[i] != sizeof(void*)) {
        return absl::InvalidArgumentError(
            absl::StrCat("argument ", i, " of kernel '", name, "' is an array (a pointer) but ",
                         "the parameter takes ", param_sizes[i], " bytes"));
      }
      std::memcpy(values[i].bytes, &p, sizeof(p));
    }
    std::memcpy(&first_words[i], values[i].bytes, sizeof(uint64_t));
    args[i] = values[i].bytes;
  }
  const auto& grid = std::get<std::vector<int64_t>>(node.attrs.at("grid"));
  const auto& block = std::get<std::vector<int64_t>>(node.attrs.at("block"));
  auto dim = [](const std::vector<int64_t>& v) {
    return dim3(static_cast<unsigned>(v[0]), v.size() > 1 ? static_cast<unsigned>(v[1]) : 1u,
                v.size() > 2 ? static_cast<unsigned>(v[2]) : 1u);
  };
  const int64_t shared_mem = std::get<int64_t>(node.attrs.at("shared_mem"));
  if (shared_mem > 48 * 1024) {
    if (shared_mem > static_cast<int64_t>(ctx.device.props().sharedMemPerBlockOptin)) {
      return absl::InvalidArgumentError(
          absl::StrCat("shared_mem ", shared_mem, " exceeds the device's ",
                       ctx.device.props().sharedMemPerBlockOptin, " bytes"));
    }
    GPUFLOW_CUDA_RETURN_IF_ERROR(cudaFuncSetAttribute(
        func, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(shared_mem)));
  }
  launch_log::Kernel(func, dim(grid), dim(block), static_cast<size_t>(shared_mem), first_words);
  const cudaError_t e = cudaLaunchKernel(func, dim(grid), dim(block), args.data(),
                                         static_cast<size_t>(shared_mem), ctx.stream.get());
  if (e == cudaErrorInvalidConfiguration || e == cudaErrorInvalidValue ||
      e == cudaErrorLaunchOutOfResources) {
    cudaGetLastError();
    return absl::InvalidArgumentError(absl::StrCat(
        "launching kernel '", name, "': ", cudaGetErrorName(e), ": ", cudaGetErrorString(e)));
  }
  return ctx.device.Check(e, "cudaLaunchKernel");
}

}  // namespace

absl::Status RunCustom(StepRunContext& ctx) {
  const ValidatedNode& node = ctx.root();
  if (node.op->name == "raw_kernel") return RunRawKernel(ctx);
  absl::StatusOr<std::shared_ptr<const CustomKernel>> k = Generate(ctx);
  if (!k.ok()) return k.status();
  const CustomKernel* const c = k->get();
  const bool reduction = node.op->name == "reduction_kernel";
  const int64_t wanted = reduction ? 0 : std::get<int64_t>(node.attrs.at("output"));
  // A raw output starts as a copy of its given array (the kernel writes
  // where it indexes).
  auto copy_initial = [&](size_t o, void* to) -> absl::Status {
    if (reduction || c->raw_output_inputs[o] < 0) return absl::OkStatus();
    const int64_t bytes = c->output_elements[o] * ItemSize(c->output_dtypes[o]);
    if (bytes == 0) return absl::OkStatus();
    absl::StatusOr<const void*> from = ctx.ptr(node.inputs[c->raw_output_inputs[o]]);
    if (!from.ok()) return from.status();
    GPUFLOW_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(to, *from, bytes, cudaMemcpyDeviceToDevice, ctx.stream.get()));
    return absl::OkStatus();
  };
  if (absl::Status s = copy_initial(static_cast<size_t>(wanted), ctx.out); !s.ok()) return s;
  if (c->num_elements == 0) return absl::OkStatus();
  absl::StatusOr<cudaKernel_t> kernel = ctx.Kernel(c->source, c->name);
  if (!kernel.ok()) return kernel.status();
  std::vector<uint64_t> words = c->words;
  for (size_t i = 0; i < c->input_slots.size(); ++i) {
    if (c->input_slots[i] < 0) continue;
    absl::StatusOr<const void*> p = ctx.ptr(node.inputs[i]);
    if (!p.ok()) return p.status();
    words[c->input_slots[i]] = reinterpret_cast<uint64_t>(*p);
  }
  // The kernel is the plan's; the scalars are this graph's.
  for (const auto& [input, word] : c->literal_words) {
    words[word] = LiteralWord(ctx.graph.literals[node.inputs[input].index]);
  }
  // The node's value is one output; the others go to scratch buffers, freed
  // in stream order after the launch.
  std::vector<std::unique_ptr<CudaBuffer>> scratch;
  for (size_t o = 0; o < c->output_slots.size(); ++o) {
    if (static_cast<int64_t>(o) == wanted) {
      words[c->output_slots[o]] = reinterpret_cast<uint64_t>(ctx.out);
      continue;
    }
    const int64_t elements = reduction ? c->num_elements : c->output_elements[o];
    absl::StatusOr<std::unique_ptr<CudaBuffer>> b = ctx.device.AllocateOn(
        std::max<int64_t>(elements * ItemSize(c->output_dtypes[o]), 1), ctx.stream);
    if (!b.ok()) return b.status();
    if (absl::Status s = copy_initial(o, (*b)->data()); !s.ok()) return s;
    words[c->output_slots[o]] = reinterpret_cast<uint64_t>((*b)->data());
    scratch.push_back(*std::move(b));
  }
  const int64_t sms = ctx.device.sms();
  if (!reduction) {
    const int64_t work = (c->num_elements + c->elements_per_thread - 1) / c->elements_per_thread;
    const int64_t blocks = std::clamp<int64_t>((work + c->block - 1) / c->block, 1, sms * 32);
    return ctx.device.Launch(*kernel, Blocks(blocks), dim3(c->block), words, ctx.stream);
  }
  // Reductions: split the reduced range over more blocks when the outputs
  // alone do not fill the GPU.
  const int64_t outputs = c->num_elements;
  const int64_t splits = CustomReductionSplits(*c, sms);
  const int64_t chunk = (c->reduced + splits - 1) / std::max<int64_t>(splits, 1);
  words[c->splits_slot] = static_cast<uint64_t>(splits);
  words[c->chunk_slot] = static_cast<uint64_t>(std::max<int64_t>(chunk, 1));
  if (splits > 1) {
    absl::StatusOr<std::unique_ptr<CudaBuffer>> b =
        ctx.device.AllocateOn(outputs * splits * c->accumulator_bytes, ctx.stream);
    if (!b.ok()) return b.status();
    words[c->scratch_slot] = reinterpret_cast<uint64_t>((*b)->data());
    scratch.push_back(*std::move(b));
  }
  const int64_t blocks = std::min<int64_t>(outputs, int64_t{1} << 30);
  if (absl::Status s =
          ctx.device.Launch(*kernel, Blocks(blocks, splits), dim3(c->block), words, ctx.stream);
      !s.ok()) {
    return s;
  }
  if (splits == 1) return absl::OkStatus();
  absl::StatusOr<cudaKernel_t> combine = ctx.Kernel(c->source, c->name + "_combine");
  if (!combine.ok()) return combine.status();
  return ctx.device.Launch(*combine,
                           Blocks(std::clamp<int64_t>((outputs + 255) / 256, 1, sms * 32)),
                           dim3(256), words, ctx.stream);
}

absl::Status CompileCustom(StepCompileContext& ctx) {
  const ValidatedNode& root = ctx.root();
  if (root.op->name == "raw_kernel") {
    return ctx
        .Kernel(RawKernelSource(std::get<std::string>(root.attrs.at("code"))),
                std::get<std::string>(root.attrs.at("name")),
                std::get<std::vector<std::string>>(root.attrs.at("options")))
        .status();
  }
  absl::StatusOr<std::shared_ptr<const CustomKernel>> k = Generate(ctx);
  if (!k.ok()) return k.status();
  if ((*k)->num_elements == 0) return absl::OkStatus();  // Run launches nothing
  if (absl::Status s = ctx.Kernel((*k)->source, (*k)->name).status(); !s.ok()) return s;
  if (root.op->name != "reduction_kernel" || CustomReductionSplits(**k, ctx.device.sms()) == 1) {
    return absl::OkStatus();
  }
  return ctx.Kernel((*k)->source, (*k)->name + "_combine").status();
}

}  // namespace gpuflow::cuda
