// Shape ops against index arithmetic done here.
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "engine/host/host_kernels.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/host/host_test_util.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::host_test {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

std::vector<double> Iota(int64_t n, double from = 0) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = from + static_cast<double>(i);
  return v;
}

absl::StatusOr<TestArray> Unary(const std::string& op, const TestArray& x, const Shape& out,
                                AttrMap attrs, DType out_dtype, HostKernelOptions options = {}) {
  return RunNode(MakeNode(op, {x.type()}, {out_dtype, out}, out_dtype, std::move(attrs)), {x},
                 options);
}

TEST(HostShapeTest, ReshapeExpandDimsSqueezeCopyInOrder) {
  for (DType d : kAllDTypes) {
    const TestArray x = RandomArray(d, S({2, 3, 4}), 1);
    AttrMap reshape;
    reshape["shape"] = std::vector<int64_t>{4, 6};
    absl::StatusOr<TestArray> r = Unary("reshape", x, S({4, 6}), reshape, d);
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->bytes, x.bytes);
    AttrMap expand;
    expand["axes"] = std::vector<int64_t>{0, 3};
    r = Unary("expand_dims", x, S({1, 2, 3, 1, 4}), expand, d);
    ASSERT_THAT(r, IsOk());
    EXPECT_EQ(r->bytes, x.bytes);
  }
  const TestArray y = MakeArray(DType::kFloat32, S({1, 3, 1}), {1, 2, 3});
  AttrMap squeeze;
  squeeze["axes"] = std::vector<int64_t>{0, 2};
  absl::StatusOr<TestArray> r = Unary("squeeze", y, S({3}), squeeze, DType::kFloat32);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1, 2, 3});
  // To 0-d and from it.
  const TestArray one = MakeArray(DType::kInt16, S({1, 1}), {9});
  r = Unary("squeeze", one, S({}), {}, DType::kInt16);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {9});
  AttrMap to11;
  to11["shape"] = std::vector<int64_t>{1, 1};
  r = Unary("reshape", Scalar0d(DType::kInt16, 4), S({1, 1}), to11, DType::kInt16);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {4});
  // Empty.
  AttrMap to03;
  to03["shape"] = std::vector<int64_t>{0, 3};
  r = Unary("reshape", Empty(DType::kInt8, S({3, 0})), S({0, 3}), to03, DType::kInt8);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->size(), 0);
  // Mismatched element counts are refused.
  EXPECT_THAT(Unary("reshape", y, S({2}), to11, DType::kFloat32),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(HostShapeTest, BoolBytesAreNormalized) {
  TestArray b = MakeArray(DType::kBool, S({3}), {1, 0, 1});
  b.bytes[2] = std::byte{0x80};
  AttrMap shape;
  shape["shape"] = std::vector<int64_t>{3};
  absl::StatusOr<TestArray> r = Unary("reshape", b, S({3}), shape, DType::kBool);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->bytes[2], std::byte{1});
}

TEST(HostShapeTest, TransposeEveryPermutationOfRank3) {
  const Shape shape = S({2, 3, 5});
  const std::vector<std::vector<int64_t>> perms = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2},
                                                   {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (DType d : {DType::kInt8, DType::kFloat16, DType::kFloat64, DType::kUInt64}) {
    const TestArray x = RandomArray(d, shape, 3);
    for (const auto& perm : perms) {
      std::vector<int64_t> out_dims;
      for (int64_t p : perm) out_dims.push_back(shape.dim(static_cast<int>(p)));
      AttrMap attrs;
      attrs["axes"] = perm;
      absl::StatusOr<TestArray> r = Unary("transpose", x, S(out_dims), attrs, d, ManyThreads());
      ASSERT_THAT(r, IsOk());
      std::vector<double> want;
      for (int64_t i = 0; i < x.size(); ++i) {
        // Output index -> input index.
        int64_t rest = i;
        int64_t idx[3];
        for (int o = 2; o >= 0; --o) {
          idx[o] = rest % out_dims[o];
          rest /= out_dims[o];
        }
        int64_t in[3];
        for (int o = 0; o < 3; ++o) in[perm[o]] = idx[o];
        want.push_back(x.At((in[0] * 3 + in[1]) * 5 + in[2]));
      }
      ExpectValues(*r, want);
    }
  }
  // Without axes: reversed.
  const TestArray m = MakeArray(DType::kInt32, S({2, 3}), Iota(6));
  absl::StatusOr<TestArray> r = Unary("transpose", m, S({3, 2}), {}, DType::kInt32);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {0, 3, 1, 4, 2, 5});
}

TEST(HostShapeTest, BroadcastTo) {
  const TestArray x = MakeArray(DType::kFloat32, S({3, 1}), {1, 2, 3});
  AttrMap attrs;
  attrs["shape"] = std::vector<int64_t>{2, 3, 4};
  absl::StatusOr<TestArray> r = Unary("broadcast_to", x, S({2, 3, 4}), attrs, DType::kFloat32);
  ASSERT_THAT(r, IsOk());
  std::vector<double> want;
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 3; ++b) {
      for (int c = 0; c < 4; ++c) want.push_back(b + 1);
    }
  }
  ExpectValues(*r, want);
  r = Unary("broadcast_to", Scalar0d(DType::kInt8, -3), S({2, 2}), attrs, DType::kInt8);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {-3, -3, -3, -3});
  r = Unary("broadcast_to", x, S({0, 3, 4}), attrs, DType::kFloat32);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->size(), 0);
  EXPECT_THAT(Unary("broadcast_to", x, S({2, 4}), attrs, DType::kFloat32),
              StatusIs(absl::StatusCode::kInvalidArgument));
}

absl::StatusOr<TestArray> Slice(const TestArray& x, std::vector<int64_t> starts,
                                std::vector<int64_t> steps, const Shape& out) {
  AttrMap attrs;
  attrs["starts"] = std::move(starts);
  attrs["steps"] = std::move(steps);
  return Unary("slice", x, out, attrs, x.dtype);
}

TEST(HostShapeTest, SliceWithPositiveAndNegativeSteps) {
  const TestArray v = MakeArray(DType::kInt32, S({10}), Iota(10));
  // x[::-1]
  absl::StatusOr<TestArray> r = Slice(v, {9}, {-1}, S({10}));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {9, 8, 7, 6, 5, 4, 3, 2, 1, 0});
  // x[5:1:-2]
  r = Slice(v, {5}, {-2}, S({2}));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {5, 3});
  // x[1::3]
  r = Slice(v, {1}, {3}, S({3}));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1, 4, 7});
  // x[7:2] (empty): starts need not be meaningful.
  r = Slice(v, {7}, {1}, S({0}));
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->size(), 0);
  // x[::100] takes one element whatever the step.
  r = Slice(v, {0}, {std::numeric_limits<int64_t>::max()}, S({1}));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {0});
  // 2-D: m[::-1, 1::2] of a 4x5.
  const TestArray m = MakeArray(DType::kFloat16, S({4, 5}), Iota(20));
  r = Slice(m, {3, 1}, {-1, 2}, S({4, 2}));
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {16, 18, 11, 13, 6, 8, 1, 3});
  // 3-D random against the reference, with threads.
  const TestArray t = RandomArray(DType::kUInt16, S({6, 7, 8}), 5);
  AttrMap attrs;
  attrs["starts"] = std::vector<int64_t>{5, 0, 6};
  attrs["steps"] = std::vector<int64_t>{-2, 3, -1};
  absl::StatusOr<TestArray> s =
      Unary("slice", t, S({3, 3, 7}), attrs, DType::kUInt16, ManyThreads());
  ASSERT_THAT(s, IsOk());
  std::vector<double> want;
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) {
      for (int c = 0; c < 7; ++c) want.push_back(t.At(((5 - 2 * a) * 7 + 3 * b) * 8 + 6 - c));
    }
  }
  ExpectValues(*s, want);
  // Out-of-range starts are refused, not read.
  EXPECT_THAT(Slice(v, {10}, {1}, S({1})), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Slice(v, {8}, {1}, S({3})), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(Slice(v, {1}, {-1}, S({3})), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(HostShapeTest, ConcatenateAndStackPromote) {
  const TestArray a = MakeArray(DType::kInt8, S({2, 2}), {1, 2, 3, 4});
  const TestArray b = MakeArray(DType::kFloat32, S({2, 1}), {0.5, 0.25});
  AttrMap axis1;
  axis1["axis"] = int64_t{1};
  absl::StatusOr<TestArray> r =
      RunNode(MakeNode("concatenate", {a.type(), b.type()}, {DType::kFloat32, S({2, 3})},
                       DType::kFloat32, axis1),
              {a, b});
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1, 2, 0.5, 3, 4, 0.25});
  AttrMap axis0;
  axis0["axis"] = int64_t{0};
  const TestArray c = MakeArray(DType::kInt8, S({1, 2}), {5, 6});
  const TestArray e = Empty(DType::kInt8, S({0, 2}));
  r = RunNode(MakeNode("concatenate", {a.type(), e.type(), c.type()}, {DType::kInt8, S({3, 2})},
                       DType::kInt8, axis0),
              {a, e, c});
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1, 2, 3, 4, 5, 6});
  // Inconsistent shapes are refused.
  EXPECT_THAT(RunNode(MakeNode("concatenate", {a.type(), b.type()}, {DType::kFloat32, S({4, 2})},
                               DType::kFloat32, axis0),
                      {a, b}),
              StatusIs(absl::StatusCode::kInvalidArgument));

  // stack along every axis of the output.
  const TestArray p = MakeArray(DType::kInt16, S({2, 3}), Iota(6));
  const TestArray q = MakeArray(DType::kUInt8, S({2, 3}), Iota(6, 10));
  const std::vector<std::vector<double>> want = {
      {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15},
      {0, 1, 2, 10, 11, 12, 3, 4, 5, 13, 14, 15},
      {0, 10, 1, 11, 2, 12, 3, 13, 4, 14, 5, 15},
  };
  const std::vector<Shape> out_shapes = {S({2, 2, 3}), S({2, 2, 3}), S({2, 3, 2})};
  for (int64_t axis = 0; axis < 3; ++axis) {
    AttrMap attrs;
    attrs["axis"] = axis;
    r = RunNode(MakeNode("stack", {p.type(), q.type()}, {DType::kInt16, out_shapes[axis]},
                         DType::kInt16, attrs),
                {p, q});
    ASSERT_THAT(r, IsOk()) << axis;
    ExpectValues(*r, want[axis]);
  }
  // Stacking 0-d values gives a vector.
  r = RunNode(
      MakeNode("stack", {Scalar0d(DType::kBool, 1).type(), Scalar0d(DType::kBool, 0).type()},
               {DType::kFloat64, S({2})}, DType::kFloat64, axis0),
      {Scalar0d(DType::kBool, 1), Scalar0d(DType::kBool, 0)});
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1, 0});
}

TEST(HostShapeTest, LargeTransposeWithThreads) {
  const TestArray x = RandomArray(DType::kFloat32, S({257, 263}), 7);
  AttrMap attrs;
  attrs["axes"] = std::vector<int64_t>{1, 0};
  absl::StatusOr<TestArray> r =
      Unary("transpose", x, S({263, 257}), attrs, DType::kFloat32, ManyThreads());
  ASSERT_THAT(r, IsOk());
  for (int64_t i = 0; i < 263; ++i) {
    for (int64_t j = 0; j < 257; ++j) ASSERT_EQ(r->At(i * 257 + j), x.At(j * 263 + i));
  }
}

// ---- take and take_along_axis ------------------------------------------------

absl::StatusOr<TestArray> Gather(const std::string& op, const TestArray& a, const TestArray& idx,
                                 const Shape& out, std::optional<int64_t> axis,
                                 HostKernelOptions options = {}) {
  AttrMap attrs;
  if (axis) attrs["axis"] = *axis;
  return RunNode(MakeNode(op, {a.type(), idx.type()}, {a.dtype, out}, a.dtype, std::move(attrs)),
                 {a, idx}, options);
}

TEST(HostGatherTest, TakeAlongAnAxisMatchesIndexArithmeticForEveryDType) {
  for (DType d : kAllDTypes) {
    const TestArray a = RandomArray(d, S({3, 5, 2}), 7);
    for (DType id : kIntDTypes) {
      const std::vector<double> raw =
          IsSigned(id) ? std::vector<double>{4, -1, 0, -5} : std::vector<double>{4, 1, 0, 3};
      const TestArray idx = MakeArray(id, S({4}), raw);
      absl::StatusOr<TestArray> r = Gather("take", a, idx, S({3, 4, 2}), 1, ManyThreads());
      ASSERT_THAT(r, IsOk()) << DTypeName(d) << " " << DTypeName(id);
      std::vector<double> want;
      for (int i = 0; i < 3; ++i) {
        for (double j : raw) {
          const int64_t jj = j < 0 ? static_cast<int64_t>(j) + 5 : static_cast<int64_t>(j);
          for (int k = 0; k < 2; ++k) want.push_back(a.At(i * 10 + jj * 2 + k));
        }
      }
      ExpectValues(*r, want, 0, std::string(DTypeName(d)));
    }
  }
}

TEST(HostGatherTest, TakeOfTheFlattenedArray0dAndEmptyIndices) {
  const TestArray a = MakeArray(DType::kFloat32, S({2, 3}), {0, 1, 2, 3, 4, 5});
  const TestArray idx = MakeArray(DType::kInt64, S({2, 2}), {5, -6, 3, 0});
  absl::StatusOr<TestArray> r = Gather("take", a, idx, S({2, 2}), std::nullopt);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {5, 0, 3, 0});
  r = Gather("take", a, Scalar0d(DType::kInt16, -2), S({}), std::nullopt);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {4});
  // A 0-d array taken along axis 0.
  r = Gather("take", Scalar0d(DType::kInt8, 9), MakeArray(DType::kInt32, S({3}), {0, -1, 0}),
             S({3}), 0);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {9, 9, 9});
  r = Gather("take", a, Empty(DType::kInt64, S({0})), S({2, 0}), 1);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->size(), 0);
  // Bool indices are 0 and 1 (NumPy casts them to intp).
  r = Gather("take", a, MakeArray(DType::kBool, S({2}), {1, 0}), S({2}), std::nullopt);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1, 0});
}

TEST(HostGatherTest, TakeAlongAxisBroadcastsBothWays) {
  // arr (1, 3) against indices (2, 2) along axis 1: rows of arr broadcast.
  const TestArray a = MakeArray(DType::kInt32, S({1, 3}), {10, 11, 12});
  const TestArray idx = MakeArray(DType::kUInt8, S({2, 2}), {2, 0, 1, 1});
  absl::StatusOr<TestArray> r = Gather("take_along_axis", a, idx, S({2, 2}), 1);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {12, 10, 11, 11});
  // arr (2, 3) against indices (1, 4): the index row serves every row.
  const TestArray b = MakeArray(DType::kFloat64, S({2, 3}), {0, 1, 2, 3, 4, 5});
  r = Gather("take_along_axis", b, MakeArray(DType::kInt64, S({1, 4}), {-1, 0, 1, 2}), S({2, 4}), 1,
             ManyThreads());
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {2, 0, 1, 2, 5, 3, 4, 5});
  // Along axis 0 and over the flattened array.
  r = Gather("take_along_axis", b, MakeArray(DType::kInt64, S({1, 3}), {1, 0, 1}), S({1, 3}), 0);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {3, 1, 5});
  r = Gather("take_along_axis", b, MakeArray(DType::kInt16, S({3}), {5, -6, 2}), S({3}),
             std::nullopt);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {5, 0, 2});
}

TEST(HostGatherTest, OutOfBoundsIndicesFailWithNumpysMessage) {
  const TestArray a = RandomArray(DType::kFloat32, S({5, 2}), 3);
  EXPECT_THAT(Gather("take", a, MakeArray(DType::kInt64, S({3}), {1, 7, 9}), S({3, 2}), 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("index 7 is out of bounds for axis 0 with size 5")));
  EXPECT_THAT(Gather("take", a, MakeArray(DType::kInt8, S({1}), {-6}), S({1, 2}), 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("index -6 is out of bounds for axis 0 with size 5")));
  TestArray huge = Empty(DType::kUInt64, S({1}));
  const uint64_t big = uint64_t{1} << 63;
  std::memcpy(huge.bytes.data(), &big, 8);
  EXPECT_THAT(Gather("take", a, huge, S({1}), std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("index 9223372036854775808 is out of bounds for axis 0 with "
                                 "size 10")));
  EXPECT_THAT(Gather("take_along_axis", a, MakeArray(DType::kInt32, S({5, 1}), {0, 0, 2, 0, 0}),
                     S({5, 1}), 1),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("index 2 is out of bounds for axis 1 with size 2")));
  EXPECT_THAT(
      Gather("take_along_axis", a, MakeArray(DType::kInt32, S({1}), {10}), S({1}), std::nullopt),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("index 10 is out of bounds for axis 0 with size 10")));
}

TEST(HostGatherTest, LargeTakeIsTheSameOnManyThreads) {
  const TestArray a = RandomArray(DType::kInt32, S({1023, 7}), 11);
  const TestArray idx = RandomArray(DType::kInt64, S({3, 1025}), 12, -1023, 1022);
  absl::StatusOr<TestArray> one = Gather("take", a, idx, S({3, 1025, 7}), 0);
  absl::StatusOr<TestArray> many = Gather("take", a, idx, S({3, 1025, 7}), 0, ManyThreads());
  ASSERT_THAT(one, IsOk());
  ASSERT_THAT(many, IsOk());
  EXPECT_EQ(one->bytes, many->bytes);
  for (int64_t i = 0; i < idx.size(); i += 97) {
    const int64_t j = idx.IntAt(i) < 0 ? idx.IntAt(i) + 1023 : idx.IntAt(i);
    EXPECT_EQ(one->At(i * 7 + 3), a.At(j * 7 + 3));
  }
}

}  // namespace
}  // namespace gpuflow::host_test
