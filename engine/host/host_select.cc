// The selection ops on the host: scatter (a copy of the array, then the
// updates applied one by one in index order, so "set" keeps the last of
// duplicate indices and the combining modes fold every duplicate in order,
// as numpy.ufunc.at) and flatnonzero (one pass counting, one writing).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/host/host_kernels_internal.h"
#include "engine/ir/gather.h"

namespace gpuflow::host_internal {
namespace {

enum class ScatterMode : uint8_t { kSet, kAdd, kMul, kMin, kMax };

absl::StatusOr<ScatterMode> ModeOf(const ValidatedNode& node) {
  const auto it = node.attrs.find("mode");
  const std::string* mode =
      it == node.attrs.end() ? nullptr : std::get_if<std::string>(&it->second);
  if (mode == nullptr || *mode == "set") return ScatterMode::kSet;
  if (*mode == "add") return ScatterMode::kAdd;
  if (*mode == "mul") return ScatterMode::kMul;
  if (*mode == "min") return ScatterMode::kMin;
  if (*mode == "max") return ScatterMode::kMax;
  return absl::InvalidArgumentError(absl::StrCat("unknown scatter mode '", *mode, "'"));
}

// `current` combined with `update` in the compute type C: integers wrap,
// bool adds as or and multiplies as and, min and max propagate NaN (as
// numpy.minimum and numpy.maximum).
template <typename C>
C Combine(ScatterMode mode, C current, C update) {
  if constexpr (std::is_same_v<C, bool>) {
    const bool either = mode == ScatterMode::kAdd || mode == ScatterMode::kMax;
    return either ? (current || update) : (current && update);
  } else if constexpr (std::is_same_v<C, Complex128>) {
    // numpy.add/multiply/minimum/maximum.at on complex values (NaN kept,
    // ordered by real, then imaginary part).
    switch (mode) {
      case ScatterMode::kAdd:
        return current + update;
      case ScatterMode::kMul:
        return ComplexMul(current, update);
      case ScatterMode::kMin:
        return ComplexIsNaN(current) || ComplexGreaterEqual(update, current) ? current : update;
      case ScatterMode::kMax:
        return ComplexIsNaN(current) || ComplexGreaterEqual(current, update) ? current : update;
      case ScatterMode::kSet:
        break;
    }
    return update;
  } else {
    switch (mode) {
      case ScatterMode::kAdd:
        if constexpr (std::is_same_v<C, int64_t>) return WrapAdd(current, update);
        return current + update;
      case ScatterMode::kMul:
        if constexpr (std::is_same_v<C, int64_t>) return WrapMul(current, update);
        return current * update;
      case ScatterMode::kMin:
      case ScatterMode::kMax:
        if constexpr (std::is_same_v<C, double>) {
          if (std::isnan(current) || std::isnan(update)) return current + update;
        }
        return mode == ScatterMode::kMin ? std::min(current, update) : std::max(current, update);
      case ScatterMode::kSet:
        break;
    }
    return update;
  }
}

// The flat position index k names in an array of n elements, or -1 when it
// is out of bounds; `bits` is the index widened as the indices' dtype holds
// it (sign-extended for signed dtypes).
int64_t FlatPosition(uint64_t bits, bool is_signed, int64_t n) {
  if (!is_signed) return bits < static_cast<uint64_t>(n) ? static_cast<int64_t>(bits) : -1;
  int64_t v = static_cast<int64_t>(bits);
  if (v < 0) v += n;
  return v >= 0 && v < n ? v : -1;
}

absl::Status RunScatter(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                        const HostView& out) {
  if (inputs.size() != 3) return absl::InvalidArgumentError("expected three inputs");
  absl::StatusOr<ScatterMode> mode = ModeOf(node);
  if (!mode.ok()) return mode.status();
  const HostConstView& src = inputs[0];
  const HostConstView& idx = inputs[1];
  const HostConstView& upd = inputs[2];
  const int64_t n = src.shape.num_elements();
  const int64_t size = ItemSize(src.dtype);
  const int64_t count = idx.shape.num_elements();
  const bool is_signed = KindOf(idx.dtype) == DTypeKind::kSigned;
  // Every index widened to 64 bits, checked first so that the error names
  // the first bad one in C order (as NumPy).
  std::vector<uint64_t> bits(count);
  GetLoadFn(idx.dtype, is_signed ? DType::kInt64 : DType::kUInt64)(idx.data, 0, 1, count,
                                                                   bits.data());
  GatherLayout error;
  error.axis_size = n;
  for (int64_t k = 0; k < count; ++k) {
    if (FlatPosition(bits[k], is_signed, n) < 0)
      return GatherIndexStatus(error, idx.dtype, bits[k]);
  }
  if (n > 0) std::memcpy(out.data, src.data, n * size);
  // The updates' element for each index: their strides over the indices'
  // dims (0 where they broadcast).
  const int rank = idx.shape.rank();
  const int shift = rank - upd.shape.rank();
  std::vector<int64_t> strides(rank, 0);
  for (int64_t d = rank - 1, s = 1; d >= shift; --d) {
    const int64_t dim = upd.shape.dim(static_cast<int>(d - shift));
    if (dim != 1) strides[d] = s;
    s *= dim;
  }
  const ComputeClass cls = ClassOf(src.dtype);
  const LoadFn load_update = GetLoadFn(upd.dtype, src.dtype);
  const LoadFn load_current = GetLoadFn(src.dtype, src.dtype);
  const StoreFn store = GetStoreFn(cls, src.dtype);
  return VisitClass(cls, [&](auto tag) -> absl::Status {
    using C = typename decltype(tag)::type;
    std::vector<int64_t> coord(rank, 0);
    int64_t offset = 0;
    for (int64_t k = 0; k < count; ++k) {
      const int64_t j = FlatPosition(bits[k], is_signed, n);
      C update;
      load_update(upd.data, offset, 0, 1, &update);
      if (*mode != ScatterMode::kSet) {
        C current;
        load_current(out.data, j, 0, 1, &current);
        update = Combine<C>(*mode, current, update);
      }
      store(&update, 1, out.data, j, 0);
      for (int d = rank - 1; d >= 0; --d) {  // the next coordinate in C order
        offset += strides[d];
        if (++coord[d] < idx.shape.dim(d)) break;
        offset -= strides[d] * coord[d];
        coord[d] = 0;
      }
    }
    return absl::OkStatus();
  });
}

absl::Status RunFlatNonzero(const HostConstView& in, const HostView& out) {
  const int64_t n = in.shape.num_elements();
  const int64_t size = out.shape.num_elements();
  const LoadFn load = GetLoadFn(in.dtype, DType::kBool);
  bool block[kBlock];
  std::vector<int64_t> found;
  found.reserve(size);
  int64_t nonzero = 0;
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t m = std::min(kBlock, n - begin);
    load(in.data, begin, 1, m, block);
    for (int64_t i = 0; i < m; ++i) {
      if (!block[i]) continue;
      if (nonzero < size) found.push_back(begin + i);
      ++nonzero;
    }
  }
  if (nonzero != size) {
    return absl::InvalidArgumentError(absl::StrCat("flatnonzero: the input has ", nonzero,
                                                   " nonzero elements, but the node's size is ",
                                                   size));
  }
  if (size > 0) std::memcpy(out.data, found.data(), size * sizeof(int64_t));
  return absl::OkStatus();
}

}  // namespace

absl::Status RunSelection(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                          const HostView& out) {
  if (node.op->name == "scatter") return RunScatter(node, inputs, out);
  if (node.op->name == "histogram") return RunHistogram(node, inputs, out);
  if (inputs.size() != 1) return absl::InvalidArgumentError("expected one input");
  return RunFlatNonzero(inputs[0], out);
}

}  // namespace gpuflow::host_internal
