// Creation ops: full, arange, random_uniform, random_normal.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/host/host_kernels_internal.h"
#include "engine/ir/philox.h"

namespace gpuflow::host_internal {
namespace {

// The largest value of `dtype` (a float dtype) below v, v being one of its
// values.
double NextDown(double v, DType dtype) {
  if (dtype == DType::kFloat64) return std::nextafter(v, -HUGE_VAL);
  if (dtype == DType::kFloat32) {
    return std::nextafter(static_cast<float>(v), -HUGE_VALF);
  }
  // float16 and bfloat16: step the bit pattern toward -inf.
  const bool half = dtype == DType::kFloat16;
  uint16_t bits = half ? Half::FromDouble(v).bits : BFloat16::FromDouble(v).bits;
  if ((bits & 0x7FFF) == 0) {
    bits = 0x8001;  // the negative subnormal closest to zero
  } else if ((bits & 0x8000) != 0) {
    ++bits;
  } else {
    --bits;
  }
  return half ? Half::FromBits(bits).ToDouble() : BFloat16::FromBits(bits).ToDouble();
}

absl::Status Full(const HostConstView& value, const HostView& out,
                  const HostKernelOptions& options) {
  if (value.shape.num_elements() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("full needs a single value, got shape ", value.shape.ToString()));
  }
  StridedLoop loop;
  loop.dims.assign(out.shape.dims().begin(), out.shape.dims().end());
  loop.AddOperand(ContiguousStrides(out.shape.dims()));
  loop.AddOperand(std::vector<int64_t>(out.shape.rank(), 0));
  loop.Simplify();
  CopyStrided(loop, value.dtype, value.data, out.dtype, out.data, options);
  return absl::OkStatus();
}

// numpy.arange's fill: the first two elements are start and start + step
// converted to the dtype; element i >= 2 is first + i * (second - first),
// computed in the dtype (in float32 for float16 and bfloat16, as NumPy does
// for float16; wrapping for integers).
template <typename T>
void ArangeRange(double start, double step, int64_t begin, int64_t end, T* values) {
  const T first = ConvertValue<T>(start);
  const T second = ConvertValue<T>(start + step);
  for (int64_t i = begin; i < end; ++i) {
    T v;
    if (i == 0) {
      v = first;
    } else if (i == 1) {
      v = second;
    } else if constexpr (kIsNarrowFloat<T>) {
      const float f = first.ToFloat();
      const float delta = second.ToFloat() - f;
      v = T::FromFloat(f + static_cast<float>(i) * delta);
    } else if constexpr (std::is_floating_point_v<T> || kIsComplex<T>) {
      const T delta = second - first;
      v = first + static_cast<T>(i) * delta;
    } else if constexpr (std::is_same_v<T, bool>) {
      const int64_t delta = int64_t{second} - int64_t{first};
      v = (int64_t{first} + i * delta) != 0;
    } else {
      using U = std::make_unsigned_t<T>;
      const U delta = static_cast<U>(static_cast<U>(second) - static_cast<U>(first));
      v = static_cast<T>(static_cast<U>(static_cast<U>(first) + static_cast<U>(i) * delta));
    }
    values[i - begin] = v;
  }
}

absl::Status Arange(const ValidatedNode& node, const HostView& out,
                    const HostKernelOptions& options) {
  absl::StatusOr<double> start = GetFloatAttr(node, "start");
  if (!start.ok()) return start.status();
  absl::StatusOr<double> step = GetFloatAttr(node, "step");
  if (!step.ok()) return step.status();
  if (out.shape.rank() != 1) return absl::InvalidArgumentError("arange output must be 1-D");
  return VisitDType(out.dtype, [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    ParallelFor(out.shape.num_elements(), 1, options, [&](int64_t begin, int64_t end) {
      T values[kBlock];
      for (int64_t b = begin; b < end; b += kBlock) {
        const int64_t e = std::min(end, b + kBlock);
        ArangeRange<T>(*start, *step, b, e, values);
        for (int64_t i = b; i < e; ++i) {
          StoreElement<T>(out.data + i * static_cast<int64_t>(sizeof(T)), values[i - b]);
        }
      }
    });
    return absl::OkStatus();
  });
}

absl::Status Random(const ValidatedNode& node, const HostView& out,
                    const HostKernelOptions& options) {
  const bool normal = node.op->name == "random_normal";
  if (!IsFloat(out.dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("random output dtype must be a float dtype, got ", DTypeName(out.dtype)));
  }
  absl::StatusOr<int64_t> seed = GetIntAttr(node, "seed");
  if (!seed.ok()) return seed.status();
  absl::StatusOr<double> p0 = GetFloatAttr(node, normal ? "mean" : "low");
  if (!p0.ok()) return p0.status();
  absl::StatusOr<double> p1 = GetFloatAttr(node, normal ? "std" : "high");
  if (!p1.ok()) return p1.status();
  const uint64_t key = static_cast<uint64_t>(*seed);
  const bool wide = out.dtype == DType::kFloat64;
  const StoreFn store = GetStoreFn(ComputeClass::kFloat, out.dtype);
  const double low = *p0;
  const double high = *p1;
  const double top = normal ? high : RandomUniformTop(low, high, out.dtype);
  ParallelFor(out.shape.num_elements(), 1, options, [&](int64_t begin, int64_t end) {
    double values[kBlock];
    for (int64_t b = begin; b < end; b += kBlock) {
      const int64_t n = std::min(end - b, kBlock);
      for (int64_t j = 0; j < n; ++j) {
        const uint64_t i = static_cast<uint64_t>(b + j);
        if (normal) {
          values[j] = philox::NormalAt(i, key, wide, low, high);
        } else {
          double v = philox::UniformAt(i, key, wide, low, high);
          // Rounding is monotonic and `top` representable: only draws above
          // it can round to `high`.
          if (low < high && v > top && RoundToDType(v, out.dtype) >= high) v = top;
          values[j] = v;
        }
      }
      store(values, n, out.data, b, 1);
    }
  });
  return absl::OkStatus();
}

}  // namespace

absl::Status RunCreation(const ValidatedNode& node, absl::Span<const HostConstView> inputs,
                         const HostView& out, const HostKernelOptions& options) {
  const std::string& name = node.op->name;
  if (name == "full") {
    if (inputs.size() != 1) return absl::InvalidArgumentError("full takes one input");
    return Full(inputs[0], out, options);
  }
  if (!inputs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("'", name, "' takes no inputs"));
  }
  if (name == "arange") return Arange(node, out, options);
  if (name == "random_uniform" || name == "random_normal") return Random(node, out, options);
  return absl::UnimplementedError(absl::StrCat("no host kernel for creation op '", name, "'"));
}

}  // namespace gpuflow::host_internal

namespace gpuflow {

double RandomUniformTop(double low, double high, DType dtype) {
  using host_internal::NextDown;
  using host_internal::RoundToDType;
  if (!(low < high)) return high;
  double top = RoundToDType(high, dtype);
  while (top >= high) top = NextDown(top, dtype);
  if (top < low) top = RoundToDType(low, dtype);
  return top;
}

}  // namespace gpuflow
