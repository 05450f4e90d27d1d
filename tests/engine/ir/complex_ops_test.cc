// Complex dtypes in the IR: NumPy 2 promotion (complex Python scalars
// included), the dtype rules of the ops that take complex values, the errors
// of those that do not, and complex scalar literals. Expected values are
// NumPy's (numpy.promote_types, numpy.result_type and the ufuncs' result
// dtypes with weak promotion).
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/ir/graph.h"
#include "engine/ir/op_registry.h"
#include "engine/ir/promotion.h"
#include "engine/ir/validate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow {
namespace {

using ::gpuflow::testing::IsOkAndHolds;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

constexpr DType kC64 = DType::kComplex64;
constexpr DType kC128 = DType::kComplex128;

ValueType T(DType dtype, std::initializer_list<int64_t> dims = {}) {
  return {.dtype = dtype, .shape = *Shape::Create(dims), .weak = false};
}

absl::StatusOr<InferredNode> Infer(absl::string_view op, std::vector<ValueType> inputs,
                                   AttrMap attrs = {}) {
  const OpDef* def = OpRegistry::Default().Find(op);
  if (def == nullptr) return absl::NotFoundError(absl::StrCat("no op ", op));
  return def->infer(inputs, attrs);
}

MATCHER_P2(HasDTypes, dtype, compute,
           absl::StrCat("has dtype ", DTypeName(dtype), " computed in ", DTypeName(compute))) {
  return arg.output.dtype == dtype && arg.compute_dtype == compute;
}

TEST(ComplexPromotionTest, MatchesNumpyPromoteTypes) {
  // numpy.promote_types('c8', d) for d in ? i1 i2 i4 i8 u1 u2 u4 u8 f2 f4 f8 c8 c16.
  const DType others[] = {
      DType::kBool,    DType::kInt8,    DType::kInt16,  DType::kInt32,  DType::kInt64,
      DType::kUInt8,   DType::kUInt16,  DType::kUInt32, DType::kUInt64, DType::kFloat16,
      DType::kFloat32, DType::kFloat64, kC64,           kC128};
  const DType with_c64[] = {kC64,  kC64,  kC64, kC128, kC128, kC64, kC64,
                            kC128, kC128, kC64, kC64,  kC128, kC64, kC128};
  for (size_t i = 0; i < std::size(others); ++i) {
    EXPECT_EQ(PromoteDTypes(kC64, others[i]), with_c64[i]) << DTypeName(others[i]);
    EXPECT_EQ(PromoteDTypes(others[i], kC64), with_c64[i]) << DTypeName(others[i]);
    EXPECT_EQ(PromoteDTypes(kC128, others[i]), kC128) << DTypeName(others[i]);
    EXPECT_EQ(PromoteDTypes(others[i], kC128), kC128) << DTypeName(others[i]);
  }
  // bfloat16 holds no more than float32: complex64 keeps itself with it.
  EXPECT_EQ(PromoteDTypes(kC64, DType::kBFloat16), kC64);
}

TEST(ComplexPromotionTest, ResultTypeOfSequences) {
  const ValueType a[] = {T(DType::kInt8), T(DType::kUInt8), T(kC64)};
  EXPECT_THAT(PromoteTypes(a), IsOkAndHolds(kC64));
  const ValueType b[] = {T(DType::kFloat16), T(DType::kInt16), T(kC64)};
  EXPECT_THAT(PromoteTypes(b), IsOkAndHolds(kC64));
}

TEST(ComplexPromotionTest, WeakComplexScalarsAreWeak) {
  // numpy: (ones(2, d) + 1j).dtype under NumPy 2.
  const std::pair<DType, DType> expected[] = {
      {DType::kBool, kC128},   {DType::kInt8, kC128},    {DType::kUInt64, kC128},
      {DType::kInt64, kC128},  {DType::kFloat16, kC64},  {DType::kBFloat16, kC64},
      {DType::kFloat32, kC64}, {DType::kFloat64, kC128}, {kC64, kC64},
      {kC128, kC128},
  };
  for (const auto& [strong, result] : expected) {
    const ValueType types[] = {T(strong, {2}), WeakComplexType()};
    EXPECT_THAT(PromoteTypes(types), IsOkAndHolds(result)) << DTypeName(strong);
  }
  // Weak ints and floats keep a complex array's dtype.
  const ValueType f[] = {T(kC64, {2}), WeakFloatType()};
  EXPECT_THAT(PromoteTypes(f), IsOkAndHolds(kC64));
  const ValueType i[] = {T(kC64, {2}), WeakIntType()};
  EXPECT_THAT(PromoteTypes(i), IsOkAndHolds(kC64));
  // Two weak scalars: complex128.
  const ValueType w[] = {WeakFloatType(), WeakComplexType()};
  EXPECT_THAT(PromoteTypes(w), IsOkAndHolds(kC128));
}

TEST(ComplexOpsTest, ArithmeticAndFloatFunctionsKeepComplex) {
  for (const char* op : {"neg",   "sign", "square", "reciprocal", "conj",  "round", "sqrt",
                         "rsqrt", "exp",  "log",    "log1p",      "expm1", "sin",   "cos",
                         "tanh",  "asin", "acos",   "atan",       "asinh", "acosh", "atanh"}) {
    EXPECT_THAT(Infer(op, {T(kC64, {3})}), IsOkAndHolds(HasDTypes(kC64, kC64))) << op;
    EXPECT_THAT(Infer(op, {T(kC128, {3})}), IsOkAndHolds(HasDTypes(kC128, kC128))) << op;
  }
  for (const char* op : {"add", "sub", "mul", "div", "pow", "maximum", "minimum"}) {
    EXPECT_THAT(Infer(op, {T(kC64, {3}), T(DType::kFloat32, {3})}),
                IsOkAndHolds(HasDTypes(kC64, kC64)))
        << op;
    EXPECT_THAT(Infer(op, {T(kC64, {3}), T(DType::kInt32, {3})}),
                IsOkAndHolds(HasDTypes(kC128, kC128)))
        << op;
  }
  EXPECT_THAT(Infer("div", {T(DType::kInt8, {3}), WeakComplexType()}),
              IsOkAndHolds(HasDTypes(kC128, kC128)));
}

TEST(ComplexOpsTest, PartsAbsAndAngleAreReal) {
  for (const char* op : {"abs", "real", "imag", "angle"}) {
    EXPECT_THAT(Infer(op, {T(kC64, {3})}), IsOkAndHolds(HasDTypes(DType::kFloat32, kC64))) << op;
    EXPECT_THAT(Infer(op, {T(kC128, {3})}), IsOkAndHolds(HasDTypes(DType::kFloat64, kC128))) << op;
  }
  // Real inputs: real/imag/conj keep the dtype; angle is arctan2(0, x).
  for (const char* op : {"abs", "real", "imag", "conj"}) {
    EXPECT_THAT(Infer(op, {T(DType::kInt16, {3})}),
                IsOkAndHolds(HasDTypes(DType::kInt16, DType::kInt16)))
        << op;
  }
  EXPECT_THAT(Infer("angle", {T(DType::kInt8, {3})}),
              IsOkAndHolds(HasDTypes(DType::kFloat16, DType::kFloat16)));
  EXPECT_THAT(Infer("angle", {T(DType::kFloat32, {3})}),
              IsOkAndHolds(HasDTypes(DType::kFloat32, DType::kFloat32)));
  EXPECT_THAT(Infer("angle", {T(DType::kInt64, {3})}),
              IsOkAndHolds(HasDTypes(DType::kFloat64, DType::kFloat64)));
}

TEST(ComplexOpsTest, PredicatesAndComparisonsGiveBool) {
  for (const char* op : {"isnan", "isinf"}) {
    EXPECT_THAT(Infer(op, {T(kC64, {3})}), IsOkAndHolds(HasDTypes(DType::kBool, kC64))) << op;
  }
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    EXPECT_THAT(Infer(op, {T(kC64, {3}), T(DType::kFloat64, {3})}),
                IsOkAndHolds(HasDTypes(DType::kBool, kC128)))
        << op;
  }
  EXPECT_THAT(Infer("logical_not", {T(kC64, {3})}),
              IsOkAndHolds(HasDTypes(DType::kBool, DType::kBool)));
}

TEST(ComplexOpsTest, OpsWithoutAComplexLoopSaySo) {
  for (const char* op : {"floor", "ceil", "relu", "sigmoid", "gelu", "erf"}) {
    EXPECT_THAT(Infer(op, {T(kC64, {3})}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat(op, " is not supported for complex64")));
  }
  for (const char* op : {"floordiv", "mod", "atan2"}) {
    EXPECT_THAT(Infer(op, {T(DType::kFloat32, {3}), T(kC128, {3})}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         absl::StrCat(op, " is not supported for complex128")));
  }
  const ValueType weak_complex = WeakComplexType();
  EXPECT_THAT(
      Infer("mod", {T(DType::kFloat32, {3}), weak_complex}),
      StatusIs(absl::StatusCode::kInvalidArgument, "mod is not supported for Python complex"));
  EXPECT_THAT(Infer("bitwise_not", {T(kC64, {3})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "bitwise_not requires an integer or bool input, got complex64"));
  EXPECT_THAT(Infer("bitwise_and", {T(DType::kInt8, {3}), T(kC64, {3})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("bitwise_and requires integer or bool inputs")));
  EXPECT_THAT(
      Infer("logsumexp", {T(kC64, {3})}),
      StatusIs(absl::StatusCode::kInvalidArgument, "logsumexp is not supported for complex64"));
  EXPECT_THAT(Infer("softmax", {T(kC64, {3})}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not supported for complex")));
}

TEST(ComplexOpsTest, ReductionsAndLinearAlgebra) {
  for (const char* op : {"sum", "prod", "mean", "min", "max", "cumsum", "cumprod"}) {
    EXPECT_THAT(Infer(op, {T(kC64, {3})}), IsOkAndHolds(HasDTypes(kC64, kC64))) << op;
  }
  // var and std of complex values are real: the mean of |x - mean|^2.
  for (const char* op : {"var", "std"}) {
    EXPECT_THAT(Infer(op, {T(kC64, {3})}), IsOkAndHolds(HasDTypes(DType::kFloat32, kC64))) << op;
    EXPECT_THAT(Infer(op, {T(kC128, {3})}), IsOkAndHolds(HasDTypes(DType::kFloat64, kC128))) << op;
  }
  EXPECT_THAT(Infer("argmax", {T(kC64, {3})}), IsOkAndHolds(HasDTypes(DType::kInt64, kC64)));
  EXPECT_THAT(Infer("matmul", {T(kC64, {2, 3}), T(DType::kFloat64, {3, 4})}),
              IsOkAndHolds(HasDTypes(kC128, kC128)));
  EXPECT_THAT(Infer("dot", {T(kC64, {3}), T(kC64, {3})}), IsOkAndHolds(HasDTypes(kC64, kC64)));
  EXPECT_THAT(Infer("cast", {T(kC64, {3})}, {{"dtype", DType::kFloat32}}),
              IsOkAndHolds(HasDTypes(DType::kFloat32, DType::kFloat32)));
}

TEST(ComplexOpsTest, SortsRefuseComplexForNow) {
  EXPECT_THAT(Infer("sort", {T(kC64, {3})}, {{"axis", int64_t{0}}}),
              StatusIs(absl::StatusCode::kInvalidArgument, "sort does not take dtype complex64"));
  EXPECT_THAT(
      Infer("argsort", {T(kC128, {3})}, {{"axis", int64_t{0}}}),
      StatusIs(absl::StatusCode::kInvalidArgument, "argsort does not take dtype complex128"));
}

TEST(ComplexLiteralTest, WeakAndStrongComplexScalars) {
  ASSERT_OK_AND_ASSIGN(auto weak, ScalarLiteral(Scalar::Complex(1.5, -2)));
  EXPECT_EQ(weak.first.dtype, kC128);
  EXPECT_TRUE(weak.second.weak);
  ASSERT_EQ(weak.first.bytes.size(), 16u);
  double parts[2];
  std::memcpy(parts, weak.first.bytes.data(), 16);
  EXPECT_EQ(parts[0], 1.5);
  EXPECT_EQ(parts[1], -2);

  Scalar s = Scalar::Complex(0.1, 3);
  s.dtype = kC64;
  ASSERT_OK_AND_ASSIGN(auto strong, ScalarLiteral(s));
  EXPECT_FALSE(strong.second.weak);
  ASSERT_EQ(strong.first.bytes.size(), 8u);
  float fparts[2];
  std::memcpy(fparts, strong.first.bytes.data(), 8);
  EXPECT_EQ(fparts[0], 0.1f);
  EXPECT_EQ(fparts[1], 3.0f);

  // An int scalar with a complex dtype, as numpy.complex64(2).
  Scalar i = Scalar::Int(2);
  i.dtype = kC128;
  ASSERT_OK_AND_ASSIGN(auto from_int, ScalarLiteral(i));
  std::memcpy(parts, from_int.first.bytes.data(), 16);
  EXPECT_EQ(parts[0], 2);
  EXPECT_EQ(parts[1], 0);

  // numpy.float32(1j) is a TypeError; numpy.bool_(1j) is True.
  Scalar to_float = Scalar::Complex(0, 1);
  to_float.dtype = DType::kFloat32;
  EXPECT_THAT(ScalarLiteral(to_float), StatusIs(absl::StatusCode::kInvalidArgument,
                                                "cannot convert a complex scalar to float32"));
  Scalar to_bool = Scalar::Complex(0, 1);
  to_bool.dtype = DType::kBool;
  ASSERT_OK_AND_ASSIGN(auto b, ScalarLiteral(to_bool));
  EXPECT_EQ(b.first.bytes, std::string(1, '\1'));
}

}  // namespace
}  // namespace gpuflow
