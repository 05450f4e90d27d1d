// sort, argsort and searchsorted on the host: hand-checked cases (NaN of
// either sign last, -0.0 and 0.0 equal and kept in order, integer
// extremes), every dtype against a stable reference, the threaded path
// against the single-threaded one, empty arrays.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/op_registry.h"
#include "gtest/gtest.h"
#include "tests/engine/host/host_test_util.h"

namespace gpuflow::host_test {
namespace {

// A node inferred by the registry, so its attributes are canonical.
ValidatedNode SortNode(const std::string& op, std::vector<ValueType> inputs, AttrMap attrs = {}) {
  ValidatedNode node;
  node.id = std::string(1, 's');
  node.op = OpRegistry::Default().Find(op);
  for (size_t i = 0; i < inputs.size(); ++i) {
    node.inputs.push_back({ValueRef::Kind::kArray, static_cast<int>(i)});
  }
  node.input_types = std::move(inputs);
  node.attrs = std::move(attrs);
  absl::StatusOr<InferredNode> t = node.op->infer(node.input_types, node.attrs);
  EXPECT_TRUE(t.ok()) << t.status();
  if (t.ok()) node.type = *t;
  return node;
}

TestArray RunSort(const std::string& op, const std::vector<TestArray>& inputs,
                  std::optional<int64_t> axis, HostKernelOptions options = {}) {
  AttrMap attrs;
  if (axis) attrs["axis"] = *axis;
  std::vector<ValueType> types;
  for (const TestArray& a : inputs) types.push_back(a.type());
  absl::StatusOr<TestArray> out = RunNode(SortNode(op, types, attrs), inputs, options);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : TestArray{};
}

std::vector<int64_t> Ints(const TestArray& a) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < a.size(); ++i) v.push_back(a.IntAt(i));
  return v;
}

TEST(HostSortTest, FloatsPutNaNLastAndKeepSignedZerosInOrder) {
  for (DType d : kFloatDTypes) {
    SCOPED_TRACE(DTypeName(d));
    const TestArray x = MakeArray(d, S({9}), {3, -kNaN, -0.0, kInf, 0.0, kNaN, -kInf, -0.0, -2});
    const TestArray order = RunSort("argsort", {x}, 0);
    EXPECT_EQ(Ints(order), (std::vector<int64_t>{6, 8, 2, 4, 7, 0, 3, 1, 5}));
    const TestArray sorted = RunSort("sort", {x}, 0);
    ExpectValues(sorted, {-kInf, -2, -0.0, 0.0, -0.0, 3, kInf, kNaN, kNaN});
    // The NaNs keep their own bits: -NaN (index 1) before NaN (index 5).
    std::vector<std::byte> first(ItemSize(d)), was(ItemSize(d));
    std::memcpy(first.data(), sorted.bytes.data() + 7 * ItemSize(d), ItemSize(d));
    std::memcpy(was.data(), x.bytes.data() + 1 * ItemSize(d), ItemSize(d));
    EXPECT_EQ(first, was);
  }
}

TEST(HostSortTest, IntegerExtremes) {
  const TestArray i8 = MakeArray(DType::kInt8, S({5}), {127, -128, 0, -1, 1});
  EXPECT_EQ(Ints(RunSort("argsort", {i8}, 0)), (std::vector<int64_t>{1, 3, 2, 4, 0}));
  TestArray i64 = Empty(DType::kInt64, S({4}));
  for (int64_t i = 0; i < 4; ++i) {
    i64.SetBits(i, static_cast<uint64_t>(std::vector<int64_t>{INT64_MAX, -1, INT64_MIN, 0}[i]));
  }
  EXPECT_EQ(Ints(RunSort("sort", {i64}, std::nullopt)),
            (std::vector<int64_t>{INT64_MIN, -1, 0, INT64_MAX}));
  TestArray u64 = Empty(DType::kUInt64, S({3}));
  u64.SetBits(0, ~uint64_t{0});
  u64.SetBits(1, 0);
  u64.SetBits(2, uint64_t{1} << 63);
  const TestArray su = RunSort("sort", {u64}, 0);
  EXPECT_EQ(su.Bits64(0), 0u);
  EXPECT_EQ(su.Bits64(1), uint64_t{1} << 63);
  EXPECT_EQ(su.Bits64(2), ~uint64_t{0});
  const TestArray b = MakeArray(DType::kBool, S({5}), {1, 0, 1, 0, 0});
  EXPECT_EQ(Ints(RunSort("argsort", {b}, 0)), (std::vector<int64_t>{1, 3, 4, 0, 2}));
  ExpectValues(RunSort("sort", {b}, 0), {0, 0, 0, 1, 1});
}

// A stable reference: the indices along each row sorted by value, ties in
// index order (the values have no NaN).
std::vector<int64_t> ReferenceArgsort(const TestArray& x, int64_t outer, int64_t n, int64_t inner) {
  std::vector<int64_t> out(x.size());
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      std::vector<int64_t> idx(n);
      std::iota(idx.begin(), idx.end(), 0);
      auto at = [&](int64_t j) { return x.At((o * n + j) * inner + i); };
      std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t c) { return at(a) < at(c); });
      for (int64_t j = 0; j < n; ++j) out[(o * n + j) * inner + i] = idx[j];
    }
  }
  return out;
}

TEST(HostSortTest, EveryDTypeAlongEveryAxisIsStable) {
  for (DType d : kAllDTypes) {
    SCOPED_TRACE(DTypeName(d));
    // Few distinct values, so ties are common.
    const TestArray x = RandomArray(d, S({3, 37, 5}), 7, -6, 6);
    for (int64_t axis : {0, 1, 2, -1}) {
      SCOPED_TRACE(axis);
      const int64_t ax = axis < 0 ? axis + 3 : axis;
      const int64_t dims[3] = {3, 37, 5};
      int64_t outer = 1, inner = 1;
      for (int k = 0; k < ax; ++k) outer *= dims[k];
      for (int k = ax + 1; k < 3; ++k) inner *= dims[k];
      const std::vector<int64_t> want = ReferenceArgsort(x, outer, dims[ax], inner);
      const TestArray got = RunSort("argsort", {x}, axis);
      EXPECT_EQ(got.dtype, DType::kInt64);
      EXPECT_EQ(Ints(got), want);
      const TestArray sorted = RunSort("sort", {x}, axis, ManyThreads());
      std::vector<double> values(x.size());
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t j = 0; j < dims[ax]; ++j) {
          for (int64_t i = 0; i < inner; ++i) {
            const int64_t at = (o * dims[ax] + j) * inner + i;
            values[at] = x.At((o * dims[ax] + want[at]) * inner + i);
          }
        }
      }
      ExpectValues(sorted, values);
    }
    const TestArray flat = RunSort("argsort", {x}, std::nullopt);
    EXPECT_EQ(flat.shape, S({3 * 37 * 5}));
    EXPECT_EQ(Ints(flat), ReferenceArgsort(x, 1, x.size(), 1));
  }
}

TEST(HostSortTest, ThreadedLongRowsMatchOneThread) {
  HostKernelOptions one;
  one.threads = 1;
  HostKernelOptions many;
  many.threads = 4;
  many.min_elements_per_thread = 1000;
  for (DType d : {DType::kFloat32, DType::kInt16, DType::kFloat64}) {
    SCOPED_TRACE(DTypeName(d));
    TestArray x = RandomArray(d, S({2, 50001}), 3, -300, 300);
    x.Set(17, kNaN);
    x.Set(50001 + 5, -0.0);
    EXPECT_EQ(Ints(RunSort("argsort", {x}, 1, many)), Ints(RunSort("argsort", {x}, 1, one)));
    EXPECT_EQ(Ints(RunSort("argsort", {x}, std::nullopt, many)),
              Ints(RunSort("argsort", {x}, std::nullopt, one)));
    const TestArray a = RunSort("sort", {x}, std::nullopt, many);
    EXPECT_EQ(a.bytes, RunSort("sort", {x}, std::nullopt, one).bytes);
    for (int64_t i = 1; i + 1 < a.size(); ++i) ASSERT_LE(a.At(i - 1), a.At(i)) << i;
  }
}

TEST(HostSortTest, EmptyAndZeroD) {
  const TestArray e = Empty(DType::kFloat32, S({0, 3}));
  EXPECT_EQ(RunSort("sort", {e}, 0).shape, S({0, 3}));
  EXPECT_EQ(RunSort("argsort", {e}, 1).shape, S({0, 3}));
  EXPECT_EQ(RunSort("sort", {e}, std::nullopt).shape, S({0}));
  const TestArray z = Scalar0d(DType::kInt32, 4);
  const TestArray flat = RunSort("sort", {z}, std::nullopt);
  EXPECT_EQ(flat.shape, S({1}));
  ExpectValues(flat, {4});
  EXPECT_EQ(Ints(RunSort("argsort", {z}, std::nullopt)), (std::vector<int64_t>{0}));
}

TestArray Search(const TestArray& a, const TestArray& v, const std::string& side,
                 bool weak = false) {
  AttrMap attrs;
  attrs["side"] = side;
  absl::StatusOr<TestArray> out =
      RunNode(SortNode("searchsorted", {a.type(), v.type(weak)}, attrs), {a, v});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *std::move(out) : TestArray{};
}

TEST(HostSearchSortedTest, LeftRightAndNaN) {
  const TestArray a = MakeArray(DType::kFloat32, S({7}), {-kInf, 1, 2, 2, 3, kNaN, kNaN});
  const TestArray v = MakeArray(DType::kFloat64, S({2, 4}), {2, 2.5, kNaN, -kInf, 0, 1, kInf, 5});
  const TestArray left = Search(a, v, "left");
  EXPECT_EQ(left.shape, S({2, 4}));
  EXPECT_EQ(Ints(left), (std::vector<int64_t>{2, 4, 5, 0, 1, 1, 5, 5}));
  EXPECT_EQ(Ints(Search(a, v, "right")), (std::vector<int64_t>{4, 4, 7, 1, 1, 2, 5, 5}));
  // -0.0 equals 0.0.
  const TestArray z = MakeArray(DType::kFloat16, S({3}), {-1, 0, 1});
  EXPECT_EQ(Ints(Search(z, Scalar0d(DType::kFloat16, -0.0), "left")), (std::vector<int64_t>{1}));
  EXPECT_EQ(Ints(Search(z, Scalar0d(DType::kFloat16, -0.0), "right")), (std::vector<int64_t>{2}));
}

TEST(HostSearchSortedTest, IntegersCompareInThePromotedDType) {
  const TestArray a = MakeArray(DType::kInt8, S({4}), {-100, 0, 100, 127});
  // A Python int 1000 against int8: compared in int64, past the end.
  EXPECT_EQ(Ints(Search(a, Scalar0d(DType::kInt64, 1000), "left", /*weak=*/true)),
            (std::vector<int64_t>{4}));
  EXPECT_EQ(Ints(Search(a, Scalar0d(DType::kInt64, -1000), "right", /*weak=*/true)),
            (std::vector<int64_t>{0}));
  TestArray u = Empty(DType::kUInt64, S({2}));
  u.SetBits(0, 0);
  u.SetBits(1, ~uint64_t{0});
  // uint64 against int64: float64, so -1 goes first.
  EXPECT_EQ(Ints(Search(u, MakeArray(DType::kInt64, S({2}), {-1, 5}), "left")),
            (std::vector<int64_t>{0, 1}));
  const TestArray b = MakeArray(DType::kBool, S({4}), {0, 0, 1, 1});
  EXPECT_EQ(Ints(Search(b, MakeArray(DType::kBool, S({2}), {1, 0}), "right")),
            (std::vector<int64_t>{4, 2}));
  const TestArray none = Empty(DType::kInt32, S({0}));
  EXPECT_EQ(Ints(Search(none, MakeArray(DType::kInt32, S({2}), {1, 2}), "left")),
            (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(Search(a, Empty(DType::kInt8, S({0, 2})), "left").shape, S({0, 2}));
}

}  // namespace
}  // namespace gpuflow::host_test
