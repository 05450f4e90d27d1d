// Helpers for the host kernel tests: arrays that own their bytes, nodes built
// by hand (with OpDefs that carry only a name and family, so the tests do not
// depend on the registry's type inference) and float64 references rounded to
// a dtype.
//
//   TestArray x = MakeArray(DType::kInt8, {2, 3}, {1, 2, 3, 4, 5, 6});
//   ValidatedNode n = MakeNode("neg", {x.type()}, {DType::kInt8, x.shape}, DType::kInt8);
//   ASSERT_OK_AND_ASSIGN(TestArray y, RunNode(n, {x}));
#ifndef GPUFLOW_TESTS_ENGINE_HOST_HOST_TEST_UTIL_H_
#define GPUFLOW_TESTS_ENGINE_HOST_HOST_TEST_UTIL_H_

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/host/host_kernels.h"
#include "engine/ir/dtype.h"
#include "engine/ir/half.h"
#include "engine/ir/op_registry.h"
#include "engine/ir/shape.h"
#include "engine/ir/validate.h"
#include "gtest/gtest.h"

namespace gpuflow::host_test {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

inline Shape S(std::initializer_list<int64_t> dims) { return Shape::Create(dims).value(); }
inline Shape S(const std::vector<int64_t>& dims) { return Shape::Create(dims).value(); }

inline constexpr DType kAllDTypes[] = {
    DType::kBool,     DType::kInt8,    DType::kInt16,  DType::kInt32,  DType::kInt64,
    DType::kUInt8,    DType::kUInt16,  DType::kUInt32, DType::kUInt64, DType::kFloat16,
    DType::kBFloat16, DType::kFloat32, DType::kFloat64};
inline constexpr DType kFloatDTypes[] = {DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                                         DType::kFloat64};
inline constexpr DType kIntDTypes[] = {DType::kInt8,   DType::kInt16, DType::kInt32,
                                       DType::kInt64,  DType::kUInt8, DType::kUInt16,
                                       DType::kUInt32, DType::kUInt64};

inline bool IsSigned(DType d) { return KindOf(d) == DTypeKind::kSigned; }
inline int Bits(DType d) { return static_cast<int>(ItemSize(d) * 8); }

// Wraps an integer to dtype d (two's complement), returned widened.
inline int64_t WrapSigned(uint64_t v, DType d) {
  const int bits = Bits(d);
  if (bits == 64) return static_cast<int64_t>(v);
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t m = v & mask;
  if (m >> (bits - 1)) m |= ~mask;
  return static_cast<int64_t>(m);
}
inline uint64_t WrapUnsigned(uint64_t v, DType d) {
  const int bits = Bits(d);
  return bits == 64 ? v : v & ((uint64_t{1} << bits) - 1);
}

// A float64 value rounded to float dtype d.
inline double RoundTo(DType d, double v) {
  switch (d) {
    case DType::kFloat16:
      return Half::FromDouble(v).ToDouble();
    case DType::kBFloat16:
      return BFloat16::FromDouble(v).ToDouble();
    case DType::kFloat32:
      return static_cast<double>(static_cast<float>(v));
    default:
      return v;
  }
}

// A host array that owns its bytes.
struct TestArray {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::vector<std::byte> bytes;

  int64_t size() const { return shape.num_elements(); }
  ValueType type(bool weak = false) const { return {dtype, shape, weak}; }
  HostConstView view() const { return {dtype, shape, bytes.data()}; }

  template <typename T>
  T Raw(int64_t i) const {
    T v;
    std::memcpy(&v, bytes.data() + i * ItemSize(dtype), sizeof(T));
    return v;
  }
  // Element i as a double (exact except for 64-bit integers beyond 2^53).
  double At(int64_t i) const {
    switch (dtype) {
      case DType::kBool:
        return Raw<uint8_t>(i) != 0 ? 1 : 0;
      case DType::kInt8:
        return Raw<int8_t>(i);
      case DType::kInt16:
        return Raw<int16_t>(i);
      case DType::kInt32:
        return Raw<int32_t>(i);
      case DType::kInt64:
        return static_cast<double>(Raw<int64_t>(i));
      case DType::kUInt8:
        return Raw<uint8_t>(i);
      case DType::kUInt16:
        return Raw<uint16_t>(i);
      case DType::kUInt32:
        return Raw<uint32_t>(i);
      case DType::kUInt64:
        return static_cast<double>(Raw<uint64_t>(i));
      case DType::kFloat16:
        return Half::FromBits(Raw<uint16_t>(i)).ToDouble();
      case DType::kBFloat16:
        return BFloat16::FromBits(Raw<uint16_t>(i)).ToDouble();
      case DType::kFloat32:
        return Raw<float>(i);
      case DType::kFloat64:
        return Raw<double>(i);
      case DType::kComplex64:
        return Part<float>(i, 0);  // the real part (Imag gives the other)
      case DType::kComplex128:
        return Part<double>(i, 0);
    }
    return 0;
  }
  // Part k (0 real, 1 imaginary) of element i of a complex array.
  template <typename T>
  double Part(int64_t i, int k) const {
    T v;
    std::memcpy(&v, bytes.data() + i * ItemSize(dtype) + k * sizeof(T), sizeof(T));
    return v;
  }
  // The imaginary part of element i of a complex array.
  double Imag(int64_t i) const {
    return dtype == DType::kComplex64 ? Part<float>(i, 1) : Part<double>(i, 1);
  }
  // Element i of an integer or bool array, as its bit pattern widened.
  uint64_t Bits64(int64_t i) const {
    if (dtype == DType::kBool) return Raw<uint8_t>(i);
    uint64_t v = 0;
    std::memcpy(&v, bytes.data() + i * ItemSize(dtype), ItemSize(dtype));
    if (IsSigned(dtype)) return static_cast<uint64_t>(WrapSigned(v, dtype));
    return v;
  }
  int64_t IntAt(int64_t i) const { return static_cast<int64_t>(Bits64(i)); }

  std::vector<double> Values() const {
    std::vector<double> v;
    for (int64_t i = 0; i < size(); ++i) v.push_back(At(i));
    return v;
  }

  void Set(int64_t i, double v) {
    std::byte* p = bytes.data() + i * ItemSize(dtype);
    auto put = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
    switch (dtype) {
      case DType::kBool:
        put(static_cast<uint8_t>(v != 0));
        break;
      case DType::kInt8:
        put(static_cast<int8_t>(v));
        break;
      case DType::kInt16:
        put(static_cast<int16_t>(v));
        break;
      case DType::kInt32:
        put(static_cast<int32_t>(v));
        break;
      case DType::kInt64:
        put(static_cast<int64_t>(v));
        break;
      case DType::kUInt8:
        put(static_cast<uint8_t>(v));
        break;
      case DType::kUInt16:
        put(static_cast<uint16_t>(v));
        break;
      case DType::kUInt32:
        put(static_cast<uint32_t>(v));
        break;
      case DType::kUInt64:
        put(static_cast<uint64_t>(v));
        break;
      case DType::kFloat16:
        put(Half::FromDouble(v).bits);
        break;
      case DType::kBFloat16:
        put(BFloat16::FromDouble(v).bits);
        break;
      case DType::kFloat32:
        put(static_cast<float>(v));
        break;
      case DType::kFloat64:
        put(v);
        break;
      case DType::kComplex64:
        put(static_cast<float>(v));
        std::memset(p + 4, 0, 4);
        break;
      case DType::kComplex128:
        put(v);
        std::memset(p + 8, 0, 8);
        break;
    }
  }
  // Sets element i of a complex array.
  void SetComplex(int64_t i, double re, double im) {
    std::byte* p = bytes.data() + i * ItemSize(dtype);
    if (dtype == DType::kComplex64) {
      const float parts[2] = {static_cast<float>(re), static_cast<float>(im)};
      std::memcpy(p, parts, sizeof(parts));
    } else {
      const double parts[2] = {re, im};
      std::memcpy(p, parts, sizeof(parts));
    }
  }
  // Sets element i of an integer array from its bit pattern (truncated).
  void SetBits(int64_t i, uint64_t v) {
    std::memcpy(bytes.data() + i * ItemSize(dtype), &v, ItemSize(dtype));
  }
};

inline TestArray Empty(DType dtype, const Shape& shape) {
  TestArray a{dtype, shape, {}};
  a.bytes.resize(static_cast<size_t>(shape.num_elements() * ItemSize(dtype)));
  return a;
}

// An array holding `values` (which must be representable, or are converted
// with C++ casts for integers) in C order.
inline TestArray MakeArray(DType dtype, const Shape& shape, const std::vector<double>& values) {
  TestArray a = Empty(dtype, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), shape.num_elements());
  for (int64_t i = 0; i < a.size() && i < static_cast<int64_t>(values.size()); ++i) {
    a.Set(i, values[i]);
  }
  return a;
}
inline TestArray Scalar0d(DType dtype, double v) { return MakeArray(dtype, Shape(), {v}); }

// Random values exactly representable in `dtype`: integers in [lo, hi] for
// integer dtypes (clamped to the dtype's range), 0/1 for bool, and for floats
// uniform values in [lo, hi) rounded to the dtype.
inline TestArray RandomArray(DType dtype, const Shape& shape, uint64_t seed, double lo = -100,
                             double hi = 100) {
  TestArray a = Empty(dtype, shape);
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < a.size(); ++i) {
    if (dtype == DType::kBool) {
      a.Set(i, static_cast<double>(rng() & 1));
    } else if (IsInteger(dtype)) {
      double l = lo;
      double h = hi;
      if (!IsSigned(dtype)) l = std::max(l, 0.0);
      if (Bits(dtype) < 53) {
        const double range = std::ldexp(1.0, Bits(dtype) - (IsSigned(dtype) ? 1 : 0));
        l = std::max(l, IsSigned(dtype) ? -range : 0.0);
        h = std::min(h, range - 1);
      }
      std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(l), static_cast<int64_t>(h));
      a.Set(i, static_cast<double>(dist(rng)));
    } else {
      std::uniform_real_distribution<double> dist(lo, hi);
      a.Set(i, RoundTo(dtype, dist(rng)));
    }
  }
  return a;
}

inline OpFamily FamilyOf(const std::string& name) {
  static const auto* families = new std::map<std::string, OpFamily>{
      {"sum", OpFamily::kReduction},
      {"prod", OpFamily::kReduction},
      {"min", OpFamily::kReduction},
      {"max", OpFamily::kReduction},
      {"mean", OpFamily::kReduction},
      {"var", OpFamily::kReduction},
      {"std", OpFamily::kReduction},
      {"argmin", OpFamily::kReduction},
      {"argmax", OpFamily::kReduction},
      {"any", OpFamily::kReduction},
      {"all", OpFamily::kReduction},
      {"logsumexp", OpFamily::kReduction},
      {"softmax", OpFamily::kReduction},
      {"log_softmax", OpFamily::kReduction},
      {"cumsum", OpFamily::kScan},
      {"cumprod", OpFamily::kScan},
      {"matmul", OpFamily::kLinalg},
      {"dot", OpFamily::kLinalg},
      {"reshape", OpFamily::kShape},
      {"transpose", OpFamily::kShape},
      {"broadcast_to", OpFamily::kShape},
      {"expand_dims", OpFamily::kShape},
      {"squeeze", OpFamily::kShape},
      {"slice", OpFamily::kShape},
      {"concatenate", OpFamily::kShape},
      {"stack", OpFamily::kShape},
      {"take", OpFamily::kShape},
      {"take_along_axis", OpFamily::kShape},
      {"full", OpFamily::kCreation},
      {"arange", OpFamily::kCreation},
      {"random_uniform", OpFamily::kCreation},
      {"random_normal", OpFamily::kCreation},
      {"elementwise_kernel", OpFamily::kCustom},
      {"reduction_kernel", OpFamily::kCustom},
      {"raw_kernel", OpFamily::kCustom},
  };
  auto it = families->find(name);
  return it == families->end() ? OpFamily::kElementwise : it->second;
}

// An OpDef with just `name` and its family; lives for the whole test.
inline const OpDef* TestOp(const std::string& name) {
  static std::mutex mu;
  static auto* ops = new std::map<std::string, std::unique_ptr<OpDef>>;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<OpDef>& op = (*ops)[name];
  if (op == nullptr) {
    op = std::make_unique<OpDef>();
    op->name = name;
    op->family = FamilyOf(name);
  }
  return op.get();
}

inline ValidatedNode MakeNode(const std::string& op, std::vector<ValueType> inputs,
                              ValueType output, DType compute, AttrMap attrs = {}) {
  ValidatedNode node;
  node.id = std::string(1, 'n');  // not = "n": GCC 12 -Wrestrict false positive under ASan
  node.op = TestOp(op);
  for (size_t i = 0; i < inputs.size(); ++i) {
    node.inputs.push_back({ValueRef::Kind::kArray, static_cast<int>(i)});
  }
  node.input_types = std::move(inputs);
  node.attrs = std::move(attrs);
  node.type.output = std::move(output);
  node.type.compute_dtype = compute;
  return node;
}

inline absl::StatusOr<TestArray> RunNode(const ValidatedNode& node,
                                         const std::vector<TestArray>& inputs,
                                         HostKernelOptions options = {}) {
  std::vector<HostConstView> views;
  for (const TestArray& a : inputs) views.push_back(a.view());
  TestArray out = Empty(node.type.output.dtype, node.type.output.shape);
  HostView out_view{out.dtype, out.shape, out.bytes.data()};
  absl::Status s = RunNodeOnHost(node, views, out_view, options);
  if (!s.ok()) return s;
  return out;
}

// Options that split even small arrays across 4 threads.
inline HostKernelOptions ManyThreads() {
  HostKernelOptions o;
  o.threads = 4;
  o.min_elements_per_thread = 1;
  return o;
}

// Whether two doubles are the same value (NaN matches NaN; 0.0 and -0.0
// differ).
inline bool SameValue(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// Expects every element of `actual` to be `expected` rounded to its dtype,
// within `ulps` units in the last place of that dtype (0: bit-exact value)
// or within `abs_tol`.
inline void ExpectValues(const TestArray& actual, const std::vector<double>& expected, int ulps = 0,
                         const std::string& what = "", double abs_tol = 0) {
  ASSERT_EQ(actual.size(), static_cast<int64_t>(expected.size())) << what;
  int failures = 0;
  for (int64_t i = 0; i < actual.size() && failures < 10; ++i) {
    const double want = IsFloat(actual.dtype) ? RoundTo(actual.dtype, expected[i]) : expected[i];
    const double got = actual.At(i);
    bool ok = SameValue(got, want) || std::fabs(got - want) <= abs_tol;
    if (!ok && ulps > 0 && std::isfinite(want) && std::isfinite(got)) {
      int mant = actual.dtype == DType::kFloat16    ? 11
                 : actual.dtype == DType::kBFloat16 ? 8
                 : actual.dtype == DType::kFloat32  ? 24
                                                    : 53;
      int e = 0;
      std::frexp(std::max(std::fabs(want), 1e-300), &e);
      ok = std::fabs(got - want) <= ulps * std::ldexp(1.0, e - mant);
    }
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << " " << DTypeName(actual.dtype) << " element " << i << ": got " << got
                    << ", want " << want;
    }
  }
}

}  // namespace gpuflow::host_test

#endif  // GPUFLOW_TESTS_ENGINE_HOST_HOST_TEST_UTIL_H_
