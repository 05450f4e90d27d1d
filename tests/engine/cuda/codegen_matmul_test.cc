// matmul and dot as generated tiled kernels: the launch words and grids
// (shapes, 1-D operands, broadcast batches, grid limits) and NVRTC compiles
// of the kernels for sm_90 across dtypes (no GPU needed). Values are
// checked on the GPU by the conformance suite.
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/cuda/codegen.h"
#include "engine/cuda/device_library.h"
#include "engine/cuda/nvrtc_compiler.h"
#include "engine/ir/validate.h"
#include "engine/plan/plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::cuda {
namespace {

using ::gpuflow::testing::IsOk;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

struct Prepared {
  ValidatedGraph graph;
  std::shared_ptr<const Plan> plan;
};

// One node `op` over arrays a0 and a1 of the given dtypes and shapes.
Prepared Prepare(const std::string& op, DType a_dtype, std::vector<int64_t> a_dims, DType b_dtype,
                 std::vector<int64_t> b_dims) {
  const std::vector<std::pair<DType, std::vector<int64_t>>> arrays = {{a_dtype, std::move(a_dims)},
                                                                      {b_dtype, std::move(b_dims)}};
  Graph g;
  g.nodes.push_back(
      Node{.id = "n", .op = op, .inputs = {Input::Array("a0"), Input::Array("a1")}, .attrs = {}});
  ArrayTypeLookup lookup = [&](const std::string& name) -> absl::StatusOr<ValueType> {
    const auto& [dtype, dims] = arrays.at(std::stoi(name.substr(1)));
    return ValueType{dtype, *Shape::Create(dims), false};
  };
  absl::StatusOr<ValidatedGraph> v = ValidateGraph(g, lookup, {});
  EXPECT_THAT(v, IsOk());
  absl::StatusOr<std::shared_ptr<const Plan>> plan = BuildPlan(*v, {0}, {});
  EXPECT_THAT(plan, IsOk());
  return {*std::move(v), *plan};
}

Prepared Matmul(DType dtype, std::vector<int64_t> a_dims, std::vector<int64_t> b_dims) {
  return Prepare("matmul", dtype, std::move(a_dims), dtype, std::move(b_dims));
}

// The step's kernel (an empty kernel when there is none, which fails the
// test).
MatmulKernel Generate(const Prepared& p, const std::string& name = "gf_matmul") {
  absl::StatusOr<std::optional<MatmulKernel>> k =
      GenerateMatmul(p.graph, p.plan->steps.at(0), name);
  EXPECT_THAT(k, IsOk());
  if (!k.ok()) return {};
  EXPECT_TRUE(k->has_value());
  return k->value_or(MatmulKernel{});
}

// words: [a] [b] [out] [n] [k] [m] [batches] [dims] [a strides] [b strides]

TEST(CodegenMatmulTest, PlainInt32MatrixProductIsOneTile) {
  const MatmulKernel k = Generate(Matmul(DType::kInt32, {3, 4}, {4, 5}));
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 3, 4, 5, 1));
  EXPECT_EQ(k.grid_x, 1);
  EXPECT_EQ(k.grid_y, 1);
  EXPECT_EQ(k.grid_z, 1);
  EXPECT_EQ(k.block_x * k.block_y, 256);
  EXPECT_EQ(k.name, "gf_matmul");
  EXPECT_THAT(k.source, HasSubstr("extern \"C\" __global__"));
  EXPECT_THAT(k.source, HasSubstr("unsigned long long w[7]"));
  // Integers accumulate in 64 bits, wrapping, and are converted once.
  EXPECT_THAT(k.source, HasSubstr("gf::wadd(acc, gf::wmul("));
  EXPECT_THAT(k.source, HasSubstr("gf::cv<i32>(acc)"));
}

TEST(CodegenMatmulTest, GridCoversRowAndColumnTiles) {
  const MatmulKernel k = Generate(Matmul(DType::kInt32, {129, 257}, {257, 65}));
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 129, 257, 65, 1));
  EXPECT_EQ(k.grid_x, 5);  // ceil(65 / 16)
  EXPECT_EQ(k.grid_y, 9);  // ceil(129 / 16)
  EXPECT_EQ(k.grid_z, 1);
}

TEST(CodegenMatmulTest, VectorTimesMatrixIsOneRow) {
  const MatmulKernel k = Generate(Matmul(DType::kFloat32, {4}, {4, 5}));
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 1, 4, 5, 1));
}

TEST(CodegenMatmulTest, MatrixTimesVectorIsOneColumn) {
  const MatmulKernel k = Generate(Matmul(DType::kFloat32, {3, 4}, {4}));
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 3, 4, 1, 1));
}

TEST(CodegenMatmulTest, DotOfVectorsIsOneElement) {
  const MatmulKernel k = Generate(Prepare("dot", DType::kInt32, {4}, DType::kInt32, {4}), "gf_dot");
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 1, 4, 1, 1));
  EXPECT_EQ(k.name, "gf_dot");
  EXPECT_THAT(k.source, HasSubstr("void __launch_bounds__(256) gf_dot("));
}

TEST(CodegenMatmulTest, DotOfMatrixAndVector) {
  const MatmulKernel k = Generate(Prepare("dot", DType::kInt32, {3, 4}, DType::kInt32, {4}));
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 3, 4, 1, 1));
}

TEST(CodegenMatmulTest, BatchesBroadcastOnBothSides) {
  // (2, 1, 3, 4) @ (1, 5, 4, 2): batch (2, 5); a steps 3 * 4 elements along
  // the first batch dim and is broadcast along the second, b the reverse.
  const MatmulKernel k = Generate(Matmul(DType::kInt32, {2, 1, 3, 4}, {1, 5, 4, 2}));
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 3, 4, 2, 10, /*dims*/ 2, 5, /*a*/ 12, 0, /*b*/ 0, 8));
  EXPECT_EQ(k.grid_z, 10);
  EXPECT_THAT(k.source, HasSubstr("unsigned long long w[13]"));
}

TEST(CodegenMatmulTest, BatchOnOneSideMergesIntoOneDimension) {
  // (2, 3, 3, 4) @ (4, 5): six a matrices 12 elements apart, one b.
  const MatmulKernel k = Generate(Matmul(DType::kFloat64, {2, 3, 3, 4}, {4, 5}));
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 3, 4, 5, 6, /*dims*/ 6, /*a*/ 12, /*b*/ 0));
  EXPECT_EQ(k.grid_z, 6);
  // A vector against a stack of matrices: b carries the batch.
  const MatmulKernel v = Generate(Matmul(DType::kInt64, {4}, {3, 4, 2}));
  EXPECT_THAT(v.words, ElementsAre(0, 0, 0, 1, 4, 2, 3, /*dims*/ 3, /*a*/ 0, /*b*/ 8));
}

TEST(CodegenMatmulTest, MixedDtypesConvertToTheComputeDtypeAndAccumulateInDouble) {
  const MatmulKernel k = Generate(Prepare("matmul", DType::kInt8, {3, 4}, DType::kFloat32, {4, 5}));
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 3, 4, 5, 1));
  EXPECT_THAT(k.source, HasSubstr("const i8* __restrict__ a"));
  EXPECT_THAT(k.source, HasSubstr("const float* __restrict__ b"));
  EXPECT_THAT(k.source, HasSubstr("gf::in<double, float>(am["));
  EXPECT_THAT(k.source, HasSubstr("__shared__ double ta"));
  EXPECT_THAT(k.source, HasSubstr("gf::cv<float>(acc)"));
}

TEST(CodegenMatmulTest, BoolIsOrOfAnds) {
  const MatmulKernel k = Generate(Matmul(DType::kBool, {3, 4}, {4, 5}));
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 3, 4, 5, 1));
  EXPECT_THAT(k.source, HasSubstr("acc = acc || (ta[ty][q] && tb[q][tx]);"));
  EXPECT_THAT(k.source, HasSubstr("(u8)gf::cv<bool>(acc)"));
}

TEST(CodegenMatmulTest, EmptyInnerDimensionStillLaunchesAndGivesZeros) {
  const MatmulKernel k = Generate(Matmul(DType::kInt32, {3, 0}, {0, 4}));
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 3, 0, 4, 1));
  EXPECT_EQ(k.grid_x, 1);
  EXPECT_EQ(k.grid_y, 1);
}

TEST(CodegenMatmulTest, GridStaysWithinTheDeviceLimits) {
  // Kernels loop over what the grid does not cover.
  const MatmulKernel tall = Generate(Matmul(DType::kFloat32, {16 * 70000 + 3, 2}, {2, 1}));
  EXPECT_EQ(tall.grid_y, 65535);
  const MatmulKernel many = Generate(Matmul(DType::kFloat32, {70001, 1, 2}, {2, 1}));
  EXPECT_EQ(many.words[6], 70001u);
  EXPECT_EQ(many.grid_z, 65535);
}

TEST(CodegenMatmulTest, ScalarDotIsAnElementwiseProduct) {
  // dot(0-d, (3, 5)): a thread per output element, the scalar read at 0.
  const MatmulKernel k = Generate(Prepare("dot", DType::kInt32, {}, DType::kInt8, {3, 5}));
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 15));
  EXPECT_EQ(k.grid_x, 1);
  EXPECT_EQ(k.block_x, 256);
  EXPECT_EQ(k.block_y, 1);
  EXPECT_THAT(k.source, HasSubstr("gf::in<i64, i32>(a[0])"));
  EXPECT_THAT(k.source, HasSubstr("gf::in<i64, i32>(b[i])"));
  EXPECT_THAT(k.source, HasSubstr("gf::wmul(x, y)"));
}

TEST(CodegenMatmulTest, OtherStepsAreNotMatmulKernels) {
  const Prepared add = Prepare("add", DType::kInt32, {3}, DType::kInt32, {3});
  absl::StatusOr<std::optional<MatmulKernel>> k = GenerateMatmul(add.graph, add.plan->steps.at(0));
  ASSERT_THAT(k, IsOk());
  EXPECT_FALSE(k->has_value());
}

TEST(CodegenMatmulTest, KernelsCompileForSm90) {
  struct Case {
    DType a, b;
    std::vector<int64_t> a_dims, b_dims;
  };
  const std::vector<int64_t> m34 = {3, 4}, m45 = {4, 5};
  std::vector<Case> cases;
  for (DType d : {DType::kInt8, DType::kInt32, DType::kInt64, DType::kUInt8, DType::kUInt64,
                  DType::kBool, DType::kBFloat16, DType::kFloat64}) {
    cases.push_back({d, d, m34, m45});
  }
  cases.push_back({DType::kFloat16, DType::kFloat32, m34, m45});
  cases.push_back({DType::kInt8, DType::kFloat32, m34, m45});
  cases.push_back({DType::kBool, DType::kInt32, m34, m45});
  // Batch ranks 1 and 2.
  cases.push_back({DType::kInt32, DType::kInt32, {2, 3, 4}, {4}});
  cases.push_back({DType::kFloat32, DType::kFloat32, {2, 1, 3, 4}, {1, 5, 4, 2}});
  // dot with a 0-d operand, either side, every real dtype's class.
  for (DType d : {DType::kBool, DType::kInt8, DType::kUInt64, DType::kFloat16, DType::kBFloat16,
                  DType::kFloat32, DType::kFloat64}) {
    cases.push_back({d, DType::kInt16, {}, {7}});
    cases.push_back({DType::kFloat32, d, {2, 3}, {}});
  }
  cases.push_back({DType::kInt64, DType::kInt64, {}, {}});
  // One translation unit (one NVRTC compile), each kernel under its own name.
  std::string program = kDeviceLibrary;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const bool scalar = c.a_dims.empty() || c.b_dims.empty();
    const MatmulKernel k =
        Generate(Prepare(scalar ? "dot" : "matmul", c.a, c.a_dims, c.b, c.b_dims),
                 "gf_matmul_" + std::to_string(i));
    ASSERT_EQ(k.source.compare(0, std::strlen(kDeviceLibrary), kDeviceLibrary), 0);
    program += k.source.substr(std::strlen(kDeviceLibrary));
  }
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> m = CompileToCubin(program, "matmul.cu", options);
  EXPECT_THAT(m, IsOk());
}

}  // namespace
}  // namespace gpuflow::cuda
