// scatter, flatnonzero and histogram kernels: their launch words and NVRTC compiles of
// every specialisation for sm_90 (no GPU needed). Values are checked on the
// GPU by tests/python/test_select.py with GPUFLOW_TEST_BACKEND=cuda.
#include "engine/cuda/codegen_select.h"

#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/cuda/device_library.h"
#include "engine/cuda/nvrtc_compiler.h"
#include "engine/ir/validate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::cuda {
namespace {

using ::gpuflow::testing::IsOk;
using ::testing::ElementsAre;

using Arrays = std::vector<std::pair<DType, std::vector<int64_t>>>;

// One node `op` over arrays a0, a1, ... of the given dtypes and shapes.
absl::StatusOr<ValidatedGraph> Validate(const std::string& op, AttrMap attrs,
                                        const Arrays& arrays) {
  Graph g;
  Node n{.id = std::string(1, 'n'), .op = op, .inputs = {}, .attrs = std::move(attrs)};
  for (size_t i = 0; i < arrays.size(); ++i)
    n.inputs.push_back(Input::Array("a" + std::to_string(i)));
  g.nodes.push_back(n);
  ArrayTypeLookup lookup = [&](const std::string& name) -> absl::StatusOr<ValueType> {
    const auto& [dtype, dims] = arrays.at(std::stoi(name.substr(1)));
    return ValueType{dtype, *Shape::Create(dims), false};
  };
  absl::StatusOr<ValidatedGraph> v = ValidateGraph(g, lookup, {});
  EXPECT_TRUE(v.ok()) << v.status();
  return v;
}

SelectKernels Kernels(const std::string& op, AttrMap attrs, const Arrays& arrays) {
  absl::StatusOr<ValidatedGraph> v = Validate(op, std::move(attrs), arrays);
  if (!v.ok()) return {};
  absl::StatusOr<std::optional<SelectKernels>> k = GenerateSelectKernels(v->nodes[0]);
  EXPECT_TRUE(k.ok()) << k.status();
  EXPECT_TRUE(k.ok() && k->has_value());
  return k.ok() && k->has_value() ? **k : SelectKernels{};
}

AttrMap Mode(const std::string& mode) { return {{"mode", mode}}; }

TEST(CodegenSelectTest, ScatterSetClaimsThenWritesWithBroadcastUpdates) {
  // Updates (3, 1) over indices (3, 4): one stride per index row, the
  // columns broadcast.
  const SelectKernels k =
      Kernels("scatter", Mode("set"),
              {{DType::kFloat32, {10, 2}}, {DType::kInt64, {3, 4}}, {DType::kFloat64, {3, 1}}});
  EXPECT_EQ(k.kind, SelectKernels::Kind::kScatterSet);
  EXPECT_THAT(k.names, ElementsAre("gf_scatter_set_float32_int64_float64_r2_claim",
                                   "gf_scatter_set_float32_int64_float64_r2_write"));
  EXPECT_EQ(k.count, 12);
  EXPECT_EQ(k.winner_bytes, 4);
  EXPECT_EQ(k.size, 20);
  // [out, indices, updates, error word, winners, count, size, dims (3, 4), strides (1, 0)]
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 0, 0, 12, 20, 3, 4, 1, 0));
}

TEST(CodegenSelectTest, ScatterAddMergesContiguousUpdatesAndScalars) {
  SelectKernels k =
      Kernels("scatter", Mode("add"),
              {{DType::kInt8, {5}}, {DType::kUInt16, {2, 3}}, {DType::kInt8, {2, 3}}});
  EXPECT_EQ(k.kind, SelectKernels::Kind::kScatterCombine);
  EXPECT_THAT(k.names, ElementsAre("gf_scatter_add_int8_uint16_int8_r1_combine"));
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 0, 0, 6, 5, 6, 1));
  k = Kernels("scatter", Mode("max"),
              {{DType::kFloat16, {5}}, {DType::kInt32, {2, 3}}, {DType::kFloat16, {}}});
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 0, 0, 6, 5, 6, 0));
}

TEST(CodegenSelectTest, FlatNonzeroCountsTilesOfTheInput) {
  const SelectKernels k =
      Kernels("flatnonzero", {{"size", int64_t{3}}}, {{DType::kBFloat16, {3, 2000}}});
  EXPECT_EQ(k.kind, SelectKernels::Kind::kFlatNonzero);
  EXPECT_THAT(k.names, ElementsAre("gf_flatnonzero_bfloat16_count", "gf_flatnonzero_bfloat16_scan",
                                   "gf_flatnonzero_bfloat16_write"));
  // [input, out, tile counts, error word, n, size, tiles]
  EXPECT_THAT(k.words, ElementsAre(0, 0, 0, 0, 6000, 3, 3));
}

// Complex elements have no atomics: those nodes run on the host path.
TEST(CodegenSelectTest, ComplexNodesDecline) {
  for (DType dtype : {DType::kComplex64, DType::kComplex128}) {
    Graph g;
    Node n{.id = "n", .op = "scatter", .inputs = {}, .attrs = Mode("add")};
    for (int i = 0; i < 3; ++i) n.inputs.push_back(Input::Array("a" + std::to_string(i)));
    g.nodes.push_back(n);
    ArrayTypeLookup lookup = [&](const std::string& name) -> absl::StatusOr<ValueType> {
      return ValueType{name == "a1" ? DType::kInt64 : dtype, *Shape::Create({3}), false};
    };
    absl::StatusOr<ValidatedGraph> v = ValidateGraph(g, lookup, {});
    ASSERT_TRUE(v.ok()) << v.status();
    absl::StatusOr<std::optional<SelectKernels>> k = GenerateSelectKernels(v->nodes[0]);
    ASSERT_TRUE(k.ok()) << k.status();
    EXPECT_FALSE(k->has_value()) << DTypeName(dtype);
  }
}

TEST(CodegenSelectTest, EveryKernelCompilesForSm90) {
  std::map<std::string, std::string> kernels;  // first kernel name -> text
  auto add = [&](const SelectKernels& k) {
    if (!k.names.empty()) kernels[k.names[0]] = k.source.substr(std::strlen(kDeviceLibrary));
  };
  for (const DTypeInfo& a : AllDTypes()) {
    if (IsComplex(a.dtype)) continue;  // declined: below
    for (const char* mode : {"set", "add", "mul", "min", "max"}) {
      for (DType index : {DType::kInt64, DType::kUInt8}) {
        add(Kernels("scatter", Mode(mode), {{a.dtype, {7}}, {index, {3}}, {a.dtype, {3}}}));
        add(Kernels("scatter", Mode(mode), {{a.dtype, {7}}, {index, {3}}, {DType::kFloat64, {}}}));
        add(Kernels("scatter", Mode(mode), {{a.dtype, {7}}, {index, {3}}, {DType::kBool, {3}}}));
      }
    }
    add(Kernels("flatnonzero", {{"size", int64_t{0}}}, {{a.dtype, {4}}}));
    // 2^30 indices: 64-bit offsets and winner words.
    for (const char* mode : {"set", "add"}) {
      const SelectKernels big =
          Kernels("scatter", Mode(mode),
                  {{a.dtype, {7}}, {DType::kInt64, {int64_t{1} << 30}}, {a.dtype, {}}});
      EXPECT_EQ(big.winner_bytes, 8);
      EXPECT_TRUE(big.names[0].find("_i64_") != std::string::npos) << big.names[0];
      add(big);
    }
  }
  std::string program = kDeviceLibrary;
  for (const auto& [name, text] : kernels) program += text;
  EXPECT_GT(kernels.size(), 260u);
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> m = CompileToCubin(program, "select.cu", options);
  EXPECT_THAT(m, IsOk());
}

std::optional<HistogramKernels> Histogram(AttrMap attrs, const Arrays& arrays) {
  absl::StatusOr<ValidatedGraph> v = Validate("histogram", std::move(attrs), arrays);
  if (!v.ok()) return std::nullopt;
  absl::StatusOr<std::optional<HistogramKernels>> k = GenerateHistogramKernels(v->nodes[0]);
  EXPECT_TRUE(k.ok()) << k.status();
  return k.ok() ? *k : std::nullopt;
}

AttrMap Uniform(DType sub, DType div) {
  return {{"uniform", true},
          {"first_edge", 0.5},
          {"norm_denom", 2.0},
          {"sub_dtype", sub},
          {"div_dtype", div}};
}

TEST(CodegenHistogramTest, WordsAndKernelsFollowTheBinsAndWeights) {
  std::optional<HistogramKernels> k =
      Histogram(Uniform(DType::kFloat32, DType::kFloat64),
                {{DType::kFloat32, {3, 100000}}, {DType::kFloat32, {257}}});
  ASSERT_TRUE(k.has_value());
  EXPECT_THAT(k->names,
              ElementsAre("gf_histogram_float32_float32_float32_u_float32_float64_count"));
  EXPECT_TRUE(k->shared);
  EXPECT_EQ(k->chunks, 5);  // 300000 elements in numpy blocks of 65536
  uint64_t first = 0, denom = 0;
  const double f = 0.5, d = 2.0;
  std::memcpy(&first, &f, 8);
  std::memcpy(&denom, &d, 8);
  EXPECT_THAT(k->words, ElementsAre(0, 0, 0, 300000, 256, first, denom, 0, 0, 0, 5));
  // Many bins: the edges kernel first, global counts.
  k = Histogram({}, {{DType::kInt16, {10}}, {DType::kFloat64, {5000}}});
  ASSERT_TRUE(k.has_value());
  EXPECT_FALSE(k->shared);
  EXPECT_THAT(k->names, ElementsAre("gf_histogram_int16_float64_float64_s_g_edges",
                                    "gf_histogram_int16_float64_float64_s_g_count"));
  // Weights: partial sums per numpy block, then the combine.
  k = Histogram(Uniform(DType::kFloat64, DType::kFloat64),
                {{DType::kFloat64, {10}}, {DType::kFloat64, {5}}, {DType::kInt8, {10}}});
  ASSERT_TRUE(k.has_value());
  EXPECT_THAT(k->names,
              ElementsAre("gf_histogram_float64_float64_float64_u_float64_float64_wint8_partial",
                          "gf_histogram_float64_float64_float64_u_float64_float64_wint8_combine"));
  // Weights with given edges: numpy's cumulative path runs on the host.
  EXPECT_FALSE(
      Histogram({}, {{DType::kFloat64, {10}}, {DType::kFloat64, {5}}, {DType::kFloat32, {10}}})
          .has_value());
}

TEST(CodegenHistogramTest, EveryKernelCompilesForSm90) {
  std::map<std::string, std::string> kernels;
  auto add = [&](const std::optional<HistogramKernels>& k) {
    ASSERT_TRUE(k.has_value());
    kernels[k->names[0]] = k->source.substr(std::strlen(kDeviceLibrary));
  };
  const std::vector<DType> floats = {DType::kFloat16, DType::kBFloat16, DType::kFloat32,
                                     DType::kFloat64};
  for (const DTypeInfo& a : AllDTypes()) {
    if (IsComplex(a.dtype)) continue;
    for (const DTypeInfo& e : AllDTypes()) {
      if (IsComplex(e.dtype)) continue;
      add(Histogram({}, {{a.dtype, {7}}, {e.dtype, {4}}}));
      add(Histogram({}, {{a.dtype, {7}}, {e.dtype, {3000}}}));
    }
    for (DType e : floats) {
      add(Histogram(Uniform(e, e), {{a.dtype, {7}}, {e, {4}}}));
      add(Histogram(Uniform(DType::kFloat64, DType::kFloat64), {{a.dtype, {7}}, {e, {3000}}}));
    }
  }
  for (const DTypeInfo& w : AllDTypes()) {
    if (IsComplex(w.dtype)) continue;
    for (int64_t edges : {4, 3000}) {
      add(Histogram(Uniform(DType::kFloat32, DType::kFloat64),
                    {{DType::kFloat32, {7}}, {DType::kFloat32, {edges}}, {w.dtype, {7}}}));
    }
  }
  std::string program = kDeviceLibrary;
  for (const auto& [name, text] : kernels) program += text;
  EXPECT_GT(kernels.size(), 350u);
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> m = CompileToCubin(program, "histogram.cu", options);
  EXPECT_THAT(m, IsOk());
}

}  // namespace
}  // namespace gpuflow::cuda
