// matmul and dot against a naive float64 / wrapping-integer reference.
#include <cmath>
#include <cstdint>
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

// numpy.matmul's output shape, or an empty optional when the shapes do not
// multiply.
std::vector<int64_t> MatmulShape(const Shape& a, const Shape& b) {
  std::vector<int64_t> ad(a.dims().begin(), a.dims().end());
  std::vector<int64_t> bd(b.dims().begin(), b.dims().end());
  const bool a1 = ad.size() == 1;
  const bool b1 = bd.size() == 1;
  if (a1) ad.insert(ad.begin(), 1);
  if (b1) bd.push_back(1);
  std::vector<int64_t> batch;
  const size_t nb = std::max(ad.size(), bd.size()) - 2;
  for (size_t i = 0; i < nb; ++i) {
    const int64_t x = i + ad.size() - 2 >= nb ? ad[i + ad.size() - 2 - nb] : 1;
    const int64_t y = i + bd.size() - 2 >= nb ? bd[i + bd.size() - 2 - nb] : 1;
    batch.push_back(x == 1 ? y : x);
  }
  std::vector<int64_t> out = batch;
  if (!a1) out.push_back(ad[ad.size() - 2]);
  if (!b1) out.push_back(bd.back());
  return out;
}

// The naive reference, every operand value first rounded to `compute`
// (identity here: operands are already of that dtype).
std::vector<double> ReferenceMatmul(const TestArray& a, const TestArray& b, DType compute) {
  std::vector<int64_t> ad(a.shape.dims().begin(), a.shape.dims().end());
  std::vector<int64_t> bd(b.shape.dims().begin(), b.shape.dims().end());
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  const int64_t n = ad[ad.size() - 2];
  const int64_t k = ad.back();
  const int64_t m = bd.back();
  const size_t nb = std::max(ad.size(), bd.size()) - 2;
  std::vector<int64_t> batch;
  std::vector<int64_t> abatch(nb, 1);
  std::vector<int64_t> bbatch(nb, 1);
  for (size_t i = 0; i < nb; ++i) {
    if (i + ad.size() - 2 >= nb) abatch[i] = ad[i + ad.size() - 2 - nb];
    if (i + bd.size() - 2 >= nb) bbatch[i] = bd[i + bd.size() - 2 - nb];
    batch.push_back(abatch[i] == 1 ? bbatch[i] : abatch[i]);
  }
  int64_t batches = 1;
  for (int64_t x : batch) batches *= x;
  std::vector<double> out;
  for (int64_t bi = 0; bi < batches; ++bi) {
    // Batch index -> each operand's matrix index.
    int64_t rest = bi;
    int64_t am = 0;
    int64_t bm = 0;
    int64_t amul = 1;
    int64_t bmul = 1;
    for (int d = static_cast<int>(nb) - 1; d >= 0; --d) {
      const int64_t idx = rest % batch[d];
      rest /= batch[d];
      am += (abatch[d] == 1 ? 0 : idx) * amul;
      bm += (bbatch[d] == 1 ? 0 : idx) * bmul;
      amul *= abatch[d];
      bmul *= bbatch[d];
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        double acc = 0;
        uint64_t iacc = 0;
        bool bacc = false;
        for (int64_t p = 0; p < k; ++p) {
          const int64_t ai = am * n * k + i * k + p;
          const int64_t bj = bm * k * m + p * m + j;
          acc += a.At(ai) * b.At(bj);
          iacc += a.Bits64(ai) * b.Bits64(bj);
          bacc = bacc || (a.At(ai) != 0 && b.At(bj) != 0);
        }
        if (compute == DType::kBool) {
          out.push_back(bacc ? 1 : 0);
        } else if (IsInteger(compute)) {
          out.push_back(IsSigned(compute) ? static_cast<double>(WrapSigned(iacc, compute))
                                          : static_cast<double>(WrapUnsigned(iacc, compute)));
        } else {
          out.push_back(acc);
        }
      }
    }
  }
  return out;
}

absl::StatusOr<TestArray> Matmul(const std::string& op, const TestArray& a, const TestArray& b,
                                 DType d, HostKernelOptions options = {}) {
  return RunNode(MakeNode(op, {a.type(), b.type()}, {d, S(MatmulShape(a.shape, b.shape))}, d),
                 {a, b}, options);
}

TEST(HostLinalgTest, MatmulShapesAndDTypes) {
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {S({2, 3}), S({3, 4})},     {S({3}), S({3, 4})},      {S({2, 3}), S({3})},
      {S({5}), S({5})},           {S({1, 1}), S({1, 1})},   {S({2, 1, 3, 4}), S({5, 4, 2})},
      {S({3}), S({2, 3, 4})},     {S({2, 3, 4}), S({4})},   {S({4, 0}), S({0, 3})},
      {S({0, 3}), S({3, 2})},     {S({7, 33}), S({33, 9})}, {S({2, 2, 3}), S({1, 3, 2})},
      {S({64, 65}), S({65, 66})},
  };
  for (DType d : kAllDTypes) {
    for (const auto& [as, bs] : shapes) {
      const TestArray a = RandomArray(d, as, 91, -5, 5);
      const TestArray b = RandomArray(d, bs, 92, -5, 5);
      for (const HostKernelOptions& o : {HostKernelOptions{}, ManyThreads()}) {
        absl::StatusOr<TestArray> r = Matmul("matmul", a, b, d, o);
        ASSERT_THAT(r, IsOk()) << as.ToString() << " @ " << bs.ToString();
        ExpectValues(*r, ReferenceMatmul(a, b, d), 1,
                     std::string(DTypeName(d)) + " " + as.ToString() + " @ " + bs.ToString());
      }
      if (as.rank() <= 2 && bs.rank() <= 2) {
        absl::StatusOr<TestArray> r = Matmul("dot", a, b, d);
        ASSERT_THAT(r, IsOk());
        ExpectValues(*r, ReferenceMatmul(a, b, d), 1, "dot");
      }
    }
  }
}

TEST(HostLinalgTest, IntegerMatmulWrapsAndFloatAccumulatesWide) {
  // int8: 100 * 100 + 100 * 100 = 20000 wraps to 32.
  const TestArray a = MakeArray(DType::kInt8, S({1, 2}), {100, 100});
  const TestArray b = MakeArray(DType::kInt8, S({2, 1}), {100, 100});
  absl::StatusOr<TestArray> r = Matmul("matmul", a, b, DType::kInt8);
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {32});
  // float32: [1e8, 1, -1e8] . [1, 1, 1] is 1, not 0.
  const TestArray f = MakeArray(DType::kFloat32, S({3}), {1e8, 1, -1e8});
  const TestArray g = MakeArray(DType::kFloat32, S({3}), {1, 1, 1});
  r = Matmul("matmul", f, g, DType::kFloat32);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->shape, S({}));
  ExpectValues(*r, {1});
  // Mixed operand dtypes are converted to the compute dtype.
  const TestArray i = MakeArray(DType::kInt16, S({2}), {1, 2});
  const TestArray h = MakeArray(DType::kFloat16, S({2}), {0.5, 0.25});
  r = RunNode(MakeNode("matmul", {i.type(), h.type()}, {DType::kFloat32, S({})}, DType::kFloat32),
              {i, h});
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {1.0});
}

TEST(HostLinalgTest, DotWithScalarsAndErrors) {
  const TestArray s = Scalar0d(DType::kInt32, 3);
  const TestArray v = MakeArray(DType::kInt32, S({2, 2}), {1, 2, 3, 4});
  absl::StatusOr<TestArray> r = RunNode(
      MakeNode("dot", {s.type(), v.type()}, {DType::kInt32, v.shape}, DType::kInt32), {s, v});
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {3, 6, 9, 12});
  r = RunNode(MakeNode("dot", {s.type(), s.type()}, {DType::kInt32, S({})}, DType::kInt32), {s, s});
  ASSERT_THAT(r, IsOk());
  ExpectValues(*r, {9});
  EXPECT_THAT(
      RunNode(MakeNode("matmul", {s.type(), v.type()}, {DType::kInt32, v.shape}, DType::kInt32),
              {s, v}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("0-d")));
  const TestArray t = Empty(DType::kInt32, S({2, 2, 2}));
  EXPECT_THAT(
      RunNode(MakeNode("dot", {t.type(), v.type()}, {DType::kInt32, S({2, 2, 2})}, DType::kInt32),
              {t, v}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank")));
  // A wrong output shape is refused rather than written out of bounds.
  EXPECT_THAT(
      RunNode(MakeNode("matmul", {v.type(), v.type()}, {DType::kInt32, S({2, 3})}, DType::kInt32),
              {v, v}),
      StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace gpuflow::host_test
