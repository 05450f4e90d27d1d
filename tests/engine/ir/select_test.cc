// scatter and flatnonzero: inference (shapes, dtypes and errors).
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

}  // namespace
}  // namespace gpuflow
