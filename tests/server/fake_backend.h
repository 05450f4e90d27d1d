// A Backend for server tests: the CPU backend underneath, plus knobs a real
// backend does not expose to clients: mark it unhealthy, count and slow down
// Run calls, report a made-up GPU time, fixed cache and memory figures.
//
//   FakeBackend backend;
//   backend.set_healthy(false);            // as after a sticky device error
//   backend.set_run_delay(absl::Milliseconds(20));
#ifndef GPUFLOW_TESTS_SERVER_FAKE_BACKEND_H_
#define GPUFLOW_TESTS_SERVER_FAKE_BACKEND_H_

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/backend.h"
#include "engine/cpu/cpu_backend.h"

namespace gpuflow::testing {

class FakeBackend final : public Backend {
 public:
  FakeBackend() : cpu_(CreateCpuBackend()) {}

  void set_healthy(bool healthy) { healthy_.store(healthy); }
  void set_run_delay(absl::Duration delay) {
    absl::MutexLock lock(&mu_);
    run_delay_ = delay;
  }
  // Every Run reports this GPU time (the CPU backend reports none).
  void set_gpu_seconds(std::optional<double> seconds) {
    absl::MutexLock lock(&mu_);
    gpu_seconds_ = seconds;
  }
  void set_kernel_cache_stats(const KernelCacheStats& stats) {
    absl::MutexLock lock(&mu_);
    kernel_cache_stats_ = stats;
  }
  void set_memory_stats(const MemoryStats& stats) {
    absl::MutexLock lock(&mu_);
    memory_stats_ = stats;
  }
  int runs() const { return runs_.load(); }
  // Whether the last Run was on a stream made by CreatePriorityStream.
  bool last_run_on_priority_stream() const { return last_run_priority_.load(); }
  // OrderAfter calls whose waiter was a priority stream and whose other was
  // not (a short request after its session's own work).
  int priority_orderings() const { return priority_orderings_.load(); }

  absl::string_view name() const override { return "fake"; }
  std::string device_description() const override { return "Fake \"device\" (CPU underneath)"; }
  bool healthy() const override { return healthy_.load(); }
  absl::StatusOr<std::unique_ptr<Stream>> CreateStream() override { return cpu_->CreateStream(); }
  absl::StatusOr<std::unique_ptr<Stream>> CreatePriorityStream(const Stream& /*beside*/) override {
    absl::StatusOr<std::unique_ptr<Stream>> stream = cpu_->CreateStream();
    if (stream.ok()) {
      absl::MutexLock lock(&mu_);
      priority_streams_.push_back(stream->get());
    }
    return stream;
  }
  absl::Status OrderAfter(Stream& waiter, Stream& other) override {
    if (IsPriority(&waiter) && !IsPriority(&other)) priority_orderings_.fetch_add(1);
    return absl::OkStatus();
  }
  KernelCacheStats kernel_cache_stats() const override {
    absl::MutexLock lock(&mu_);
    return kernel_cache_stats_;
  }
  MemoryStats memory_stats() const override {
    memory_stats_calls_.fetch_add(1);
    absl::MutexLock lock(&mu_);
    return memory_stats_;
  }
  // How often memory_stats() was called (a device query on the CUDA backend).
  int memory_stats_calls() const { return memory_stats_calls_.load(); }
  absl::StatusOr<std::unique_ptr<DeviceBuffer>> Allocate(int64_t bytes, Stream& stream) override {
    return cpu_->Allocate(bytes, stream);
  }
  absl::Status CopyToDevice(const void* src, DeviceBuffer& dst, int64_t offset, int64_t n,
                            Stream& stream) override {
    return cpu_->CopyToDevice(src, dst, offset, n, stream);
  }
  absl::Status CopyToHost(const DeviceBuffer& src, int64_t offset, int64_t n, void* dst,
                          Stream& stream) override {
    return cpu_->CopyToHost(src, offset, n, dst, stream);
  }
  absl::Status Synchronize(Stream& stream) override { return cpu_->Synchronize(stream); }
  absl::StatusOr<RunResult> Run(const ValidatedGraph& graph, const Plan& plan,
                                absl::Span<const Array> arrays, Stream& stream,
                                const RunOptions& options) override {
    runs_.fetch_add(1);
    last_run_priority_.store(IsPriority(&stream));
    absl::Duration delay;
    std::optional<double> gpu_seconds;
    {
      absl::MutexLock lock(&mu_);
      delay = run_delay_;
      gpu_seconds = gpu_seconds_;
    }
    absl::SleepFor(delay);
    absl::StatusOr<RunResult> result = cpu_->Run(graph, plan, arrays, stream, options);
    if (result.ok()) {
      result->gpu_seconds = gpu_seconds;
      for (StepTiming& step : result->steps) step.gpu_seconds = gpu_seconds;
    }
    return result;
  }

 private:
  bool IsPriority(const Stream* stream) const {
    absl::MutexLock lock(&mu_);
    return std::find(priority_streams_.begin(), priority_streams_.end(), stream) !=
           priority_streams_.end();
  }

  const std::unique_ptr<Backend> cpu_;
  std::atomic<bool> last_run_priority_{false};
  std::atomic<int> priority_orderings_{0};
  std::atomic<bool> healthy_{true};
  std::atomic<int> runs_{0};
  mutable std::atomic<int> memory_stats_calls_{0};
  mutable absl::Mutex mu_;
  absl::Duration run_delay_ ABSL_GUARDED_BY(mu_);
  std::optional<double> gpu_seconds_ ABSL_GUARDED_BY(mu_);
  KernelCacheStats kernel_cache_stats_ ABSL_GUARDED_BY(mu_);
  MemoryStats memory_stats_ ABSL_GUARDED_BY(mu_);
  // Never read through: a stream freed and another made at its address is
  // only counted twice.
  std::vector<const Stream*> priority_streams_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuflow::testing

#endif  // GPUFLOW_TESTS_SERVER_FAKE_BACKEND_H_
