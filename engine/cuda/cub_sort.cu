// CUB's radix and segmented sorts for sort and argsort (cub_sort.h), with
// the small kernels that turn elements into ordered keys and back.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_sort.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

#include "engine/cuda/cub_sort.h"

namespace gpuflow::cuda {
namespace {

constexpr int kBlock = 256;

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
    if (mode == 0) {
      static_cast<int64_t*>(out)[to] = static_cast<int64_t>(values[t]);
    } else if (mode == 1) {
      static_cast<K*>(out)[to] = static_cast<K>(values[t]);
    } else {
      static_cast<K*>(out)[to] = ElementOfSortKey<K>(keys[t], kind);
    }
  }
}

__global__ void RowOffsets(int64_t* offsets, int64_t length, int64_t rows) {
  for (int64_t s = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; s <= rows;
       s += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    offsets[s] = s * length;
  }
}

size_t Aligned(size_t bytes) { return (bytes + 255) / 256 * 256; }

struct Layout {
  int64_t n = 0;
  int64_t rows = 0;
  bool pairs = false;
  size_t keys = 0;      // bytes of one key array
  size_t index = 0;     // bytes of one index array (0: keys only)
  size_t offsets = 0;   // bytes of the row offsets (0: one row)
  size_t fixed() const { return 2 * keys + 2 * index + offsets; }
};

template <typename K>
Layout LayoutOf(const DeviceSortArgs& a) {
  Layout l;
  l.rows = a.outer * a.inner;
  l.n = l.rows * a.length;
  l.pairs = a.indices || a.kind == SortKeyKind::kFloat16 || a.kind == SortKeyKind::kBFloat16 ||
            a.kind == SortKeyKind::kFloat32 || a.kind == SortKeyKind::kFloat64;
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

template <typename K>
DeviceSortCall Run(const DeviceSortArgs& a, void* scratch, size_t scratch_bytes,
                   cudaStream_t stream, size_t* bytes_out) {
  const Layout l = LayoutOf<K>(a);
  char* base = static_cast<char*>(scratch);
  K* keys_in = reinterpret_cast<K*>(base);
  K* keys_out = reinterpret_cast<K*>(base + l.keys);
  using V = ValueOf<K>;
  V* index_in = l.pairs ? reinterpret_cast<V*>(base + 2 * l.keys) : nullptr;
  V* index_out = l.pairs ? reinterpret_cast<V*>(base + 2 * l.keys + l.index) : nullptr;
  int64_t* offsets =
      l.offsets ? reinterpret_cast<int64_t*>(base + 2 * l.keys + 2 * l.index) : nullptr;
  if (bytes_out != nullptr) {
    size_t temp_bytes = 0;
    DeviceSortCall c = CubSort<K>(l, nullptr, temp_bytes, keys_in, keys_out, index_in, index_out,
                                  offsets, stream);
    if (c.error != cudaSuccess) return c;
    *bytes_out = l.fixed() + Aligned(temp_bytes) + 256;
    return {};
  }
  if (l.n == 0) return {};
  void* temp = base + l.fixed();
  size_t temp_bytes = scratch_bytes - l.fixed();
  ToKeys<K><<<GridFor(l.n), kBlock, 0, stream>>>(static_cast<const K*>(a.in), keys_in, index_in,
                                                  a.indices, a.kind, a.length, a.inner, l.n);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return {e, "ToKeys<<<>>>"};
  if (offsets != nullptr) {
    RowOffsets<<<GridFor(l.rows + 1), kBlock, 0, stream>>>(offsets, a.length, l.rows);
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return {e, "RowOffsets<<<>>>"};
  }
  DeviceSortCall c =
      CubSort<K>(l, temp, temp_bytes, keys_in, keys_out, index_in, index_out, offsets, stream);
  if (c.error != cudaSuccess) return c;
  const int mode = a.indices ? 0 : (l.pairs ? 1 : 2);
  FromKeys<K><<<GridFor(l.n), kBlock, 0, stream>>>(keys_out, index_out, a.out, mode, a.kind,
                                                    a.length, a.inner, l.n);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return {e, "FromKeys<<<>>>"};
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
