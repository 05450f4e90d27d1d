// Generated CUDA source for every elementwise op and dtype compiles with
// NVRTC for sm_90. No GPU needed: this runs in CI. Kernels are batched into a
// few NVRTC programs (one per input dtype) to keep the compile time down.
#include "engine/cuda/codegen.h"

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/cuda/device_library.h"
#include "engine/cuda/nvrtc_compiler.h"
#include "engine/ir/op_registry.h"
#include "engine/ir/validate.h"
#include "engine/plan/plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpuflow::cuda {
namespace {

using ::testing::HasSubstr;

const char* const kUnary[] = {"neg",        "abs",   "sign",  "square",      "sqrt",
                              "rsqrt",      "exp",   "log",   "log1p",       "expm1",
                              "sin",        "cos",   "tanh",  "sigmoid",     "gelu",
                              "erf",        "floor", "ceil",  "round",       "relu",
                              "reciprocal", "isnan", "isinf", "logical_not", "bitwise_not"};
const char* const kBinary[] = {
    "add",         "sub",         "mul",        "div",         "floordiv",    "mod",
    "pow",         "maximum",     "minimum",    "atan2",       "eq",          "ne",
    "lt",          "le",          "gt",         "ge",          "logical_and", "logical_or",
    "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "gcd",         "lcm"};

// Validates and plans `graph` over arrays x (shape_x) and y (shape_y) of
// `dtype`; empty when the registry rejects it (e.g. neg of bool). Without
// row programs (codegen_rows_test.cc has those): these tests are about the
// reduction and softmax generators, which take the rows too long for them.
std::optional<std::pair<ValidatedGraph, std::shared_ptr<const Plan>>> Prepare(
    const Graph& graph, DType dtype, std::vector<int64_t> shape_x, std::vector<int64_t> shape_y) {
  ArrayTypeLookup lookup = [&](const std::string& name) -> absl::StatusOr<ValueType> {
    return ValueType{dtype, *Shape::Create(name == "x" ? shape_x : shape_y), false};
  };
  absl::StatusOr<ValidatedGraph> v = ValidateGraph(graph, lookup, {});
  if (!v.ok()) return std::nullopt;
  absl::StatusOr<std::shared_ptr<const Plan>> plan =
      BuildPlan(*v, {static_cast<int>(v->nodes.size()) - 1}, PlanOptions{.max_row_length = 0});
  EXPECT_TRUE(plan.ok()) << plan.status();
  return std::make_pair(*std::move(v), *plan);
}

Node MakeNode(const std::string& id, const std::string& op, std::vector<Input> inputs) {
  Node n;
  n.id = id;
  n.op = op;
  n.inputs = std::move(inputs);
  return n;
}

TEST(CodegenTest, EveryElementwiseOpAndDtypeCompilesForSm90) {
  int compiled_kernels = 0;
  for (const DTypeInfo& info : AllDTypes()) {
    if (IsComplex(info.dtype)) continue;  // complex: codegen_complex_test.cc
    std::string program = kDeviceLibrary;
    int kernels = 0;
    auto add = [&](const Graph& g, std::vector<int64_t> sx, std::vector<int64_t> sy) {
      auto prepared = Prepare(g, info.dtype, sx, sy);
      if (!prepared) return;
      for (const Step& step : prepared->second->steps) {
        ASSERT_EQ(step.kind, StepKind::kElementwise);
        absl::StatusOr<ElementwiseKernel> k =
            GenerateElementwise(prepared->first, step, "k" + std::to_string(kernels++));
        ASSERT_TRUE(k.ok()) << k.status();
        program += k->kernel_source;
      }
    };
    for (const char* op : kUnary) {
      Graph g;
      g.nodes.push_back(MakeNode("y", op, {Input::Array("x")}));
      add(g, {1000}, {});
    }
    for (const char* op : kBinary) {
      Graph g;  // contiguous, vectorised
      g.nodes.push_back(MakeNode("y", op, {Input::Array("x"), Input::Array("y")}));
      add(g, {4096}, {4096});
      Graph b;  // broadcast, with a weak scalar
      b.nodes.push_back(MakeNode("t", op, {Input::Array("x"), Input::Array("y")}));
      b.nodes.push_back(
          MakeNode("u", "mul", {Input::Node("t"), Input::FromScalar(Scalar::Int(3))}));
      add(b, {7, 1, 5}, {3, 1});
    }
    Graph ternary;
    ternary.nodes.push_back(MakeNode("c", "gt", {Input::Array("x"), Input::Array("y")}));
    ternary.nodes.push_back(
        MakeNode("w", "where", {Input::Node("c"), Input::Array("x"), Input::Array("y")}));
    ternary.nodes.push_back(MakeNode(
        "k", "clip",
        {Input::Node("w"), Input::FromScalar(Scalar::Int(0)), Input::FromScalar(Scalar::Int(5))}));
    add(ternary, {33}, {33});
    for (const DTypeInfo& to : AllDTypes()) {
      if (IsComplex(to.dtype)) continue;
      Graph cast;
      Node n = MakeNode("c", "cast", {Input::Array("x")});
      n.attrs["dtype"] = to.dtype;
      cast.nodes.push_back(n);
      add(cast, {9}, {});
      if (ItemSize(to.dtype) != info.itemsize) continue;
      Graph bits;  // the array's own bytes, and a value computed in the kernel
      Node direct = MakeNode("b", "bitcast", {Input::Array("x")});
      direct.attrs["dtype"] = to.dtype;
      bits.nodes.push_back(direct);
      bits.nodes.push_back(MakeNode("t", "add", {Input::Array("x"), Input::Array("y")}));
      Node computed = MakeNode("c", "bitcast", {Input::Node("t")});
      computed.attrs["dtype"] = to.dtype;
      bits.nodes.push_back(computed);
      bits.nodes.push_back(MakeNode("s", "add", {Input::Node("b"), Input::Node("c")}));
      add(bits, {4096}, {4096});
    }
    CompileOptions options;
    options.arch = 90;
    absl::StatusOr<CompiledModule> module =
        CompileToCubin(program, std::string(info.name) + ".cu", options);
    ASSERT_TRUE(module.ok()) << info.name << ": " << module.status();
    EXPECT_GT(module->cubin.size(), 0u);
    compiled_kernels += kernels;
  }
  EXPECT_GT(compiled_kernels, 13 * 60);
}

// Every reduction strategy and op, every dtype, with a fused prologue and
// epilogue, plus softmax/log_softmax: one NVRTC program (CUB is heavy).
TEST(CodegenTest, ReductionsAndSoftmaxCompileForSm90) {
  std::string program = kDeviceLibrary;
  int kernels = 0;
  const char* const ops[] = {"sum", "prod", "min", "max", "mean", "any", "all"};
  const std::vector<std::vector<int64_t>> axes_cases = {{}, {1}, {0}, {0, 2}, {0, 1, 2}};
  std::set<ReductionKernel::Strategy> strategies;
  for (const DTypeInfo& info : AllDTypes()) {
    if (IsComplex(info.dtype)) continue;  // complex: codegen_complex_test.cc
    for (const char* op : ops) {
      for (const auto& axes : axes_cases) {
        if (axes.empty() && std::string(op) != "sum") continue;
        Graph g;
        g.nodes.push_back(MakeNode("a", "abs", {Input::Array("x")}));
        Node r = MakeNode("r", op, {Input::Node("a")});
        if (!axes.empty()) r.attrs["axes"] = axes;
        g.nodes.push_back(r);
        g.nodes.push_back(
            MakeNode("e", "mul", {Input::Node("r"), Input::FromScalar(Scalar::Int(2))}));
        auto prepared = Prepare(g, info.dtype, {6, 7, 9}, {});
        if (!prepared) continue;
        ASSERT_EQ(prepared->second->steps.size(), 1u) << op;
        auto k = GenerateReduction(prepared->first, prepared->second->steps[0],
                                   "r" + std::to_string(kernels++));
        ASSERT_TRUE(k.ok()) << k.status();
        ASSERT_TRUE(k->has_value()) << op << " " << info.name;
        strategies.insert((*k)->strategy);
        // Block reductions are the device library's: no CUB header, whose
        // parsing alone costs NVRTC over a second per kernel.
        ASSERT_EQ((*k)->source.find("<cub/"), std::string::npos) << op;
        program += (*k)->kernel_source;
      }
    }
    if (IsFloat(info.dtype)) {
      for (const char* op : {"softmax", "log_softmax"}) {
        Graph g;
        g.nodes.push_back(
            MakeNode("a", "mul", {Input::Array("x"), Input::FromScalar(Scalar::Int(2))}));
        g.nodes.push_back(MakeNode("s", op, {Input::Node("a")}));
        g.nodes.push_back(MakeNode("e", "add", {Input::Node("s"), Input::Array("y")}));
        auto prepared = Prepare(g, info.dtype, {5, 3000}, {5, 3000});
        ASSERT_TRUE(prepared);
        ASSERT_EQ(prepared->second->steps.size(), 1u);
        auto k = GenerateSoftmax(prepared->first, prepared->second->steps[0],
                                 "s" + std::to_string(kernels++));
        ASSERT_TRUE(k.ok()) << k.status();
        ASSERT_TRUE(k->has_value());
        ASSERT_EQ((*k)->source.find("<cub/"), std::string::npos) << op;
        program += (*k)->kernel_source;
      }
    }
  }
  EXPECT_EQ(strategies.size(), 3u);  // inner, outer and general all generated
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> module = CompileToCubin(program, "reductions.cu", options);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_GT(kernels, 13 * 25);
}

TEST(CodegenTest, ReductionStrategiesFollowTheLayout) {
  auto strategy = [](std::vector<int64_t> shape, std::vector<int64_t> axes) {
    Graph g;
    Node r = MakeNode("r", "sum", {Input::Array("x")});
    r.attrs["axes"] = axes;
    g.nodes.push_back(r);
    auto prepared = Prepare(g, DType::kFloat32, shape, {});
    auto k = GenerateReduction(prepared->first, prepared->second->steps[0]);
    return (*k)->strategy;
  };
  using S = ReductionKernel::Strategy;
  EXPECT_EQ(strategy({4096, 65536}, {1}), S::kInner);
  EXPECT_EQ(strategy({4096, 65536}, {0}), S::kOuter);
  EXPECT_EQ(strategy({256, 256, 256}, {0, 1, 2}), S::kInner);
  EXPECT_EQ(strategy({4, 5, 6}, {0, 2}), S::kGeneral);
  EXPECT_EQ(strategy({4, 1, 6}, {0, 1}), S::kOuter);  // size-1 dims do not count
}

// Generates reduction `op` of x (6, 7, 9) into `program`: over `axes`
// (argmin/argmax: the first; absent: everything), with a fused prologue and
// epilogue when `fused`. Returns the strategy.
ReductionKernel::Strategy AddReduction(const char* op, DType dtype,
                                       std::optional<std::vector<int64_t>> axes, bool fused,
                                       int* kernels, std::string* program) {
  Graph g;
  if (fused) g.nodes.push_back(MakeNode("a", "abs", {Input::Array("x")}));
  Node r = MakeNode("r", op, {fused ? Input::Node("a") : Input::Array("x")});
  const bool arg = std::string(op) == "argmin" || std::string(op) == "argmax";
  if (axes.has_value()) {
    if (arg) {
      r.attrs["axis"] = (*axes)[0];
    } else {
      r.attrs["axes"] = *axes;
    }
  }
  if (std::string(op) == "std") r.attrs["ddof"] = 1.5;
  g.nodes.push_back(r);
  if (fused) {
    g.nodes.push_back(MakeNode("e", "mul", {Input::Node("r"), Input::FromScalar(Scalar::Int(2))}));
  }
  auto prepared = Prepare(g, dtype, {6, 7, 9}, {});
  EXPECT_TRUE(prepared) << op << " " << DTypeName(dtype);
  if (!prepared) return ReductionKernel::Strategy::kInner;
  EXPECT_EQ(prepared->second->steps.size(), 1u) << op;
  auto k = GenerateReduction(prepared->first, prepared->second->steps[0],
                             "r" + std::to_string((*kernels)++));
  EXPECT_TRUE(k.ok()) << k.status();
  EXPECT_TRUE(k.ok() && k->has_value()) << op << " " << DTypeName(dtype);
  if (!k.ok() || !k->has_value()) return ReductionKernel::Strategy::kInner;
  *program += (*k)->kernel_source;
  return (*k)->strategy;
}

void ExpectCompilesForSm90(const std::string& program, const std::string& name) {
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> module = CompileToCubin(program, name, options);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_GT(module->cubin.size(), 0u);
}

// Reducing no elements runs on the device: every output is the finished
// identity (R = 0); var/std read no element for their shift. No outputs: no
// kernel.
TEST(CodegenTest, EmptyReductionsRunOnTheDevice) {
  std::string program = kDeviceLibrary;
  for (const char* op : {"sum", "var"}) {
    Graph g;
    Node r = MakeNode("r", op, {Input::Array("x")});
    r.attrs["axes"] = std::vector<int64_t>{1};
    g.nodes.push_back(r);
    auto prepared = Prepare(g, DType::kFloat32, {4, 0}, {});
    ASSERT_TRUE(prepared);
    auto k =
        GenerateReduction(prepared->first, prepared->second->steps[0], std::string("empty_") + op);
    ASSERT_TRUE(k.ok()) << k.status();
    ASSERT_TRUE(k->has_value()) << op;
    EXPECT_EQ((*k)->outputs, 4);
    EXPECT_EQ((*k)->reduced, 0);
    if (std::string(op) == "var") {
      EXPECT_THAT((*k)->kernel_source, HasSubstr("if (R > 0)"));
    }
    program += (*k)->kernel_source;
  }
  Graph g;
  Node r = MakeNode("r", "sum", {Input::Array("x")});
  r.attrs["axes"] = std::vector<int64_t>{1};
  g.nodes.push_back(r);
  auto prepared = Prepare(g, DType::kFloat32, {0, 4}, {});
  ASSERT_TRUE(prepared);
  auto k = GenerateReduction(prepared->first, prepared->second->steps[0]);
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->has_value());
  ExpectCompilesForSm90(program, "empty_reductions.cu");
}

using Strategy = ReductionKernel::Strategy;
constexpr Strategy kStrategies[] = {Strategy::kInner, Strategy::kOuter, Strategy::kGeneral};

// argmax for every dtype, argmin for one of each compare class (bool, i64,
// u64, float, double; it differs from argmax only in a template argument),
// with a fused prologue and epilogue (general strategy, and the splits'
// finalize kernels), and the inner and outer strategies. One NVRTC program
// (CUB is heavy).
TEST(CodegenTest, ArgReductionsCompileForSm90) {
  std::string program = kDeviceLibrary;
  int kernels = 0;
  const std::set<DType> argmin_dtypes = {DType::kBool, DType::kInt8, DType::kUInt64,
                                         DType::kBFloat16, DType::kFloat64};
  for (const char* op : {"argmin", "argmax"}) {
    std::set<Strategy> strategies;
    for (const DTypeInfo& info : AllDTypes()) {
      if (IsComplex(info.dtype)) continue;  // complex: codegen_complex_test.cc
      if (std::string(op) == "argmin" && !argmin_dtypes.contains(info.dtype)) continue;
      strategies.insert(
          AddReduction(op, info.dtype, std::vector<int64_t>{1}, true, &kernels, &program));
    }
    strategies.insert(AddReduction(op, DType::kFloat32, std::nullopt, false, &kernels, &program));
    strategies.insert(
        AddReduction(op, DType::kInt16, std::vector<int64_t>{0}, false, &kernels, &program));
    for (Strategy s : kStrategies) EXPECT_TRUE(strategies.contains(s)) << op;
  }
  ExpectCompilesForSm90(program, "arg_reductions.cu");
  EXPECT_EQ(kernels, 5 + 13 + 2 * 2);
}

// var and logsumexp for the float dtypes, bool and an integer of each
// signedness; std (var but its square root) for two. The accumulator is the
// same double struct whatever the dtype; only the load's conversion differs,
// and mean's test covers those for every dtype. Each with a fused prologue
// and epilogue over two axes (general); every strategy of var and
// logsumexp. One NVRTC program.
TEST(CodegenTest, StatisticReductionsCompileForSm90) {
  std::string program = kDeviceLibrary;
  int kernels = 0;
  for (const char* op : {"var", "logsumexp"}) {
    for (DType dtype : {DType::kBool, DType::kInt8, DType::kUInt32, DType::kFloat16,
                        DType::kBFloat16, DType::kFloat32, DType::kFloat64}) {
      AddReduction(op, dtype, std::vector<int64_t>{0, 2}, true, &kernels, &program);
    }
  }
  for (DType dtype : {DType::kFloat16, DType::kFloat64}) {
    AddReduction("std", dtype, std::vector<int64_t>{0, 2}, true, &kernels, &program);
  }
  for (const char* op : {"var", "logsumexp"}) {
    std::set<Strategy> strategies = {Strategy::kGeneral};
    strategies.insert(AddReduction(op, DType::kFloat32, std::nullopt, false, &kernels, &program));
    strategies.insert(
        AddReduction(op, DType::kFloat32, std::vector<int64_t>{0}, false, &kernels, &program));
    for (Strategy s : kStrategies) EXPECT_TRUE(strategies.contains(s)) << op;
  }
  ExpectCompilesForSm90(program, "statistic_reductions.cu");
  EXPECT_EQ(kernels, 2 * 7 + 2 + 2 * 2);
}

TEST(CodegenTest, StatisticAndArgReductionsUseTheirAccumulators) {
  auto generate = [](const char* op, DType dtype, double ddof) {
    Graph g;
    Node r = MakeNode("r", op, {Input::Array("x")});
    if (ddof != 0) r.attrs["ddof"] = ddof;
    g.nodes.push_back(r);
    auto prepared = Prepare(g, dtype, {5, 8}, {});
    auto k = GenerateReduction(prepared->first, prepared->second->steps[0]);
    EXPECT_TRUE(k.ok() && k->has_value()) << op;
    return **k;
  };
  const ReductionKernel var = generate("var", DType::kFloat32, 0.5);
  EXPECT_EQ(var.accumulator_bytes, 24);
  EXPECT_THAT(var.kernel_source, HasSubstr("gf::var_push"));
  // ddof 0.5 exactly, as its bits.
  EXPECT_THAT(var.kernel_source, HasSubstr("0x3fe0000000000000ull"));
  EXPECT_THAT(generate("std", DType::kFloat16, 0).kernel_source, HasSubstr(", true)"));
  EXPECT_THAT(generate("logsumexp", DType::kInt8, 0).kernel_source, HasSubstr("gf::lse_push"));
  // argmax compares in the input's dtype: float16 in float, integers in 64 bits.
  EXPECT_THAT(generate("argmax", DType::kFloat16, 0).kernel_source,
              HasSubstr("gf::arg_push<float, true>"));
  EXPECT_THAT(generate("argmin", DType::kUInt32, 0).kernel_source,
              HasSubstr("gf::arg_push<u64, false>"));
  EXPECT_EQ(generate("argmin", DType::kBool, 0).accumulator_bytes, 16);
  // The flattened argmax reduces every element into one output.
  const ReductionKernel flat = generate("argmax", DType::kInt32, 0);
  EXPECT_EQ(flat.outputs, 1);
  EXPECT_EQ(flat.reduced, 40);
}

TEST(CodegenTest, ContiguousChainsUseSixteenByteVectors) {
  Graph g;
  g.nodes.push_back(MakeNode("a", "mul", {Input::Array("x"), Input::Array("x")}));
  g.nodes.push_back(MakeNode("b", "mul", {Input::Array("y"), Input::Array("y")}));
  g.nodes.push_back(MakeNode("c", "add", {Input::Node("a"), Input::Node("b")}));
  g.nodes.push_back(MakeNode("d", "sqrt", {Input::Node("c")}));
  auto prepared = Prepare(g, DType::kFloat32, {1 << 20}, {1 << 20});
  ASSERT_TRUE(prepared);
  ASSERT_EQ(prepared->second->steps.size(), 1u);
  auto k = GenerateElementwise(prepared->first, prepared->second->steps[0]);
  ASSERT_TRUE(k.ok());
  EXPECT_TRUE(k->vectorized);
  EXPECT_EQ(k->elements_per_vector, 4);
  EXPECT_TRUE(k->index32);
  EXPECT_EQ(k->inputs.size(), 2u);  // x and y, each read once
  EXPECT_THAT(k->kernel_source, HasSubstr("gf::vec<float, 4>"));
}

TEST(CodegenTest, BroadcastsCollapseAndHugeArraysUse64BitIndices) {
  Graph g;
  g.nodes.push_back(MakeNode("a", "add", {Input::Array("x"), Input::Array("y")}));
  // (2^16, 2^16) + (2^16,): more than 2^31 elements, and y is broadcast.
  auto prepared = Prepare(g, DType::kFloat16, {1 << 16, 1 << 16}, {1 << 16});
  ASSERT_TRUE(prepared);
  auto k = GenerateElementwise(prepared->first, prepared->second->steps[0]);
  ASSERT_TRUE(k.ok());
  EXPECT_FALSE(k->index32);
  EXPECT_FALSE(k->vectorized);
  EXPECT_EQ(k->rank, 2);
  EXPECT_THAT(k->kernel_source, HasSubstr("typedef long long idx"));

  Graph same;  // same shapes collapse to one dimension
  same.nodes.push_back(MakeNode("a", "add", {Input::Array("x"), Input::Array("x")}));
  auto p2 = Prepare(same, DType::kInt8, {3, 5, 7}, {});
  ASSERT_TRUE(p2);
  auto k2 = GenerateElementwise(p2->first, p2->second->steps[0]);
  ASSERT_TRUE(k2.ok());
  EXPECT_EQ(k2->rank, 1);
  EXPECT_EQ(k2->dims[0], 105);
}

TEST(CodegenTest, ScalarLiteralsArePassedByValue) {
  Graph g;
  g.nodes.push_back(
      MakeNode("a", "add", {Input::Array("x"), Input::FromScalar(Scalar::Float(2.5))}));
  auto prepared = Prepare(g, DType::kFloat32, {100}, {});
  ASSERT_TRUE(prepared);
  auto k = GenerateElementwise(prepared->first, prepared->second->steps[0]);
  ASSERT_TRUE(k.ok());
  ASSERT_EQ(k->inputs.size(), 2u);
  EXPECT_TRUE(k->inputs[1].by_value);
  EXPECT_THAT(k->kernel_source, HasSubstr("gf::word<double>"));
}

TEST(NvrtcTest, CompileErrorsCarryTheLog) {
  absl::StatusOr<CompiledModule> m =
      CompileToCubin("extern \"C\" __global__ void k() { undefined_thing(); }", "bad.cu", {});
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(m.status().message(), HasSubstr("undefined_thing"));
}

// Rows of whole 16-byte vectors are read and written as vectors (softmax
// and log_softmax, float32 and float16, with an epilogue; a block per row,
// and tiled rows when SoftmaxTiling::vectorize); a row that is not (or an
// epilogue that reads the input again) keeps scalar accesses.
TEST(CodegenTest, SoftmaxRowsOfWholeVectorsUseVectorLoads) {
  std::string program = kDeviceLibrary;
  int kernels = 0;
  for (DType dtype : {DType::kFloat32, DType::kFloat16}) {
    for (const char* op : {"softmax", "log_softmax"}) {
      for (bool reread : {false, true}) {
        Graph g;
        Node sm = MakeNode("s", op, {Input::Array("x")});
        sm.attrs["axis"] = int64_t{-1};
        g.nodes.push_back(sm);
        g.nodes.push_back(MakeNode(
            "e", "mul",
            {Input::Node("s"), reread ? Input::Array("x") : Input::FromScalar(Scalar::Int(2))}));
        // A block per row, and (with SoftmaxTiling::vectorize) tiled rows.
        for (const std::vector<int64_t>& shape : {std::vector<int64_t>{16, 1024}, {2, 40000}}) {
          auto prepared = Prepare(g, dtype, shape, {});
          ASSERT_TRUE(prepared.has_value());
          ASSERT_EQ(prepared->second->steps.size(), 1u);
          auto k =
              GenerateSoftmax(prepared->first, prepared->second->steps[0],
                              "sm" + std::to_string(kernels++), SoftmaxTiling{.vectorize = true});
          ASSERT_TRUE(k.ok()) << k.status();
          ASSERT_TRUE(k->has_value());
          EXPECT_EQ((*k)->tiled, shape[1] == 40000);
          EXPECT_EQ((*k)->vector_width, reread ? 0 : (dtype == DType::kFloat32 ? 4 : 8));
          program += (*k)->kernel_source;
        }
      }
    }
  }
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> module = CompileToCubin(program, "softmax.cu", options);
  ASSERT_TRUE(module.ok()) << module.status();
}

// softmax over another axis runs 32 rows per block (elements `stride`
// apart) in two passes; rows held by the registers of up to kMaxTiledParts
// blocks each (tiled: 8192 float32 or 4096 float64 elements of one row a
// block along the last axis; with SoftmaxTiling::other_axis, 32 neighbouring
// rows of 512 or 256 elements along another) exchange their parts' maximum
// and sum; longer rows over another axis keep the two passes, and along the
// last go in parts, in three kernels; all with a fused prologue and
// epilogue, float32 and float64.
TEST(CodegenTest, SoftmaxOverAnyAxisAndLongRows) {
  std::string program = kDeviceLibrary;
  int kernels = 0;
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis;
    int64_t stride;
    int64_t rows;
    bool thread_per_row;
    // Blocks a row is held by, float32 and float64 (0: not tiled).
    int64_t parts32;
    int64_t parts64;
    bool other_axis = false;  // SoftmaxTiling::other_axis
  };
  const Case cases[] = {
      {{6, 50, 7}, 1, 7, 42, true, 0, 0},          {{6, 50, 7}, 1, 7, 42, true, 1, 1, true},
      {{6, 50, 7}, 0, 350, 350, true, 1, 1, true}, {{1000, 5}, 0, 5, 5, true, 0, 0},
      {{1000, 5}, 0, 5, 5, true, 2, 4, true},      {{40000, 3}, 0, 3, 3, true, 79, 0, true},
      {{3, 40000}, -1, 1, 3, false, 5, 10},        {{2, 524288}, -1, 1, 2, false, 64, 128},
      {{2, 1048576}, -1, 1, 2, false, 128, 0},     {{1, 1048577}, -1, 1, 1, false, 0, 0}};
  for (const Case& c : cases) {
    for (DType dtype : {DType::kFloat32, DType::kFloat64}) {
      for (const char* op : {"softmax", "log_softmax"}) {
        Graph g;
        g.nodes.push_back(
            MakeNode("a", "mul", {Input::Array("x"), Input::FromScalar(Scalar::Int(2))}));
        Node sm = MakeNode("s", op, {Input::Node("a")});
        sm.attrs["axis"] = c.axis;
        g.nodes.push_back(sm);
        g.nodes.push_back(MakeNode("e", "add", {Input::Node("s"), Input::Array("y")}));
        auto prepared = Prepare(g, dtype, c.shape, c.shape);
        ASSERT_TRUE(prepared.has_value());
        ASSERT_EQ(prepared->second->steps.size(), 1u);
        auto k = GenerateSoftmax(prepared->first, prepared->second->steps[0],
                                 "sx" + std::to_string(kernels++),
                                 SoftmaxTiling{.other_axis = c.other_axis});
        ASSERT_TRUE(k.ok()) << k.status();
        ASSERT_TRUE(k->has_value()) << op << " axis " << c.axis;
        EXPECT_EQ((*k)->stride, c.stride);
        EXPECT_EQ((*k)->rows, c.rows);
        EXPECT_EQ((*k)->thread_per_row, c.thread_per_row);
        const int64_t parts = dtype == DType::kFloat64 ? c.parts64 : c.parts32;
        EXPECT_EQ((*k)->tiled, parts > 0) << c.shape[1];
        EXPECT_EQ((*k)->parts, parts);
        if ((*k)->tiled) {
          EXPECT_EQ((*k)->block, 512);
          EXPECT_EQ((*k)->rows_per_block, c.thread_per_row ? 32 : 1);
          EXPECT_EQ((*k)->accumulator_bytes, dtype == DType::kFloat64 ? 8 : 4);
          // A row of one part needs no exchange.
          EXPECT_EQ((*k)->kernel_source.find("late = 1") != std::string::npos, parts > 1);
        }
        // Long rows, not tiled: three kernels over parts of each row.
        EXPECT_EQ((*k)->split, !c.thread_per_row && parts == 0);
        if ((*k)->split) {
          EXPECT_THAT((*k)->kernel_source, HasSubstr((*k)->name + "_pmax("));
          EXPECT_THAT((*k)->kernel_source, HasSubstr((*k)->name + "_psum("));
          EXPECT_EQ((*k)->accumulator_bytes, dtype == DType::kFloat64 ? 8 : 4);
        }
        EXPECT_EQ((*k)->vector_width, 0);
        program += (*k)->kernel_source;
      }
    }
  }
  ExpectCompilesForSm90(program, "softmax_any_axis.cu");
}

// On a device (skipped without one): tiled softmax rows, against a float64
// reference, and the same bits when the blocks stop waiting for the row's
// other parts at once and compute them themselves (the path that keeps a
// device shared with other work from waiting for ever).
TEST(CodegenTest, TiledSoftmaxBlocksThatStopWaitingGiveTheSameBits) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no device";
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis;
    DType dtype;
  };
  const Case cases[] = {{{3, 40000}, -1, DType::kFloat32},
                        {{1000, 37}, 0, DType::kFloat32},
                        {{50, 37}, 0, DType::kFloat32},
                        {{2, 40000}, 1, DType::kFloat64},
                        {{300, 3, 40}, 0, DType::kFloat64}};
  for (const Case& c : cases) {
    // fused: softmax(x * x) + y, a prologue and an epilogue reading another
    // array; else softmax(x) alone, with vector loads along the last axis.
    for (const bool fused : {true, false}) {
      for (const char* op : {"softmax", "log_softmax"}) {
        SCOPED_TRACE(absl::StrCat(op, " of ", absl::StrJoin(c.shape, "x"), " over ", c.axis,
                                  fused ? ", fused" : ""));
        Graph g;
        if (fused) g.nodes.push_back(MakeNode("a", "mul", {Input::Array("x"), Input::Array("x")}));
        Node sm = MakeNode("s", op, {fused ? Input::Node("a") : Input::Array("x")});
        sm.attrs["axis"] = c.axis;
        g.nodes.push_back(sm);
        if (fused) g.nodes.push_back(MakeNode("e", "add", {Input::Node("s"), Input::Array("y")}));
        auto prepared = Prepare(g, c.dtype, c.shape, c.shape);
        ASSERT_TRUE(prepared.has_value());
        auto k = GenerateSoftmax(prepared->first, prepared->second->steps[0], "tiled",
                                 SoftmaxTiling{.other_axis = true, .vectorize = true});
        ASSERT_TRUE(k.ok()) << k.status();
        ASSERT_TRUE(k->has_value());
        ASSERT_TRUE((*k)->tiled);
        ASSERT_EQ((*k)->inputs.size(), fused ? 2u : 1u);  // x (and y), by pointer
        EXPECT_EQ((*k)->vector_width > 0, !fused && c.axis != 0) << (*k)->vector_width;
        const int64_t n = (*k)->rows * (*k)->row_length;
        const int64_t size = ItemSize(c.dtype);
        std::mt19937 rng(7);
        std::normal_distribution<double> normal(0.0, 1.5);
        std::vector<double> x(n), y(n);
        for (double& v : x) v = normal(rng);
        for (double& v : y) v = normal(rng);
        std::vector<std::byte> x_bytes(n * size), y_bytes(n * size);
        for (int64_t i = 0; i < n; ++i) {
          if (c.dtype == DType::kFloat32) {
            const float fx = static_cast<float>(x[i]), fy = static_cast<float>(y[i]);
            x[i] = fx;
            y[i] = fy;
            std::memcpy(&x_bytes[i * 4], &fx, 4);
            std::memcpy(&y_bytes[i * 4], &fy, 4);
          } else {
            std::memcpy(&x_bytes[i * 8], &x[i], 8);
            std::memcpy(&y_bytes[i * 8], &y[i], 8);
          }
        }
        // The reference, in float64.
        const int64_t stride = (*k)->stride, length = (*k)->row_length;
        std::vector<double> want(n);
        for (int64_t r = 0; r < (*k)->rows; ++r) {
          const int64_t base = (r / stride) * length * stride + r % stride;
          double mx = -INFINITY, sum = 0;
          auto a = [&](int64_t j) {
            const double v = x[base + j * stride];
            return fused ? v * v : v;
          };
          for (int64_t j = 0; j < length; ++j) mx = std::max(mx, a(j));
          for (int64_t j = 0; j < length; ++j) sum += std::exp(a(j) - mx);
          for (int64_t j = 0; j < length; ++j) {
            const int64_t o = base + j * stride;
            const double v = fused ? x[o] * x[o] : x[o];
            want[o] =
                (std::string(op) == "softmax" ? std::exp(v - mx) / sum : v - mx - std::log(sum)) +
                (fused ? y[o] : 0.0);
          }
        }
        const std::string wait = absl::StrCat("> ", 5'000'000, "ull");
        std::string eager = (*k)->source;
        if ((*k)->parts > 1) {
          ASSERT_NE(eager.find(wait), std::string::npos);
          eager.replace(eager.find(wait), wait.size(), "> 0ull");
        }
        std::vector<std::vector<std::byte>> outputs;
        for (const std::string& source : {(*k)->source, eager}) {
          CompileOptions options;
          options.arch = 90;
          absl::StatusOr<CompiledModule> module = CompileToCubin(source, "tiled.cu", options);
          ASSERT_TRUE(module.ok()) << module.status();
          cudaLibrary_t library = nullptr;
          ASSERT_EQ(cudaLibraryLoadData(&library, module->cubin.data(), nullptr, nullptr, 0,
                                        nullptr, nullptr, 0),
                    cudaSuccess);
          cudaKernel_t kernel = nullptr;
          ASSERT_EQ(cudaLibraryGetKernel(&kernel, library, "tiled"), cudaSuccess);
          void *dx = nullptr, *dy = nullptr, *dout = nullptr, *scratch = nullptr;
          ASSERT_EQ(cudaMalloc(&dx, n * size), cudaSuccess);
          ASSERT_EQ(cudaMalloc(&dy, n * size), cudaSuccess);
          ASSERT_EQ(cudaMalloc(&dout, n * size), cudaSuccess);
          ASSERT_EQ(cudaMalloc(&scratch, TiledScratchBytes(**k)), cudaSuccess);
          ASSERT_EQ(cudaMemcpy(dx, x_bytes.data(), n * size, cudaMemcpyHostToDevice), cudaSuccess);
          ASSERT_EQ(cudaMemcpy(dy, y_bytes.data(), n * size, cudaMemcpyHostToDevice), cudaSuccess);
          ASSERT_EQ(cudaMemset(scratch, 0, TiledCounterBytes(**k)), cudaSuccess);
          std::vector<uint64_t> words = {reinterpret_cast<uint64_t>(dx)};
          if (fused) words.push_back(reinterpret_cast<uint64_t>(dy));
          for (uint64_t word : {reinterpret_cast<uint64_t>(dout), static_cast<uint64_t>((*k)->rows),
                                reinterpret_cast<uint64_t>(scratch)}) {
            words.push_back(word);
          }
          void* args[] = {words.data()};
          ASSERT_EQ(cudaLaunchKernel(reinterpret_cast<const void*>(kernel),
                                     dim3(static_cast<unsigned>(TiledBlocks(**k))),
                                     dim3((*k)->block), args, 0, nullptr),
                    cudaSuccess);
          ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
          std::vector<std::byte> out(n * size);
          ASSERT_EQ(cudaMemcpy(out.data(), dout, n * size, cudaMemcpyDeviceToHost), cudaSuccess);
          for (void* ptr : {dx, dy, dout, scratch}) cudaFree(ptr);
          cudaLibraryUnload(library);
          outputs.push_back(std::move(out));
        }
        EXPECT_TRUE(outputs[0] == outputs[1]) << "the blocks that stopped waiting differ";
        int64_t bad = 0;
        for (int64_t i = 0; i < n; ++i) {
          double got = 0;
          if (c.dtype == DType::kFloat32) {
            float f;
            std::memcpy(&f, &outputs[0][i * 4], 4);
            got = f;
          } else {
            std::memcpy(&got, &outputs[0][i * 8], 8);
          }
          const double tol = (c.dtype == DType::kFloat32 ? 2e-5 : 1e-12) * (1 + std::abs(want[i]));
          if (!(std::abs(got - want[i]) <= tol) && bad++ < 5) {
            ADD_FAILURE() << "element " << i << ": " << got << ", want " << want[i];
          }
        }
        EXPECT_EQ(bad, 0);
      }
    }
  }
}

}  // namespace
}  // namespace gpuflow::cuda
