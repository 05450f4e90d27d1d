// Can SMs be kept free of long kernels for small ones (issue 15, target 7)?
// A tiny kernel on a highest-priority stream of the primary context, timed
// launch to completion, alone and while long kernels (waves of blocks that
// each hold an SM's threads for WAVE_MS) run on a stream of the primary
// context, then on a stream of a green context holding all but a few SMs
// (cuGreenCtxCreate over a cuDevSmResourceSplitByCount group), on memory
// allocated in the primary context's pool. A probe for the next design
// step, not part of the server (figures in bench/RESULTS.md, session 16):
//
//   nvcc -O2 -arch=sm_90 -o green_ctx_probe bench/green_ctx_probe.cu -lcuda
//   ./green_ctx_probe
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

#define CHECK(call)                                                                    \
  do {                                                                                 \
    const auto rc_ = (call);                                                           \
    if (rc_ != 0) {                                                                    \
      std::fprintf(stderr, "%s:%d: %s failed (%d)\n", __FILE__, __LINE__, #call, rc_); \
      std::exit(1);                                                                    \
    }                                                                                  \
  } while (0)

__device__ unsigned long long Now() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t));
  return t;
}

// Each block holds its SM's threads for `ns`, then writes.
__global__ void __launch_bounds__(1024) Spin(long long ns, int* out) {
  const unsigned long long start = Now();
  while (Now() - start < static_cast<unsigned long long>(ns)) {
  }
  if (threadIdx.x == 0) out[blockIdx.x] = 1;
}

__global__ void Tiny(int* out) { out[threadIdx.x] += 1; }

// p50 and p99 (µs) of a tiny kernel's launch-to-completion time, `n` calls.
std::pair<double, double> TimeTiny(cudaStream_t priority, int* buffer, int n) {
  std::vector<double> us;
  for (int i = 0; i < n; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Tiny<<<1, 32, 0, priority>>>(buffer);
    CHECK(cudaStreamSynchronize(priority));
    us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  std::sort(us.begin(), us.end());
  return {us[us.size() / 2], us[us.size() * 99 / 100]};
}

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  CHECK(cudaFree(nullptr));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  int lo = 0, hi = 0;
  CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t normal, priority;
  CHECK(cudaStreamCreateWithPriority(&normal, cudaStreamNonBlocking, lo));
  CHECK(cudaStreamCreateWithPriority(&priority, cudaStreamNonBlocking, hi));
  int* tiny_buffer = nullptr;
  int* spin_out = nullptr;
  const int waves = 20;
  const long long wave_ns = 1'000'000;  // 1 ms a wave, as an 8192^3 matmul's ~1.4
  const int blocks = sms * 2 * waves;   // two 1024-thread blocks fill an SM
  CHECK(cudaMallocAsync(&tiny_buffer, 32 * sizeof(int), normal));
  CHECK(cudaMallocAsync(reinterpret_cast<void**>(&spin_out), blocks * sizeof(int), normal));
  CHECK(cudaMemsetAsync(tiny_buffer, 0, 32 * sizeof(int), normal));
  CHECK(cudaStreamSynchronize(normal));

  auto [a50, a99] = TimeTiny(priority, tiny_buffer, 200);
  std::printf("%d SMs; tiny kernel alone: p50 %.1f us, p99 %.1f us\n", sms, a50, a99);

  auto under = [&](cudaStream_t long_stream, const char* label) {
    cudaEvent_t b, e;
    CHECK(cudaEventCreate(&b));
    CHECK(cudaEventCreate(&e));
    CHECK(cudaEventRecord(b, long_stream));
    Spin<<<blocks, 1024, 0, long_stream>>>(wave_ns, spin_out);
    CHECK(cudaGetLastError());
    CHECK(cudaEventRecord(e, long_stream));
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    auto [p50, p99] = TimeTiny(priority, tiny_buffer, 40);
    CHECK(cudaEventSynchronize(e));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, b, e));
    std::printf(
        "%s: long kernel %.2f ms (%d waves of %.1f ms on all SMs); tiny p50 %.1f us, p99 %.1f us\n",
        label, ms, waves, wave_ns / 1e6, p50, p99);
  };
  under(normal, "long kernel on the primary context");

  CUdevResource all{};
  CHECK(cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM));
  std::printf("SM resource: %u SMs\n", all.sm.smCount);
  for (unsigned keep_free : {8u, 16u}) {
    CUdevResource group{}, rest{};
    unsigned groups = 1;
    CHECK(cuDevSmResourceSplitByCount(&group, &groups, &all, &rest, 0, all.sm.smCount - keep_free));
    CUdevResourceDesc desc;
    CHECK(cuDevResourceGenerateDesc(&desc, &group, 1));
    CUgreenCtx green;
    CHECK(cuGreenCtxCreate(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM));
    CUstream green_stream;
    CHECK(cuGreenCtxStreamCreate(&green_stream, green, CU_STREAM_NON_BLOCKING, 0));
    char label[128];
    std::snprintf(label, sizeof(label), "long kernel on a green context of %u SMs (%u left over)",
                  group.sm.smCount, rest.sm.smCount);
    under(reinterpret_cast<cudaStream_t>(green_stream), label);
    CHECK(cuStreamDestroy(green_stream));
    CHECK(cuGreenCtxDestroy(green));
    CHECK(cudaSetDevice(0));  // the primary context again for the runtime
  }
  int check = 0;
  CHECK(cudaMemcpy(&check, spin_out + blocks - 1, sizeof(int), cudaMemcpyDeviceToHost));
  std::printf("the long kernel wrote the primary context's memory: %s\n",
              check == 1 ? "yes" : "no");
  return 0;
}
