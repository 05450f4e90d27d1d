// arange, random_uniform and random_normal as generated kernels: the launch
// words (the CPU reference's parameters, bit for bit) and one NVRTC compile
// for sm_90 of every kernel (no GPU needed). Values are checked on the GPU by
// the conformance suite (test_arange_matches_numpy, test_random_draws_are_philox).
#include <cstring>
#include <string>
#include <vector>

#include "engine/cuda/codegen.h"
#include "engine/cuda/device_library.h"
#include "engine/cuda/nvrtc_compiler.h"
#include "engine/host/host_kernels.h"
#include "engine/ir/validate.h"
#include "engine/plan/plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpuflow::cuda {
namespace {

using ::testing::HasSubstr;

uint64_t Bits(double v) {
  uint64_t w = 0;
  std::memcpy(&w, &v, sizeof w);
  return w;
}

// The kernel for a graph of the single creation node `op`.
std::optional<CreationKernel> Generate(const std::string& op, DType dtype, AttrMap attrs) {
  attrs["dtype"] = dtype;
  Graph g;
  g.nodes.push_back(Node{.id = std::string(1, 'n'), .op = op, .inputs = {}, .attrs = attrs});
  absl::StatusOr<ValidatedGraph> v =
      ValidateGraph(g,
                    [](const std::string&) -> absl::StatusOr<ValueType> {
                      return absl::NotFoundError("no arrays");
                    },
                    {});
  EXPECT_TRUE(v.ok()) << v.status();
  if (!v.ok()) return std::nullopt;
  absl::StatusOr<std::shared_ptr<const Plan>> plan = BuildPlan(*v, {0}, {});
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return std::nullopt;
  return GenerateCreation(*v, (*plan)->steps.at(0));
}

TEST(CodegenCreationTest, ArangeTakesStartAndStartPlusStep) {
  std::optional<CreationKernel> k =
      Generate("arange", DType::kFloat32, {{"start", 0.5}, {"stop", 10.0}, {"step", 0.25}});
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->name, "gf_arange_float32");
  // [out] [n] [start] [start + step] [unused] [unused]
  EXPECT_THAT(k->words, ::testing::ElementsAre(0, 38, Bits(0.5), Bits(0.75), 0, 0));
}

TEST(CodegenCreationTest, UniformCarriesTheReferencesLargestDraw) {
  std::optional<CreationKernel> k = Generate(
      "random_uniform", DType::kFloat16,
      {{"shape", std::vector<int64_t>{5, 7}}, {"seed", int64_t{-3}}, {"low", -1.0}, {"high", 3.0}});
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->name, "gf_random_uniform_float16");
  ASSERT_EQ(k->words.size(), 6u);
  EXPECT_EQ(k->words[1], 35u);
  EXPECT_EQ(k->words[2], Bits(-1.0));
  EXPECT_EQ(k->words[3], Bits(3.0));
  // float16's largest value below 3 is 3 - 2^-9.
  EXPECT_EQ(k->words[4], Bits(RandomUniformTop(-1.0, 3.0, DType::kFloat16)));
  EXPECT_EQ(k->words[4], Bits(3.0 - 0x1p-9));
  EXPECT_EQ(k->words[5], static_cast<uint64_t>(int64_t{-3}));
}

TEST(CodegenCreationTest, NormalUsesBoxMullerOnTwoUniforms) {
  std::optional<CreationKernel> k = Generate(
      "random_normal", DType::kFloat64,
      {{"shape", std::vector<int64_t>{4}}, {"seed", int64_t{9}}, {"mean", 1.0}, {"std", 2.0}});
  ASSERT_TRUE(k.has_value());
  EXPECT_THAT(k->kernel_source, HasSubstr("gf::uniform53(w.w[2], w.w[3])"));
  EXPECT_THAT(k->kernel_source, HasSubstr("sqrt(-2.0 * log(u1))"));
}

TEST(CodegenCreationTest, EveryCreationKernelCompilesForSm90) {
  std::string program = kDeviceLibrary;
  int kernels = 0;
  for (const DTypeInfo& info : AllDTypes()) {
    const DType dtype = info.dtype;
    if (IsComplex(dtype)) continue;  // arange refuses complex; random is float only
    std::optional<CreationKernel> k = Generate(
        "arange", dtype, {{"start", int64_t{0}}, {"stop", int64_t{2}}, {"step", int64_t{1}}});
    ASSERT_TRUE(k.has_value()) << DTypeName(dtype);
    program += k->kernel_source;
    ++kernels;
    if (!IsFloat(dtype)) continue;
    for (const char* op : {"random_uniform", "random_normal"}) {
      const bool normal = std::string(op) == "random_normal";
      std::optional<CreationKernel> r = Generate(op, dtype,
                                                 {{"shape", std::vector<int64_t>{3}},
                                                  {"seed", int64_t{1}},
                                                  {normal ? "mean" : "low", 0.0},
                                                  {normal ? "std" : "high", 1.0}});
      ASSERT_TRUE(r.has_value()) << op << " " << DTypeName(dtype);
      program += r->kernel_source;
      ++kernels;
    }
  }
  EXPECT_EQ(kernels, kNumDTypes - 2 + 4 * 2);  // no complex arange
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> module = CompileToCubin(program, "creation.cu", options);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_GT(module->cubin.size(), 0u);
}

}  // namespace
}  // namespace gpuflow::cuda
