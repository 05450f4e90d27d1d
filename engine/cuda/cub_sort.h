// sort and argsort on the device with CUB's block radix sort (contiguous
// rows of up to 4096 elements, a block per row), device-wide radix sort (one
// longer row) and segmented sort (many), compiled ahead of time by nvcc
// (cub_sort.cu): the host-side dispatch templates of CUB cannot be
// generated and compiled by NVRTC like the other kernels.
//
// Elements become unsigned keys of their own width whose order is NumPy's
// (engine/ir/sort_key.h, shared with the host kernels: NaN of either sign above +inf, -0.0 as 0.0,
// signed integers with the sign bit flipped), gathered so that each row is
// contiguous (a non-last axis is moved last). Integers and bool sort their
// keys alone and map them back; so do floats, whose keys forget a zero's
// sign and a NaN's payload: each row's zeros and NaNs are then written
// again in input order where they sorted. argsort sorts (key, index) pairs
// (stable) and writes the indices. The value is 32 bits
// wide (64 for 8-byte keys), so only four key widths, each keys-only or
// with its one value type, radix or segmented, are instantiated.
//
//   DeviceSortArgs args{...};
//   size_t bytes = 0;
//   DeviceSortCall c = DeviceSortScratchBytes(args, &bytes);   // c.error, c.call
//   ... allocate `bytes` on the stream ...
//   c = DeviceSort(args, scratch, bytes, stream);
#ifndef GPUFLOW_ENGINE_CUDA_CUB_SORT_H_
#define GPUFLOW_ENGINE_CUDA_CUB_SORT_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "engine/ir/sort_key.h"

namespace gpuflow::cuda {

using ::gpuflow::SortKeyKind;

struct DeviceSortArgs {
  SortKeyKind kind = SortKeyKind::kFloat32;
  int key_bytes = 4;     // the element size: 1, 2, 4 or 8
  bool indices = false;  // argsort: int64 indices out; else the sorted elements
  const void* in = nullptr;
  void* out = nullptr;
  // The input is C-contiguous of shape (outer, length, inner), sorted along
  // `length` (at most INT32_MAX: the indices are 32-bit while sorting).
  int64_t outer = 1;
  int64_t length = 0;
  int64_t inner = 1;
};

// The first failing CUDA call (its name in `call`), or cudaSuccess.
struct DeviceSortCall {
  cudaError_t error = cudaSuccess;
  const char* call = "";
};

// The scratch bytes DeviceSort needs: the keys and indices twice, the
// segment offsets and CUB's temporary storage, in one buffer.
DeviceSortCall DeviceSortScratchBytes(const DeviceSortArgs& args, size_t* bytes);

// Queues the sort on `stream`; `scratch` holds DeviceSortScratchBytes bytes.
DeviceSortCall DeviceSort(const DeviceSortArgs& args, void* scratch, size_t scratch_bytes,
                          cudaStream_t stream);

// searchsorted: both inputs converted to the compute class of the node's
// compute dtype (bool, int64, uint64 or double: exact for every promoted
// pair, as the host kernel's loads), then a thread per value binary-searches
// the sorted array with NaN after every number.
enum class SearchElement : uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64
};
enum class SearchCompute : uint8_t { kBool, kInt64, kUInt64, kFloat64 };

struct DeviceSearchArgs {
  SearchElement sorted_type = SearchElement::kFloat32;
  SearchElement values_type = SearchElement::kFloat32;
  SearchCompute compute = SearchCompute::kFloat64;
  bool right = false;
  const void* sorted = nullptr;  // 1-D, `n` elements
  int64_t n = 0;
  const void* values = nullptr;  // `m` elements
  int64_t m = 0;
  int64_t* out = nullptr;  // `m` positions
};

// The scratch bytes DeviceSearchSorted needs (both inputs converted).
size_t DeviceSearchScratchBytes(const DeviceSearchArgs& args);
DeviceSortCall DeviceSearchSorted(const DeviceSearchArgs& args, void* scratch, cudaStream_t stream);

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_CUB_SORT_H_
