// histogram on the host: numpy.histogram's counting, step for step, once
// the client has the edges (numpy/lib/_histograms_impl.py):
//
//  - uniform bins: each value (converted to the edges' dtype) inside
//    [edges[0], edges[-1]] takes the bin int((x - first_edge) / norm_denom
//    * bins), computed in numpy's dtypes ("sub_dtype", "div_dtype"), then
//    moved by one where the edges say otherwise; weights are summed per
//    bin in float64 over blocks of 65536 elements (numpy's bincount of a
//    BLOCK), each block's sums converted to the weights' dtype and added
//    into the result in that dtype;
//  - given edges: each value's bin by binary search (NumPy's sort order,
//    NaN last; the last bin closed); weights as numpy's cumulative path:
//    per block, the weights in the values' sorted order (stable here:
//    numpy's quicksort may order equal values otherwise), cumulated in the
//    weights' dtype, read at each edge's position, added up over blocks,
//    and the result is the differences of those sums.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/host/host_kernels_internal.h"

namespace gpuflow::host_internal {
namespace {

// numpy.histogram's BLOCK.
constexpr int64_t kNumpyBlock = 65536;

// `v`, the exact result of an operation on values of the float dtype `d`,
// rounded as numpy's loop for d rounds it: narrow floats compute in
// float32 and round from there.
double RoundTo(DType d, double v) {
  switch (d) {
    case DType::kFloat16:
      return Half::FromDouble(static_cast<float>(v)).ToDouble();
    case DType::kBFloat16:
      return static_cast<double>(BFloat16::FromDouble(static_cast<float>(v)).ToFloat());
    case DType::kFloat32:
      return static_cast<double>(static_cast<float>(v));
    default:
      return v;
  }
}

// a < b in NumPy's sort order (NaN after every number).
template <typename C>
bool NumpyLess(C a, C b) {
  if constexpr (std::is_same_v<C, double>) {
    return a < b || (std::isnan(b) && !std::isnan(a));
  } else {
    return a < b;
  }
}

// Finds each element's bin, a block of at most kNumpyBlock at a time.
class BinFinder {
 public:
  BinFinder(const ValidatedNode& node, const HostConstView& a, const HostConstView& edges)
      : a_(a), n_(edges.shape.num_elements() - 1), compute_(node.type.compute_dtype) {
    uniform_ = AttrOr<bool>(node.attrs, "uniform", false);
    const DType e = edges.dtype;
    sub_ = AttrOr<DType>(node.attrs, "sub_dtype", e);
    div_ = AttrOr<DType>(node.attrs, "div_dtype", e);
    first_ = RoundTo(sub_, AttrOr<double>(node.attrs, "first_edge", 0.0));
    denom_ = RoundTo(div_, AttrOr<double>(node.attrs, "norm_denom", 1.0));
    count_ = RoundTo(div_, static_cast<double>(n_));
    if (uniform_) compute_ = e;
    raw_edges_.resize((n_ + 1) * (kMaxComputeBytes / sizeof(uint64_t)));
    GetLoadFn(edges.dtype, compute_)(edges.data, 0, 1, n_ + 1, raw_edges_.data());
    if (uniform_) {
      edges_.resize(n_ + 1);
      Edges(edges_.data());
    }
  }

  // bins[i] = the bin of a.flat[begin + i], or -1.
  void Find(int64_t begin, int64_t m, int64_t* bins) const {
    VisitRealClass(compute_, "histogram", [&](auto tag) -> absl::Status {
      using C = typename decltype(tag)::type;
      const std::unique_ptr<C[]> x(new C[std::max<int64_t>(m, 1)]);
      const std::unique_ptr<C[]> e(new C[n_ + 1]);
      Edges(e.get());
      GetLoadFn(a_.dtype, compute_)(a_.data, begin, 1, m, x.get());
      for (int64_t i = 0; i < m; ++i) {
        if constexpr (std::is_same_v<C, double>) {
          if (uniform_) {
            bins[i] = UniformBin(x[i]);
            continue;
          }
        }
        bins[i] = SearchBin(e.get(), x[i]);
      }
      return absl::OkStatus();
    }).IgnoreError();
  }

  // The edges in the compute class C.
  template <typename C>
  void Edges(C* e) const {
    std::memcpy(e, raw_edges_.data(), (n_ + 1) * sizeof(C));
  }

  int64_t bins() const { return n_; }
  bool uniform() const { return uniform_; }
  DType compute() const { return compute_; }

 private:
  int64_t UniformBin(double x) const {
    if (!(x >= edges_[0] && x <= edges_[n_])) return -1;
    const double d = RoundTo(sub_, x - first_);
    const double q = RoundTo(div_, d / denom_);
    const double f = RoundTo(div_, q * count_);
    int64_t k = f >= static_cast<double>(n_) ? n_ : (f > 0 ? static_cast<int64_t>(f) : 0);
    if (k == n_) --k;
    if (x < edges_[k]) --k;
    if (k != n_ - 1 && x >= edges_[k + 1]) ++k;
    return k;
  }

  template <typename C>
  int64_t SearchBin(const C* e, C x) const {
    const int64_t u = std::upper_bound(e, e + n_ + 1, x, NumpyLess<C>) - e;
    if (u == 0) return -1;
    if (u <= n_) return u - 1;
    return n_ > 0 && !NumpyLess(e[n_], x) ? n_ - 1 : -1;
  }

  const HostConstView& a_;
  int64_t n_;
  DType compute_;
  bool uniform_ = false;
  DType sub_ = DType::kFloat64;
  DType div_ = DType::kFloat64;
  double first_ = 0;
  double denom_ = 1;
  double count_ = 1;
  // The edges in the compute class (kMaxComputeBytes an element: room for
  // any, complex included), and as doubles for uniform bins.
  std::vector<uint64_t> raw_edges_;
  std::vector<double> edges_;
};

// The weights' dtype T's arithmetic on its compute type: ints wrap, bool
// adds as or, floats round to T.
template <typename T>
ComputeOf<T> AddIn(ComputeOf<T> a, ComputeOf<T> b) {
  if constexpr (std::is_same_v<T, bool>) {
    return a || b;
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<ComputeOf<T>>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
  } else if constexpr (kIsNarrowFloat<T>) {  // numpy's half loops compute in float32
    return ConvertValue<double>(ConvertValue<T>(static_cast<float>(a + b)));
  } else {
    return ConvertValue<double>(ConvertValue<T>(a + b));
  }
}
template <typename T>
ComputeOf<T> SubIn(ComputeOf<T> a, ComputeOf<T> b) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<ComputeOf<T>>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
  } else if constexpr (kIsNarrowFloat<T>) {  // numpy's half loops compute in float32
    return ConvertValue<double>(ConvertValue<T>(static_cast<float>(a - b)));
  } else {
    return ConvertValue<double>(ConvertValue<T>(a - b));
  }
}

// numpy's `bincount(...).astype(ntype)` of one block's float64 sum: to
// bool != 0; to integers as C converts on x86-64 (through int64, then
// wrapped: 200.0 becomes int8 -56), uint64 directly; floats rounded.
template <typename T>
ComputeOf<T> FromBlockSum(double p) {
  if constexpr (std::is_same_v<T, bool>) {
    return p != 0;
  } else if constexpr (std::is_same_v<T, uint64_t>) {
    return SaturatingFloatToInt<uint64_t>(p);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<ComputeOf<T>>(SaturatingFloatToInt<int64_t>(p));
  } else {
    return ConvertValue<double>(ConvertValue<T>(p));
  }
}

}  // namespace

absl::Status RunHistogram(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                          const HostView& out) {
  if (inputs.size() != 2 && inputs.size() != 3) {
    return absl::InvalidArgumentError("expected two or three inputs");
  }
  const HostConstView& a = inputs[0];
  const BinFinder finder(node, a, inputs[1]);
  const int64_t nbins = finder.bins();
  const int64_t n = a.shape.num_elements();
  std::vector<int64_t> bins(std::min(n, kNumpyBlock));
  if (inputs.size() == 2) {
    std::vector<int64_t> counts(nbins, 0);
    for (int64_t begin = 0; begin < n; begin += kNumpyBlock) {
      const int64_t m = std::min(kNumpyBlock, n - begin);
      finder.Find(begin, m, bins.data());
      for (int64_t i = 0; i < m; ++i) {
        if (bins[i] >= 0) ++counts[bins[i]];
      }
    }
    for (int64_t k = 0; k < nbins; ++k) StoreElement<int64_t>(out.data + k * 8, counts[k]);
    return absl::OkStatus();
  }
  const HostConstView& w = inputs[2];
  return VisitRealDType(w.dtype, "histogram", [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    using A = ComputeOf<T>;
    const std::unique_ptr<A[]> acc(new A[nbins + 1]);
    for (int64_t k = 0; k <= nbins; ++k) acc[k] = A{};
    const int64_t block = std::min(n, kNumpyBlock);
    const std::unique_ptr<double[]> wd(new double[std::max<int64_t>(block, 1)]);
    const std::unique_ptr<A[]> wa(new A[std::max<int64_t>(block, 1)]);
    std::vector<double> partial(nbins);
    std::vector<int64_t> order(block);
    const std::unique_ptr<A[]> cw(new A[block + 1]);
    for (int64_t begin = 0; begin < n; begin += kNumpyBlock) {
      const int64_t m = std::min(kNumpyBlock, n - begin);
      finder.Find(begin, m, bins.data());
      if (finder.uniform()) {
        // numpy: n += np.bincount(indices, weights=tmp_w, minlength=bins).astype(ntype)
        GetLoadFn(w.dtype, DType::kFloat64)(w.data, begin, 1, m, wd.get());
        std::fill(partial.begin(), partial.end(), 0.0);
        for (int64_t i = 0; i < m; ++i) {
          if (bins[i] >= 0) partial[bins[i]] += wd[i];
        }
        for (int64_t k = 0; k < nbins; ++k) {
          acc[k] = AddIn<T>(acc[k], FromBlockSum<T>(partial[k]));
        }
        continue;
      }
      // numpy: cw = concatenate((zero, sw.cumsum())); cum_n += cw[bin_index]
      GetLoadFn(w.dtype, w.dtype)(w.data, begin, 1, m, wa.get());
      std::iota(order.begin(), order.begin() + m, int64_t{0});
      VisitRealClass(finder.compute(), "histogram", [&](auto ctag) -> absl::Status {
        using C = typename decltype(ctag)::type;
        const std::unique_ptr<C[]> x(new C[m]);
        const std::unique_ptr<C[]> sorted(new C[m]);
        const std::unique_ptr<C[]> e(new C[nbins + 1]);
        GetLoadFn(a.dtype, finder.compute())(a.data, begin, 1, m, x.get());
        std::stable_sort(order.begin(), order.begin() + m,
                         [&](int64_t i, int64_t j) { return NumpyLess<C>(x[i], x[j]); });
        for (int64_t i = 0; i < m; ++i) sorted[i] = x[order[i]];
        finder.Edges(e.get());
        cw[0] = A{};
        for (int64_t i = 0; i < m; ++i) cw[i + 1] = AddIn<T>(cw[i], wa[order[i]]);
        for (int64_t k = 0; k <= nbins; ++k) {
          const C* at = k < nbins
                            ? std::lower_bound(sorted.get(), sorted.get() + m, e[k], NumpyLess<C>)
                            : std::upper_bound(sorted.get(), sorted.get() + m, e[k], NumpyLess<C>);
          acc[k] = AddIn<T>(acc[k], cw[at - sorted.get()]);
        }
        return absl::OkStatus();
      }).IgnoreError();
    }
    if (!finder.uniform()) {
      for (int64_t k = 0; k < nbins; ++k) acc[k] = SubIn<T>(acc[k + 1], acc[k]);
    }
    for (int64_t k = 0; k < nbins; ++k) {
      StoreElement<T>(out.data + k * ItemSize(w.dtype), ConvertValue<T>(acc[k]));
    }
    return absl::OkStatus();
  });
}

}  // namespace gpuflow::host_internal
