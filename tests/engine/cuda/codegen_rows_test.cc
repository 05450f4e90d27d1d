// Row programs' kernels (codegen_rows.cc): their layouts, and every case
// compiling with NVRTC for sm_90 (no GPU needed; the values are checked
// against NumPy on the device by tests/python/test_row_programs.py).
#include <string>
#include <vector>

#include "engine/cuda/codegen.h"
#include "engine/cuda/device_library.h"
#include "engine/cuda/nvrtc_compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/plan/row_graphs.h"

namespace gpuflow::cuda {
namespace {

using gpuflow::testing::RowGraphs;
using ::testing::HasSubstr;

class RowKernels {
 public:
  // Plans `out` of `b` as one row step and generates its kernel.
  // `per_thread_16bit`: GenerateRows's elements_per_thread_16bit.
  RowsKernel Generate(const RowGraphs& b, const std::string& out, int per_thread_16bit = 16,
                      RowsLayout layout = RowsLayout::kAuto) {
    auto [graph, plan] = b.Build({out});
    EXPECT_NE(plan, nullptr);
    if (plan == nullptr) return {};
    EXPECT_EQ(plan->steps.size(), 1u);
    EXPECT_EQ(plan->steps.back().kind, StepKind::kRows) << plan->steps.back().description;
    auto k = GenerateRows(graph, plan->steps.back(), "rows" + std::to_string(count_++),
                          per_thread_16bit, layout);
    EXPECT_TRUE(k.ok()) << k.status();
    if (!k.ok() || !k->has_value()) {
      ADD_FAILURE() << "no kernel for " << plan->steps.back().description;
      return {};
    }
    EXPECT_EQ((*k)->source.find("<cub/"), std::string::npos);
    program_ += (*k)->kernel_source;
    return **k;
  }

  void ExpectAllCompile() const {
    CompileOptions options;
    options.arch = 90;
    absl::StatusOr<CompiledModule> module = CompileToCubin(program_, "rows.cu", options);
    ASSERT_TRUE(module.ok()) << module.status();
    EXPECT_GT(module->cubin.size(), 0u);
  }

 private:
  std::string program_ = kDeviceLibrary;
  int count_ = 0;
};

RowGraphs Rows2d(int64_t m, int64_t l, DType dtype) {
  return RowGraphs({{"x", {dtype, {m, l}}}, {"g", {dtype, {l}}}, {"b", {dtype, {l}}}});
}

TEST(CodegenRowsTest, LayerNormInEveryFloatDtypeAndLayout) {
  RowKernels kernels;
  for (DType dtype : {DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
    for (int64_t l : {4096, 16384, 999, 40}) {
      RowGraphs b = Rows2d(16, l, dtype);
      const RowsKernel k = kernels.Generate(b, b.LayerNorm("x", "g", "b"));
      EXPECT_EQ(k.rows, 16);
      EXPECT_EQ(k.row_length, l);
      // 16-byte vectors when rows are whole vectors; at most 16 elements a
      // thread (64 for narrow floats' 8-wide vectors of short rows).
      const int want_vec = l % (16 / static_cast<int>(ItemSize(dtype))) == 0
                               ? std::min(8, 16 / static_cast<int>(ItemSize(dtype)))
                               : 1;
      EXPECT_EQ(k.vector_width, want_vec) << DTypeName(dtype) << " " << l;
      EXPECT_EQ(k.inputs.size(), 4u);  // x, g, b and the epsilon
      // bfloat16's division by the row's deviation is a multiply by its
      // reciprocal (exact for bfloat16 operands); other dtypes divide.
      EXPECT_EQ(k.kernel_source.find("gf::div_by(") != std::string::npos, dtype == DType::kBFloat16)
          << DTypeName(dtype);
      // Rows that would need 1024-thread blocks in registers (16384
      // elements at 16 a thread) of at most 32 KiB are streamed in blocks
      // of 256; others are read once, into registers.
      EXPECT_EQ(k.streamed, l == 16384 && ItemSize(dtype) == 2) << DTypeName(dtype) << " " << l;
      if (k.streamed) {
        EXPECT_EQ(k.block, 256);
        EXPECT_THAT(k.kernel_source, ::testing::Not(HasSubstr("c0[")));
        EXPECT_THAT(k.kernel_source, ::testing::Not(HasSubstr(" f1[")));
      } else {
        EXPECT_LE(k.block, 1024);
        EXPECT_GE(k.block * k.vector_width * 1LL, (l + 15) / 16);
        EXPECT_THAT(k.kernel_source, HasSubstr("c0["));
      }
      // g and b (broadcast over the rows) are read a vector at a time when
      // rows are whole vectors (x too when streamed).
      if (want_vec > 1) {
        EXPECT_THAT(k.kernel_source, HasSubstr("colv2."));
        EXPECT_THAT(k.kernel_source, HasSubstr("colv3."));
        if (k.streamed) {
          EXPECT_THAT(k.kernel_source, HasSubstr("colv0."));
        }
      }
    }
  }
  kernels.ExpectAllCompile();
}

TEST(CodegenRowsTest, LayoutsOfCommonShapes) {
  RowKernels kernels;
  RowGraphs a = Rows2d(16384, 4096, DType::kFloat32);
  const RowsKernel ln = kernels.Generate(a, a.LayerNorm("x", "g", "b"));
  EXPECT_EQ(ln.block, 256);
  EXPECT_EQ(ln.vector_width, 4);
  RowGraphs s = Rows2d(32768, 2048, DType::kFloat32);
  const RowsKernel sd =
      kernels.Generate(s, s.Reduce("std", RowGraphs::A("x"), {-1}, false, {{"ddof", 1.0}}));
  EXPECT_EQ(sd.block, 128);
  // Two passes over the registers, NumPy's dof.
  EXPECT_THAT(sd.kernel_source, HasSubstr("gf::var_finish"));
  RowGraphs h = Rows2d(4096, 16384, DType::kBFloat16);
  const RowsKernel bf = kernels.Generate(h, h.LayerNorm("x", "g", "b"));
  EXPECT_TRUE(bf.streamed);
  EXPECT_EQ(bf.block, 256);
  EXPECT_EQ(bf.vector_width, 8);
  // The register layout when asked for: a 1024-thread block a row.
  const RowsKernel regs =
      kernels.Generate(h, h.LayerNorm("x", "g", "b"), 16, RowsLayout::kRegisters);
  EXPECT_FALSE(regs.streamed);
  EXPECT_EQ(regs.block, 1024);
  // More elements a thread for 2-byte rows (--rows_elements_per_thread_16bit);
  // float32 rows keep 16.
  EXPECT_EQ(kernels.Generate(h, h.LayerNorm("x", "g", "b"), 32).block, 512);
  EXPECT_EQ(kernels.Generate(h, h.LayerNorm("x", "g", "b"), 64).block, 256);
  EXPECT_EQ(kernels.Generate(a, a.LayerNorm("x", "g", "b"), 64).block, 256);
  kernels.ExpectAllCompile();
}

TEST(CodegenRowsTest, EveryReductionAndIntegerDtypes) {
  RowKernels kernels;
  for (DType dtype : {DType::kInt32, DType::kUInt8, DType::kInt64, DType::kBool, DType::kFloat32}) {
    for (const char* op : {"sum", "prod", "min", "max", "mean", "any", "all"}) {
      RowGraphs b = Rows2d(5, 77, dtype);
      const std::string r = b.Reduce(op, RowGraphs::A("x"), {-1}, true);
      // A full value compared with its row's reduction, then reduced again.
      const std::string c = b.Op("ge", {RowGraphs::A("x"), RowGraphs::N(r)});
      const std::string w = b.Op("where", {RowGraphs::N(c), RowGraphs::A("x"), RowGraphs::A("g")});
      kernels.Generate(b, b.Reduce("sum", RowGraphs::N(w), {-1}, false));
    }
  }
  for (DType dtype : {DType::kFloat16, DType::kFloat64}) {
    for (const char* op : {"var", "std"}) {
      RowGraphs b = Rows2d(3, 300, dtype);
      kernels.Generate(b, b.Reduce(op, RowGraphs::A("x"), {-1}, true, {{"ddof", 2.0}}));
    }
  }
  kernels.ExpectAllCompile();
}

TEST(CodegenRowsTest, LongRowsAreStreamed) {
  RowKernels kernels;
  {
    // float32 rows of 16384 (64 KiB) stay in registers: streamed, the rows
    // in flight would crowd L2.
    RowGraphs b = Rows2d(4, 16384, DType::kFloat32);
    EXPECT_FALSE(kernels.Generate(b, b.LayerNorm("x", "g", "b")).streamed);
  }
  for (DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    // The planner's longest rows (PlanOptions::max_row_length).
    RowGraphs b = Rows2d(4, 16384, dtype);
    // var reads its row twice when streamed (no registers to keep it in).
    const RowsKernel sd =
        kernels.Generate(b, b.Reduce("std", RowGraphs::A("x"), {-1}, false, {{"ddof", 1.0}}));
    EXPECT_TRUE(sd.streamed) << DTypeName(dtype);
    EXPECT_EQ(sd.block, 256);
    EXPECT_THAT(sd.kernel_source, HasSubstr("gf::var_finish"));
    EXPECT_THAT(sd.kernel_source, ::testing::Not(HasSubstr("double x")));
    // Rows of no whole vectors stream element by element.
    RowGraphs odd = Rows2d(3, 16383, dtype);
    const RowsKernel c = kernels.Generate(odd, odd.Center(RowGraphs::A("x")));
    EXPECT_TRUE(c.streamed) << DTypeName(dtype);
    EXPECT_EQ(c.vector_width, 1);
    // Shorter rows streamed when asked: the same program, read again.
    RowGraphs s = Rows2d(64, 1000, dtype);
    const RowsKernel ln = kernels.Generate(s, s.LayerNorm("x", "g", "b"), 16, RowsLayout::kStream);
    EXPECT_TRUE(ln.streamed);
    EXPECT_THAT(ln.kernel_source, ::testing::Not(HasSubstr("c0[")));
  }
  kernels.ExpectAllCompile();
}

TEST(CodegenRowsTest, BFloat16DivisionsByRowValuesAndScalarsUseTheReciprocal) {
  RowKernels kernels;
  RowGraphs b = Rows2d(8, 4096, DType::kBFloat16);
  // (x - mean) / 3, x / max(x), and max(x) / x (a full divisor divides).
  const std::string c = b.Center(RowGraphs::A("x"));
  const RowsKernel by_scalar = kernels.Generate(b, b.Op("div", {RowGraphs::N(c), RowGraphs::S(3)}));
  EXPECT_THAT(by_scalar.kernel_source, HasSubstr("gf::div_by("));
  const std::string mx = b.Reduce("max", RowGraphs::A("x"), {-1}, true);
  const RowsKernel by_row = kernels.Generate(b, b.Op("div", {RowGraphs::A("x"), RowGraphs::N(mx)}));
  EXPECT_THAT(by_row.kernel_source, HasSubstr("gf::div_by("));
  const RowsKernel of_row = kernels.Generate(b, b.Op("div", {RowGraphs::N(mx), RowGraphs::A("x")}));
  EXPECT_THAT(of_row.kernel_source, ::testing::Not(HasSubstr("gf::div_by(")));
  EXPECT_THAT(of_row.kernel_source, HasSubstr("gf::op_div<float>("));
  kernels.ExpectAllCompile();
}

TEST(CodegenRowsTest, BroadcastInputsAndSeveralTrailingAxes) {
  RowKernels kernels;
  // Rows of (7, 11) under (3, 5): inputs broadcast along rows ((7, 11)),
  // along columns ((5, 1, 1)) and both ((3, 1, 7, 1)).
  RowGraphs b({{"x", {DType::kFloat32, {3, 5, 7, 11}}},
               {"cols", {DType::kFloat32, {7, 11}}},
               {"rows", {DType::kFloat32, {5, 1, 1}}},
               {"mixed", {DType::kFloat64, {3, 1, 7, 1}}}});
  const std::string m = b.Reduce("mean", RowGraphs::A("x"), {2, 3}, true);
  const std::string shifted = b.Op("add", {RowGraphs::N(m), RowGraphs::A("rows")});
  const std::string c = b.Op("sub", {RowGraphs::A("x"), RowGraphs::N(shifted)});
  const std::string t = b.Op("mul", {RowGraphs::N(c), RowGraphs::A("cols")});
  const std::string u = b.Op("add", {RowGraphs::N(t), RowGraphs::A("mixed")});
  const std::string mx = b.Reduce("max", RowGraphs::N(u), {2, 3}, true);
  const RowsKernel k = kernels.Generate(b, b.Op("div", {RowGraphs::N(u), RowGraphs::N(mx)}));
  EXPECT_EQ(k.rows, 15);
  EXPECT_EQ(k.row_length, 77);
  EXPECT_EQ(k.vector_width, 1);  // 77 elements: no whole vectors
  kernels.ExpectAllCompile();
}

}  // namespace
}  // namespace gpuflow::cuda
