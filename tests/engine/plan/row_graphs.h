// Graphs of row programs (x - mean, layer norm, std...) validated against
// the op registry, for the planner's and the CUDA generator's tests.
//
//   RowGraphs b({{"x", {DType::kFloat32, {64, 4096}}}, {"g", {DType::kFloat32, {4096}}}});
//   const std::string out = b.LayerNorm("x", "g", "g");
//   auto [graph, plan] = b.Build({out});
#ifndef GPUFLOW_TESTS_ENGINE_PLAN_ROW_GRAPHS_H_
#define GPUFLOW_TESTS_ENGINE_PLAN_ROW_GRAPHS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ir/validate.h"
#include "engine/plan/plan.h"
#include "gtest/gtest.h"

namespace gpuflow::testing {

class RowGraphs {
 public:
  struct ArrayType {
    DType dtype;
    std::vector<int64_t> shape;
  };
  explicit RowGraphs(std::map<std::string, ArrayType> arrays) : arrays_(std::move(arrays)) {}

  static Input A(const std::string& name) { return Input::Array(name); }
  static Input N(const std::string& id) { return Input::Node(id); }
  static Input S(double v) { return Input::FromScalar(Scalar::Float(v)); }

  // Adds a node; returns its id.
  std::string Op(const std::string& op, std::vector<Input> inputs, AttrMap attrs = {}) {
    Node n;
    n.id = "n" + std::to_string(graph_.nodes.size());
    n.op = op;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    graph_.nodes.push_back(n);
    return n.id;
  }
  // A reduction over `axes`.
  std::string Reduce(const std::string& op, Input x, std::vector<int64_t> axes, bool keepdims,
                     AttrMap extra = {}) {
    extra["axes"] = std::move(axes);
    extra["keepdims"] = keepdims;
    return Op(op, {std::move(x)}, std::move(extra));
  }
  // x - x.mean(-1, keepdims=True)
  std::string Center(Input x) { return Op("sub", {x, N(Reduce("mean", x, {-1}, true))}); }
  // (x - mean) / sqrt(var + eps) * g + b, var as the mean of squares.
  std::string LayerNorm(const std::string& x, const std::string& g, const std::string& b) {
    const std::string c = Center(A(x));
    const std::string v = Reduce("mean", N(Op("mul", {N(c), N(c)})), {-1}, true);
    const std::string s = Op("sqrt", {N(Op("add", {N(v), S(1e-5)}))});
    return Op("add", {N(Op("mul", {N(Op("div", {N(c), N(s)})), A(g)})), A(b)});
  }

  // Validates and plans with `options`; outputs by node id.
  std::pair<ValidatedGraph, std::shared_ptr<const gpuflow::Plan>> Build(
      const std::vector<std::string>& outputs, const PlanOptions& options = {}) const {
    ArrayTypeLookup lookup = [&](const std::string& name) -> absl::StatusOr<ValueType> {
      const ArrayType& t = arrays_.at(name);
      return ValueType{t.dtype, *Shape::Create(t.shape), false};
    };
    absl::StatusOr<ValidatedGraph> v = ValidateGraph(graph_, lookup, {});
    EXPECT_TRUE(v.ok()) << v.status();
    if (!v.ok()) return {};
    std::vector<int> out;
    for (const std::string& id : outputs) out.push_back(v->FindNode(id));
    absl::StatusOr<std::shared_ptr<const gpuflow::Plan>> plan = BuildPlan(*v, out, options);
    EXPECT_TRUE(plan.ok()) << plan.status();
    return {*std::move(v), plan.ok() ? *plan : nullptr};
  }

 private:
  std::map<std::string, ArrayType> arrays_;
  Graph graph_;
};

}  // namespace gpuflow::testing

#endif  // GPUFLOW_TESTS_ENGINE_PLAN_ROW_GRAPHS_H_
