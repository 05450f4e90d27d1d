// sort, argsort and searchsorted inference: NumPy's shapes, dtypes and
// errors.
#include <cstdint>
#include <optional>
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

TEST(SortInferTest, AxisAndFlattened) {
  for (const char* op : {"sort", "argsort"}) {
    SCOPED_TRACE(op);
    const DType want = std::string(op) == "sort" ? DType::kFloat16 : DType::kInt64;
    AttrMap attrs{{"axis", int64_t{-1}}};
    absl::StatusOr<InferredNode> n = Infer(op, {T(DType::kFloat16, {2, 3})}, attrs);
    ASSERT_THAT(n, IsOk());
    EXPECT_EQ(n->output.dtype, want);
    EXPECT_EQ(n->output.shape, *Shape::Create({2, 3}));
    EXPECT_EQ(std::get<int64_t>(attrs.at("axis")), 1);
    AttrMap none;
    n = Infer(op, {T(DType::kFloat16, {2, 3})}, none);
    ASSERT_THAT(n, IsOk());
    EXPECT_EQ(n->output.shape, *Shape::Create({6}));
    EXPECT_FALSE(none.contains("axis"));
    // 0-d: no axis to sort along; flattened it is (1,).
    n = Infer(op, {T(DType::kInt8)}, none);
    ASSERT_THAT(n, IsOk());
    EXPECT_EQ(n->output.shape, *Shape::Create({1}));
    AttrMap last{{"axis", int64_t{-1}}};
    EXPECT_THAT(Infer(op, {T(DType::kInt8)}, last),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("axis -1 is out of bounds for array of dimension 0")));
    AttrMap far{{"axis", int64_t{2}}};
    EXPECT_THAT(Infer(op, {T(DType::kBool, {0, 4})}, far),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("axis 2 is out of bounds for array of dimension 2")));
  }
}

TEST(SearchSortedInferTest, ShapesDTypesAndErrors) {
  AttrMap attrs;
  absl::StatusOr<InferredNode> n =
      Infer("searchsorted", {T(DType::kInt8, {5}), T(DType::kFloat32, {2, 3})}, attrs);
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(n->output.dtype, DType::kInt64);
  EXPECT_EQ(n->output.shape, *Shape::Create({2, 3}));
  EXPECT_EQ(n->compute_dtype, DType::kFloat32);
  EXPECT_EQ(std::get<std::string>(attrs.at("side")), "left");
  // A Python int is taken at its own dtype, not weakly.
  n = Infer("searchsorted", {T(DType::kInt8, {5}), T(DType::kInt64, {}, true)}, attrs);
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(n->compute_dtype, DType::kInt64);
  EXPECT_EQ(n->output.shape, Shape());
  n = Infer("searchsorted", {T(DType::kUInt64, {5}), T(DType::kInt64, {1})}, attrs);
  ASSERT_THAT(n, IsOk());
  EXPECT_EQ(n->compute_dtype, DType::kFloat64);
  EXPECT_THAT(Infer("searchsorted", {T(DType::kInt8, {5, 1}), T(DType::kInt8, {1})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("sorted input must be 1-D, got shape (5, 1)")));
  EXPECT_THAT(Infer("searchsorted", {T(DType::kInt8), T(DType::kInt8, {1})}, attrs),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be 1-D")));
  AttrMap bad{{"side", std::string("middle")}};
  EXPECT_THAT(Infer("searchsorted", {T(DType::kInt8, {5}), T(DType::kInt8, {1})}, bad),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("side must be 'left' or 'right' (got 'middle')")));
}

}  // namespace
}  // namespace gpuflow
