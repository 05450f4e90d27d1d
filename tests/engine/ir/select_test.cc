// scatter, flatnonzero and histogram: inference (shapes, dtypes and errors).
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/op_registry.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

ValueType T(DType dtype, std::initializer_list<int64_t> dims = {}, bool weak = false) {
  return {.dtype = dtype, .shape = *Shape::Create(dims), .weak = weak};
}

absl::StatusOr<InferredNode> Infer(const std::string& op, std::vector<ValueType> in,
                                   AttrMap& attrs) {
  return OpRegistry::Default().Find(op)->infer(in, attrs);
}

TEST(ScatterInferTest, KeepsTheArraysTypeAndDefaultsToSet) {
  AttrMap attrs;
  absl::StatusOr<InferredNode> n =
      Infer("scatter",
            {T(DType::kInt8, {2, 3}), T(DType::kUInt16, {4, 1}), T(DType::kFloat64, {1})}, attrs);
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(n->output.dtype, DType::kInt8);
  EXPECT_EQ(n->output.shape, *Shape::Create({2, 3}));
  EXPECT_EQ(std::get<std::string>(attrs["mode"]), "set");
  // A weak scalar update.
  attrs = {{"mode", std::string("add")}};
  EXPECT_THAT(
      Infer("scatter",
            {T(DType::kFloat16, {3}), T(DType::kInt64, {2}), T(DType::kFloat64, {}, true)}, attrs),
      IsOk());
}

TEST(ScatterInferTest, RefusesWhatNumPyRefuses) {
  AttrMap attrs;
  EXPECT_THAT(Infer("scatter",
                    {T(DType::kFloat32, {3}), T(DType::kFloat32, {2}), T(DType::kFloat32)}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Cannot cast array data from dtype('float32')")));
  EXPECT_THAT(
      Infer("scatter", {T(DType::kFloat32, {3}), T(DType::kBool, {2}), T(DType::kBool)}, attrs),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("Cannot cast array data from dtype('bool')")));
  EXPECT_THAT(
      Infer("scatter", {T(DType::kFloat32, {3}), T(DType::kInt64, {2}), T(DType::kFloat32, {3})},
            attrs),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("value array of shape (3,) could not be broadcast to indexing "
                         "result of shape (2,)")));
  attrs = {{"mode", std::string("xor")}};
  EXPECT_THAT(
      Infer("scatter", {T(DType::kFloat32, {3}), T(DType::kInt64, {2}), T(DType::kFloat32)}, attrs),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("scatter mode must be")));
  attrs = {};
  EXPECT_THAT(
      Infer("scatter", {T(DType::kFloat32, {0}), T(DType::kInt64, {1}), T(DType::kFloat32)}, attrs),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("cannot replace elements of an empty array")));
}

TEST(FlatNonzeroInferTest, SizeGivesTheShape) {
  AttrMap attrs = {{"size", int64_t{4}}};
  absl::StatusOr<InferredNode> n = Infer("flatnonzero", {T(DType::kFloat32, {2, 3})}, attrs);
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(n->output.dtype, DType::kInt64);
  EXPECT_EQ(n->output.shape, *Shape::Create({4}));
  attrs = {{"size", int64_t{7}}};
  EXPECT_THAT(Infer("flatnonzero", {T(DType::kFloat32, {2, 3})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("size 7 is outside [0, 6]")));
  attrs = {};
  EXPECT_THAT(Infer("flatnonzero", {T(DType::kFloat32, {2, 3})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(HistogramInferTest, CountsAreInt64AndWeightSumsTheWeightsDtype) {
  AttrMap attrs;
  absl::StatusOr<InferredNode> n =
      Infer("histogram", {T(DType::kInt8, {2, 3}), T(DType::kFloat32, {11})}, attrs);
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(n->output.dtype, DType::kInt64);
  EXPECT_EQ(n->output.shape, *Shape::Create({10}));
  EXPECT_EQ(n->compute_dtype, DType::kFloat32);  // int8 with float32 compares in float32
  EXPECT_FALSE(std::get<bool>(attrs["uniform"]));
  attrs = {{"uniform", true}, {"first_edge", 0.0}, {"norm_denom", int64_t{1}}};
  n = Infer("histogram", {T(DType::kFloat16, {5}), T(DType::kFloat16, {3}), T(DType::kUInt8, {5})},
            attrs);
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(n->output.dtype, DType::kUInt8);
  EXPECT_EQ(n->compute_dtype, DType::kFloat16);
  EXPECT_EQ(std::get<DType>(attrs["sub_dtype"]), DType::kFloat16);
  EXPECT_EQ(std::get<DType>(attrs["div_dtype"]), DType::kFloat16);
}

TEST(HistogramInferTest, RefusesWhatItCannotCount) {
  AttrMap attrs;
  EXPECT_THAT(Infer("histogram", {T(DType::kFloat32, {4}), T(DType::kFloat32, {2, 2})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be 1-D")));
  EXPECT_THAT(Infer("histogram", {T(DType::kFloat32, {4}), T(DType::kFloat32, {0})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least one element")));
  EXPECT_THAT(Infer("histogram", {T(DType::kComplex64, {4}), T(DType::kFloat32, {3})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("complex64")));
  EXPECT_THAT(
      Infer("histogram",
            {T(DType::kFloat32, {4}), T(DType::kFloat32, {3}), T(DType::kFloat32, {3})}, attrs),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("weights should have the same shape as a.")));
  // numpy's cumulative path cannot add into bool counts.
  EXPECT_THAT(
      Infer("histogram", {T(DType::kFloat32, {4}), T(DType::kFloat32, {3}), T(DType::kBool, {4})},
            attrs),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("to dtype('bool')")));
  attrs = {{"uniform", true}, {"first_edge", 0.0}};
  EXPECT_THAT(Infer("histogram", {T(DType::kFloat32, {4}), T(DType::kFloat32, {3})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("norm_denom")));
  attrs = {{"uniform", true}, {"first_edge", 0.0}, {"norm_denom", 0.0}};
  EXPECT_THAT(Infer("histogram", {T(DType::kFloat32, {4}), T(DType::kFloat32, {3})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("positive finite")));
  attrs = {{"uniform", true}, {"first_edge", 0.0}, {"norm_denom", 1.0}};
  EXPECT_THAT(Infer("histogram", {T(DType::kFloat32, {4}), T(DType::kInt64, {3})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("float edges")));
  attrs = {
      {"uniform", true}, {"first_edge", 0.0}, {"norm_denom", 1.0}, {"div_dtype", DType::kInt32}};
  EXPECT_THAT(Infer("histogram", {T(DType::kFloat32, {4}), T(DType::kFloat32, {3})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("div_dtype")));
}

}  // namespace
}  // namespace gpuflow
