// Reductions (sum ... logsumexp), softmax/log_softmax and scans.
//
// A reduction walks, for each output element, the reduced sub-space of the
// input in C order. That walk is cut into chunks of kReduceChunk elements
// whose partial results are merged in order, whatever the number of threads,
// so a result never depends on the machine. Float sums accumulate in double.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/host/host_kernels_internal.h"

namespace gpuflow::host_internal {
namespace {

inline constexpr int64_t kReduceChunk = int64_t{1} << 16;

template <typename C>
C Plus(C a, C b) {
  if constexpr (std::is_same_v<C, bool>) {
    return a || b;
  } else if constexpr (std::is_same_v<C, int64_t>) {
    return WrapAdd(a, b);
  } else {
    return a + b;
  }
}

template <typename C>
bool IsNaN(C v) {
  if constexpr (std::is_same_v<C, double>) {
    return std::isnan(v);
  } else if constexpr (std::is_same_v<C, Complex128>) {
    return ComplexIsNaN(v);
  } else {
    return false;
  }
}

// x > y; complex values by real, then imaginary part.
template <typename C>
bool Greater(C x, C y) {
  if constexpr (std::is_same_v<C, Complex128>) {
    return ComplexGreater(x, y);
  } else {
    return x > y;
  }
}

// numpy.maximum / numpy.minimum folded left to right: the first NaN wins;
// among equal values the later one (which decides the sign of a zero).
template <typename C, bool kMax>
C Extremum(C acc, C x) {
  if (IsNaN(acc)) return acc;
  if constexpr (std::is_same_v<C, Complex128>) {
    // NumPy's complex maximum keeps the first of equal values, and a NaN.
    if (IsNaN(x)) return x;
    return (kMax ? ComplexGreaterEqual(acc, x) : ComplexGreaterEqual(x, acc)) ? acc : x;
  } else if constexpr (kMax) {
    return acc > x ? acc : x;
  } else {
    return acc < x ? acc : x;
  }
}

// ---- Accumulators: Add(values, n, index of values[0]) and Merge(later). ----

template <typename C>
struct SumAcc {
  C value = C{0};
  void Add(const C* v, int64_t n, int64_t /*first*/) {
    for (int64_t i = 0; i < n; ++i) value = Plus(value, v[i]);
  }
  void Merge(const SumAcc& later) { value = Plus(value, later.value); }
};

template <typename C>
struct ProdAcc {
  C value = C{1};
  void Add(const C* v, int64_t n, int64_t /*first*/) {
    for (int64_t i = 0; i < n; ++i) value = MultiplyInCompute(value, v[i]);
  }
  void Merge(const ProdAcc& later) { value = MultiplyInCompute(value, later.value); }
};

template <typename C, bool kMax>
struct ExtremumAcc {
  bool has = false;
  C value = C{0};
  void Take(C x) {
    value = has ? Extremum<C, kMax>(value, x) : x;
    has = true;
  }
  void Add(const C* v, int64_t n, int64_t /*first*/) {
    for (int64_t i = 0; i < n; ++i) Take(v[i]);
  }
  void Merge(const ExtremumAcc& later) {
    if (later.has) Take(later.value);
  }
};

// argmin/argmax: the first index of the extremum, or of the first NaN.
template <typename C, bool kMax>
struct ArgAcc {
  bool has = false;
  C value = C{0};
  int64_t index = 0;
  void Consider(C x, int64_t i) {
    bool take = !has;
    if (!take && !IsNaN(value)) take = IsNaN(x) || (kMax ? Greater(x, value) : Greater(value, x));
    if (take) {
      has = true;
      value = x;
      index = i;
    }
  }
  void Add(const C* v, int64_t n, int64_t first) {
    for (int64_t i = 0; i < n; ++i) Consider(v[i], first + i);
  }
  void Merge(const ArgAcc& later) {
    if (later.has) Consider(later.value, later.index);
  }
};

template <bool kAll>
struct TruthAcc {
  bool value = kAll;
  void Add(const bool* v, int64_t n, int64_t /*first*/) {
    for (int64_t i = 0; i < n; ++i) value = kAll ? (value && v[i]) : (value || v[i]);
  }
  void Merge(const TruthAcc& later) {
    value = kAll ? (value && later.value) : (value || later.value);
  }
};

// Sum of squared deviations |x - mean|^2 from a known mean (var's second
// pass), for double or complex values.
template <typename C>
struct SquaredDeviationAcc {
  C mean = C{0};
  double value = 0;
  void Add(const C* v, int64_t n, int64_t /*first*/) {
    for (int64_t i = 0; i < n; ++i) {
      const C d = v[i] - mean;
      if constexpr (std::is_same_v<C, Complex128>) {
        value += d.real() * d.real() + d.imag() * d.imag();
      } else {
        value += d * d;
      }
    }
  }
  void Merge(const SquaredDeviationAcc& later) { value += later.value; }
};

// Sum of exp(x - shift) (logsumexp's second pass).
struct SumExpAcc {
  double shift = 0;
  double value = 0;
  void Add(const double* v, int64_t n, int64_t /*first*/) {
    for (int64_t i = 0; i < n; ++i) value += std::exp(v[i] - shift);
  }
  void Merge(const SumExpAcc& later) { value += later.value; }
};

// ---- The reduction walk ------------------------------------------------------------

struct ReducePlan {
  const std::byte* data = nullptr;
  DType dtype = DType::kFloat32;
  std::vector<int64_t> kept_dims;
  std::vector<int64_t> kept_strides;
  StridedLoop inner;  // the reduced dimensions; operand 0 is the input
  int64_t outputs = 1;
  int64_t inner_size = 1;

  int64_t OutputBase(int64_t o) const {
    int64_t base = 0;
    for (int d = static_cast<int>(kept_dims.size()) - 1; d >= 0; --d) {
      base += (o % kept_dims[d]) * kept_strides[d];
      o /= kept_dims[d];
    }
    return base;
  }
};

absl::StatusOr<ReducePlan> MakeReducePlan(const HostConstView& input,
                                          const std::vector<int64_t>& axes) {
  ReducePlan plan;
  plan.data = input.data;
  plan.dtype = input.dtype;
  const int rank = input.shape.rank();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : axes) {
    if (a < 0 || a >= rank || reduced[a]) {
      return absl::InvalidArgumentError(
          absl::StrCat("bad reduction axis ", a, " for shape ", input.shape.ToString()));
    }
    reduced[a] = true;
  }
  const std::vector<int64_t> strides = ContiguousStrides(input.shape.dims());
  std::vector<int64_t> inner_strides;
  for (int d = 0; d < rank; ++d) {
    if (reduced[d]) {
      plan.inner.dims.push_back(input.shape.dim(d));
      inner_strides.push_back(strides[d]);
      plan.inner_size = SaturatingMul(plan.inner_size, input.shape.dim(d));
    } else {
      plan.kept_dims.push_back(input.shape.dim(d));
      plan.kept_strides.push_back(strides[d]);
      plan.outputs = SaturatingMul(plan.outputs, input.shape.dim(d));
    }
  }
  // An empty input: either no outputs (the reduced dimensions may then
  // multiply past int64, and are never walked) or nothing to reduce.
  if (plan.outputs == 0) {
    plan.inner_size = 0;
  } else if (plan.inner_size > kMaxElements) {
    return absl::InvalidArgumentError(
        absl::StrCat("reduction of ", input.shape.ToString(), " has too many elements"));
  }
  plan.inner.AddOperand(std::move(inner_strides));
  plan.inner.Simplify();
  return plan;
}

// Folds every output's reduced elements (loaded as dtype `via`) into an Acc
// made by make(output index); returns one Acc per output.
template <typename C, typename Acc, typename MakeAcc>
std::vector<Acc> Reduce(const ReducePlan& plan, DType via, MakeAcc make,
                        const HostKernelOptions& options) {
  const LoadFn load = GetLoadFn(plan.dtype, via);
  const int64_t chunks = std::max<int64_t>(1, (plan.inner_size + kReduceChunk - 1) / kReduceChunk);
  std::vector<Acc> partial;
  partial.reserve(plan.outputs * chunks);
  for (int64_t o = 0; o < plan.outputs; ++o) {
    for (int64_t c = 0; c < chunks; ++c) partial.push_back(make(o));
  }
  const int64_t chunk_cost = std::min(plan.inner_size, kReduceChunk);
  ParallelFor(plan.outputs * chunks, chunk_cost, options, [&](int64_t begin, int64_t end) {
    C buf[kBlock];
    for (int64_t item = begin; item < end; ++item) {
      const int64_t base = plan.OutputBase(item / chunks);
      const int64_t first = (item % chunks) * kReduceChunk;
      const int64_t last = std::min(plan.inner_size, first + kReduceChunk);
      Acc& acc = partial[item];
      int64_t pos = first;
      ForEachRun(plan.inner, first, last, [&](int64_t n, const int64_t* off, const int64_t* step) {
        load(plan.data, base + off[0], step[0], n, buf);
        acc.Add(buf, n, pos);
        pos += n;
      });
    }
  });
  std::vector<Acc> result;
  result.reserve(plan.outputs);
  for (int64_t o = 0; o < plan.outputs; ++o) {
    Acc acc = partial[o * chunks];
    for (int64_t c = 1; c < chunks; ++c) acc.Merge(partial[o * chunks + c]);
    result.push_back(acc);
  }
  return result;
}

// Stores fn(acc) for every output into `out` (contiguous).
template <typename R, typename Acc, typename Fn>
void StoreResults(const std::vector<Acc>& accs, Fn fn, const HostView& out) {
  const int64_t n = static_cast<int64_t>(accs.size());
  std::unique_ptr<R[]> values = std::make_unique<R[]>(n);
  for (int64_t i = 0; i < n; ++i) values[i] = fn(accs[i]);
  GetStoreFn(ClassOfCompute<R>(), out.dtype)(values.get(), n, out.data, 0, 1);
}

template <typename Acc>
Acc Default(int64_t /*output*/) {
  return Acc{};
}

absl::Status NotForDType(absl::string_view op, DType dtype) {
  return absl::InvalidArgumentError(
      absl::StrCat("'", op, "' is not defined for compute dtype ", DTypeName(dtype)));
}

absl::Status RunMinMax(const ReducePlan& plan, bool is_max, bool is_arg, const HostView& out,
                       const HostKernelOptions& options) {
  // Compared in the input's own dtype.
  return VisitClass(ClassOf(plan.dtype), [&](auto tag) -> absl::Status {
    using C = typename decltype(tag)::type;
    if (is_arg) {
      auto index = [](const auto& acc) { return acc.index; };
      if (is_max) {
        StoreResults<int64_t>(
            Reduce<C, ArgAcc<C, true>>(plan, plan.dtype, Default<ArgAcc<C, true>>, options), index,
            out);
      } else {
        StoreResults<int64_t>(
            Reduce<C, ArgAcc<C, false>>(plan, plan.dtype, Default<ArgAcc<C, false>>, options),
            index, out);
      }
    } else {
      auto value = [](const auto& acc) { return acc.value; };
      if (is_max) {
        StoreResults<C>(Reduce<C, ExtremumAcc<C, true>>(plan, plan.dtype,
                                                        Default<ExtremumAcc<C, true>>, options),
                        value, out);
      } else {
        StoreResults<C>(Reduce<C, ExtremumAcc<C, false>>(plan, plan.dtype,
                                                         Default<ExtremumAcc<C, false>>, options),
                        value, out);
      }
    }
    return absl::OkStatus();
  });
}

absl::Status RunSumProdMean(const ReducePlan& plan, const std::string& name, DType compute,
                            const HostView& out, const HostKernelOptions& options) {
  return VisitClass(ClassOf(compute), [&](auto tag) -> absl::Status {
    using C = typename decltype(tag)::type;
    auto value = [](const auto& acc) { return acc.value; };
    if (name == "prod") {
      StoreResults<C>(Reduce<C, ProdAcc<C>>(plan, compute, Default<ProdAcc<C>>, options), value,
                      out);
      return absl::OkStatus();
    }
    std::vector<SumAcc<C>> sums = Reduce<C, SumAcc<C>>(plan, compute, Default<SumAcc<C>>, options);
    if (name == "sum") {
      StoreResults<C>(sums, value, out);
      return absl::OkStatus();
    }
    if constexpr (std::is_same_v<C, Complex128>) {
      const double n = static_cast<double>(plan.inner_size);
      StoreResults<C>(
          sums, [&](const SumAcc<C>& acc) { return acc.value / n; }, out);
      return absl::OkStatus();
    }
    // mean: the sum (in double for floats; wrapped to the compute dtype for
    // integers, as NumPy's sum with that dtype) divided in double.
    const double count = static_cast<double>(plan.inner_size);
    StoreResults<double>(
        sums,
        [&](const SumAcc<C>& acc) {
          if constexpr (std::is_same_v<C, double>) {
            return acc.value / count;
          } else if constexpr (std::is_same_v<C, Complex128>) {
            return 0.0;  // not reached: complex means are stored above
          } else {
            return static_cast<double>(RoundToDType(acc.value, compute)) / count;
          }
        },
        out);
    return absl::OkStatus();
  });
}

// var/std in compute type C (double, or Complex128 for complex inputs, whose
// variance is the real mean of |x - mean|^2).
template <typename C>
absl::Status VarianceIn(const ReducePlan& plan, bool take_sqrt, double ddof, DType compute,
                        const HostView& out, const HostKernelOptions& options) {
  const double count = static_cast<double>(plan.inner_size);
  std::vector<SumAcc<C>> sums = Reduce<C, SumAcc<C>>(plan, compute, Default<SumAcc<C>>, options);
  std::vector<SquaredDeviationAcc<C>> ssd = Reduce<C, SquaredDeviationAcc<C>>(
      plan, compute,
      [&](int64_t o) { return SquaredDeviationAcc<C>{.mean = sums[o].value / count}; }, options);
  // As NumPy: divided by max(n - ddof, 0), so no degrees of freedom give
  // inf (or NaN for a zero sum).
  const double dof = std::max(count - ddof, 0.0);
  StoreResults<double>(
      ssd,
      [&](const SquaredDeviationAcc<C>& acc) {
        const double var = acc.value / dof;
        return take_sqrt ? std::sqrt(var) : var;
      },
      out);
  return absl::OkStatus();
}

absl::Status RunVariance(const ReducePlan& plan, bool take_sqrt, double ddof, DType compute,
                         const HostView& out, const HostKernelOptions& options) {
  if (ClassOf(compute) == ComputeClass::kComplex) {
    return VarianceIn<Complex128>(plan, take_sqrt, ddof, compute, out, options);
  }
  if (ClassOf(compute) != ComputeClass::kFloat) return NotForDType("var", compute);
  return VarianceIn<double>(plan, take_sqrt, ddof, compute, out, options);
}

absl::Status RunLogSumExp(const ReducePlan& plan, DType compute, const HostView& out,
                          const HostKernelOptions& options) {
  if (ClassOf(compute) != ComputeClass::kFloat) return NotForDType("logsumexp", compute);
  std::vector<ExtremumAcc<double, true>> maxima = Reduce<double, ExtremumAcc<double, true>>(
      plan, compute, Default<ExtremumAcc<double, true>>, options);
  // As scipy.special.logsumexp: a non-finite maximum shifts by 0.
  auto shift = [&](int64_t o) {
    const double m = maxima[o].has ? maxima[o].value : 0.0;
    return std::isfinite(m) ? m : 0.0;
  };
  std::vector<SumExpAcc> sums = Reduce<double, SumExpAcc>(
      plan, compute, [&](int64_t o) { return SumExpAcc{.shift = shift(o)}; }, options);
  StoreResults<double>(
      sums, [](const SumExpAcc& acc) { return std::log(acc.value) + acc.shift; }, out);
  return absl::OkStatus();
}

// ---- Row ops (softmax, scans) ----------------------------------------------------------

// The 1-D rows of an array along `axis`: row r starts at element Base(r) and
// has `length` elements `stride` apart.
struct Rows {
  std::vector<int64_t> outer_dims;
  std::vector<int64_t> outer_strides;
  int64_t count = 1;
  int64_t length = 1;
  int64_t stride = 1;

  int64_t Base(int64_t r) const {
    int64_t base = 0;
    for (int d = static_cast<int>(outer_dims.size()) - 1; d >= 0; --d) {
      base += (r % outer_dims[d]) * outer_strides[d];
      r /= outer_dims[d];
    }
    return base;
  }
};

absl::StatusOr<Rows> MakeRows(const Shape& shape, int64_t axis) {
  if (axis < 0 || axis >= shape.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad axis ", axis, " for shape ", shape.ToString()));
  }
  Rows rows;
  const std::vector<int64_t> strides = ContiguousStrides(shape.dims());
  for (int d = 0; d < shape.rank(); ++d) {
    if (d == axis) {
      rows.length = shape.dim(d);
      rows.stride = strides[d];
    } else {
      rows.outer_dims.push_back(shape.dim(d));
      rows.outer_strides.push_back(strides[d]);
      rows.count = SaturatingMul(rows.count, shape.dim(d));
    }
  }
  return rows;
}

// The rounding a scan applies after every step in compute dtype `compute`
// (null: none). The double sum or product of two float16 or bfloat16 values
// is exact, or (bfloat16 sums of far-apart magnitudes) rounded with enough
// spare bits (53 >= 2 * 8 + 2) that rounding it again to the dtype gives the
// correctly rounded step, which is what NumPy's float-and-round loop gives.
double (*ScanStepRounding(DType compute))(double) {
  switch (compute) {
    case DType::kFloat16:
      return [](double v) { return Half::FromDouble(v).ToDouble(); };
    case DType::kBFloat16:
      return [](double v) { return BFloat16::FromDouble(v).ToDouble(); };
    default:
      return nullptr;
  }
}

// Calls fn(values, n, j) over the row starting at `base`, j being the index
// of values[0] in the row.
template <typename C, typename Fn>
void ForEachRowBlock(LoadFn load, const std::byte* data, int64_t base, const Rows& rows, C* buf,
                     Fn fn) {
  for (int64_t j = 0; j < rows.length; j += kBlock) {
    const int64_t n = std::min(kBlock, rows.length - j);
    load(data, base + j * rows.stride, rows.stride, n, buf);
    fn(buf, n, j);
  }
}

}  // namespace

absl::Status RunReduction(const ValidatedNode& node, const HostConstView& input,
                          const HostView& out, const HostKernelOptions& options) {
  const std::string& name = node.op->name;
  const bool is_arg = name == "argmin" || name == "argmax";
  std::vector<int64_t> axes;
  const char* axes_attr = is_arg ? "axis" : "axes";
  if (HasAttr(node, axes_attr)) {
    if (is_arg) {
      absl::StatusOr<int64_t> axis = GetIntAttr(node, "axis");
      if (!axis.ok()) return axis.status();
      axes.push_back(*axis);
    } else {
      absl::StatusOr<std::vector<int64_t>> a = GetIntsAttr(node, "axes");
      if (!a.ok()) return a.status();
      axes = *std::move(a);
    }
  } else {
    for (int d = 0; d < input.shape.rank(); ++d) axes.push_back(d);
  }
  absl::StatusOr<ReducePlan> plan = MakeReducePlan(input, axes);
  if (!plan.ok()) return plan.status();
  if (plan->outputs != out.shape.num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat("output shape ", out.shape.ToString(),
                                                   " does not match the reduction of ",
                                                   input.shape.ToString()));
  }
  if (plan->outputs == 0) return absl::OkStatus();
  const DType compute = node.type.compute_dtype;

  if (name == "min" || name == "max" || is_arg) {
    if (plan->inner_size == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("zero-size array to reduction operation ", name, " which has no identity"));
    }
    return RunMinMax(*plan, name == "max" || name == "argmax", is_arg, out, options);
  }
  if (name == "sum" || name == "prod" || name == "mean") {
    return RunSumProdMean(*plan, name, compute, out, options);
  }
  if (name == "any" || name == "all") {
    auto value = [](const auto& acc) { return acc.value; };
    if (name == "all") {
      StoreResults<bool>(
          Reduce<bool, TruthAcc<true>>(*plan, DType::kBool, Default<TruthAcc<true>>, options),
          value, out);
    } else {
      StoreResults<bool>(
          Reduce<bool, TruthAcc<false>>(*plan, DType::kBool, Default<TruthAcc<false>>, options),
          value, out);
    }
    return absl::OkStatus();
  }
  if (name == "var" || name == "std") {
    double ddof = 0;
    if (HasAttr(node, "ddof")) {
      absl::StatusOr<double> d = GetFloatAttr(node, "ddof");
      if (!d.ok()) return d.status();
      ddof = *d;
    }
    return RunVariance(*plan, name == "std", ddof, compute, out, options);
  }
  if (name == "logsumexp") return RunLogSumExp(*plan, compute, out, options);
  return absl::UnimplementedError(absl::StrCat("no host kernel for reduction '", name, "'"));
}

absl::Status RunSoftmax(const ValidatedNode& node, const HostConstView& input, const HostView& out,
                        const HostKernelOptions& options) {
  const bool log = node.op->name == "log_softmax";
  const DType compute = node.type.compute_dtype;
  if (ClassOf(compute) != ComputeClass::kFloat) return NotForDType(node.op->name, compute);
  if (!(out.shape == input.shape)) {
    return absl::InvalidArgumentError("softmax output shape differs from its input's");
  }
  absl::StatusOr<int64_t> axis = GetIntAttr(node, "axis");
  if (!axis.ok()) return axis.status();
  absl::StatusOr<Rows> rows = MakeRows(input.shape, *axis);
  if (!rows.ok()) return rows.status();
  if (input.shape.num_elements() == 0) return absl::OkStatus();
  const LoadFn load = GetLoadFn(input.dtype, compute);
  const StoreFn store = GetStoreFn(ComputeClass::kFloat, out.dtype);
  ParallelFor(rows->count, 3 * rows->length, options, [&](int64_t begin, int64_t end) {
    double buf[kBlock];
    for (int64_t r = begin; r < end; ++r) {
      const int64_t base = rows->Base(r);
      ExtremumAcc<double, true> max;
      ForEachRowBlock(load, input.data, base, *rows, buf,
                      [&](const double* v, int64_t n, int64_t j) { max.Add(v, n, j); });
      // As scipy.special: softmax shifts by the maximum; log_softmax by 0
      // when the maximum is not finite.
      double shift = max.value;
      if (log && !std::isfinite(shift)) shift = 0;
      double sum = 0;
      ForEachRowBlock(load, input.data, base, *rows, buf, [&](const double* v, int64_t n, int64_t) {
        for (int64_t i = 0; i < n; ++i) sum += std::exp(v[i] - shift);
      });
      const double log_sum = std::log(sum);
      ForEachRowBlock(load, input.data, base, *rows, buf, [&](double* v, int64_t n, int64_t j) {
        for (int64_t i = 0; i < n; ++i) {
          v[i] = log ? (v[i] - shift) - log_sum : std::exp(v[i] - shift) / sum;
        }
        store(v, n, out.data, base + j * rows->stride, rows->stride);
      });
    }
  });
  return absl::OkStatus();
}

absl::Status RunScan(const ValidatedNode& node, const HostConstView& input, const HostView& out,
                     const HostKernelOptions& options) {
  const bool is_prod = node.op->name == "cumprod";
  const DType compute = node.type.compute_dtype;
  if (out.shape.num_elements() != input.shape.num_elements()) {
    return absl::InvalidArgumentError("scan output size differs from its input's");
  }
  Rows rows;
  if (HasAttr(node, "axis")) {
    absl::StatusOr<int64_t> axis = GetIntAttr(node, "axis");
    if (!axis.ok()) return axis.status();
    absl::StatusOr<Rows> r = MakeRows(input.shape, *axis);
    if (!r.ok()) return r.status();
    rows = *std::move(r);
  } else {
    // The flattened array: one row (the output is its 1-D copy).
    rows.length = input.shape.num_elements();
  }
  if (input.shape.num_elements() == 0) return absl::OkStatus();
  const LoadFn load = GetLoadFn(input.dtype, compute);
  // float16 and bfloat16 round every partial result to the dtype, as NumPy's
  // float16 loop (and ml_dtypes' bfloat16 one) does in add.accumulate; the
  // other floats accumulate in double and round once.
  double (*const round_step)(double) = ScanStepRounding(compute);
  return VisitClass(ClassOf(compute), [&](auto tag) -> absl::Status {
    using C = typename decltype(tag)::type;
    const StoreFn store = GetStoreFn(ClassOfCompute<C>(), out.dtype);
    ParallelFor(rows.count, rows.length, options, [&](int64_t begin, int64_t end) {
      C buf[kBlock];
      for (int64_t r = begin; r < end; ++r) {
        const int64_t base = rows.Base(r);
        C acc = is_prod ? C{1} : C{0};
        ForEachRowBlock(load, input.data, base, rows, buf, [&](C* v, int64_t n, int64_t j) {
          for (int64_t i = 0; i < n; ++i) {
            acc = is_prod ? MultiplyInCompute(acc, v[i]) : Plus(acc, v[i]);
            if constexpr (std::is_same_v<C, double>) {
              if (round_step != nullptr) acc = round_step(acc);
            }
            v[i] = acc;
          }
          store(v, n, out.data, base + j * rows.stride, rows.stride);
        });
      }
    });
    return absl::OkStatus();
  });
}

}  // namespace gpuflow::host_internal
