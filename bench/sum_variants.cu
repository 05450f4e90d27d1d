// Whole-array float32 sum on the GPU: the shapes of kernel gpuflow's
// generated reductions can take, timed side by side with CUB's
// DeviceReduce::Sum. Not part of the build; compiled by hand:
//   nvcc -O3 -std=c++17 -arch=sm_90 -o sum_variants bench/sum_variants.cu
//   ./sum_variants [log2 elements, default 28]
// Every variant accumulates in double, like the generated kernels (the CPU
// reference does too), except the "f32" rows.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cub/block/block_reduce.cuh>
#include <cub/device/device_reduce.cuh>
#include <vector>

#define CHECK(x)                                                    \
  do {                                                              \
    cudaError_t e_ = (x);                                           \
    if (e_ != cudaSuccess) {                                        \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                 \
    }                                                               \
  } while (0)

constexpr int kBlock = 256;

__global__ void Fill(float* x, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = (h >> 8) * 0x1p-24f;
  }
}

// Part `blockIdx.x` of `parts` sums [k0, k1) with `U` float4 loads in flight
// per thread; Acc is the accumulator type.
template <int U, typename Acc>
__device__ Acc PartSum(const float* __restrict__ x, long long n, long long chunk) {
  const long long k0 = (long long)blockIdx.x * chunk;
  const long long k1 = k0 + chunk < n ? k0 + chunk : n;
  Acc acc[4] = {0, 0, 0, 0};
  // chunk is a multiple of 4: every part's start is 16-byte aligned.
  const float4* v = reinterpret_cast<const float4*>(x + k0);
  const long long nv = (k1 - k0) / 4;
  long long i = threadIdx.x;
  for (; i + (U - 1) * kBlock < nv; i += U * kBlock) {
    float4 t[U];
#pragma unroll
    for (int u = 0; u < U; ++u) t[u] = __ldg(v + i + u * kBlock);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      acc[0] += (Acc)t[u].x;
      acc[1] += (Acc)t[u].y;
      acc[2] += (Acc)t[u].z;
      acc[3] += (Acc)t[u].w;
    }
  }
  for (; i < nv; i += kBlock) {
    const float4 t = __ldg(v + i);
    acc[0] += (Acc)t.x;
    acc[1] += (Acc)t.y;
    acc[2] += (Acc)t.z;
    acc[3] += (Acc)t.w;
  }
  for (long long k = k0 + nv * 4 + threadIdx.x; k < k1; k += kBlock) acc[0] += (Acc)x[k];
  Acc a = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  typedef cub::BlockReduce<Acc, kBlock> R;
  __shared__ typename R::TempStorage temp;
  return R(temp).Sum(a);
}

template <int U, typename Acc>
__global__ void __launch_bounds__(kBlock)
    Partial(const float* x, long long n, long long chunk, Acc* scratch) {
  const Acc a = PartSum<U, Acc>(x, n, chunk);
  if (threadIdx.x == 0) scratch[blockIdx.x] = a;
}

template <typename Acc>
__global__ void __launch_bounds__(kBlock) Finalize(const Acc* scratch, int parts, float* out) {
  Acc a = 0;
  for (int s = threadIdx.x; s < parts; s += kBlock) a += scratch[s];
  typedef cub::BlockReduce<Acc, kBlock> R;
  __shared__ typename R::TempStorage temp;
  a = R(temp).Sum(a);
  if (threadIdx.x == 0) *out = (float)a;
}

// One launch: the last part to finish combines the parts.
template <int U, typename Acc>
__global__ void __launch_bounds__(kBlock) OnePass(const float* x, long long n, long long chunk,
                                                  Acc* scratch, unsigned* done, float* out) {
  const Acc a = PartSum<U, Acc>(x, n, chunk);
  __shared__ bool last;
  if (threadIdx.x == 0) {
    scratch[blockIdx.x] = a;
    __threadfence();
    last = atomicAdd(done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  Acc b = 0;
  for (int s = threadIdx.x; s < (int)gridDim.x; s += kBlock) b += ((volatile Acc*)scratch)[s];
  typedef cub::BlockReduce<Acc, kBlock> R;
  __shared__ typename R::TempStorage temp;
  b = R(temp).Sum(b);
  if (threadIdx.x == 0) {
    *out = (float)b;
    *done = 0;
  }
}

struct Timer {
  cudaEvent_t a, b;
  Timer() {
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
  }
};

template <typename F>
double MedianMs(F&& f) {
  Timer t;
  for (int i = 0; i < 5; ++i) f();
  std::vector<float> ms;
  for (int r = 0; r < 50; ++r) {
    CHECK(cudaEventRecord(t.a));
    f();
    CHECK(cudaEventRecord(t.b));
    CHECK(cudaEventSynchronize(t.b));
    float m = 0;
    CHECK(cudaEventElapsedTime(&m, t.a, t.b));
    ms.push_back(m);
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

int main(int argc, char** argv) {
  const int log2n = argc > 1 ? std::atoi(argv[1]) : 28;
  const long long n = 1LL << log2n;
  cudaDeviceProp props;
  CHECK(cudaGetDeviceProperties(&props, 0));
  const int sms = props.multiProcessorCount;
  float* x;
  float* out;
  double* scratch;
  unsigned* done;
  CHECK(cudaMalloc(&x, n * sizeof(float)));
  CHECK(cudaMalloc(&out, sizeof(float)));
  CHECK(cudaMalloc(&scratch, 65536 * sizeof(double)));
  CHECK(cudaMalloc(&done, sizeof(unsigned)));
  CHECK(cudaMemset(done, 0, sizeof(unsigned)));
  Fill<<<sms * 8, 256>>>(x, n);
  CHECK(cudaDeviceSynchronize());
  std::vector<float> host(n);
  CHECK(cudaMemcpy(host.data(), x, n * sizeof(float), cudaMemcpyDeviceToHost));
  double want = 0;
  for (long long i = 0; i < n; ++i) want += host[i];
  const double gb = n * 4.0 / 1e9;
  std::printf("%s, %d SMs, n = 2^%d, reference %.6e\n", props.name, sms, log2n, want);
  std::printf("%-34s %9s %8s %10s\n", "variant", "ms", "TB/s", "rel err");
  auto report = [&](const char* name, double ms) {
    float got = 0;
    CHECK(cudaMemcpy(&got, out, sizeof(float), cudaMemcpyDeviceToHost));
    std::printf("%-34s %9.4f %8.3f %10.2e\n", name, ms, gb / ms, std::abs(got - want) / want);
  };
  {
    size_t temp_bytes = 0;
    CHECK(cub::DeviceReduce::Sum(nullptr, temp_bytes, x, out, n));
    void* temp;
    CHECK(cudaMalloc(&temp, temp_bytes));
    report("cub::DeviceReduce::Sum (f32 acc)",
           MedianMs([&] { CHECK(cub::DeviceReduce::Sum(temp, temp_bytes, x, out, n)); }));
    CHECK(cudaFree(temp));
  }
  auto run = [&](auto u_tag, auto acc_tag, int per_sm, bool one_pass) {
    constexpr int U = decltype(u_tag)::value;
    using Acc = typename decltype(acc_tag)::type;
    const int parts = sms * per_sm;
    long long chunk = (n + parts - 1) / parts;
    chunk = (chunk + 3) / 4 * 4;
    Acc* s = reinterpret_cast<Acc*>(scratch);
    char name[64];
    std::snprintf(name, sizeof name, "%s U=%d %d/SM %s", one_pass ? "one-pass" : "two-pass", U,
                  per_sm, sizeof(Acc) == 8 ? "f64 acc" : "f32 acc");
    const double ms = MedianMs([&] {
      if (one_pass) {
        OnePass<U, Acc><<<parts, kBlock>>>(x, n, chunk, s, done, out);
      } else {
        Partial<U, Acc><<<parts, kBlock>>>(x, n, chunk, s);
        Finalize<Acc><<<1, kBlock>>>(s, parts, out);
      }
    });
    CHECK(cudaGetLastError());
    report(name, ms);
  };
  struct F64 {
    using type = double;
  };
  struct F32 {
    using type = float;
  };
  using U2 = std::integral_constant<int, 2>;
  using U4 = std::integral_constant<int, 4>;
  using U8 = std::integral_constant<int, 8>;
  for (int per_sm : {4, 8, 16}) {
    run(U2{}, F64{}, per_sm, false);
    run(U4{}, F64{}, per_sm, false);
    run(U8{}, F64{}, per_sm, false);
    run(U4{}, F64{}, per_sm, true);
    run(U8{}, F64{}, per_sm, true);
    run(U4{}, F32{}, per_sm, false);
  }
  return 0;
}
