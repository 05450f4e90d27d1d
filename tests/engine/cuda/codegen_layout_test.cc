// Shape ops and `full` as strided copies, take and take_along_axis as
// gathers: the copy plans (layouts, bases, memcpy where possible) and NVRTC
// compiles of every kernel for sm_90 (no GPU needed). Values are checked on the GPU by the
// conformance suite.
#include <cstring>
#include <map>
#include <optional>
#include <string>
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

struct Prepared {
  ValidatedGraph graph;
  std::shared_ptr<const Plan> plan;
};

Prepared Prepare(const Node& node,
                 const std::vector<std::pair<DType, std::vector<int64_t>>>& arrays) {
  Graph g;
  g.nodes.push_back(node);
  ArrayTypeLookup lookup = [&](const std::string& name) -> absl::StatusOr<ValueType> {
    const auto& [dtype, dims] = arrays.at(std::stoi(name.substr(1)));
    return ValueType{dtype, *Shape::Create(dims), false};
  };
  absl::StatusOr<ValidatedGraph> v = ValidateGraph(g, lookup, {});
  EXPECT_TRUE(v.ok()) << v.status();
  absl::StatusOr<std::shared_ptr<const Plan>> plan = BuildPlan(*v, {0}, {});
  EXPECT_TRUE(plan.ok()) << plan.status();
  return {*std::move(v), *plan};
}

Node Op(const std::string& op, int inputs, AttrMap attrs) {
  Node n{.id = std::string(1, 'n'), .op = op, .inputs = {}, .attrs = std::move(attrs)};
  for (int i = 0; i < inputs; ++i) n.inputs.push_back(Input::Array("a" + std::to_string(i)));
  return n;
}

std::vector<LayoutCopy> Copies(const Prepared& p) {
  absl::StatusOr<std::optional<std::vector<LayoutCopy>>> c =
      GenerateLayoutCopies(p.graph, p.plan->steps.at(0));
  EXPECT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->has_value());
  return c->value_or(std::vector<LayoutCopy>{});
}

TEST(CodegenLayoutTest, ReshapeOfTheSameDtypeIsAMemcpy) {
  const std::vector<LayoutCopy> c = Copies(Prepare(
      Op("reshape", 1, {{"shape", std::vector<int64_t>{4, 6}}}), {{DType::kFloat32, {2, 3, 4}}}));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_TRUE(c[0].memcpy);
  EXPECT_EQ(c[0].num_elements, 24);
}

TEST(CodegenLayoutTest, TransposeReadsThroughPermutedStrides) {
  const std::vector<LayoutCopy> c = Copies(Prepare(
      Op("transpose", 1, {{"axes", std::vector<int64_t>{1, 0}}}), {{DType::kInt16, {3, 5}}}));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_FALSE(c[0].memcpy);
  // [src, dst, n, dims (5, 3), src strides (1, 5), dst strides (3, 1), bases]
  EXPECT_THAT(c[0].words, ElementsAre(0, 0, 15, 5, 3, 1, 5, 3, 1, 0, 0));
}

TEST(CodegenLayoutTest, NegativeStepSliceStartsAtTheEnd) {
  const std::vector<LayoutCopy> c = Copies(Prepare(Op("slice", 1,
                                                      {{"starts", std::vector<int64_t>{-1}},
                                                       {"stops", std::vector<int64_t>{-11}},
                                                       {"steps", std::vector<int64_t>{-2}}}),
                                                   {{DType::kFloat64, {10}}}));
  ASSERT_EQ(c.size(), 1u);
  // Elements 9, 7, 5, 3, 1: base 9, stride -2.
  EXPECT_EQ(c[0].num_elements, 5);
  EXPECT_EQ(static_cast<int64_t>(c[0].words[4]), -2);
  EXPECT_EQ(static_cast<int64_t>(c[0].words[6]), 9);
}

TEST(CodegenLayoutTest, ConcatenateWritesEachInputAtItsOffsetAndPromotes) {
  const std::vector<LayoutCopy> c =
      Copies(Prepare(Op("concatenate", 2, {{"axis", int64_t{1}}}),
                     {{DType::kInt8, {2, 3}}, {DType::kFloat32, {2, 4}}}));
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].input, 0);
  EXPECT_EQ(c[1].input, 1);
  EXPECT_FALSE(c[0].memcpy);  // int8 -> float32
  // Input 1 lands after the 3 columns of input 0, rows 7 apart; same dtype,
  // but not contiguous in the output: a kernel.
  EXPECT_FALSE(c[1].memcpy);
  EXPECT_EQ(c[1].words.back(), 3u);
}

TEST(CodegenLayoutTest, EveryCopyKernelCompilesForSm90) {
  std::map<std::string, std::string> kernels;  // name -> kernel text
  auto add = [&](const Prepared& p) {
    for (const LayoutCopy& c : Copies(p)) {
      if (!c.memcpy) kernels[c.name] = c.source.substr(std::strlen(kDeviceLibrary));
    }
  };
  for (const DTypeInfo& from : AllDTypes()) {
    if (IsComplex(from.dtype)) continue;  // complex: codegen_complex_test.cc
    add(Prepare(Op("transpose", 1, {{"axes", std::vector<int64_t>{2, 0, 1}}}),
                {{from.dtype, {2, 3, 4}}}));
    add(Prepare(Op("broadcast_to", 1, {{"shape", std::vector<int64_t>{3, 4}}}),
                {{from.dtype, {4}}}));
    for (const DTypeInfo& to : AllDTypes()) {
      if (IsComplex(to.dtype)) continue;
      add(Prepare(Op("stack", 2, {{"axis", int64_t{1}}}),
                  {{from.dtype, {2, 3}}, {to.dtype, {2, 3}}}));
    }
  }
  add(Prepare(Op("full", 1, {{"shape", std::vector<int64_t>{3, 3}}}), {{DType::kBool, {}}}));
  std::string program = kDeviceLibrary;
  for (const auto& [name, text] : kernels) program += text;
  EXPECT_GT(kernels.size(), 50u);
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> m = CompileToCubin(program, "layout.cu", options);
  EXPECT_THAT(m, IsOk());
}

Node Take(const std::string& op, std::optional<int64_t> axis) {
  AttrMap attrs;
  if (axis) attrs["axis"] = *axis;
  return Op(op, 2, std::move(attrs));
}

TEST(CodegenLayoutTest, TakeIsAGatherWithMergedDims) {
  const std::vector<LayoutCopy> c =
      Copies(Prepare(Take("take", 1), {{DType::kFloat32, {2, 3, 4}}, {DType::kInt32, {5, 6}}}));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].index_input, 1);
  EXPECT_FALSE(c[0].memcpy);
  EXPECT_EQ(c[0].name, "gf_gather_b4_int32_r3");
  // [src, dst, indices, error word, n, axis size, axis stride, dims (2, 30, 4),
  //  src strides (12, 0, 1), index strides (0, 1, 0)]: the index dims merge.
  EXPECT_THAT(c[0].words, ElementsAre(0, 0, 0, 0, 240, 3, 4, 2, 30, 4, 12, 0, 1, 0, 1, 0));
}

TEST(CodegenLayoutTest, TakeAlongAxisBroadcastsThroughZeroStrides) {
  const std::vector<LayoutCopy> c = Copies(
      Prepare(Take("take_along_axis", 1), {{DType::kBool, {1, 3}}, {DType::kUInt8, {4, 2}}}));
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].name, "gf_gather_bool_uint8_r1");
  // Output (4, 2): the source row serves every row, the indices are read in
  // order, so one merged dim of 8.
  EXPECT_THAT(c[0].words, ElementsAre(0, 0, 0, 0, 8, 3, 1, 8, 0, 1));
}

TEST(CodegenLayoutTest, EveryGatherKernelCompilesForSm90) {
  std::map<std::string, std::string> kernels;  // name -> kernel text
  auto add = [&](const Prepared& p) {
    for (const LayoutCopy& c : Copies(p))
      kernels[c.name] = c.source.substr(std::strlen(kDeviceLibrary));
  };
  for (const DTypeInfo& src : AllDTypes()) {
    for (const DTypeInfo& index : AllDTypes()) {
      if (IsFloat(index.dtype) || IsComplex(index.dtype) || IsComplex(src.dtype)) continue;
      add(Prepare(Take("take", std::nullopt), {{src.dtype, {7}}, {index.dtype, {3}}}));
      add(Prepare(Take("take", 0), {{src.dtype, {5, 3}}, {index.dtype, {2, 3}}}));
      if (index.dtype != DType::kBool) {
        add(Prepare(Take("take_along_axis", 1),
                    {{src.dtype, {2, 3, 4}}, {index.dtype, {2, 5, 1}}}));
      }
    }
  }
  std::string program = kDeviceLibrary;
  for (const auto& [name, text] : kernels) program += text;
  EXPECT_GT(kernels.size(), 60u);
  CompileOptions options;
  options.arch = 90;
  absl::StatusOr<CompiledModule> m = CompileToCubin(program, "gather.cu", options);
  EXPECT_THAT(m, IsOk());
}

}  // namespace
}  // namespace gpuflow::cuda
