#include "engine/plan/plan.h"

#include <map>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpuflow {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Hand-built graphs: the planner reads only op names and families, input
// references and output shapes, so these tests need no registry.
class GraphBuilder {
 public:
  GraphBuilder() {
    Op("exp", OpFamily::kElementwise);
    Op("mul", OpFamily::kElementwise);
    Op("add", OpFamily::kElementwise);
    Op("sqrt", OpFamily::kElementwise);
    Op("sum", OpFamily::kReduction);
    Op("matmul", OpFamily::kLinalg);
    Op("reshape", OpFamily::kShape);
  }

  // Adds a node; inputs name earlier nodes or, with a leading '@', arrays.
  int Add(const std::string& op, std::vector<std::string> inputs, std::vector<int64_t> shape) {
    ValidatedNode node;
    node.id = "n" + std::to_string(graph_.nodes.size());
    node.op = &ops_.at(op);
    for (const std::string& in : inputs) {
      if (in[0] == '@') {
        graph_.arrays.push_back(in.substr(1));
        graph_.array_types.push_back({DType::kFloat32, *Shape::Create(shape), false});
        node.inputs.push_back({ValueRef::Kind::kArray, static_cast<int>(graph_.arrays.size()) - 1});
      } else {
        node.inputs.push_back({ValueRef::Kind::kNode, graph_.FindNode(in)});
      }
      node.input_types.push_back({DType::kFloat32, *Shape::Create(shape), false});
    }
    node.type.output = {DType::kFloat32, *Shape::Create(shape), false};
    graph_.nodes.push_back(std::move(node));
    return static_cast<int>(graph_.nodes.size()) - 1;
  }

  const ValidatedGraph& graph() const { return graph_; }

 private:
  void Op(const std::string& name, OpFamily family) {
    OpDef def;
    def.name = name;
    def.family = family;
    ops_.emplace(name, std::move(def));
  }
  std::map<std::string, OpDef> ops_;
  ValidatedGraph graph_;
};

std::vector<std::string> Descriptions(const Plan& plan) {
  std::vector<std::string> out;
  for (const Step& step : plan.steps) out.push_back(step.description);
  return out;
}

TEST(PlanTest, FusesAnElementwiseChainIntoOneStep) {
  GraphBuilder b;
  b.Add("mul", {"@a", "@a"}, {8});              // n0
  b.Add("mul", {"@b", "@b"}, {8});              // n1
  b.Add("add", {"n0", "n1"}, {8});              // n2
  const int root = b.Add("sqrt", {"n2"}, {8});  // n3
  auto plan = BuildPlan(b.graph(), {root}, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ((*plan)->steps.size(), 1u);
  const Step& step = (*plan)->steps[0];
  EXPECT_EQ(step.kind, StepKind::kElementwise);
  EXPECT_THAT(step.nodes, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(step.root, root);
  EXPECT_EQ(step.description, "fused elementwise [mul, mul, add, sqrt]");
}

TEST(PlanTest, CutsAtAValueWithTwoConsumers) {
  GraphBuilder b;
  b.Add("exp", {"@a"}, {8});        // n0, used twice
  b.Add("mul", {"n0", "n0"}, {8});  // n1: one consumer node, reading n0 twice
  b.Add("add", {"n0", "n1"}, {8});  // n2
  auto plan = BuildPlan(b.graph(), {2}, {});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ((*plan)->steps.size(), 2u);
  EXPECT_EQ((*plan)->steps[0].cut, FusionCut::kMultipleConsumers);
  EXPECT_THAT((*plan)->steps[0].nodes, ElementsAre(0));
  EXPECT_THAT((*plan)->steps[1].nodes, ElementsAre(1, 2));
  // n0 is read by step 1, so it lives until then.
  EXPECT_EQ((*plan)->last_use_step[0], 1);
}

TEST(PlanTest, SkipsNodesNoOutputDependsOn) {
  // Regression: every node used to run, so a dead custom kernel failed a
  // request that did not ask for it, and a dead consumer blocked fusion.
  GraphBuilder b;
  b.Add("exp", {"@a"}, {8});                    // n0
  b.Add("matmul", {"n0", "n0"}, {8});           // n1: dead
  const int root = b.Add("sqrt", {"n0"}, {8});  // n2
  auto plan = BuildPlan(b.graph(), {root}, {});
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ((*plan)->steps.size(), 1u);
  EXPECT_THAT((*plan)->steps[0].nodes, ElementsAre(0, 2));
  EXPECT_EQ((*plan)->node_step[1], -1);
}

TEST(PlanTest, CutsAtARequestedOutput) {
  GraphBuilder b;
  b.Add("exp", {"@a"}, {8});
  b.Add("sqrt", {"n0"}, {8});
  auto plan = BuildPlan(b.graph(), {0, 1}, {});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ((*plan)->steps.size(), 2u);
  EXPECT_EQ((*plan)->steps[0].cut, FusionCut::kGraphOutput);
  EXPECT_EQ((*plan)->last_use_step[0], 2);  // outputs live to the end
}

TEST(PlanTest, CutsAtAShapeChange) {
  GraphBuilder b;
  b.Add("exp", {"@a"}, {8});
  b.Add("add", {"n0", "@c"}, {4, 8});  // broadcasts n0
  auto plan = BuildPlan(b.graph(), {1}, {});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ((*plan)->steps.size(), 2u);
  EXPECT_EQ((*plan)->steps[0].cut, FusionCut::kShapeChange);
}

TEST(PlanTest, FusesReductionPrologueAndEpilogue) {
  GraphBuilder b;
  b.Add("mul", {"@a", "@a"}, {4, 8});  // prologue
  b.Add("sum", {"n0"}, {4});           // reduction
  b.Add("sqrt", {"n1"}, {4});          // epilogue
  b.Add("mul", {"n2", "@s"}, {4});     // epilogue
  auto plan = BuildPlan(b.graph(), {3}, {});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ((*plan)->steps.size(), 1u);
  const Step& step = (*plan)->steps[0];
  EXPECT_EQ(step.kind, StepKind::kReduction);
  EXPECT_EQ(step.reduction, 1);
  EXPECT_THAT(step.nodes, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(step.description, "sum prologue [mul] epilogue [sqrt, mul]");
}

TEST(PlanTest, EpilogueGroupsJoinAfterTheReduction) {
  GraphBuilder b;
  b.Add("exp", {"@s"}, {4});        // n0: an elementwise group of the result's shape
  b.Add("sum", {"@a"}, {4});        // n1
  b.Add("add", {"n1", "n0"}, {4});  // n2 joins both
  auto plan = BuildPlan(b.graph(), {2}, {});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ((*plan)->steps.size(), 1u);
  // The reduction comes first; n0 belongs to the epilogue although its index is lower.
  EXPECT_THAT((*plan)->steps[0].nodes, ElementsAre(1, 0, 2));
}

TEST(PlanTest, ReductionFusionCanBeTurnedOff) {
  GraphBuilder b;
  b.Add("mul", {"@a", "@a"}, {4, 8});
  b.Add("sum", {"n0"}, {4});
  b.Add("sqrt", {"n1"}, {4});
  auto plan = BuildPlan(b.graph(), {2}, {.fuse_reductions = false});
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(Descriptions(**plan), ElementsAre("mul", "sum", "sqrt"));
}

TEST(PlanTest, MatmulAndShapeOpsStandAlone) {
  GraphBuilder b;
  b.Add("exp", {"@a"}, {4, 4});
  b.Add("matmul", {"n0", "n0"}, {4, 4});
  b.Add("reshape", {"n1"}, {16});
  b.Add("exp", {"n2"}, {16});
  auto plan = BuildPlan(b.graph(), {3}, {});
  ASSERT_TRUE(plan.ok());
  std::vector<StepKind> kinds;
  for (const Step& s : (*plan)->steps) kinds.push_back(s.kind);
  EXPECT_THAT(kinds, ElementsAre(StepKind::kElementwise, StepKind::kMatmul, StepKind::kShape,
                                 StepKind::kElementwise));
  EXPECT_EQ((*plan)->steps[1].cut, FusionCut::kNotFusible);
}

TEST(PlanTest, RespectsMaxFusedOps) {
  GraphBuilder b;
  b.Add("exp", {"@a"}, {8});
  for (int i = 1; i < 10; ++i) b.Add("exp", {"n" + std::to_string(i - 1)}, {8});
  auto plan = BuildPlan(b.graph(), {9}, {.max_fused_ops = 4});
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ((*plan)->steps.size(), 3u);
  EXPECT_EQ((*plan)->steps[0].nodes.size(), 4u);
  EXPECT_EQ((*plan)->steps[0].cut, FusionCut::kMaxOps);
}

TEST(PlanTest, StepsAreInDependencyOrder) {
  GraphBuilder b;
  b.Add("exp", {"@a"}, {8});        // n0 -> two consumers
  b.Add("sqrt", {"n0"}, {8});       // n1
  b.Add("exp", {"@b"}, {8});        // n2
  b.Add("add", {"n2", "n0"}, {8});  // n3
  b.Add("mul", {"n1", "n3"}, {8});  // n4
  auto plan = BuildPlan(b.graph(), {4}, {});
  ASSERT_TRUE(plan.ok());
  std::vector<int> position(5, -1);
  for (size_t s = 0; s < (*plan)->steps.size(); ++s) {
    for (int n : (*plan)->steps[s].nodes) position[n] = static_cast<int>(s);
  }
  for (int n = 0; n < 5; ++n) {
    for (const ValueRef& ref : b.graph().nodes[n].inputs) {
      if (ref.kind == ValueRef::Kind::kNode) {
        EXPECT_LE(position[ref.index], position[n]);
      }
    }
  }
}

TEST(PlanTest, RejectsOutputsOutOfRange) {
  GraphBuilder b;
  b.Add("exp", {"@a"}, {8});
  EXPECT_EQ(BuildPlan(b.graph(), {5}, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PlanSignatureTest, IgnoresNamesButNotStructureOrTypes) {
  GraphBuilder a;
  a.Add("mul", {"@x", "@x"}, {8});
  GraphBuilder b;
  b.Add("mul", {"@y", "@y"}, {8});
  GraphBuilder c;
  c.Add("mul", {"@x", "@x"}, {9});
  GraphBuilder d;
  d.Add("add", {"@x", "@x"}, {8});
  const std::string sa = PlanSignature(a.graph(), {0});
  EXPECT_EQ(sa, PlanSignature(b.graph(), {0}));
  EXPECT_NE(sa, PlanSignature(c.graph(), {0}));
  EXPECT_NE(sa, PlanSignature(d.graph(), {0}));
  EXPECT_THAT(sa, HasSubstr("mul"));
}

TEST(PlanSignatureTest, DiffersWhenALiteralChangesTheComputeDtype) {
  // lt(uint8 array, 2) compares in uint8, lt(uint8 array, -3) in int64: the
  // same structure and output type, but not the same code.
  GraphBuilder a;
  a.Add("add", {"@x", "@x"}, {8});
  ValidatedGraph b = a.graph();
  b.nodes[0].type.compute_dtype = DType::kInt64;
  ValidatedGraph c = a.graph();
  c.nodes[0].input_types[1].weak = !c.nodes[0].input_types[1].weak;
  const std::string sa = PlanSignature(a.graph(), {0});
  EXPECT_NE(sa, PlanSignature(b, {0}));
  EXPECT_NE(sa, PlanSignature(c, {0}));
}

TEST(PlanCacheTest, CountsHitsMissesAndEvicts) {
  PlanCache cache({}, /*max_entries=*/2);
  GraphBuilder g1;
  g1.Add("exp", {"@a"}, {1});
  GraphBuilder g2;
  g2.Add("exp", {"@a"}, {2});
  GraphBuilder g3;
  g3.Add("exp", {"@a"}, {3});
  auto r1 = cache.GetOrBuild(g1.graph(), {0});
  ASSERT_TRUE(r1.ok());
  EXPECT_FALSE(r1->hit);
  auto again = cache.GetOrBuild(g1.graph(), {0});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->hit);
  EXPECT_EQ(again->plan, r1->plan);
  ASSERT_TRUE(cache.GetOrBuild(g2.graph(), {0}).ok());
  ASSERT_TRUE(cache.GetOrBuild(g3.graph(), {0}).ok());  // evicts g1 (least recent)
  PlanCache::Stats stats = cache.stats();
  EXPECT_EQ(stats.hits, 1);
  EXPECT_EQ(stats.misses, 3);
  EXPECT_EQ(stats.evictions, 1);
  EXPECT_EQ(stats.entries, 2);
  EXPECT_FALSE(cache.GetOrBuild(g1.graph(), {0})->hit);
}

}  // namespace
}  // namespace gpuflow
