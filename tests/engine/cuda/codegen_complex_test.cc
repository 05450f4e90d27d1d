// Complex kernels (issue 23 item 1): every elementwise op that takes complex
// values, casts to and from every dtype, reductions, scans, shape copies and
// the generated matmul compile with NVRTC for sm_90 (no GPU needed), with the
// complex device library compiled only into the kernels that use it. Their
// values are checked against NumPy on the GPU by tests/python/test_complex.py
// (GPUFLOW_TEST_BACKEND=cuda).
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
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

namespace gpuflow::cuda {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr DType kComplexDTypes[] = {DType::kComplex64, DType::kComplex128};

const char* const kUnary[] = {"neg",   "abs",   "sign",       "square", "sqrt",  "rsqrt",
                              "exp",   "log",   "log1p",      "expm1",  "sin",   "cos",
                              "tanh",  "asin",  "acos",       "atan",   "asinh", "acosh",
                              "atanh", "round", "reciprocal", "isnan",  "isinf", "logical_not",
                              "real",  "imag",  "conj",       "angle"};
const char* const kBinary[] = {
    "add", "sub", "mul", "div", "pow", "maximum",     "minimum",    "eq",
    "ne",  "lt",  "le",  "gt",  "ge",  "logical_and", "logical_or", "logical_xor"};

Node MakeNode(const std::string& id, const std::string& op, std::vector<Input> inputs) {
  Node n;
  n.id = id;
  n.op = op;
  n.inputs = std::move(inputs);
  return n;
}

// Validates and plans `graph` over x (of dtype_x) and y (of dtype_y).
std::optional<std::pair<ValidatedGraph, std::shared_ptr<const Plan>>> Prepare(
    const Graph& graph, DType dtype_x, std::vector<int64_t> shape_x, DType dtype_y,
    std::vector<int64_t> shape_y) {
  ArrayTypeLookup lookup = [&](const std::string& name) -> absl::StatusOr<ValueType> {
    return name == "x" ? ValueType{dtype_x, *Shape::Create(shape_x), false}
                       : ValueType{dtype_y, *Shape::Create(shape_y), false};
  };
  absl::StatusOr<ValidatedGraph> v = ValidateGraph(graph, lookup, {});
  EXPECT_TRUE(v.ok()) << v.status();
  if (!v.ok()) return std::nullopt;
  absl::StatusOr<std::shared_ptr<const Plan>> plan =
      BuildPlan(*v, {static_cast<int>(v->nodes.size()) - 1}, {});
  EXPECT_TRUE(plan.ok()) << plan.status();
  if (!plan.ok()) return std::nullopt;
  return std::make_pair(*std::move(v), *plan);
}

// The kernels of a whole translation unit, without the two libraries.
std::string KernelPart(const std::string& source) {
  const std::string libraries = std::string(kDeviceLibrary) + kDeviceComplexLibrary;
  EXPECT_EQ(source.compare(0, libraries.size(), libraries), 0);
  return source.substr(libraries.size());
}

std::string Libraries() { return std::string(kDeviceLibrary) + kDeviceComplexLibrary; }

void ExpectCompilesForSm90(const std::string& program, const std::string& name) {
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> module = CompileToCubin(program, name, options);
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_GT(module->cubin.size(), 0u);
}

TEST(CodegenComplexTest, EveryComplexElementwiseOpAndCastCompilesForSm90) {
  for (DType dtype : kComplexDTypes) {
    std::string program = Libraries();
    int kernels = 0;
    auto add = [&](const Graph& g, std::vector<int64_t> sx, DType dy, std::vector<int64_t> sy) {
      auto prepared = Prepare(g, dtype, sx, dy, sy);
      ASSERT_TRUE(prepared);
      for (const Step& step : prepared->second->steps) {
        ASSERT_EQ(step.kind, StepKind::kElementwise);
        absl::StatusOr<ElementwiseKernel> k =
            GenerateElementwise(prepared->first, step, "k" + std::to_string(kernels++));
        ASSERT_TRUE(k.ok()) << k.status();
        EXPECT_EQ(k->source, Libraries() + k->kernel_source);
        program += k->kernel_source;
      }
    };
    for (const char* op : kUnary) {
      Graph g;
      g.nodes.push_back(MakeNode("y", op, {Input::Array("x")}));
      add(g, {1000}, dtype, {});
    }
    for (const char* op : kBinary) {
      Graph g;  // contiguous (complex64: vectorised)
      g.nodes.push_back(MakeNode("y", op, {Input::Array("x"), Input::Array("y")}));
      add(g, {4096}, dtype, {4096});
      Graph b;  // broadcast against float32, with a weak complex scalar
      b.nodes.push_back(MakeNode("t", op, {Input::Array("x"), Input::Array("y")}));
      b.nodes.push_back(
          MakeNode("u", "mul", {Input::Node("t"), Input::FromScalar(Scalar::Complex(0.5, -2))}));
      add(b, {7, 1, 5}, DType::kFloat32, {3, 1});
    }
    Graph ternary;
    ternary.nodes.push_back(MakeNode("c", "gt", {Input::Array("x"), Input::Array("y")}));
    ternary.nodes.push_back(
        MakeNode("w", "where", {Input::Node("c"), Input::Array("x"), Input::Array("y")}));
    ternary.nodes.push_back(MakeNode(
        "k", "clip",
        {Input::Node("w"), Input::FromScalar(Scalar::Int(0)), Input::FromScalar(Scalar::Int(5))}));
    add(ternary, {33}, DType::kInt16, {33});
    for (const DTypeInfo& other : AllDTypes()) {
      Graph to;
      Node n = MakeNode("c", "cast", {Input::Array("x")});
      n.attrs["dtype"] = other.dtype;
      to.nodes.push_back(n);
      add(to, {9}, dtype, {});
      Graph from;  // y of `other` into the complex dtype
      Node m = MakeNode("c", "cast", {Input::Array("y")});
      m.attrs["dtype"] = dtype;
      from.nodes.push_back(m);
      add(from, {1}, other.dtype, {9});
    }
    int same_size = 0;  // bitcasts both ways (complex64: int64, uint64, float64, itself)
    for (const DTypeInfo& other : AllDTypes()) {
      if (other.itemsize != ItemSize(dtype)) continue;
      ++same_size;
      Graph to;
      Node n = MakeNode("b", "bitcast", {Input::Array("x")});
      n.attrs["dtype"] = other.dtype;
      to.nodes.push_back(n);
      add(to, {9}, dtype, {});
      Graph from;
      Node m = MakeNode("b", "bitcast", {Input::Array("y")});
      m.attrs["dtype"] = dtype;
      from.nodes.push_back(m);
      add(from, {1}, other.dtype, {9});
    }
    EXPECT_EQ(same_size, dtype == DType::kComplex64 ? 4 : 1);
    ExpectCompilesForSm90(program, std::string(DTypeName(dtype)) + ".cu");
    EXPECT_EQ(kernels, 28 + 16 * 2 + 1 + 15 * 2 + 2 * same_size);
  }
}

// Kernels without complex values do not pay for the complex library.
TEST(CodegenComplexTest, OnlyComplexKernelsIncludeTheComplexLibrary) {
  for (DType dtype : {DType::kFloat32, DType::kComplex64}) {
    Graph g;
    g.nodes.push_back(MakeNode("y", "add", {Input::Array("x"), Input::Array("y")}));
    auto prepared = Prepare(g, dtype, {64}, dtype, {64});
    ASSERT_TRUE(prepared);
    absl::StatusOr<ElementwiseKernel> k =
        GenerateElementwise(prepared->first, prepared->second->steps[0], "k");
    ASSERT_TRUE(k.ok()) << k.status();
    if (IsComplex(dtype)) {
      EXPECT_EQ(k->source, Libraries() + k->kernel_source);
    } else {
      EXPECT_EQ(k->source, std::string(kDeviceLibrary) + k->kernel_source);
      EXPECT_THAT(k->source, Not(HasSubstr(kDeviceComplexLibrary)));
    }
  }
}

// A complex128 literal (16 bytes) is uploaded, a complex64 one travels in
// its launch word.
TEST(CodegenComplexTest, OnlyLiteralsOfAWordTravelByValue) {
  for (DType dtype : kComplexDTypes) {
    Graph g;
    Scalar value = Scalar::Complex(1, 2);
    value.dtype = dtype;
    const Input literal = Input::FromScalar(value);
    g.nodes.push_back(MakeNode("y", "add", {Input::Array("x"), literal}));
    auto prepared = Prepare(g, dtype, {64}, dtype, {});
    ASSERT_TRUE(prepared);
    absl::StatusOr<ElementwiseKernel> k =
        GenerateElementwise(prepared->first, prepared->second->steps[0], "k");
    ASSERT_TRUE(k.ok()) << k.status();
    ASSERT_EQ(k->inputs.size(), 2u);
    EXPECT_EQ(k->inputs[1].by_value, dtype == DType::kComplex64) << DTypeName(dtype);
  }
}

// sum, prod, mean, min, max, argmin, argmax, any and all of complex values
// in every strategy, with a complex prologue and epilogue; var and std
// (complex Welford accumulators) over two layouts.
TEST(CodegenComplexTest, ComplexReductionsCompileForSm90) {
  std::string program = Libraries();
  int kernels = 0;
  std::set<ReductionKernel::Strategy> strategies;
  const std::vector<std::vector<int64_t>> axes_cases = {{2}, {0}, {0, 2}, {0, 1, 2}};
  for (DType dtype : kComplexDTypes) {
    for (const char* op :
         {"sum", "prod", "mean", "min", "max", "argmin", "argmax", "any", "all", "var", "std"}) {
      const bool arg = std::string(op) == "argmin" || std::string(op) == "argmax";
      const bool statistic = std::string(op) == "var" || std::string(op) == "std";
      for (const auto& axes : axes_cases) {
        if ((arg || statistic) && axes.size() != 1) continue;
        Graph g;
        g.nodes.push_back(MakeNode("a", "conj", {Input::Array("x")}));
        Node r = MakeNode("r", op, {Input::Node("a")});
        if (arg) {
          r.attrs["axis"] = axes[0];
        } else {
          r.attrs["axes"] = axes;
        }
        if (statistic) r.attrs["ddof"] = 1.0;
        g.nodes.push_back(r);
        g.nodes.push_back(
            MakeNode("e", "mul", {Input::Node("r"), Input::FromScalar(Scalar::Complex(0.5, 1))}));
        auto prepared = Prepare(g, dtype, {6, 7, 9}, dtype, {});
        ASSERT_TRUE(prepared) << op;
        ASSERT_EQ(prepared->second->steps.size(), 1u) << op;
        auto k = GenerateReduction(prepared->first, prepared->second->steps[0],
                                   "r" + std::to_string(kernels));
        ASSERT_TRUE(k.ok()) << k.status();
        ASSERT_TRUE(k->has_value()) << op << " " << DTypeName(dtype);
        ++kernels;
        strategies.insert((*k)->strategy);
        const bool logical = std::string(op) == "any" || std::string(op) == "all";
        EXPECT_EQ((*k)->accumulator_bytes, arg || statistic ? 32 : (logical ? 4 : 16)) << op;
        program += KernelPart((*k)->source);
      }
    }
  }
  EXPECT_EQ(strategies.size(), 3u);
  ExpectCompilesForSm90(program, "complex_reductions.cu");
  EXPECT_EQ(kernels, 2 * (7 * 4 + 4 * 2));
}

ScanKernel ComplexScan(const std::string& op, DType dtype, std::vector<int64_t> shape, int64_t axis,
                       const std::string& name) {
  Graph g;
  Node n = MakeNode("s", op, {Input::Array("x")});
  n.attrs["axis"] = axis;
  g.nodes.push_back(n);
  auto prepared = Prepare(g, dtype, shape, dtype, {});
  EXPECT_TRUE(prepared);
  if (!prepared) return {};
  absl::StatusOr<std::optional<ScanKernel>> k =
      GenerateScan(prepared->first, prepared->second->steps[0], name);
  EXPECT_TRUE(k.ok() && k->has_value());
  if (!k.ok() || !k->has_value()) return {};
  EXPECT_EQ((*k)->accumulator_bytes, 16);
  return **k;
}

TEST(CodegenComplexTest, ComplexScansCompileForSm90) {
  std::string program = Libraries();
  std::set<ScanKernel::Strategy> strategies;
  int kernels = 0;
  for (DType dtype : kComplexDTypes) {
    for (const char* op : {"cumsum", "cumprod"}) {
      for (const auto& [shape, axis] :
           std::vector<std::pair<std::vector<int64_t>, int64_t>>{{{3, 5000}, 1}, {{300, 7}, 0}}) {
        const ScanKernel k = ComplexScan(op, dtype, shape, axis, "s" + std::to_string(kernels++));
        strategies.insert(k.strategy);
        program += k.kernel_source + k.split_kernel_source;
      }
    }
  }
  EXPECT_EQ(strategies.size(), 2u);
  ExpectCompilesForSm90(program, "complex_scans.cu");
}

// Shape copies of complex values (converting a float32 input of a
// concatenate, filling with a complex literal); a gather of complex128
// elements declines (the host path takes it).
TEST(CodegenComplexTest, ComplexShapeCopiesCompileForSm90) {
  std::string program = Libraries();
  int kernels = 0;
  std::set<std::string> names;
  auto add = [&](const Graph& g, DType dx, std::vector<int64_t> sx, DType dy,
                 std::vector<int64_t> sy) {
    auto prepared = Prepare(g, dx, sx, dy, sy);
    ASSERT_TRUE(prepared);
    absl::StatusOr<std::optional<std::vector<LayoutCopy>>> copies =
        GenerateLayoutCopies(prepared->first, prepared->second->steps[0]);
    ASSERT_TRUE(copies.ok()) << copies.status();
    ASSERT_TRUE(copies->has_value());
    for (const LayoutCopy& c : **copies) {
      if (c.memcpy || !names.insert(c.name).second) continue;
      ++kernels;
      program += KernelPart(c.source);
    }
  };
  for (DType dtype : kComplexDTypes) {
    Graph t;
    Node tr = MakeNode("t", "transpose", {Input::Array("x")});
    tr.attrs["axes"] = std::vector<int64_t>{1, 0};
    t.nodes.push_back(tr);
    add(t, dtype, {5, 7}, dtype, {});
    Graph c;
    Node cat = MakeNode("c", "concatenate", {Input::Array("x"), Input::Array("y")});
    cat.attrs["axis"] = int64_t{0};
    c.nodes.push_back(cat);
    add(c, dtype, {5, 7}, DType::kFloat32, {3, 7});
    Graph f;
    Node full = MakeNode("f", "full", {Input::FromScalar(Scalar::Complex(1, -1))});
    full.attrs["shape"] = std::vector<int64_t>{4, 4};
    full.attrs["dtype"] = dtype;
    f.nodes.push_back(full);
    add(f, dtype, {1}, dtype, {1});
  }
  EXPECT_GE(kernels, 4);
  ExpectCompilesForSm90(program, "complex_copies.cu");

  Graph g;
  Node take = MakeNode("t", "take", {Input::Array("x"), Input::Array("y")});
  take.attrs["axis"] = int64_t{0};
  g.nodes.push_back(take);
  auto prepared = Prepare(g, DType::kComplex128, {5}, DType::kInt64, {3});
  ASSERT_TRUE(prepared);
  absl::StatusOr<std::optional<std::vector<LayoutCopy>>> copies =
      GenerateLayoutCopies(prepared->first, prepared->second->steps[0]);
  ASSERT_TRUE(copies.ok());
  EXPECT_FALSE(copies->has_value());
}

// The tiled matmul for what cuBLAS does not take (complex with a real
// dtype), and dot's scalar product.
TEST(CodegenComplexTest, MixedComplexMatmulCompilesForSm90) {
  std::string program = Libraries();
  int kernels = 0;
  for (DType dtype : kComplexDTypes) {
    for (DType other : {DType::kFloat32, DType::kInt8, DType::kComplex64}) {
      Graph g;
      g.nodes.push_back(MakeNode("m", "matmul", {Input::Array("x"), Input::Array("y")}));
      auto prepared = Prepare(g, dtype, {2, 3, 5}, other, {5, 4});
      ASSERT_TRUE(prepared);
      absl::StatusOr<std::optional<MatmulKernel>> k = GenerateMatmul(
          prepared->first, prepared->second->steps[0], "m" + std::to_string(kernels++));
      ASSERT_TRUE(k.ok()) << k.status();
      ASSERT_TRUE(k->has_value());
      program += KernelPart((*k)->source);
    }
    // dot with a 0-d operand: the scalar product kernel.
    Graph g;
    g.nodes.push_back(MakeNode("d", "dot", {Input::Array("x"), Input::Array("y")}));
    auto prepared = Prepare(g, dtype, {3, 5}, DType::kFloat64, {});
    ASSERT_TRUE(prepared);
    absl::StatusOr<std::optional<MatmulKernel>> k = GenerateMatmul(
        prepared->first, prepared->second->steps[0], "m" + std::to_string(kernels++));
    ASSERT_TRUE(k.ok()) << k.status();
    ASSERT_TRUE(k->has_value());
    program += KernelPart((*k)->source);
  }
  ExpectCompilesForSm90(program, "complex_matmul.cu");
}

// What the complex library costs NVRTC: one add kernel with and without it
// (printed; the lead's figures for engine/cuda/README.md).
TEST(CodegenComplexTest, ReportsTheComplexLibrarysCompileTime) {
  auto seconds = [](const std::string& program) {
    CompileOptions options;
    options.arch = 90;
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<CompiledModule> module = CompileToCubin(program, "timed.cu", options);
    EXPECT_TRUE(module.ok()) << module.status();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::string sources[2];
  int i = 0;
  for (DType dtype : {DType::kFloat64, DType::kComplex128}) {
    Graph g;
    g.nodes.push_back(MakeNode("y", "add", {Input::Array("x"), Input::Array("y")}));
    auto prepared = Prepare(g, dtype, {64}, dtype, {64});
    ASSERT_TRUE(prepared);
    absl::StatusOr<ElementwiseKernel> k =
        GenerateElementwise(prepared->first, prepared->second->steps[0], "k");
    ASSERT_TRUE(k.ok());
    sources[i++] = k->source;
  }
  seconds(sources[0]);  // NVRTC's first call loads its own state
  const double real = seconds(sources[0]);
  const double complex = seconds(sources[1]);
  std::printf("NVRTC: float64 add %.1f ms, complex128 add %.1f ms\n", real * 1e3, complex * 1e3);
  EXPECT_GT(complex, 0.0);
}

}  // namespace
}  // namespace gpuflow::cuda
