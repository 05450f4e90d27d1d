#include "engine/cpu/cpu_backend.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/host/host_kernels.h"

namespace gpuflow {

namespace {
constexpr int64_t kAlignment = 64;
constexpr int64_t kHugePage = int64_t{2} << 20;

class CpuStream final : public Stream {};

// Whether `graph` launches the raw kernel CpuBackendOptions::fault_injection
// reacts to.
bool InjectsFault(const ValidatedGraph& graph) {
  for (const ValidatedNode& node : graph.nodes) {
    if (node.op == nullptr || node.op->name != "raw_kernel") continue;
    auto it = node.attrs.find("name");
    if (it == node.attrs.end()) continue;
    const auto* name = std::get_if<std::string>(&it->second);
    if (name != nullptr && *name == kInjectedFaultKernel) return true;
  }
  return false;
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuBackendOptions& options) : options_(options) {}

  absl::string_view name() const override { return "cpu"; }
  std::string device_description() const override {
    std::string description =
        absl::StrCat("CPU (", std::thread::hardware_concurrency(), " threads)");
    if (options_.virtual_device >= 0) {
      absl::StrAppend(&description, ", virtual device ", options_.virtual_device);
    }
    return description;
  }
  int device() const override { return options_.virtual_device; }
  bool healthy() const override { return healthy_.load(); }

  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override {
    return std::make_unique<CpuStream>();
  }

  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(int64_t bytes,
                                                         Stream& /*stream*/) override {
    absl::StatusOr<std::unique_ptr<CpuBuffer>> buffer = CpuBuffer::Create(bytes);
    if (!buffer.ok()) return buffer.status();
    return std::unique_ptr<DeviceBuffer>(std::move(*buffer));
  }

  absl::Status CopyToDevice(const void* src, DeviceBuffer& dst, int64_t offset, int64_t n,
                            Stream& /*stream*/) override {
    if (absl::Status s = CheckCopyRange(dst.size(), offset, n); !s.ok()) return s;
    if (n > 0) std::memcpy(static_cast<CpuBuffer&>(dst).data() + offset, src, n);
    return absl::OkStatus();
  }

  absl::Status CopyToHost(const DeviceBuffer& src, int64_t offset, int64_t n, void* dst,
                          Stream& /*stream*/) override {
    if (absl::Status s = CheckCopyRange(src.size(), offset, n); !s.ok()) return s;
    if (n > 0) std::memcpy(dst, static_cast<const CpuBuffer&>(src).data() + offset, n);
    return absl::OkStatus();
  }

  absl::Status Synchronize(Stream& /*stream*/) override { return absl::OkStatus(); }

  // Every CPU backend's buffers are host memory: one memcpy, whichever
  // virtual device holds them.
  absl::StatusOr<CopyRoute> CopyFrom(Backend& source, const DeviceBuffer& src, Stream& src_stream,
                                     DeviceBuffer& dst, Stream& dst_stream, int64_t n) override {
    if (source.name() != "cpu") {
      return Backend::CopyFrom(source, src, src_stream, dst, dst_stream, n);
    }
    if (absl::Status s = CheckCopyRange(src.size(), 0, n); !s.ok()) return s;
    if (absl::Status s = CheckCopyRange(dst.size(), 0, n); !s.ok()) return s;
    if (n > 0) {
      std::memcpy(static_cast<CpuBuffer&>(dst).data(), static_cast<const CpuBuffer&>(src).data(),
                  n);
    }
    return CopyRoute::kHost;
  }

  absl::StatusOr<RunResult> Run(const ValidatedGraph& graph, const Plan& plan,
                                absl::Span<const Array> arrays, Stream& stream,
                                const RunOptions& options) override {
    if (options_.fault_injection && InjectsFault(graph)) healthy_.store(false);
    if (!healthy_.load()) {
      // As every call on a CUDA context after a sticky error.
      return absl::UnavailableError(absl::StrCat("sticky device error (injected by ",
                                                 kInjectedFaultKernel, ") on ",
                                                 device_description()));
    }
    return RunPlan(graph, plan, arrays, stream, options);
  }

 private:
  absl::StatusOr<RunResult> RunPlan(const ValidatedGraph& graph, const Plan& plan,
                                    absl::Span<const Array> arrays, Stream& stream,
                                    const RunOptions& options);

  const CpuBackendOptions options_;
  std::atomic<bool> healthy_{true};
};

// Runs the plan step by step, each step node by node. A node's buffer is
// freed as soon as the last node reading it has run, so peak memory follows
// the graph, not the size of its fused steps.
absl::StatusOr<RunResult> CpuBackend::RunPlan(const ValidatedGraph& graph, const Plan& plan,
                                              absl::Span<const Array> arrays, Stream& /*stream*/,
                                              const RunOptions& options) {
  const int num_steps = static_cast<int>(plan.steps.size());
  std::vector<std::shared_ptr<CpuBuffer>> values(graph.nodes.size());
  // Intermediates (every node but the outputs) are charged to the run's
  // control while they live; outputs are the caller's to account for.
  std::vector<RunCharge> charges(graph.nodes.size());
  std::vector<bool> is_output(graph.nodes.size(), false);
  for (int o : plan.output_nodes) is_output[o] = true;
  // Nodes run in plan order, node by node. free_after[p]: the nodes whose
  // value nobody reads after the p-th node run (each intermediate goes as
  // soon as its last reader has run, even inside a fused step).
  std::vector<int> position(graph.nodes.size(), -1);
  int num_runs = 0;
  for (const Step& step : plan.steps) {
    for (int n : step.nodes) position[n] = num_runs++;
  }
  std::vector<int> last_read(position);
  for (const Step& step : plan.steps) {
    for (int n : step.nodes) {
      for (const ValueRef& ref : graph.nodes[n].inputs) {
        if (ref.kind == ValueRef::Kind::kNode) {
          last_read[ref.index] = std::max(last_read[ref.index], position[n]);
        }
      }
    }
  }
  std::vector<std::vector<int>> free_after(num_runs);
  for (int node = 0; node < static_cast<int>(graph.nodes.size()); ++node) {
    if (position[node] >= 0 && !is_output[node]) free_after[last_read[node]].push_back(node);
  }
  auto input_view = [&](const ValueRef& ref, const ValueType& type) {
    HostConstView view{type.dtype, type.shape, nullptr};
    switch (ref.kind) {
      case ValueRef::Kind::kArray:
        view.data = static_cast<const CpuBuffer&>(*arrays[ref.index].buffer).data();
        break;
      case ValueRef::Kind::kLiteral:
        view.data = reinterpret_cast<const std::byte*>(graph.literals[ref.index].bytes.data());
        break;
      case ValueRef::Kind::kNode:
        view.data = values[ref.index]->data();
        break;
    }
    return view;
  };

  RunResult result;
  const HostKernelOptions kernel_options;
  std::vector<HostConstView> inputs;
  for (int s = 0; s < num_steps; ++s) {
    if (options.control != nullptr) {
      if (absl::Status st = options.control->CheckContinue(); !st.ok()) return st;
    }
    const Step& step = plan.steps[s];
    const absl::Time start = absl::Now();
    for (int n : step.nodes) {
      const ValidatedNode& node = graph.nodes[n];
      const ValueType& out_type = node.type.output;
      absl::StatusOr<int64_t> bytes = ByteSize(out_type.shape, out_type.dtype);
      if (!bytes.ok()) return bytes.status();
      if (!is_output[n]) {
        absl::StatusOr<RunCharge> charge = RunCharge::Take(options.control, *bytes);
        if (!charge.ok()) {
          return absl::Status(charge.status().code(),
                              absl::StrCat("step ", s, " (", step.description,
                                           "): intermediate: ", charge.status().message()));
        }
        charges[n] = *std::move(charge);
      }
      absl::StatusOr<std::unique_ptr<CpuBuffer>> buffer = CpuBuffer::Create(*bytes);
      if (!buffer.ok()) return buffer.status();
      values[n] = std::move(*buffer);
      inputs.clear();
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        inputs.push_back(input_view(node.inputs[i], node.input_types[i]));
      }
      const HostView out{out_type.dtype, out_type.shape, values[n]->data()};
      // RunNodeOnHost's errors name the node already.
      if (absl::Status status = RunNodeOnHost(node, inputs, out, kernel_options); !status.ok()) {
        return status;
      }
      for (int done : free_after[position[n]]) {
        values[done].reset();
        charges[done].Reset();
      }
    }
    if (options.profile) {
      StepTiming timing;
      timing.index = s;
      timing.kind = step.kind;
      timing.description = step.description;
      timing.host_seconds = absl::ToDoubleSeconds(absl::Now() - start);
      result.steps.push_back(std::move(timing));
    }
  }
  for (int o : plan.output_nodes) {
    const ValueType& type = graph.nodes[o].type.output;
    result.outputs.push_back(Array{type.dtype, type.shape, values[o]});
  }
  return result;
}
}  // namespace

absl::StatusOr<std::unique_ptr<CpuBuffer>> CpuBuffer::Create(int64_t bytes) {
  if (bytes < 0) return absl::InvalidArgumentError("negative allocation size");
  std::byte* data = nullptr;
  if (bytes > 0) {
    // No size over 2^62 can be allocated, and rounding one near INT64_MAX up
    // would overflow.
    if (bytes <= kMaxElements) {
      // Large buffers are aligned to huge pages and asked to use them: an
      // upload then takes a few hundred page faults instead of one per 4 KiB.
      const int64_t alignment = bytes >= kHugePage ? kHugePage : kAlignment;
      const int64_t rounded = (bytes + alignment - 1) / alignment * alignment;
      data = static_cast<std::byte*>(std::aligned_alloc(alignment, rounded));
      if (data != nullptr && alignment == kHugePage) madvise(data, rounded, MADV_HUGEPAGE);
    }
    if (data == nullptr) {
      return absl::ResourceExhaustedError(
          absl::StrCat("out of host memory allocating ", bytes, " bytes"));
    }
  }
  return std::unique_ptr<CpuBuffer>(new CpuBuffer(data, bytes));
}

CpuBuffer::~CpuBuffer() { std::free(data_); }

std::unique_ptr<Backend> CreateCpuBackend() { return CreateCpuBackend(CpuBackendOptions{}); }

std::unique_ptr<Backend> CreateCpuBackend(const CpuBackendOptions& options) {
  return std::make_unique<CpuBackend>(options);
}

}  // namespace gpuflow
