// CUB's radix and segmented sorts for sort and argsort (cub_sort.h), with
// the small kernels that turn elements into ordered keys and back.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <type_traits>

#include "engine/cuda/cub_sort.h"

namespace gpuflow::cuda {
namespace {

constexpr int kBlock = 256;

// Floats are sorted as keys alone, which is half the radix sort's traffic
// of (key, bits) pairs: their keys lose a zero's sign and a NaN's payload,
// so the zeros and the NaNs of each row are written again afterwards, in
// input order (as a stable sort leaves them), where their keys sorted: the
// zeros after the row's negative numbers, the NaNs last (FixSpecials).
// false: (key, bits) pairs, which need no fix-up.
constexpr bool kFloatKeysOnly = true;
// Elements of a row one fix-up block walks.
constexpr int64_t kFixChunk = 8192;

// Position t of the sorted layout (row s = o * inner + i, element j) and
// its offset in the input's (outer, length, inner) layout.
__device__ int64_t SourceOffset(int64_t t, int64_t length, int64_t inner, int64_t* j_out) {
  const int64_t s = t / length;
  const int64_t j = t - s * length;
  const int64_t o = s / inner;
  const int64_t i = s - o * inner;
  *j_out = j;
  return (o * length + j) * inner + i;
}

// The value sorted with a key: the element's index in its row (argsort) or
// the element's own bits (sort of floats, so NaN payloads and zero signs
// survive without a gather); 32 bits wide, 64 for 8-byte keys.
template <typename K>
using ValueOf = std::conditional_t<sizeof(K) == 8, uint64_t, uint32_t>;

template <typename K>
__global__ void ToKeys(const K* in, K* keys, ValueOf<K>* values, bool indices, SortKeyKind kind,
                       int64_t length, int64_t inner, int64_t n) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t j = 0;
    const int64_t from = SourceOffset(t, length, inner, &j);
    const K element = in[from];
    keys[t] = OrderedSortKey<K>(element, kind);
    if (values != nullptr) {
      values[t] = indices ? static_cast<ValueOf<K>>(j) : static_cast<ValueOf<K>>(element);
    }
  }
}

// mode 0: argsort (int64 indices from the values); 1: the elements carried
// as values; 2: the element of the sorted key (integers and bool).
template <typename K>
__global__ void FromKeys(const K* keys, const ValueOf<K>* values, void* out, int mode,
                         SortKeyKind kind, int64_t length, int64_t inner, int64_t n) {
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t j = 0;
    const int64_t to = SourceOffset(t, length, inner, &j);
    if (mode == 3) {  // a float from its key (zeros and NaNs are fixed up after)
      constexpr K kSign = static_cast<K>(K{1} << (8 * sizeof(K) - 1));
      const K key = keys[t];
      static_cast<K*>(out)[to] = key == kSign    ? K{0}
                                 : (key & kSign) ? static_cast<K>(key ^ kSign)
                                                 : static_cast<K>(~key);
    } else if (mode == 0) {
      static_cast<int64_t*>(out)[to] = static_cast<int64_t>(values[t]);
    } else if (mode == 1) {
      static_cast<K*>(out)[to] = static_cast<K>(values[t]);
    } else {
      static_cast<K*>(out)[to] = ElementOfSortKey<K>(keys[t], kind);
    }
  }
}

// ---- the zeros and NaNs of keys-only float sorts ------------------------------
// counts[3 q + {0, 1, 2}]: chunk q's negative numbers, zeros and NaNs; then
// (FixPrefixes) its zeros' and NaNs' prefixes in their row, and totals[2 s +
// {0, 1}] row s's negative numbers and NaNs.

template <typename K>
__global__ void CountSpecials(const K* in, SortKeyKind kind, int64_t length, int64_t inner,
                              int64_t chunks, int64_t total_chunks, int64_t* counts,
                              const int64_t* needed) {
  if (needed != nullptr && *needed == 0) return;
  constexpr K kSign = static_cast<K>(K{1} << (8 * sizeof(K) - 1));
  __shared__ unsigned long long shared[3];
  for (int64_t q = blockIdx.x; q < total_chunks; q += gridDim.x) {
    if (threadIdx.x < 3) shared[threadIdx.x] = 0;
    __syncthreads();
    const int64_t s = q / chunks;
    const int64_t c = q - s * chunks;
    const int64_t o = s / inner;
    const int64_t i = s - o * inner;
    const int64_t begin = c * kFixChunk;
    const int64_t end = begin + kFixChunk < length ? begin + kFixChunk : length;
    unsigned long long negative = 0, zeros = 0, nans = 0;
    for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) {
      const K key = OrderedSortKey<K>(in[(o * length + j) * inner + i], kind);
      negative += key < kSign;
      zeros += key == kSign;
      nans += key == static_cast<K>(~K{0});
    }
    if (negative) atomicAdd(&shared[0], negative);
    if (zeros) atomicAdd(&shared[1], zeros);
    if (nans) atomicAdd(&shared[2], nans);
    __syncthreads();
    if (threadIdx.x < 3) counts[3 * q + threadIdx.x] = static_cast<int64_t>(shared[threadIdx.x]);
    __syncthreads();
  }
}

// A block per row: exclusive prefixes of its chunks' zeros and NaNs, and
// the row's totals.
__global__ void FixPrefixes(int64_t* counts, int64_t* totals, int64_t chunks, int64_t rows,
                            const int64_t* needed) {
  if (needed != nullptr && *needed == 0) return;
  using Scan = cub::BlockScan<int64_t, kBlock>;
  __shared__ typename Scan::TempStorage temp;
  for (int64_t s = blockIdx.x; s < rows; s += gridDim.x) {
    int64_t negative = 0, zeros = 0, nans = 0;
    for (int64_t base = 0; base < chunks; base += kBlock) {
      const int64_t c = base + threadIdx.x;
      int64_t* q = counts + 3 * (s * chunks + c);
      const bool in_row = c < chunks;
      const int64_t n = in_row ? q[0] : 0;
      const int64_t z = in_row ? q[1] : 0;
      const int64_t m = in_row ? q[2] : 0;
      int64_t z_prefix = 0, m_prefix = 0, n_total = 0, z_total = 0, m_total = 0;
      Scan(temp).ExclusiveSum(z, z_prefix, z_total);
      __syncthreads();
      Scan(temp).ExclusiveSum(m, m_prefix, m_total);
      __syncthreads();
      int64_t unused = 0;
      Scan(temp).ExclusiveSum(n, unused, n_total);
      __syncthreads();
      if (in_row) {
        q[1] = zeros + z_prefix;
        q[2] = nans + m_prefix;
      }
      negative += n_total;
      zeros += z_total;
      nans += m_total;
    }
    if (threadIdx.x == 0) {
      totals[2 * s] = negative;
      totals[2 * s + 1] = nans;
    }
    __syncthreads();
  }
}

// A block per chunk: its zeros and NaNs, ranked in input order, written at
// their sorted positions.
template <typename K>
__global__ void FixSpecials(const K* in, K* out, SortKeyKind kind, int64_t length, int64_t inner,
                            int64_t chunks, int64_t total_chunks, const int64_t* counts,
                            const int64_t* totals, const int64_t* needed) {
  if (needed != nullptr && *needed == 0) return;
  constexpr K kSign = static_cast<K>(K{1} << (8 * sizeof(K) - 1));
  using Scan = cub::BlockScan<int64_t, kBlock>;
  __shared__ typename Scan::TempStorage temp;
  for (int64_t q = blockIdx.x; q < total_chunks; q += gridDim.x) {
    const int64_t s = q / chunks;
    const int64_t c = q - s * chunks;
    const int64_t o = s / inner;
    const int64_t i = s - o * inner;
    int64_t zero_at = totals[2 * s] + counts[3 * q + 1];
    int64_t nan_at = length - totals[2 * s + 1] + counts[3 * q + 2];
    const int64_t begin = c * kFixChunk;
    const int64_t end = begin + kFixChunk < length ? begin + kFixChunk : length;
    for (int64_t tile = begin; tile < end; tile += kBlock) {
      const int64_t j = tile + threadIdx.x;
      K element = 0;
      K key = 0;
      if (j < end) {
        element = in[(o * length + j) * inner + i];
        key = OrderedSortKey<K>(element, kind);
      }
      const int64_t z = j < end && key == kSign;
      const int64_t m = j < end && key == static_cast<K>(~K{0});
      int64_t z_rank = 0, m_rank = 0, z_total = 0, m_total = 0;
      Scan(temp).ExclusiveSum(z, z_rank, z_total);
      __syncthreads();
      Scan(temp).ExclusiveSum(m, m_rank, m_total);
      __syncthreads();
      if (z) out[(o * length + zero_at + z_rank) * inner + i] = element;
      if (m) out[(o * length + nan_at + m_rank) * inner + i] = element;
      zero_at += z_total;
      nan_at += m_total;
    }
  }
}

// ---- one contiguous row of float32/float64: CUB's own float sort ---------------
// CUB sorts float keys directly (one pass fewer each way than keys of
// ours): [-NaN][negatives][-0.0][+0.0][positives][+NaN], NaNs by their
// bits. NumPy's order puts every NaN last and keeps zeros and NaNs in input
// order. Inspect finds the regions by block searches of the sorted row
// and says what needs doing (flags[0]: the leading negative NaNs to rotate
// to the end; flags[1]: zeros or NaNs of different bits, which the fix-up
// kernels above then write again in input order); the kernels after it
// return at once when there is nothing to do, so a row without such values
// costs CUB's sort and a few idle launches, no host round trip.

template <typename F>
struct FloatBits {
  using type = std::conditional_t<sizeof(F) == 8, unsigned long long, unsigned int>;
};

// The first i in [lo, hi) with pred(i) (false before, true after), else hi;
// every thread of the block calls it.
template <typename P>
__device__ int64_t BlockFindFirst(int64_t lo, int64_t hi, P pred) {
  __shared__ long long first;
  while (lo < hi) {
    const int64_t step = (hi - lo + kBlock - 1) / kBlock;
    if (threadIdx.x == 0) first = hi;
    __syncthreads();
    const int64_t i = lo + static_cast<int64_t>(threadIdx.x) * step;
    if (i < hi && pred(i)) atomicMin(&first, static_cast<long long>(i));
    __syncthreads();
    const int64_t f = first;
    __syncthreads();
    if (step == 1) return f;
    if (f == hi) {
      lo = lo + ((hi - 1 - lo) / step) * step + 1;  // past the last sample
    } else {
      // The answer is in (f - step, f): [lo, hi) or, if none there, f.
      lo = f - step + 1 > lo ? f - step + 1 : lo;
      hi = f;
    }
  }
  return hi;
}

template <typename F>
__global__ void Inspect(const F* out, int64_t n, int64_t* flags) {
  using B = typename FloatBits<F>::type;
  auto bits = [&](int64_t i) { return *reinterpret_cast<const B*>(out + i); };
  const int64_t k =
      BlockFindFirst(0, n, [&](int64_t i) { return !(isnan(out[i]) && signbit(out[i])); });
  const int64_t p0 = BlockFindFirst(k, n, [&](int64_t i) { return isnan(out[i]); });
  const int64_t z0 = BlockFindFirst(k, p0, [&](int64_t i) { return out[i] >= F(0); });
  const int64_t z1 = BlockFindFirst(z0, p0, [&](int64_t i) { return out[i] > F(0); });
  if (threadIdx.x == 0) {
    const bool mixed_zeros = z1 - z0 >= 2 && bits(z0) != bits(z1 - 1);
    const int64_t positive_nans = n - p0;
    bool mixed_nans = k > 0 && positive_nans > 0;
    if (k >= 2 && bits(0) != bits(k - 1)) mixed_nans = true;
    if (positive_nans >= 2 && bits(p0) != bits(n - 1)) mixed_nans = true;
    flags[0] = k;
    flags[1] = mixed_zeros || mixed_nans ? 1 : 0;
  }
}

// out rotated left by flags[0] through `copy` (two kernels: every element
// moves), when there are leading negative NaNs.
template <typename F>
__global__ void RotateOut(const F* out, F* copy, int64_t n, const int64_t* flags) {
  const int64_t k = flags[0];
  if (k == 0) return;
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    copy[t] = out[t + k < n ? t + k : t + k - n];
  }
}

template <typename F>
__global__ void RotateBack(const F* copy, F* out, int64_t n, const int64_t* flags) {
  if (flags[0] == 0) return;
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; t < n;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[t] = copy[t];
  }
}

__global__ void RowOffsets(int64_t* offsets, int64_t length, int64_t rows) {
  for (int64_t s = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; s <= rows;
       s += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    offsets[s] = s * length;
  }
}

// ---- rows that fit one block ------------------------------------------------
// Contiguous rows of up to kBlockRowsMax elements sort in one kernel, a
// block per row: (key, index) pairs in registers through CUB's stable
// BlockRadixSort (the row read once; padding sorts last as the largest key,
// after any NaN by its position), then argsort writes the indices and sort
// the elements they name (their own bits: zero signs and NaN payloads
// kept), read again from the row just read.
constexpr int64_t kBlockRowsMax = 4096;

template <typename K, int kThreads, int kItems>
__global__ void __launch_bounds__(kThreads)
    SortRowsInBlock(const K* in, void* out, bool indices, SortKeyKind kind, int length,
                    int64_t rows) {
  using Sort = cub::BlockRadixSort<K, kThreads, kItems, uint32_t>;
  __shared__ typename Sort::TempStorage temp;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const K* r = in + row * length;
    K keys[kItems];
    uint32_t index[kItems];
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int j = static_cast<int>(threadIdx.x) * kItems + i;
      index[i] = static_cast<uint32_t>(j);
      keys[i] = j < length ? OrderedSortKey<K>(r[j], kind) : static_cast<K>(~K{0});
    }
    Sort(temp).SortBlockedToStriped(keys, index, 0, static_cast<int>(8 * sizeof(K)));
#pragma unroll
    for (int i = 0; i < kItems; ++i) {
      const int t = i * kThreads + static_cast<int>(threadIdx.x);
      if (t < length) {
        if (indices) {
          static_cast<int64_t*>(out)[row * length + t] = static_cast<int64_t>(index[i]);
        } else {
          static_cast<K*>(out)[row * length + t] = r[index[i]];
        }
      }
    }
    __syncthreads();  // `temp` again for the next row
  }
}

template <typename K, int kThreads, int kItems>
DeviceSortCall LaunchRowsInBlock(const DeviceSortArgs& a, cudaStream_t stream) {
  const int64_t rows = a.outer;
  const int grid = static_cast<int>(rows < (int64_t{1} << 30) ? rows : (int64_t{1} << 30));
  SortRowsInBlock<K, kThreads, kItems><<<grid, kThreads, 0, stream>>>(
      static_cast<const K*>(a.in), a.out, a.indices, a.kind, static_cast<int>(a.length), rows);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return {e, "SortRowsInBlock<<<>>>"};
  return {};
}

template <typename K>
DeviceSortCall SortRowsInBlocks(const DeviceSortArgs& a, cudaStream_t stream) {
  if (a.length <= 512) return LaunchRowsInBlock<K, 128, 4>(a, stream);
  if (a.length <= 1024) return LaunchRowsInBlock<K, 256, 4>(a, stream);
  if (a.length <= 2048) return LaunchRowsInBlock<K, 256, 8>(a, stream);
  return LaunchRowsInBlock<K, 512, 8>(a, stream);
}

bool RowsFitBlocks(const DeviceSortArgs& a) {
  return a.inner == 1 && a.length >= 1 && a.length <= kBlockRowsMax && a.outer >= 1;
}

size_t Aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

struct Layout {
  int64_t n = 0;
  int64_t rows = 0;
  bool pairs = false;
  size_t keys = 0;      // bytes of one key array
  size_t index = 0;     // bytes of one index array (0: keys only)
  size_t offsets = 0;   // bytes of the row offsets (0: one row)
  bool fix = false;     // keys-only floats: zeros and NaNs written again
  int64_t chunks = 0;   // fix-up chunks per row
  size_t counts = 0;    // bytes of the fix-up counts, row totals and flags
  bool direct = false;  // one contiguous float32/float64 row: CUB's float sort
  size_t fixed() const { return 2 * keys + 2 * index + offsets + counts; }
};

template <typename K>
Layout LayoutOf(const DeviceSortArgs& a) {
  Layout l;
  l.rows = a.outer * a.inner;
  l.n = l.rows * a.length;
  const bool floating = a.kind == SortKeyKind::kFloat16 || a.kind == SortKeyKind::kBFloat16 ||
                        a.kind == SortKeyKind::kFloat32 || a.kind == SortKeyKind::kFloat64;
  l.pairs = a.indices || (floating && !kFloatKeysOnly);
  l.fix = floating && !a.indices && kFloatKeysOnly;
  if (l.fix) {
    l.chunks = (a.length + kFixChunk - 1) / kFixChunk;
    l.counts =
        Aligned(static_cast<size_t>(l.rows * l.chunks * 3 + l.rows * 2 + 2) * sizeof(int64_t));
    l.direct = l.rows == 1 && (a.kind == SortKeyKind::kFloat32 || a.kind == SortKeyKind::kFloat64);
  }
  l.keys = Aligned(static_cast<size_t>(l.n) * a.key_bytes);
  l.index = l.pairs ? Aligned(static_cast<size_t>(l.n) * sizeof(ValueOf<K>)) : 0;
  l.offsets = l.rows > 1 ? Aligned(static_cast<size_t>(l.rows + 1) * sizeof(int64_t)) : 0;
  return l;
}

// CUB's temporary storage query (temp == nullptr) or the sort itself.
template <typename K>
DeviceSortCall CubSort(const Layout& l, void* temp, size_t& temp_bytes, const K* keys_in,
                       K* keys_out, const ValueOf<K>* index_in, ValueOf<K>* index_out,
                       const int64_t* offsets, cudaStream_t stream) {
  cudaError_t e = cudaSuccess;
  if (l.rows <= 1) {
    if (l.pairs) {
      e = cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, index_in, index_out,
                                          l.n, 0, static_cast<int>(8 * sizeof(K)), stream);
      return {e, "cub::DeviceRadixSort::SortPairs"};
    }
    e = cub::DeviceRadixSort::SortKeys(temp, temp_bytes, keys_in, keys_out, l.n, 0,
                                       static_cast<int>(8 * sizeof(K)), stream);
    return {e, "cub::DeviceRadixSort::SortKeys"};
  }
  if (l.pairs) {
    e = cub::DeviceSegmentedSort::StableSortPairs(temp, temp_bytes, keys_in, keys_out, index_in,
                                                  index_out, l.n, l.rows, offsets, offsets + 1,
                                                  stream);
    return {e, "cub::DeviceSegmentedSort::StableSortPairs"};
  }
  e = cub::DeviceSegmentedSort::StableSortKeys(temp, temp_bytes, keys_in, keys_out, l.n, l.rows,
                                               offsets, offsets + 1, stream);
  return {e, "cub::DeviceSegmentedSort::StableSortKeys"};
}

int GridFor(int64_t n) {
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  return static_cast<int>(blocks < 65536 ? (blocks > 0 ? blocks : 1) : 65536);
}

// The zeros and NaNs of keys-only float sorts written again in input order
// (when `needed` is not null, only if *needed says so).
template <typename K>
DeviceSortCall FixUp(const DeviceSortArgs& a, const Layout& l, const K* in, int64_t* counts,
                     int64_t* totals, const int64_t* needed, cudaStream_t stream) {
  const int64_t total_chunks = l.rows * l.chunks;
  const int grid = static_cast<int>(total_chunks < 65536 ? total_chunks : 65536);
  CountSpecials<K><<<grid, kBlock, 0, stream>>>(in, a.kind, a.length, a.inner, l.chunks,
                                                total_chunks, counts, needed);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return {e, "CountSpecials<<<>>>"};
  const int row_grid = static_cast<int>(l.rows < 65536 ? l.rows : 65536);
  FixPrefixes<<<row_grid, kBlock, 0, stream>>>(counts, totals, l.chunks, l.rows, needed);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return {e, "FixPrefixes<<<>>>"};
  FixSpecials<K><<<grid, kBlock, 0, stream>>>(in, static_cast<K*>(a.out), a.kind, a.length, a.inner,
                                              l.chunks, total_chunks, counts, totals, needed);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return {e, "FixSpecials<<<>>>"};
  return {};
}

template <typename K>
DeviceSortCall Run(const DeviceSortArgs& a, void* scratch, size_t scratch_bytes,
                   cudaStream_t stream, size_t* bytes_out) {
  if (RowsFitBlocks(a)) {
    if (bytes_out != nullptr) {
      *bytes_out = 256;
      return {};
    }
    return SortRowsInBlocks<K>(a, stream);
  }
  const Layout l = LayoutOf<K>(a);
  char* base = static_cast<char*>(scratch);
  K* keys_in = reinterpret_cast<K*>(base);
  K* keys_out = reinterpret_cast<K*>(base + l.keys);
  using V = ValueOf<K>;
  V* index_in = l.pairs ? reinterpret_cast<V*>(base + 2 * l.keys) : nullptr;
  V* index_out = l.pairs ? reinterpret_cast<V*>(base + 2 * l.keys + l.index) : nullptr;
  int64_t* offsets =
      l.offsets ? reinterpret_cast<int64_t*>(base + 2 * l.keys + 2 * l.index) : nullptr;
  int64_t* counts =
      l.fix ? reinterpret_cast<int64_t*>(base + 2 * l.keys + 2 * l.index + l.offsets) : nullptr;
  int64_t* totals = l.fix ? counts + 3 * l.rows * l.chunks : nullptr;
  if (bytes_out != nullptr) {
    size_t temp_bytes = 0;
    DeviceSortCall c;
    if (l.direct) {
      using F = std::conditional_t<sizeof(K) == 8, double, float>;
      c.error = cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, static_cast<const F*>(nullptr),
                                               static_cast<F*>(nullptr), l.n, 0,
                                               static_cast<int>(8 * sizeof(F)), stream);
      c.call = "cub::DeviceRadixSort::SortKeys";
    } else {
      c = CubSort<K>(l, nullptr, temp_bytes, keys_in, keys_out, index_in, index_out, offsets,
                     stream);
    }
    if (c.error != cudaSuccess) return c;
    *bytes_out = l.fixed() + Aligned(temp_bytes) + 256;
    return {};
  }
  if (l.n == 0) return {};
  void* temp = base + l.fixed();
  size_t temp_bytes = scratch_bytes - l.fixed();
  const K* in = static_cast<const K*>(a.in);
  if (l.direct) {
    using F = std::conditional_t<sizeof(K) == 8, double, float>;
    F* out = static_cast<F*>(a.out);
    int64_t* flags = totals + 2;
    cudaError_t e =
        cub::DeviceRadixSort::SortKeys(temp, temp_bytes, static_cast<const F*>(a.in), out, l.n, 0,
                                       static_cast<int>(8 * sizeof(F)), stream);
    if (e != cudaSuccess) return {e, "cub::DeviceRadixSort::SortKeys"};
    Inspect<F><<<1, kBlock, 0, stream>>>(out, l.n, flags);
    if (e = cudaGetLastError(); e != cudaSuccess) return {e, "Inspect<<<>>>"};
    F* copy = reinterpret_cast<F*>(keys_in);
    RotateOut<F><<<GridFor(l.n), kBlock, 0, stream>>>(out, copy, l.n, flags);
    if (e = cudaGetLastError(); e != cudaSuccess) return {e, "RotateOut<<<>>>"};
    RotateBack<F><<<GridFor(l.n), kBlock, 0, stream>>>(copy, out, l.n, flags);
    if (e = cudaGetLastError(); e != cudaSuccess) return {e, "RotateBack<<<>>>"};
    return FixUp<K>(a, l, in, counts, totals, flags + 1, stream);
  }
  ToKeys<K><<<GridFor(l.n), kBlock, 0, stream>>>(in, keys_in, index_in, a.indices, a.kind, a.length,
                                                 a.inner, l.n);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return {e, "ToKeys<<<>>>"};
  if (offsets != nullptr) {
    RowOffsets<<<GridFor(l.rows + 1), kBlock, 0, stream>>>(offsets, a.length, l.rows);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return {e, "RowOffsets<<<>>>"};
  }
  DeviceSortCall c =
      CubSort<K>(l, temp, temp_bytes, keys_in, keys_out, index_in, index_out, offsets, stream);
  if (c.error != cudaSuccess) return c;
  const int mode = a.indices ? 0 : (l.pairs ? 1 : (l.fix ? 3 : 2));
  FromKeys<K><<<GridFor(l.n), kBlock, 0, stream>>>(keys_out, index_out, a.out, mode, a.kind,
                                                   a.length, a.inner, l.n);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return {e, "FromKeys<<<>>>"};
  if (l.fix) return FixUp<K>(a, l, in, counts, totals, nullptr, stream);
  return {};
}

DeviceSortCall Dispatch(const DeviceSortArgs& a, void* scratch, size_t scratch_bytes,
                        cudaStream_t stream, size_t* bytes_out) {
  switch (a.key_bytes) {
    case 1:
      return Run<uint8_t>(a, scratch, scratch_bytes, stream, bytes_out);
    case 2:
      return Run<uint16_t>(a, scratch, scratch_bytes, stream, bytes_out);
    case 4:
      return Run<uint32_t>(a, scratch, scratch_bytes, stream, bytes_out);
    case 8:
      return Run<uint64_t>(a, scratch, scratch_bytes, stream, bytes_out);
    default:
      return {cudaErrorInvalidValue, "DeviceSort (key size)"};
  }
}

// ---- searchsorted -----------------------------------------------------------

template <typename S, typename C>
__device__ C Converted(const S* p, int64_t i) {
  if constexpr (std::is_same_v<S, __half>) {
    return static_cast<C>(__half2float(p[i]));
  } else if constexpr (std::is_same_v<S, __nv_bfloat16>) {
    return static_cast<C>(__bfloat162float(p[i]));
  } else if constexpr (std::is_same_v<C, bool>) {
    return p[i] != S{0};
  } else {
    return static_cast<C>(p[i]);
  }
}

template <typename S, typename C>
__global__ void ToCompute(const S* in, C* out, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[i] = Converted<S, C>(in, i);
  }
}

// a < b in NumPy's sort order: NaN after every number.
template <typename C>
__device__ bool SortLess(C a, C b) {
  if constexpr (std::is_same_v<C, double>) {
    return a < b || (isnan(b) && !isnan(a));
  } else {
    return a < b;
  }
}

template <typename C>
__global__ void Search(const C* sorted, int64_t n, const C* values, int64_t m, bool right,
                       int64_t* out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < m;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const C v = values[i];
    int64_t lo = 0, hi = n;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      // left: the first position whose element is not below v; right: the
      // first whose element is above v.
      const bool go_right = right ? !SortLess(v, sorted[mid]) : SortLess(sorted[mid], v);
      if (go_right) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    out[i] = lo;
  }
}

template <typename C>
DeviceSortCall ConvertInto(SearchElement type, const void* in, C* out, int64_t n,
                           cudaStream_t stream) {
  if (n == 0) return {};
  const int grid = GridFor(n);
  switch (type) {
    case SearchElement::kBool:
      ToCompute<<<grid, kBlock, 0, stream>>>(static_cast<const uint8_t*>(in), out, n);
      break;
    case SearchElement::kInt8:
      ToCompute<<<grid, kBlock, 0, stream>>>(static_cast<const int8_t*>(in), out, n);
      break;
    case SearchElement::kInt16:
      ToCompute<<<grid, kBlock, 0, stream>>>(static_cast<const int16_t*>(in), out, n);
      break;
    case SearchElement::kInt32:
      ToCompute<<<grid, kBlock, 0, stream>>>(static_cast<const int32_t*>(in), out, n);
      break;
    case SearchElement::kInt64:
      ToCompute<<<grid, kBlock, 0, stream>>>(static_cast<const int64_t*>(in), out, n);
      break;
    case SearchElement::kUInt8:
      ToCompute<<<grid, kBlock, 0, stream>>>(static_cast<const uint8_t*>(in), out, n);
      break;
    case SearchElement::kUInt16:
      ToCompute<<<grid, kBlock, 0, stream>>>(static_cast<const uint16_t*>(in), out, n);
      break;
    case SearchElement::kUInt32:
      ToCompute<<<grid, kBlock, 0, stream>>>(static_cast<const uint32_t*>(in), out, n);
      break;
    case SearchElement::kUInt64:
      ToCompute<<<grid, kBlock, 0, stream>>>(static_cast<const uint64_t*>(in), out, n);
      break;
    case SearchElement::kFloat16:
      ToCompute<<<grid, kBlock, 0, stream>>>(static_cast<const __half*>(in), out, n);
      break;
    case SearchElement::kBFloat16:
      ToCompute<<<grid, kBlock, 0, stream>>>(static_cast<const __nv_bfloat16*>(in), out, n);
      break;
    case SearchElement::kFloat32:
      ToCompute<<<grid, kBlock, 0, stream>>>(static_cast<const float*>(in), out, n);
      break;
    case SearchElement::kFloat64:
      ToCompute<<<grid, kBlock, 0, stream>>>(static_cast<const double*>(in), out, n);
      break;
  }
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return {e, "ToCompute<<<>>>"};
  return {};
}

template <typename C>
DeviceSortCall SearchAs(const DeviceSearchArgs& a, void* scratch, cudaStream_t stream) {
  C* sorted = static_cast<C*>(scratch);
  C* values = reinterpret_cast<C*>(static_cast<char*>(scratch) + Aligned(a.n * sizeof(C)));
  if (DeviceSortCall c = ConvertInto<C>(a.sorted_type, a.sorted, sorted, a.n, stream);
      c.error != cudaSuccess) {
    return c;
  }
  if (DeviceSortCall c = ConvertInto<C>(a.values_type, a.values, values, a.m, stream);
      c.error != cudaSuccess) {
    return c;
  }
  Search<C><<<GridFor(a.m), kBlock, 0, stream>>>(sorted, a.n, values, a.m, a.right, a.out);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return {e, "Search<<<>>>"};
  return {};
}

}  // namespace

size_t DeviceSearchScratchBytes(const DeviceSearchArgs& args) {
  return Aligned(args.n * 8) + Aligned(args.m * 8) + 256;
}

DeviceSortCall DeviceSearchSorted(const DeviceSearchArgs& args, void* scratch,
                                  cudaStream_t stream) {
  if (args.m == 0) return {};
  switch (args.compute) {
    case SearchCompute::kBool:
      return SearchAs<bool>(args, scratch, stream);
    case SearchCompute::kInt64:
      return SearchAs<int64_t>(args, scratch, stream);
    case SearchCompute::kUInt64:
      return SearchAs<uint64_t>(args, scratch, stream);
    case SearchCompute::kFloat64:
      break;
  }
  return SearchAs<double>(args, scratch, stream);
}

DeviceSortCall DeviceSortScratchBytes(const DeviceSortArgs& args, size_t* bytes) {
  *bytes = 0;
  return Dispatch(args, nullptr, 0, nullptr, bytes);
}

DeviceSortCall DeviceSort(const DeviceSortArgs& args, void* scratch, size_t scratch_bytes,
                          cudaStream_t stream) {
  return Dispatch(args, scratch, scratch_bytes, stream, nullptr);
}

}  // namespace gpuflow::cuda
