// sort, argsort and searchsorted.
//
// sort and argsort map every element to an unsigned key of its width whose
// unsigned order is NumPy's order (SortKey: NaN above +inf, -0.0 as 0.0),
// sort (key, index) pairs, which makes them stable, and write the indices
// (argsort) or the elements they name (sort: the input's own bits, so a
// NaN keeps its payload and -0.0 its sign). A row sorts on one thread;
// when there are fewer rows than threads, each row is cut into parts sorted
// side by side and merged pairwise. searchsorted compares in the node's
// compute dtype with NaN greater than everything.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/host/host_kernels_internal.h"
#include "engine/ir/sort_key.h"

namespace gpuflow::host_internal {
namespace {

// The key of a storage type T: an unsigned integer of T's width.
template <typename T>
using KeyOf = typename SortKeyOfSize<sizeof(T)>::type;

template <typename T>
constexpr SortKeyKind KindOfStorage() {
  if constexpr (std::is_same_v<T, bool>) {
    return SortKeyKind::kBool;
  } else if constexpr (std::is_same_v<T, Half>) {
    return SortKeyKind::kFloat16;
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return SortKeyKind::kBFloat16;
  } else if constexpr (std::is_same_v<T, float>) {
    return SortKeyKind::kFloat32;
  } else if constexpr (std::is_same_v<T, double>) {
    return SortKeyKind::kFloat64;
  } else {
    return std::is_signed_v<T> ? SortKeyKind::kSigned : SortKeyKind::kUnsigned;
  }
}

// The order-preserving key of one element (engine/ir/sort_key.h).
template <typename T>
KeyOf<T> SortKey(const std::byte* p) {
  KeyOf<T> bits;
  std::memcpy(&bits, p, sizeof(bits));
  return OrderedSortKey<KeyOf<T>>(bits, KindOfStorage<T>());
}

// Cuts `v` into parts sorted on threads of their own and merges them
// pairwise (also on threads), for rows too long to leave to one thread.
template <typename P>
void ParallelSort(std::vector<P>& v, const HostKernelOptions& options) {
  const int64_t n = static_cast<int64_t>(v.size());
  const int64_t threads = HostThreads(options);
  const int64_t min_part = std::max<int64_t>(options.min_elements_per_thread, 1);
  const int64_t parts = std::clamp<int64_t>(std::min<int64_t>(threads, n / min_part), 1, 64);
  if (parts <= 1) {
    std::sort(v.begin(), v.end());
    return;
  }
  std::vector<int64_t> bounds(parts + 1);
  for (int64_t p = 0; p <= parts; ++p) bounds[p] = n / parts * p + std::min(p, n % parts);
  HostKernelOptions each = options;
  each.min_elements_per_thread = 1;
  ParallelFor(parts, 1, each, [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p)
      std::sort(v.begin() + bounds[p], v.begin() + bounds[p + 1]);
  });
  std::vector<P> tmp(v.size());
  std::vector<P>* from = &v;
  std::vector<P>* to = &tmp;
  for (int64_t width = 1; width < parts; width *= 2) {
    const int64_t pairs = (parts + 2 * width - 1) / (2 * width);
    ParallelFor(pairs, 1, each, [&](int64_t begin, int64_t end) {
      for (int64_t q = begin; q < end; ++q) {
        const int64_t lo = bounds[2 * width * q];
        const int64_t mid = bounds[std::min(parts, 2 * width * q + width)];
        const int64_t hi = bounds[std::min(parts, 2 * width * (q + 1))];
        std::merge(from->begin() + lo, from->begin() + mid, from->begin() + mid, from->begin() + hi,
                   to->begin() + lo);
      }
    });
    std::swap(from, to);
  }
  if (from != &v) v.swap(tmp);
}

// The rows sorted: `count` of them, each `length` long with elements
// `stride` apart; row r starts at (r / stride) * length * stride + r % stride.
struct SortRows {
  int64_t count = 1;
  int64_t length = 0;
  int64_t stride = 1;
  int64_t Base(int64_t r) const { return (r / stride) * length * stride + r % stride; }
};

absl::Status RunSortOrArgsort(const ValidatedNode& node, const HostConstView& in,
                              const HostView& out, const HostKernelOptions& options) {
  const bool indices = node.op->name == "argsort";
  SortRows rows;
  rows.length = in.shape.num_elements();
  if (HasAttr(node, "axis")) {
    absl::StatusOr<int64_t> axis = GetIntAttr(node, "axis");
    if (!axis.ok()) return axis.status();
    if (*axis < 0 || *axis >= in.shape.rank()) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad axis ", *axis, " for shape ", in.shape.ToString()));
    }
    rows.length = in.shape.dim(static_cast<int>(*axis));
    rows.stride = 1;
    for (int d = static_cast<int>(*axis) + 1; d < in.shape.rank(); ++d) {
      rows.stride *= in.shape.dim(d);
    }
    rows.count = rows.length == 0 ? 0 : in.shape.num_elements() / rows.length;
  }
  if (in.shape.num_elements() == 0) return absl::OkStatus();
  const int64_t size = ItemSize(in.dtype);
  return VisitRealDType(in.dtype, node.op->name, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    using P = std::pair<KeyOf<T>, int64_t>;
    const auto sort_row = [&](int64_t r, std::vector<P>& buf, bool parallel) {
      const int64_t base = rows.Base(r);
      buf.resize(rows.length);
      for (int64_t j = 0; j < rows.length; ++j) {
        buf[j] = {SortKey<T>(in.data + (base + j * rows.stride) * size), j};
      }
      if (parallel) {
        ParallelSort(buf, options);
      } else {
        std::sort(buf.begin(), buf.end());
      }
      for (int64_t j = 0; j < rows.length; ++j) {
        const int64_t to = base + j * rows.stride;
        if (indices) {
          StoreElement<int64_t>(out.data + to * 8, buf[j].second);
        } else if constexpr (std::is_same_v<T, bool>) {
          StoreElement<bool>(out.data + to, buf[j].first != 0);
        } else {
          std::memcpy(out.data + to * size, in.data + (base + buf[j].second * rows.stride) * size,
                      size);
        }
      }
    };
    const int64_t threads = HostThreads(options);
    if (rows.count >= threads || rows.length < options.min_elements_per_thread) {
      ParallelFor(rows.count, rows.length * 4, options, [&](int64_t begin, int64_t end) {
        std::vector<P> buf;
        for (int64_t r = begin; r < end; ++r) sort_row(r, buf, false);
      });
    } else {
      std::vector<P> buf;
      for (int64_t r = 0; r < rows.count; ++r) sort_row(r, buf, true);
    }
    return absl::OkStatus();
  });
}

// a < b in NumPy's sort order: NaN after every number.
template <typename C>
bool SortLess(C a, C b) {
  if constexpr (std::is_same_v<C, double>) {
    return a < b || (std::isnan(b) && !std::isnan(a));
  } else {
    return a < b;
  }
}

absl::Status RunSearchSorted(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                             const HostView& out, const HostKernelOptions& options) {
  if (inputs.size() != 2) return absl::InvalidArgumentError("expected two inputs");
  const HostConstView& a = inputs[0];
  const HostConstView& v = inputs[1];
  const auto side = node.attrs.find("side");
  if (side == node.attrs.end() || !std::holds_alternative<std::string>(side->second)) {
    return absl::InvalidArgumentError("missing string attribute 'side'");
  }
  const bool right = std::get<std::string>(side->second) == "right";
  const DType compute = node.type.compute_dtype;
  const int64_t n = a.shape.num_elements();
  const int64_t m = v.shape.num_elements();
  if (m == 0) return absl::OkStatus();
  return VisitRealClass(compute, "searchsorted", [&](auto tag) -> absl::Status {
    using C = typename decltype(tag)::type;
    // Not std::vector: C may be bool.
    const std::unique_ptr<C[]> sorted(new C[std::max<int64_t>(n, 1)]);
    if (n > 0) GetLoadFn(a.dtype, compute)(a.data, 0, 1, n, sorted.get());
    const LoadFn load = GetLoadFn(v.dtype, compute);
    int64_t log_n = 1;
    while ((int64_t{1} << log_n) < n) ++log_n;
    ParallelFor(
        (m + kBlock - 1) / kBlock, kBlock * log_n, options, [&](int64_t begin, int64_t end) {
          C buf[kBlock];
          for (int64_t b = begin; b < end; ++b) {
            const int64_t first = b * kBlock;
            const int64_t count = std::min(kBlock, m - first);
            load(v.data, first, 1, count, buf);
            for (int64_t i = 0; i < count; ++i) {
              const C* at =
                  right ? std::upper_bound(sorted.get(), sorted.get() + n, buf[i], SortLess<C>)
                        : std::lower_bound(sorted.get(), sorted.get() + n, buf[i], SortLess<C>);
              StoreElement<int64_t>(out.data + (first + i) * 8, at - sorted.get());
            }
          }
        });
    return absl::OkStatus();
  });
}

}  // namespace

absl::Status RunSortOp(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                       const HostView& out, const HostKernelOptions& options) {
  if (node.op->name == "searchsorted") return RunSearchSorted(node, inputs, out, options);
  if (inputs.size() != 1) return absl::InvalidArgumentError("expected one input");
  return RunSortOrArgsort(node, inputs[0], out, options);
}

}  // namespace gpuflow::host_internal
