// Host cost of the CUDA runtime calls one small Execute makes (issue 15:
// where the CUDA backend's ~57 us of host time per one-kernel run goes on a
// given host). Each call is timed over many repeats on an idle stream, and
// the round trip of a tiny kernel with and without a wait on it. A
// benchmark, not a test:
//
//   nvcc -O2 -arch=sm_90 -o launch_cost bench/launch_cost.cu && ./launch_cost
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>

namespace {

#define CHECK(call)                                                   \
  do {                                                                \
    cudaError_t e = (call);                                           \
    if (e != cudaSuccess) {                                           \
      std::fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e)); \
      std::exit(1);                                                   \
    }                                                                 \
  } while (0)

__global__ void Tiny(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = out[i] * 1.0001f + 0.5f;
}

// Median-free: the mean over `n` calls after `n / 10` untimed ones, in us.
double Time(const char* name, int n, const std::function<void()>& call) {
  for (int i = 0; i < n / 10; ++i) call();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) call();
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
      n;
  std::printf("| %s | %.2f |\n", name, us);
  return us;
}

}  // namespace

int main() {
  CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  int least = 0, greatest = 0;
  CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CHECK(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, greatest));
  cudaStream_t other;
  CHECK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  cudaMemPool_t pool;
  CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
  // As gpuflowd's pool (--pool_release_threshold): freed memory stays mapped
  // across synchronisations (the default threshold, 0, unmaps it at each).
  uint64_t threshold = UINT64_MAX;
  CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  float* data = nullptr;
  CHECK(cudaMalloc(&data, 4096 * sizeof(float)));
  CHECK(cudaMemset(data, 0, 4096 * sizeof(float)));
  void* pinned = nullptr;
  CHECK(cudaHostAlloc(&pinned, 4 << 20, cudaHostAllocDefault));
  cudaEvent_t a, b, plain;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  CHECK(cudaEventCreateWithFlags(&plain, cudaEventDisableTiming));
  std::printf("| call (host time, idle stream) | us |\n| --- | --- |\n");
  Time("cudaSetDevice", 20000, [] { cudaSetDevice(0); });
  Time("cudaEventCreate + cudaEventDestroy", 5000, [] {
    cudaEvent_t e;
    cudaEventCreate(&e);
    cudaEventDestroy(e);
  });
  Time("cudaEventRecord", 20000, [&] { cudaEventRecord(a, stream); });
  CHECK(cudaStreamSynchronize(stream));
  Time("cudaStreamWaitEvent (event of another stream)", 20000, [&] {
    cudaEventRecord(plain, other);
    cudaStreamWaitEvent(stream, plain, 0);
  });
  CHECK(cudaStreamSynchronize(stream));
  Time("cudaMallocFromPoolAsync + cudaFreeAsync, 16 KiB", 20000, [&] {
    void* p = nullptr;
    cudaMallocFromPoolAsync(&p, 16384, pool, stream);
    cudaFreeAsync(p, stream);
  });
  CHECK(cudaStreamSynchronize(stream));
  Time("cudaLaunchKernel, tiny kernel (no wait)", 20000,
       [&] { Tiny<<<16, 256, 0, stream>>>(data, 4096); });
  CHECK(cudaStreamSynchronize(stream));
  Time("cudaStreamSynchronize, idle stream", 20000, [&] { cudaStreamSynchronize(stream); });
  Time("tiny kernel + cudaStreamSynchronize", 5000, [&] {
    Tiny<<<16, 256, 0, stream>>>(data, 4096);
    cudaStreamSynchronize(stream);
  });
  Time("tiny kernel + event record + cudaEventSynchronize", 5000, [&] {
    Tiny<<<16, 256, 0, stream>>>(data, 4096);
    cudaEventRecord(b, stream);
    cudaEventSynchronize(b);
  });
  Time("cudaMemcpyAsync D2H 16 KiB to pinned + cudaStreamSynchronize", 5000, [&] {
    cudaMemcpyAsync(pinned, data, 16384, cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
  });
  double gpu_ms_sum = 0;
  Time("one Execute's sequence: 2 events, alloc, launch, free, D2H, event wait, sync", 5000, [&] {
    cudaSetDevice(0);
    cudaEventRecord(a, stream);
    void* p = nullptr;
    cudaMallocFromPoolAsync(&p, 16384, pool, stream);
    Tiny<<<16, 256, 0, stream>>>(static_cast<float*>(p), 4096);
    cudaEventRecord(b, stream);
    cudaMemcpyAsync(pinned, p, 16384, cudaMemcpyDeviceToHost, stream);
    cudaEventRecord(plain, stream);
    cudaFreeAsync(p, stream);
    cudaEventSynchronize(plain);
    cudaStreamSynchronize(stream);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    gpu_ms_sum += ms;
  });
  std::printf("\nevents around alloc + launch in that sequence: %.2f us on average\n",
              gpu_ms_sum * 1e3 / (5000 + 500));
  CHECK(cudaGetLastError());
  return 0;
}
