// NumPy's sort order as unsigned keys: each element becomes an unsigned
// integer of its own width whose unsigned order is the order numpy.sort
// gives (floats: NaN of either sign above +inf, -0.0 equal to 0.0; signed
// integers below unsigned order by their sign bit). The host kernels
// (engine/host/host_sort.cc) and the CUDA sorts (engine/cuda/cub_sort.cu,
// compiled by nvcc) share it, so the two backends order alike.
//
//   uint32_t key = OrderedSortKey<uint32_t>(float_bits, SortKeyKind::kFloat32);
#ifndef GPUFLOW_ENGINE_IR_SORT_KEY_H_
#define GPUFLOW_ENGINE_IR_SORT_KEY_H_

#include <cstddef>
#include <cstdint>

#if defined(__CUDACC__)
#define GPUFLOW_SORT_KEY_HD __host__ __device__
#else
#define GPUFLOW_SORT_KEY_HD
#endif

namespace gpuflow {

enum class SortKeyKind : uint8_t {
  kBool,
  kSigned,
  kUnsigned,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64
};

// The unsigned key type of an element of kBytes bytes.
template <size_t kBytes>
struct SortKeyOfSize;
template <>
struct SortKeyOfSize<1> {
  using type = uint8_t;
};
template <>
struct SortKeyOfSize<2> {
  using type = uint16_t;
};
template <>
struct SortKeyOfSize<4> {
  using type = uint32_t;
};
template <>
struct SortKeyOfSize<8> {
  using type = uint64_t;
};

// The key of an element whose bits are `bits`: bool 0 or 1 (any nonzero
// byte is true); unsigned integers as they are; signed integers with the
// sign bit flipped; floats with the sign bit set when positive and every
// bit flipped when negative, -0.0 taken as 0.0 and every NaN as the largest
// key.
template <typename K>
GPUFLOW_SORT_KEY_HD K OrderedSortKey(K bits, SortKeyKind kind) {
  constexpr K kSign = static_cast<K>(K{1} << (8 * sizeof(K) - 1));
  if (kind == SortKeyKind::kBool) return bits != 0 ? K{1} : K{0};
  if (kind == SortKeyKind::kSigned) return static_cast<K>(bits ^ kSign);
  if (kind == SortKeyKind::kUnsigned) return bits;
  const int mantissa = kind == SortKeyKind::kFloat16    ? 10
                       : kind == SortKeyKind::kBFloat16 ? 7
                       : kind == SortKeyKind::kFloat32  ? 23
                                                        : 52;
  const K magnitude_mask = static_cast<K>(~kSign);
  const K inf = static_cast<K>(magnitude_mask >> mantissa << mantissa);
  const K magnitude = static_cast<K>(bits & magnitude_mask);
  if (magnitude > inf) return static_cast<K>(~K{0});  // NaN
  if (magnitude == 0) return kSign;                   // -0.0 and 0.0
  return (bits & kSign) ? static_cast<K>(~bits) : static_cast<K>(bits | kSign);
}

// The element of a key, for integers and bool (whose keys are a bijection).
template <typename K>
GPUFLOW_SORT_KEY_HD K ElementOfSortKey(K key, SortKeyKind kind) {
  constexpr K kSign = static_cast<K>(K{1} << (8 * sizeof(K) - 1));
  return kind == SortKeyKind::kSigned ? static_cast<K>(key ^ kSign) : key;
}

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_IR_SORT_KEY_H_
