// The load and store function tables: one small loop per (source dtype,
// compute dtype) and per (compute class, destination dtype).
#include <cstddef>
#include <cstdint>

#include "engine/host/host_kernels_internal.h"

namespace gpuflow::host_internal {
namespace {

template <typename X, typename K>
void LoadImpl(const std::byte* base, int64_t offset, int64_t stride, int64_t n, void* dst) {
  using C = ComputeOf<K>;
  C* out = static_cast<C*>(dst);
  constexpr int64_t kSize = sizeof(X);
  const std::byte* p = base + offset * kSize;
  auto load = [&](int64_t i, int64_t step) {
    out[i] = ConvertValue<C>(ConvertValue<K>(LoadElement<X>(p + i * step)));
  };
  // The contiguous case separately, with a constant step the compiler can
  // vectorize.
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i) load(i, kSize);
  } else {
    for (int64_t i = 0; i < n; ++i) load(i, stride * kSize);
  }
}

template <typename C, typename O>
void StoreImpl(const void* src, int64_t n, std::byte* base, int64_t offset, int64_t stride) {
  const C* in = static_cast<const C*>(src);
  constexpr int64_t kSize = sizeof(O);
  std::byte* p = base + offset * kSize;
  if (stride == 1) {
    for (int64_t i = 0; i < n; ++i) StoreElement<O>(p + i * kSize, ConvertValue<O>(in[i]));
  } else {
    const int64_t step = stride * kSize;
    for (int64_t i = 0; i < n; ++i) StoreElement<O>(p + i * step, ConvertValue<O>(in[i]));
  }
}

}  // namespace

LoadFn GetLoadFn(DType src, DType via) {
  return VisitDType(src, [via](auto src_tag) -> LoadFn {
    using X = typename decltype(src_tag)::type;
    return VisitDType(via, [](auto via_tag) -> LoadFn {
      using K = typename decltype(via_tag)::type;
      return &LoadImpl<X, K>;
    });
  });
}

StoreFn GetStoreFn(ComputeClass src, DType dst) {
  return VisitClass(src, [dst](auto src_tag) -> StoreFn {
    using C = typename decltype(src_tag)::type;
    return VisitDType(dst, [](auto dst_tag) -> StoreFn {
      using O = typename decltype(dst_tag)::type;
      return &StoreImpl<C, O>;
    });
  });
}

}  // namespace gpuflow::host_internal
