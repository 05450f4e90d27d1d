// Whole graphs through the real registry (ValidateGraph's type inference and
// canonical attributes) and the host kernels, against NumPy 2's results (noted
// from numpy with np._set_promotion_state("weak")).
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/host/host_kernels.h"
#include "engine/ir/graph.h"
#include "engine/ir/validate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/host/host_test_util.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::host_test {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::HasSubstr;

// Validates `graph` against `arrays` and runs every node on the host; returns
// the node results by id.
absl::StatusOr<std::map<std::string, TestArray>> Evaluate(
    const Graph& graph, const std::map<std::string, TestArray>& arrays) {
  ArrayTypeLookup lookup = [&](const std::string& name) -> absl::StatusOr<ValueType> {
    auto it = arrays.find(name);
    if (it == arrays.end()) return absl::NotFoundError(name);
    return it->second.type();
  };
  absl::StatusOr<ValidatedGraph> v = ValidateGraph(graph, lookup, ValidationLimits{});
  if (!v.ok()) return v.status();
  std::vector<TestArray> results;
  std::map<std::string, TestArray> by_id;
  for (const ValidatedNode& node : v->nodes) {
    std::vector<HostConstView> inputs;
    for (const ValueRef& ref : node.inputs) {
      switch (ref.kind) {
        case ValueRef::Kind::kArray:
          inputs.push_back(arrays.at(v->arrays[ref.index]).view());
          break;
        case ValueRef::Kind::kLiteral: {
          const LiteralArray& lit = v->literals[ref.index];
          inputs.push_back(
              {lit.dtype, lit.shape, reinterpret_cast<const std::byte*>(lit.bytes.data())});
          break;
        }
        case ValueRef::Kind::kNode:
          inputs.push_back(results[ref.index].view());
          break;
      }
    }
    TestArray out = Empty(node.type.output.dtype, node.type.output.shape);
    HostView out_view{out.dtype, out.shape, out.bytes.data()};
    absl::Status s = RunNodeOnHost(node, inputs, out_view, ManyThreads());
    if (!s.ok()) return s;
    by_id[node.id] = out;
    results.push_back(std::move(out));
  }
  return by_id;
}

Node N(std::string id, std::string op, std::vector<Input> inputs, AttrMap attrs = {}) {
  Node n;
  n.id = std::move(id);
  n.op = std::move(op);
  n.inputs = std::move(inputs);
  n.attrs = std::move(attrs);
  return n;
}

Input A(std::string name) { return Input::Array(std::move(name)); }
Input R(std::string id) { return Input::Node(std::move(id)); }
Input I(int64_t v) { return Input::FromScalar(Scalar::Int(v)); }
Input F(double v) { return Input::FromScalar(Scalar::Float(v)); }

TEST(HostGraphTest, ElementwiseWithWeakScalars) {
  const std::map<std::string, TestArray> arrays = {
      {"i8", MakeArray(DType::kInt8, S({3}), {127, -128, 5})},
      {"h", MakeArray(DType::kFloat16, S({2}), {1, 2})},
      {"u8", MakeArray(DType::kUInt8, S({2}), {3, 250})},
      {"f", MakeArray(DType::kFloat32, S({2, 1}), {-1.5, 2.5})},
  };
  Graph g;
  g.nodes = {
      N("a", "add", {A("i8"), I(1)}),              // int8 wraps
      N("b", "add", {A("h"), F(3.7)}),             // float16
      N("c", "floordiv", {A("i8"), I(-1)}),        // INT_MIN // -1 wraps
      N("d", "div", {A("u8"), I(2)}),              // float64
      N("e", "sqrt", {A("u8")}),                   // float16
      N("w", "where", {R("gt"), A("f"), F(0.5)}),  // float32, broadcast
      N("gt", "gt", {A("f"), I(0)}),
      N("clip", "clip", {A("f"), F(-1), F(1)}),
      N("cast", "cast", {A("f")}, {{"dtype", DType::kUInt8}}),
  };
  // `w` uses `gt` before it is defined: reorder topologically.
  std::swap(g.nodes[5], g.nodes[6]);
  absl::StatusOr<std::map<std::string, TestArray>> r = Evaluate(g, arrays);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->at("a").dtype, DType::kInt8);
  ExpectValues(r->at("a"), {-128, -127, 6});
  EXPECT_EQ(r->at("b").dtype, DType::kFloat16);
  const double w = Half::FromDouble(3.7).ToDouble();
  ExpectValues(r->at("b"), {1 + w, 2 + w});
  ExpectValues(r->at("c"), {-127, -128, -5});
  EXPECT_EQ(r->at("d").dtype, DType::kFloat64);
  ExpectValues(r->at("d"), {1.5, 125});
  EXPECT_EQ(r->at("e").dtype, DType::kFloat16);
  ExpectValues(r->at("e"), {1.732421875, std::sqrt(250.0)});
  EXPECT_EQ(r->at("w").dtype, DType::kFloat32);
  ExpectValues(r->at("w"), {0.5, 2.5});
  ExpectValues(r->at("clip"), {-1, 1});
  ExpectValues(r->at("cast"), {0, 2});  // -1.5 saturates to 0
}

TEST(HostGraphTest, ReductionsScansAndSoftmax) {
  const std::map<std::string, TestArray> arrays = {
      {"x", MakeArray(DType::kInt8, S({2, 3}), {100, 100, 100, -1, 2, 7})},
      {"h", MakeArray(DType::kFloat16, S({2, 3}), {1, 2, 3, 4, 5, kNaN})},
  };
  Graph g;
  g.nodes = {
      N("sum1", "sum", {A("x")}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", true}}),
      N("sum8", "sum", {A("x")}, {{"dtype", DType::kInt8}}),
      N("mean", "mean", {A("x")}, {{"axes", std::vector<int64_t>{-1}}}),
      N("var", "var", {A("x")}, {{"axes", std::vector<int64_t>{0}}, {"ddof", int64_t{1}}}),
      N("amax", "argmax", {A("x")}),
      N("amin", "argmin", {A("x")}, {{"axis", int64_t{0}}, {"keepdims", true}}),
      N("hmax", "max", {A("h")}, {{"axes", std::vector<int64_t>{1}}}),
      N("hmean", "mean", {A("h")}, {{"axes", std::vector<int64_t>{0}}}),
      N("cs", "cumsum", {A("x")}),
      N("cp", "cumprod", {A("x")}, {{"axis", int64_t{-1}}}),
      N("sm", "softmax", {A("x")}),
      N("lse", "logsumexp", {A("x")}, {{"axes", std::vector<int64_t>{1}}}),
      N("any", "any", {A("h")}),
  };
  absl::StatusOr<std::map<std::string, TestArray>> r = Evaluate(g, arrays);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->at("sum1").dtype, DType::kInt64);
  EXPECT_EQ(r->at("sum1").shape, S({2, 1}));
  ExpectValues(r->at("sum1"), {300, 8});
  ExpectValues(r->at("sum8"), {52});  // numpy: x.sum(dtype=np.int8) == 52
  ExpectValues(r->at("mean"), {100, 8.0 / 3});
  ExpectValues(r->at("var"), {5100.5, 4802, 4324.5});
  ExpectValues(r->at("amax"), {0});
  EXPECT_EQ(r->at("amin").shape, S({1, 3}));
  ExpectValues(r->at("amin"), {1, 1, 1});
  ExpectValues(r->at("hmax"), {3, kNaN});
  EXPECT_EQ(r->at("hmean").dtype, DType::kFloat16);
  ExpectValues(r->at("hmean"), {2.5, 3.5, kNaN});
  EXPECT_EQ(r->at("cs").shape, S({6}));
  ExpectValues(r->at("cs"), {100, 200, 300, 299, 301, 308});
  ExpectValues(r->at("cp"), {100, 10000, 1000000, -1, -2, -14});
  EXPECT_EQ(r->at("sm").dtype, DType::kFloat16);  // the float rule of int8
  const double e1 = std::exp(-8.0);
  const double e2 = std::exp(-5.0);
  ExpectValues(r->at("sm"), {1.0 / 3, 1.0 / 3, 1.0 / 3, e1 / (e1 + e2 + 1), e2 / (e1 + e2 + 1),
                             1 / (e1 + e2 + 1)});
  ExpectValues(r->at("lse"), {100 + std::log(3.0), 7 + std::log1p(e1 + e2)}, 1);
  ExpectValues(r->at("any"), {1});
}

TEST(HostGraphTest, ShapesLinalgAndCreation) {
  const std::map<std::string, TestArray> arrays = {
      {"m", MakeArray(DType::kInt32, S({2, 3}), {0, 1, 2, 3, 4, 5})},
      {"v", MakeArray(DType::kFloat32, S({3}), {1, 0.5, 0.25})},
  };
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  Graph g;
  g.nodes = {
      // m[::-1, ::-2]
      N("rev", "slice", {A("m")},
        {{"starts", std::vector<int64_t>{kMax, kMax}},
         {"stops", std::vector<int64_t>{kMin, kMin}},
         {"steps", std::vector<int64_t>{-1, -2}}}),
      // m[:, 1:]
      N("tail", "slice", {A("m")},
        {{"starts", std::vector<int64_t>{1}},
         {"stops", std::vector<int64_t>{kMax}},
         {"axes", std::vector<int64_t>{1}}}),
      N("t", "transpose", {A("m")}),
      N("mv", "matmul", {A("m"), A("v")}),
      N("cat", "concatenate", {A("m"), R("tail")}, {{"axis", int64_t{-1}}}),
      N("st", "stack", {A("v"), A("v")}, {{"axis", int64_t{1}}}),
      N("r", "reshape", {A("m")}, {{"shape", std::vector<int64_t>{3, -1}}}),
      N("b", "broadcast_to", {A("v")}, {{"shape", std::vector<int64_t>{2, 3}}}),
      N("full", "full", {I(7)}, {{"shape", std::vector<int64_t>{2}}, {"dtype", DType::kInt8}}),
      N("ar", "arange", {},
        {{"start", 0.1}, {"stop", 1.0}, {"step", 0.1}, {"dtype", DType::kFloat32}}),
      N("ari", "arange", {}, {{"stop", int64_t{5}}}),
      N("rnd", "random_uniform", {}, {{"shape", std::vector<int64_t>{3}}, {"seed", int64_t{1}}}),
  };
  absl::StatusOr<std::map<std::string, TestArray>> r = Evaluate(g, arrays);
  ASSERT_THAT(r, IsOk());
  EXPECT_EQ(r->at("rev").shape, S({2, 2}));
  ExpectValues(r->at("rev"), {5, 3, 2, 0});
  ExpectValues(r->at("tail"), {1, 2, 4, 5});
  ExpectValues(r->at("t"), {0, 3, 1, 4, 2, 5});
  EXPECT_EQ(r->at("mv").dtype, DType::kFloat64);  // int32 with float32
  ExpectValues(r->at("mv"), {1.0, 6.25});
  ExpectValues(r->at("cat"), {0, 1, 2, 1, 2, 3, 4, 5, 4, 5});
  ExpectValues(r->at("st"), {1, 1, 0.5, 0.5, 0.25, 0.25});
  EXPECT_EQ(r->at("r").shape, S({3, 2}));
  ExpectValues(r->at("b"), {1, 0.5, 0.25, 1, 0.5, 0.25});
  EXPECT_EQ(r->at("full").dtype, DType::kInt8);
  ExpectValues(r->at("full"), {7, 7});
  ExpectValues(r->at("ar"), {0.10000000149011612, 0.20000000298023224, 0.30000001192092896,
                             0.4000000059604645, 0.5, 0.6000000238418579, 0.7000000476837158,
                             0.800000011920929, 0.9000000357627869});
  EXPECT_EQ(r->at("ari").dtype, DType::kInt64);
  ExpectValues(r->at("ari"), {0, 1, 2, 3, 4});
  EXPECT_EQ(r->at("rnd").dtype, DType::kFloat32);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_GE(r->at("rnd").At(i), 0);
    EXPECT_LT(r->at("rnd").At(i), 1);
  }
}

// Regression (issue 23): int64_array == 2**63 gave true for INT64_MAX (the
// comparison ran in float64, where INT64_MAX rounds to 2**63). NumPy 2
// compares exactly: no int64 equals 2**63 and every int64 is below it.
TEST(HostGraphTest, ComparisonsWithIntsBeyondTheDTypeAreExact) {
  TestArray i64 = Empty(DType::kInt64, S({3}));
  i64.SetBits(0, static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  i64.SetBits(1, static_cast<uint64_t>(std::numeric_limits<int64_t>::min()));
  i64.SetBits(2, 0);
  TestArray u64 = Empty(DType::kUInt64, S({2}));
  u64.SetBits(0, 0);
  u64.SetBits(1, ~uint64_t{0});
  const std::map<std::string, TestArray> arrays = {{"i64", i64}, {"u64", u64}};
  const Input two63 = Input::FromScalar(Scalar::UInt(uint64_t{1} << 63));
  Graph g;
  g.nodes = {
      N("eq", "eq", {A("i64"), two63}),  N("ne", "ne", {A("i64"), two63}),
      N("lt", "lt", {A("i64"), two63}),  N("le", "le", {two63, A("i64")}),
      N("gt", "gt", {A("i64"), two63}),  N("ge", "ge", {A("i64"), two63}),
      N("neg", "gt", {A("u64"), I(-1)}), N("negeq", "eq", {A("u64"), I(-1)}),
  };
  absl::StatusOr<std::map<std::string, TestArray>> r = Evaluate(g, arrays);
  ASSERT_THAT(r, IsOk());
  ExpectValues(r->at("eq"), {0, 0, 0});
  ExpectValues(r->at("ne"), {1, 1, 1});
  ExpectValues(r->at("lt"), {1, 1, 1});
  ExpectValues(r->at("le"), {0, 0, 0});
  ExpectValues(r->at("gt"), {0, 0, 0});
  ExpectValues(r->at("ge"), {0, 0, 0});
  ExpectValues(r->at("neg"), {1, 1});
  ExpectValues(r->at("negeq"), {0, 0});
}

TEST(HostGraphTest, DataDependentErrorsNameTheNode) {
  const std::map<std::string, TestArray> arrays = {{"e", Empty(DType::kFloat32, S({0}))}};
  Graph g;
  g.nodes = {N("m", "max", {A("e")})};
  EXPECT_THAT(Evaluate(g, arrays), StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("node 'm' (max): zero-size array")));
}

TEST(HostGraphTest, EmptyArraysWithHugeDimensionsRunWithoutOverflow) {
  // (0, 2^61, 8) and (2^61, 8, 0) have no elements, but products of their
  // other dimensions (strides, reduction sizes, concatenation offsets) do
  // not fit int64; every host kernel must run them as the empty arrays they
  // are (UBSan reports any signed overflow).
  const int64_t big = int64_t{1} << 61;
  const std::map<std::string, TestArray> arrays = {{"e", Empty(DType::kFloat32, S({0, big, 8}))},
                                                   {"f", Empty(DType::kFloat32, S({big, 8, 0}))},
                                                   {"a", Empty(DType::kFloat32, S({big, big, 0}))},
                                                   {"b", Empty(DType::kFloat32, S({0, 0}))}};
  Graph g;
  g.nodes = {
      N("s", "sum", {A("e")}, {{"axes", std::vector<int64_t>{1, 2}}}),
      N("s2", "sum", {A("f")}, {{"axes", std::vector<int64_t>{0}}}),
      N("c", "concatenate", {A("e"), A("e")}, {{"axis", int64_t{1}}}),
      N("k", "stack", {A("e"), A("e")}),
      N("t", "transpose", {A("e")}),
      N("m", "cumsum", {A("f")}, {{"axis", int64_t{0}}}),
      N("x", "softmax", {A("f")}, {{"axis", int64_t{2}}}),
      N("mm", "matmul", {A("a"), A("b")}),
      N("sl", "slice", {A("e")},
        {{"starts", std::vector<int64_t>{0, 1}}, {"stops", std::vector<int64_t>{0, big}}}),
      N("n", "neg", {A("f")}),
  };
  absl::StatusOr<std::map<std::string, TestArray>> out = Evaluate(g, arrays);
  ASSERT_THAT(out, IsOk());
  EXPECT_EQ(out->at("s").shape, S({0}));
  EXPECT_EQ(out->at("s2").shape, S({8, 0}));
  EXPECT_EQ(out->at("c").shape, S({0, 2 * big, 8}));
  EXPECT_EQ(out->at("mm").shape, S({big, big, 0}));
}

}  // namespace
}  // namespace gpuflow::host_test
