// The CUB sorts (cub_sort.h) against the host kernels, byte for byte: every
// dtype, one long row (radix sort), many rows along the last and a middle
// axis (segmented sort), NaN of either sign, signed zeros and ties. Needs a
// device (skips without one).
#include "engine/cuda/cub_sort.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/host/host_kernels.h"
#include "engine/ir/half.h"
#include "engine/ir/op_registry.h"
#include "gtest/gtest.h"

namespace gpuflow::cuda {
namespace {

bool HaveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

SortKeyKind KindFor(DType d) {
  switch (KindOf(d)) {
    case DTypeKind::kBool:
      return SortKeyKind::kBool;
    case DTypeKind::kSigned:
      return SortKeyKind::kSigned;
    case DTypeKind::kUnsigned:
      return SortKeyKind::kUnsigned;
    case DTypeKind::kFloat:
    case DTypeKind::kComplex:
      break;
  }
  if (d == DType::kFloat16) return SortKeyKind::kFloat16;
  if (d == DType::kBFloat16) return SortKeyKind::kBFloat16;
  return d == DType::kFloat32 ? SortKeyKind::kFloat32 : SortKeyKind::kFloat64;
}

// Random elements with ties; floats get NaN of both signs and signed zeros
// (`specials`: 1 NaN, 2 -NaN, 4 -0.0).
std::vector<std::byte> Elements(DType d, int64_t n, uint64_t seed, int specials = 7) {
  std::mt19937_64 rng(seed);
  const int64_t size = ItemSize(d);
  std::vector<std::byte> out(n * size);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = static_cast<int64_t>(rng() % 17) - 8;
    std::byte* p = out.data() + i * size;
    const uint64_t pick = rng() % 40;
    if (d == DType::kBool) {
      *p = static_cast<std::byte>(v > 0);
    } else if (!IsFloat(d)) {
      std::memcpy(p, &v, size);  // little-endian truncation
    } else {
      double x = v * 0.5;
      if (pick == 0 && (specials & 1)) x = std::numeric_limits<double>::quiet_NaN();
      if (pick == 1 && (specials & 2)) x = -std::numeric_limits<double>::quiet_NaN();
      if (pick == 2 && (specials & 4)) x = -0.0;
      if (d == DType::kFloat16) {
        const uint16_t b = Half::FromDouble(x).bits;
        std::memcpy(p, &b, 2);
      } else if (d == DType::kBFloat16) {
        const uint16_t b = BFloat16::FromDouble(x).bits;
        std::memcpy(p, &b, 2);
      } else if (d == DType::kFloat32) {
        const float f = static_cast<float>(x);
        std::memcpy(p, &f, 4);
      } else {
        std::memcpy(p, &x, 8);
      }
    }
  }
  return out;
}

std::vector<std::byte> OnHost(const std::string& op, DType d, const Shape& shape,
                              std::optional<int64_t> axis, const std::vector<std::byte>& in) {
  ValidatedNode node;
  node.id = "s";
  node.op = OpRegistry::Default().Find(op);
  node.inputs.push_back({ValueRef::Kind::kArray, 0});
  node.input_types = {{d, shape, false}};
  if (axis) node.attrs["axis"] = *axis;
  absl::StatusOr<InferredNode> t = node.op->infer(node.input_types, node.attrs);
  EXPECT_TRUE(t.ok()) << t.status();
  node.type = *t;
  std::vector<std::byte> out(node.type.output.shape.num_elements() *
                             ItemSize(node.type.output.dtype));
  HostConstView view{d, shape, in.data()};
  absl::Status s =
      RunNodeOnHost(node, {view}, {node.type.output.dtype, node.type.output.shape, out.data()}, {});
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

std::vector<std::byte> OnDevice(bool indices, DType d, int64_t outer, int64_t length, int64_t inner,
                                const std::vector<std::byte>& in) {
  DeviceSortArgs args;
  args.kind = KindFor(d);
  args.key_bytes = static_cast<int>(ItemSize(d));
  args.indices = indices;
  args.outer = outer;
  args.length = length;
  args.inner = inner;
  const size_t out_bytes = outer * length * inner * (indices ? 8 : ItemSize(d));
  void* din = nullptr;
  void* dout = nullptr;
  void* scratch = nullptr;
  size_t bytes = 0;
  EXPECT_EQ(cudaMalloc(&din, in.size()), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&dout, out_bytes), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(din, in.data(), in.size(), cudaMemcpyHostToDevice), cudaSuccess);
  args.in = din;
  args.out = dout;
  DeviceSortCall c = DeviceSortScratchBytes(args, &bytes);
  EXPECT_EQ(c.error, cudaSuccess) << c.call;
  EXPECT_EQ(cudaMalloc(&scratch, bytes), cudaSuccess);
  c = DeviceSort(args, scratch, bytes, nullptr);
  EXPECT_EQ(c.error, cudaSuccess) << c.call;
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<std::byte> out(out_bytes);
  EXPECT_EQ(cudaMemcpy(out.data(), dout, out_bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(din);
  cudaFree(dout);
  cudaFree(scratch);
  return out;
}

TEST(CubSortTest, MatchesTheHostKernelsByteForByte) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  struct Case {
    std::vector<int64_t> dims;
    std::optional<int64_t> axis;
  };
  // Contiguous rows of up to 4096 sort a row per block (each block shape
  // and its edges: 512, 1024, 2048, 4096 elements); longer rows and other
  // axes take CUB's segmented or device-wide sorts.
  const std::vector<Case> cases = {{{100003}, std::nullopt},
                                   {{37, 129}, 1},
                                   {{37, 129}, 0},
                                   {{3, 50, 7}, 1},
                                   {{1, 1}, 0},
                                   {{4096, 3}, 1},
                                   {{5, 512}, 1},
                                   {{3, 513}, 1},
                                   {{2, 1024}, 1},
                                   {{2, 1500}, 1},
                                   {{2, 2048}, 1},
                                   {{3, 4096}, 1},
                                   {{2, 4097}, 1},
                                   {{4096}, std::nullopt}};
  for (DType d : {DType::kBool, DType::kInt8, DType::kInt16, DType::kInt32, DType::kInt64,
                  DType::kUInt8, DType::kUInt16, DType::kUInt32, DType::kUInt64, DType::kFloat16,
                  DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(DTypeName(d)) + " " + std::to_string(c.dims.size()));
      const Shape shape = *Shape::Create(c.dims);
      const std::vector<std::byte> in = Elements(d, shape.num_elements(), 11);
      int64_t outer = 1, inner = 1, length = shape.num_elements();
      if (c.axis) {
        length = c.dims[*c.axis];
        for (int64_t k = 0; k < *c.axis; ++k) outer *= c.dims[k];
        for (size_t k = *c.axis + 1; k < c.dims.size(); ++k) inner *= c.dims[k];
      }
      EXPECT_EQ(OnDevice(true, d, outer, length, inner, in),
                OnHost("argsort", d, shape, c.axis, in));
      EXPECT_EQ(OnDevice(false, d, outer, length, inner, in), OnHost("sort", d, shape, c.axis, in));
    }
  }
}

// One contiguous row of float32/float64 takes CUB's own float sort, then
// fixes what NumPy orders otherwise (NaNs last whatever their sign, zeros
// and NaNs in input order) only when the row has such values: every mix.
TEST(CubSortTest, FlatFloatRowsWithEveryMixOfSpecialValues) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  for (DType d : {DType::kFloat32, DType::kFloat64}) {
    for (int specials = 0; specials < 8; ++specials) {
      for (int64_t n : {1, 2, 3, 255, 257, 70001}) {
        SCOPED_TRACE(std::string(DTypeName(d)) + " specials " + std::to_string(specials) + " n " +
                     std::to_string(n));
        const Shape shape = *Shape::Create({n});
        const std::vector<std::byte> in = Elements(d, n, 5 + n, specials);
        EXPECT_EQ(OnDevice(false, d, 1, n, 1, in), OnHost("sort", d, shape, std::nullopt, in));
      }
    }
    // Only NaNs of one sign, and NaNs of both signs with nothing else.
    for (double nan :
         {std::numeric_limits<double>::quiet_NaN(), -std::numeric_limits<double>::quiet_NaN()}) {
      const int64_t size = ItemSize(d);
      std::vector<std::byte> in(5 * size);
      for (int i = 0; i < 5; ++i) {
        const double x = i == 3 ? -nan : nan;
        if (d == DType::kFloat32) {
          const float f = static_cast<float>(x);
          std::memcpy(in.data() + i * size, &f, 4);
        } else {
          std::memcpy(in.data() + i * size, &x, 8);
        }
      }
      const Shape shape = *Shape::Create({5});
      EXPECT_EQ(OnDevice(false, d, 1, 5, 1, in), OnHost("sort", d, shape, std::nullopt, in));
    }
  }
}

SearchElement ElementFor(DType d) {
  constexpr SearchElement kOrder[] = {
      SearchElement::kBool,    SearchElement::kInt8,     SearchElement::kInt16,
      SearchElement::kInt32,   SearchElement::kInt64,    SearchElement::kUInt8,
      SearchElement::kUInt16,  SearchElement::kUInt32,   SearchElement::kUInt64,
      SearchElement::kFloat16, SearchElement::kBFloat16, SearchElement::kFloat32,
      SearchElement::kFloat64};
  constexpr DType kDTypes[] = {DType::kBool,   DType::kInt8,    DType::kInt16,    DType::kInt32,
                               DType::kInt64,  DType::kUInt8,   DType::kUInt16,   DType::kUInt32,
                               DType::kUInt64, DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                               DType::kFloat64};
  for (size_t i = 0; i < std::size(kDTypes); ++i) {
    if (kDTypes[i] == d) return kOrder[i];
  }
  return SearchElement::kFloat64;
}

TEST(CubSortTest, SearchSortedMatchesTheHostKernel) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  const std::vector<std::pair<DType, DType>> pairs = {
      {DType::kFloat32, DType::kFloat32}, {DType::kFloat16, DType::kFloat64},
      {DType::kInt8, DType::kInt64},      {DType::kUInt64, DType::kInt64},
      {DType::kBool, DType::kBool},       {DType::kBFloat16, DType::kUInt8},
      {DType::kInt32, DType::kFloat32}};
  for (const auto& [ad, vd] : pairs) {
    for (const char* side : {"left", "right"}) {
      SCOPED_TRACE(std::string(DTypeName(ad)) + "/" + std::string(DTypeName(vd)) + " " + side);
      const Shape as = *Shape::Create({301});
      const Shape vs = *Shape::Create({7, 11});
      const std::vector<std::byte> a = OnHost("sort", ad, as, 0, Elements(ad, 301, 5));
      const std::vector<std::byte> v = Elements(vd, 77, 6);
      ValidatedNode node;
      node.id = "s";
      node.op = OpRegistry::Default().Find("searchsorted");
      node.inputs = {{ValueRef::Kind::kArray, 0}, {ValueRef::Kind::kArray, 1}};
      node.input_types = {{ad, as, false}, {vd, vs, false}};
      node.attrs["side"] = std::string(side);
      absl::StatusOr<InferredNode> t = node.op->infer(node.input_types, node.attrs);
      ASSERT_TRUE(t.ok()) << t.status();
      node.type = *t;
      std::vector<int64_t> want(77);
      ASSERT_TRUE(RunNodeOnHost(node, {{ad, as, a.data()}, {vd, vs, v.data()}},
                                {DType::kInt64, vs, reinterpret_cast<std::byte*>(want.data())}, {})
                      .ok());
      void *da = nullptr, *dv = nullptr, *dout = nullptr, *scratch = nullptr;
      ASSERT_EQ(cudaMalloc(&da, a.size()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&dv, v.size()), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&dout, 77 * 8), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice), cudaSuccess);
      ASSERT_EQ(cudaMemcpy(dv, v.data(), v.size(), cudaMemcpyHostToDevice), cudaSuccess);
      DeviceSearchArgs args;
      args.sorted_type = ElementFor(ad);
      args.values_type = ElementFor(vd);
      const DTypeKind k = KindOf(node.type.compute_dtype);
      args.compute = k == DTypeKind::kBool       ? SearchCompute::kBool
                     : k == DTypeKind::kSigned   ? SearchCompute::kInt64
                     : k == DTypeKind::kUnsigned ? SearchCompute::kUInt64
                                                 : SearchCompute::kFloat64;
      args.right = std::string(side) == "right";
      args.sorted = da;
      args.n = 301;
      args.values = dv;
      args.m = 77;
      args.out = static_cast<int64_t*>(dout);
      ASSERT_EQ(cudaMalloc(&scratch, DeviceSearchScratchBytes(args)), cudaSuccess);
      DeviceSortCall c = DeviceSearchSorted(args, scratch, nullptr);
      EXPECT_EQ(c.error, cudaSuccess) << c.call;
      std::vector<int64_t> got(77);
      ASSERT_EQ(cudaMemcpy(got.data(), dout, 77 * 8, cudaMemcpyDeviceToHost), cudaSuccess);
      EXPECT_EQ(got, want);
      cudaFree(da);
      cudaFree(dv);
      cudaFree(dout);
      cudaFree(scratch);
    }
  }
}

}  // namespace
}  // namespace gpuflow::cuda
