// Scan kernels (cumsum, cumprod): the layout each shape gets, how launches
// are split, and NVRTC compiles of every kernel for sm_90 (no GPU needed).
// Values are checked on the GPU by the conformance suite.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/cuda/codegen.h"
#include "engine/cuda/device_library.h"
#include "engine/cuda/nvrtc_compiler.h"
#include "engine/ir/validate.h"
#include "engine/plan/plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpuflow::cuda {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr int64_t kH200Sms = 132;

// cumsum/cumprod of an array x of `shape` and `dtype` over `axis` (absent:
// flattened), with an optional output dtype.
std::optional<ScanKernel> Scan(const std::string& op, DType dtype, std::vector<int64_t> shape,
                               std::optional<int64_t> axis,
                               std::optional<DType> out_dtype = std::nullopt,
                               const std::string& name = "gf_scan") {
  Graph g;
  Node n;
  n.id = "s";
  n.op = op;
  n.inputs = {Input::Array("x")};
  if (axis.has_value()) n.attrs["axis"] = *axis;
  if (out_dtype.has_value()) n.attrs["dtype"] = *out_dtype;
  g.nodes.push_back(n);
  ArrayTypeLookup lookup = [&](const std::string&) -> absl::StatusOr<ValueType> {
    return ValueType{dtype, *Shape::Create(shape), false};
  };
  absl::StatusOr<ValidatedGraph> v = ValidateGraph(g, lookup, {});
  EXPECT_TRUE(v.ok()) << v.status();
  if (!v.ok()) return std::nullopt;
  absl::StatusOr<std::shared_ptr<const Plan>> plan = BuildPlan(*v, {0}, {});
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return std::nullopt;
  EXPECT_EQ((*plan)->steps.size(), 1u);
  EXPECT_EQ((*plan)->steps[0].kind, StepKind::kScan);
  absl::StatusOr<std::optional<ScanKernel>> k = GenerateScan(*v, (*plan)->steps[0], name);
  EXPECT_TRUE(k.ok()) << k.status();
  if (!k.ok()) return std::nullopt;
  return *std::move(k);
}

TEST(CodegenScanTest, RowsFollowTheAxis) {
  std::optional<ScanKernel> last = Scan("cumsum", DType::kFloat32, {4, 5, 300}, 2);
  ASSERT_TRUE(last);
  EXPECT_EQ(last->strategy, ScanKernel::Strategy::kBlockRows);
  EXPECT_EQ(last->rows, 20);
  EXPECT_EQ(last->length, 300);
  EXPECT_EQ(last->stride, 1);
  EXPECT_EQ(last->items, 2);

  std::optional<ScanKernel> middle = Scan("cumsum", DType::kFloat32, {4, 5, 300}, 1);
  ASSERT_TRUE(middle);
  EXPECT_EQ(middle->strategy, ScanKernel::Strategy::kThreadRows);
  EXPECT_EQ(middle->rows, 1200);
  EXPECT_EQ(middle->length, 5);
  EXPECT_EQ(middle->stride, 300);

  std::optional<ScanKernel> flat = Scan("cumprod", DType::kInt8, {4, 5, 300}, std::nullopt);
  ASSERT_TRUE(flat);
  EXPECT_EQ(flat->strategy, ScanKernel::Strategy::kBlockRows);
  EXPECT_EQ(flat->rows, 1);
  EXPECT_EQ(flat->length, 6000);
  EXPECT_EQ(flat->items, 8);

  // Short contiguous rows: a thread each, in the reference's order.
  std::optional<ScanKernel> short_rows = Scan("cumsum", DType::kFloat64, {4, 7}, 1);
  ASSERT_TRUE(short_rows);
  EXPECT_EQ(short_rows->strategy, ScanKernel::Strategy::kThreadRows);
  EXPECT_THAT(short_rows->kernel_source, Not(HasSubstr("cub::")));

  // A trailing size-1 axis keeps the rows contiguous.
  std::optional<ScanKernel> trailing_one = Scan("cumsum", DType::kFloat32, {3, 1000, 1}, 1);
  ASSERT_TRUE(trailing_one);
  EXPECT_EQ(trailing_one->strategy, ScanKernel::Strategy::kBlockRows);
  EXPECT_EQ(trailing_one->stride, 1);
}

TEST(CodegenScanTest, AccumulatorsFollowTheComputeDtype) {
  std::optional<ScanKernel> f32 = Scan("cumsum", DType::kFloat32, {100}, 0);
  ASSERT_TRUE(f32);
  EXPECT_THAT(f32->kernel_source, HasSubstr("gf::in<double, float>"));
  EXPECT_EQ(f32->accumulator_bytes, 8);
  EXPECT_FALSE(f32->rounds_each_step);
  // float16 accumulates in float16, rounding every step (HalfScans... below).
  std::optional<ScanKernel> f16 = Scan("cumsum", DType::kFloat16, {100}, 0);
  ASSERT_TRUE(f16);
  EXPECT_THAT(f16->kernel_source, HasSubstr("gf::in<f16, f16>"));
  EXPECT_EQ(f16->accumulator_bytes, 2);
  // int8 sums in int64 by default; with dtype=int8 it still accumulates in
  // 64 bits and wraps when stored, as the reference does.
  std::optional<ScanKernel> i8 = Scan("cumsum", DType::kInt8, {100}, 0, DType::kInt8);
  ASSERT_TRUE(i8);
  EXPECT_THAT(i8->kernel_source, HasSubstr("gf::in<i64, i8>"));
  EXPECT_THAT(i8->kernel_source, HasSubstr("gf::cv<i8>"));
  std::optional<ScanKernel> u16 = Scan("cumprod", DType::kUInt16, {100}, 0);
  ASSERT_TRUE(u16);
  EXPECT_THAT(u16->kernel_source, HasSubstr("gf::op_mul<u64>"));
  std::optional<ScanKernel> b = Scan("cumsum", DType::kBool, {100}, 0, DType::kBool);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->accumulator_bytes, 1);
  EXPECT_THAT(b->kernel_source, HasSubstr("gf::op_add<bool>"));
}

TEST(CodegenScanTest, EmptyScansFallBack) {
  std::optional<ScanKernel> k = Scan("cumsum", DType::kFloat32, {3, 0}, 1);
  EXPECT_FALSE(k.has_value());
}

TEST(CodegenScanTest, FewLongRowsAreSplit) {
  // The flattened 2^28 elements: parts of whole tiles, about eight blocks
  // per SM, and a carry scan short enough for one block.
  std::optional<ScanKernel> flat = Scan("cumsum", DType::kFloat32, {1 << 14, 1 << 14}, {});
  ASSERT_TRUE(flat);
  const ScanLaunch launch = ScanLaunchFor(*flat, kH200Sms);
  const int64_t tile = int64_t{flat->block} * flat->items;
  EXPECT_GT(launch.chunks, 4 * kH200Sms);
  EXPECT_LE(launch.chunks, 8 * kH200Sms);
  EXPECT_EQ(launch.chunk % tile, 0);
  EXPECT_GE(launch.chunk * launch.chunks, int64_t{1} << 28);
  EXPECT_LT((launch.chunks - 1) * launch.chunk, int64_t{1} << 28);
  EXPECT_EQ(launch.blocks, launch.chunks);
  EXPECT_EQ(launch.carry_blocks, 1);

  // Many rows fill the device alone.
  std::optional<ScanKernel> many = Scan("cumsum", DType::kFloat32, {8192, 8192}, 1);
  ASSERT_TRUE(many);
  EXPECT_EQ(ScanLaunchFor(*many, kH200Sms).chunks, 1);
  EXPECT_EQ(ScanLaunchFor(*many, kH200Sms).blocks, 8192);

  // Rows of a few tiles are not worth splitting.
  std::optional<ScanKernel> short_row = Scan("cumsum", DType::kFloat32, {5000}, 0);
  ASSERT_TRUE(short_row);
  EXPECT_EQ(ScanLaunchFor(*short_row, kH200Sms).chunks, 1);

  // Few strided columns: parts of at least 32 elements, a thread each.
  std::optional<ScanKernel> columns = Scan("cumsum", DType::kInt32, {100000, 3}, 0);
  ASSERT_TRUE(columns);
  EXPECT_EQ(columns->strategy, ScanKernel::Strategy::kThreadRows);
  const ScanLaunch column_launch = ScanLaunchFor(*columns, kH200Sms);
  EXPECT_GT(column_launch.chunks, 1);
  EXPECT_GE(column_launch.chunk, 32);
  EXPECT_GE(column_launch.chunk * column_launch.chunks, 100000);
  EXPECT_LE(column_launch.blocks, 32 * kH200Sms);

  // Many columns: a thread each, whole.
  std::optional<ScanKernel> wide = Scan("cumsum", DType::kInt32, {300, 1 << 20}, 0);
  ASSERT_TRUE(wide);
  EXPECT_EQ(ScanLaunchFor(*wide, kH200Sms).chunks, 1);
}

// Regression: float16 and bfloat16 scans accumulated in double and were
// split into parallel parts, where NumPy rounds every partial result to the
// dtype (not associative). They now run each row whole and in order, one
// correctly rounded half-precision step at a time.
TEST(CodegenScanTest, HalfScansRunEachRowInOrderRoundingEveryStep) {
  struct Case {
    const char* op;
    DType in;
    std::vector<int64_t> shape;
    std::optional<int64_t> axis;
    std::optional<DType> out;
    ScanKernel::Strategy strategy;
    const char* step;
    const char* load;
  };
  using enum ScanKernel::Strategy;
  const std::vector<Case> cases = {
      // The flattened 2^28 elements: one block, not split.
      {"cumsum", DType::kFloat16, {1 << 14, 1 << 14}, {}, {}, kSerialRows, "__hadd_rn", "f16"},
      {"cumsum", DType::kFloat16, {5000}, 0, {}, kSerialRows, "__hadd_rn", "f16"},
      {"cumprod", DType::kBFloat16, {3, 5000}, 1, {}, kSerialRows, "__hmul_rn", "bf16"},
      // Few strided columns: a thread each, whole.
      {"cumsum", DType::kFloat16, {100000, 3}, 0, {}, kThreadRows, "__hadd_rn", "f16"},
      {"cumprod", DType::kFloat16, {4, 7}, 1, {}, kThreadRows, "__hmul_rn", "f16"},
      // dtype=float16 gives other inputs a float16 accumulator.
      {"cumsum", DType::kFloat32, {1000}, 0, DType::kFloat16, kSerialRows, "__hadd_rn", "f16"},
      {"cumsum", DType::kInt8, {300, 7}, 0, DType::kBFloat16, kThreadRows, "__hadd_rn", "bf16"},
  };
  for (const Case& c : cases) {
    const std::string what = absl::StrCat(c.op, " ", DTypeName(c.in));
    std::optional<ScanKernel> k = Scan(c.op, c.in, c.shape, c.axis, c.out);
    ASSERT_TRUE(k) << what;
    EXPECT_TRUE(k->rounds_each_step) << what;
    EXPECT_EQ(k->strategy, c.strategy) << what;
    EXPECT_THAT(k->kernel_source, HasSubstr(c.step)) << what;
    EXPECT_THAT(k->kernel_source, HasSubstr(std::string(c.load) + " acc = ")) << what;
    EXPECT_THAT(k->kernel_source, Not(HasSubstr("double"))) << what;
    EXPECT_THAT(k->kernel_source, Not(HasSubstr("BlockScan"))) << what;
    EXPECT_TRUE(k->split_source.empty()) << what;
    const ScanLaunch launch = ScanLaunchFor(*k, kH200Sms);
    EXPECT_EQ(launch.chunks, 1) << what;
    EXPECT_GE(launch.chunk, k->length) << what;
    if (c.strategy == kSerialRows) {
      EXPECT_EQ(launch.blocks, k->rows) << what;
    } else {
      EXPECT_GE(launch.blocks * k->block, k->rows) << what;
    }
  }
  // float32 keeps its parallel, split scan (accumulated in double).
  std::optional<ScanKernel> f32 = Scan("cumsum", DType::kFloat32, {1 << 14, 1 << 14}, {});
  ASSERT_TRUE(f32);
  EXPECT_EQ(f32->strategy, kBlockRows);
  EXPECT_GT(ScanLaunchFor(*f32, kH200Sms).chunks, 1);
}

// Every scan kernel for every input dtype, both ops and every strategy (block
// rows with 1 and 8 items per thread, thread rows, and float16/bfloat16's
// serial rows and in-order thread rows), with their split
// kernels, in two NVRTC programs: the thread-row scans, and the rest. No
// source includes CUB (gf::BlockScan and BlockExchange are the device
// library's: CUB's headers cost NVRTC over a second per kernel).
TEST(CodegenScanTest, EveryScanKernelCompilesForSm90) {
  std::string light = kDeviceLibrary;
  std::string heavy = kDeviceLibrary;
  int kernels = 0;
  std::set<std::pair<ScanKernel::Strategy, int>> layouts;
  auto add = [&](const std::string& op, DType dtype, std::vector<int64_t> shape,
                 std::optional<int64_t> axis, std::optional<DType> out = std::nullopt) {
    std::optional<ScanKernel> k = Scan(op, dtype, shape, axis, out, "s" + std::to_string(kernels));
    ASSERT_TRUE(k) << op << " " << DTypeName(dtype);
    kernels += 3;
    layouts.insert({k->strategy, k->items});
    ASSERT_EQ(k->source.find("<cub/"), std::string::npos);
    ASSERT_EQ(k->split_source.find("<cub/"), std::string::npos);
    if (k->strategy == ScanKernel::Strategy::kThreadRows) {
      light += k->kernel_source;
    } else {
      heavy += k->kernel_source;
    }
    heavy += k->split_kernel_source;
  };
  for (const DTypeInfo& info : AllDTypes()) {
    if (IsComplex(info.dtype)) continue;  // complex: codegen_complex_test.cc
    for (const char* op : {"cumsum", "cumprod"}) {
      add(op, info.dtype, {3, 5000}, 1);  // block rows, 8 items
      add(op, info.dtype, {300, 7}, 0);   // thread rows, strided
    }
  }
  // Narrow and bool accumulators, and block rows of one item per thread.
  add("cumsum", DType::kInt16, {40, 100}, 1, DType::kInt8);
  add("cumprod", DType::kFloat64, {40, 100}, 1, DType::kFloat16);
  add("cumsum", DType::kBool, {7, 9}, std::nullopt, DType::kBool);
  add("cumprod", DType::kUInt8, {9, 100}, 1, DType::kBool);
  EXPECT_TRUE(layouts.contains({ScanKernel::Strategy::kBlockRows, 8}));
  EXPECT_TRUE(layouts.contains({ScanKernel::Strategy::kBlockRows, 1}));
  EXPECT_TRUE(layouts.contains({ScanKernel::Strategy::kThreadRows, 1}));
  EXPECT_TRUE(layouts.contains({ScanKernel::Strategy::kSerialRows, 1}));
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> light_module = CompileToCubin(light, "scans_light.cu", options);
  ASSERT_TRUE(light_module.ok()) << light_module.status();
  absl::StatusOr<CompiledModule> heavy_module = CompileToCubin(heavy, "scans.cu", options);
  ASSERT_TRUE(heavy_module.ok()) << heavy_module.status();
  EXPECT_GT(kernels, 13 * 2 * 2 * 3);
}

}  // namespace
}  // namespace gpuflow::cuda
