// Compress steps' kernels (codegen_compress.cc): generated for the
// planner's take(a, flatnonzero(mask)) fusion, compiling with NVRTC for
// sm_90 (values on the device: tests/python/test_compress.py on the H200).
#include <string>
#include <vector>

#include "engine/cuda/codegen_select.h"
#include "engine/cuda/device_library.h"
#include "engine/cuda/nvrtc_compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/plan/row_graphs.h"

namespace gpuflow::cuda {
namespace {

using gpuflow::testing::RowGraphs;
using ::testing::HasSubstr;

TEST(CodegenCompressTest, MasksOfEveryKindCompile) {
  std::string program = kDeviceLibrary;
  int kernels = 0;
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kInt8, DType::kBool, DType::kFloat64,
                      DType::kUInt64}) {
    for (bool computed : {true, false}) {
      RowGraphs b({{"x", {dtype, {5000}}}, {"m", {DType::kBool, {5000}}}});
      const std::string m = computed ? b.Op("ne", {RowGraphs::A("x"), RowGraphs::S(0)}) : "";
      const std::string f = b.Op("flatnonzero", {computed ? RowGraphs::N(m) : RowGraphs::A("m")},
                                 {{"size", int64_t{17}}});
      const std::string out = b.Op("take", {RowGraphs::A("x"), RowGraphs::N(f)});
      auto [graph, plan] = b.Build({out});
      ASSERT_EQ(plan->steps.size(), 1u);
      auto k = GenerateCompressKernels(graph, plan->steps[0]);
      ASSERT_TRUE(k.ok()) << k.status();
      ASSERT_TRUE(k->has_value()) << plan->steps[0].description;
      EXPECT_EQ((*k)->n, 5000);
      EXPECT_EQ((*k)->size, 17);
      EXPECT_EQ((*k)->tiles, (5000 + kSelectTile - 1) / kSelectTile);
      EXPECT_EQ((*k)->names.size(), 3u);
      // x (and m, or the 0 literal by value).
      EXPECT_EQ((*k)->inputs.size(), 2u);
      EXPECT_THAT((*k)->source, HasSubstr("out[pos] = in"));
      // Each program names its kernels after the dtype and prologue: one
      // NVRTC program of all of them needs distinct names.
      std::string src = (*k)->source.substr(std::string(kDeviceLibrary).size());
      const std::string prefix = "gf_compress_";
      for (size_t at = src.find(prefix); at != std::string::npos; at = src.find(prefix, at + 1)) {
        src.replace(at, prefix.size(), "gf_c" + std::to_string(kernels) + "_");
      }
      program += src;
      ++kernels;
    }
  }
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> module = CompileToCubin(program, "compress.cu", options);
  ASSERT_TRUE(module.ok()) << module.status();
}

TEST(CodegenCompressTest, OtherShapeStepsAreNotCompress) {
  RowGraphs b({{"x", {DType::kFloat32, {4, 8}}}});
  const std::string out = b.Op("transpose", {RowGraphs::A("x")});
  auto [graph, plan] = b.Build({out});
  ASSERT_EQ(plan->steps.size(), 1u);
  auto k = GenerateCompressKernels(graph, plan->steps[0]);
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->has_value());
}

}  // namespace
}  // namespace gpuflow::cuda
