// take and take_along_axis: inference (shapes and errors as NumPy's) and
// the gather geometry every backend reads them through.
#include "engine/ir/gather.h"

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
using ::testing::ElementsAre;
using ::testing::HasSubstr;

ValueType T(DType dtype, std::initializer_list<int64_t> dims = {}) {
  return {.dtype = dtype, .shape = *Shape::Create(dims), .weak = false};
}

absl::StatusOr<InferredNode> Infer(const std::string& op, ValueType a, ValueType idx,
                                   AttrMap& attrs) {
  return OpRegistry::Default().Find(op)->infer({a, idx}, attrs);
}
absl::StatusOr<InferredNode> Infer(const std::string& op, ValueType a, ValueType idx,
                                   std::optional<int64_t> axis = std::nullopt) {
  AttrMap attrs;
  if (axis) attrs["axis"] = *axis;
  return Infer(op, a, idx, attrs);
}

std::vector<int64_t> Dims(const absl::StatusOr<InferredNode>& n) {
  EXPECT_THAT(n, IsOk());
  if (!n.ok()) return {};
  return {n->output.shape.dims().begin(), n->output.shape.dims().end()};
}

// A validated node as inference leaves it.
ValidatedNode Node(const std::string& op, ValueType a, ValueType idx,
                   std::optional<int64_t> axis = std::nullopt) {
  ValidatedNode node;
  node.id = "g";
  node.op = OpRegistry::Default().Find(op);
  node.input_types = {a, idx};
  if (axis) node.attrs["axis"] = *axis;
  absl::StatusOr<InferredNode> t = node.op->infer(node.input_types, node.attrs);
  EXPECT_THAT(t, IsOk());
  if (t.ok()) node.type = *t;
  return node;
}

TEST(TakeInferTest, ShapesFollowNumpy) {
  const DType f = DType::kFloat32;
  const DType i = DType::kInt64;
  // axis=None: the indices' shape (0-d and empty included).
  EXPECT_THAT(Dims(Infer("take", T(f, {2, 3}), T(i, {4, 5}))), ElementsAre(4, 5));
  EXPECT_THAT(Dims(Infer("take", T(f, {2, 3}), T(i))), ElementsAre());
  EXPECT_THAT(Dims(Infer("take", T(f, {2, 3}), T(i, {0}))), ElementsAre(0));
  // a[:axis] + indices + a[axis+1:].
  EXPECT_THAT(Dims(Infer("take", T(f, {2, 3, 4}), T(i, {5, 6}), 1)), ElementsAre(2, 5, 6, 4));
  EXPECT_THAT(Dims(Infer("take", T(f, {2, 3, 4}), T(i), -1)), ElementsAre(2, 3));
  // A 0-d array is one of shape (1,) to take along axis 0.
  EXPECT_THAT(Dims(Infer("take", T(f), T(i, {2}), 0)), ElementsAre(2));
  // Empty indices from an empty axis are fine.
  EXPECT_THAT(Dims(Infer("take", T(f, {2, 0}), T(i, {0}), 1)), ElementsAre(2, 0));
}

TEST(TakeInferTest, KeepsTheDTypeAndTakesEveryIntegerIndexDType) {
  for (const DTypeInfo& a : AllDTypes()) {
    for (const DTypeInfo& idx : AllDTypes()) {
      absl::StatusOr<InferredNode> t = Infer("take", T(a.dtype, {3}), T(idx.dtype, {2}));
      if (IsFloat(idx.dtype) || IsComplex(idx.dtype)) {
        EXPECT_THAT(t, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Cannot cast")));
      } else {
        ASSERT_THAT(t, IsOk()) << a.name << " " << idx.name;
        EXPECT_EQ(t->output.dtype, a.dtype);
      }
    }
  }
}

TEST(TakeInferTest, ErrorsAsNumpy) {
  EXPECT_THAT(Infer("take", T(DType::kFloat32, {2, 3}), T(DType::kInt64, {1}), 2),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("axis 2 is out of bounds for array of dimension 2")));
  EXPECT_THAT(Infer("take", T(DType::kFloat32, {0}), T(DType::kInt64, {1})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("cannot do a non-empty take from an empty axes.")));
  AttrMap attrs;
  attrs["axis"] = int64_t{-1};
  ASSERT_THAT(Infer("take", T(DType::kInt8, {2, 3}), T(DType::kInt64, {1}), attrs), IsOk());
  EXPECT_EQ(std::get<int64_t>(attrs.at("axis")), 1);  // canonical
}

TEST(TakeAlongAxisInferTest, ShapesBroadcastOutsideTheAxis) {
  const DType f = DType::kFloat64;
  const DType i = DType::kInt32;
  EXPECT_THAT(Dims(Infer("take_along_axis", T(f, {2, 3}), T(i, {2, 5}), 1)), ElementsAre(2, 5));
  EXPECT_THAT(Dims(Infer("take_along_axis", T(f, {2, 3}), T(i, {1, 4}), 1)), ElementsAre(2, 4));
  EXPECT_THAT(Dims(Infer("take_along_axis", T(f, {1, 3}), T(i, {4, 2}), 1)), ElementsAre(4, 2));
  EXPECT_THAT(Dims(Infer("take_along_axis", T(f, {2, 3}), T(i, {7}))), ElementsAre(7));
  EXPECT_THAT(Dims(Infer("take_along_axis", T(f, {2, 0}), T(i, {2, 0}), 1)), ElementsAre(2, 0));
}

TEST(TakeAlongAxisInferTest, ErrorsAsNumpy) {
  const DType f = DType::kFloat32;
  EXPECT_THAT(Infer("take_along_axis", T(f, {2, 3}), T(DType::kBool, {2, 1}), 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("`indices` must be an integer array")));
  EXPECT_THAT(Infer("take_along_axis", T(f, {2, 3}), T(DType::kInt64, {1}), 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must have the same number of dimensions")));
  EXPECT_THAT(Infer("take_along_axis", T(f, {2, 3}), T(DType::kInt64, {1, 1})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must have the same number of dimensions")));
  EXPECT_THAT(Infer("take_along_axis", T(f, {2, 3}), T(DType::kInt64, {3, 1}), 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("could not be broadcast together with shapes (2,1) (3,1) ")));
  EXPECT_THAT(Infer("take_along_axis", T(f), T(DType::kInt64), 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("axis 0 is out of bounds for array of dimension 0")));
  EXPECT_THAT(Infer("take_along_axis", T(f, {2, 0}), T(DType::kInt64, {2, 1}), 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("axis 1 of size 0")));
}

TEST(GatherLayoutTest, TakeAlongAnAxisReadsAroundTheIndexDims) {
  const absl::StatusOr<GatherLayout> g =
      GatherLayoutOf(Node("take", T(DType::kInt16, {2, 3, 4}), T(DType::kInt64, {5, 6}), 1));
  ASSERT_THAT(g, IsOk());
  EXPECT_THAT(g->dims, ElementsAre(2, 5, 6, 4));
  EXPECT_THAT(g->src_strides, ElementsAre(12, 0, 0, 1));
  EXPECT_THAT(g->index_strides, ElementsAre(0, 6, 1, 0));
  EXPECT_EQ(g->axis_size, 3);
  EXPECT_EQ(g->axis_stride, 4);
  EXPECT_EQ(GatherIndexError(*g, DType::kInt64, static_cast<uint64_t>(int64_t{-4})),
            "index -4 is out of bounds for axis 1 with size 3");
}

TEST(GatherLayoutTest, FlattenedTakeAndTakeAlongAxisNameTheirErrorsAsNumpy) {
  const absl::StatusOr<GatherLayout> take =
      GatherLayoutOf(Node("take", T(DType::kFloat32, {2, 3}), T(DType::kUInt64, {4})));
  ASSERT_THAT(take, IsOk());
  EXPECT_EQ(take->axis_size, 6);
  EXPECT_THAT(take->src_strides, ElementsAre(0));
  EXPECT_EQ(GatherIndexError(*take, DType::kUInt64, ~uint64_t{0}),
            "index 18446744073709551615 is out of bounds for axis 0 with size 6");
  const absl::StatusOr<GatherLayout> along =
      GatherLayoutOf(Node("take_along_axis", T(DType::kFloat32, {2, 3}), T(DType::kInt8, {4})));
  ASSERT_THAT(along, IsOk());
  EXPECT_EQ(GatherIndexError(*along, DType::kInt8, 9),
            "index 9 is out of bounds for axis 0 with size 6");
}

TEST(GatherLayoutTest, TakeAlongAxisBroadcastsThroughZeroStrides) {
  const absl::StatusOr<GatherLayout> g = GatherLayoutOf(
      Node("take_along_axis", T(DType::kFloat32, {1, 3, 4}), T(DType::kInt32, {2, 5, 1}), 1));
  ASSERT_THAT(g, IsOk());
  EXPECT_THAT(g->dims, ElementsAre(2, 5, 4));
  EXPECT_THAT(g->src_strides, ElementsAre(0, 0, 1));
  EXPECT_THAT(g->index_strides, ElementsAre(5, 1, 0));
  EXPECT_EQ(g->axis_stride, 4);
  EXPECT_EQ(g->error_axis, 1);
}

}  // namespace
}  // namespace gpuflow
