// Row programs (PlanOptions::max_row_length): which graphs the planner
// turns into one StepKind::kRows step, and which it leaves as they were.
#include <string>
#include <vector>

#include "engine/plan/plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/plan/row_graphs.h"

namespace gpuflow {
namespace {

using gpuflow::testing::RowGraphs;
using ::testing::StartsWith;

int CountKind(const Plan& plan, StepKind kind) {
  int n = 0;
  for (const Step& s : plan.steps) n += s.kind == kind ? 1 : 0;
  return n;
}

RowGraphs Rows2d(int64_t m, int64_t l, DType dtype = DType::kFloat32) {
  return RowGraphs({{"x", {dtype, {m, l}}}, {"g", {dtype, {l}}}, {"b", {dtype, {l}}}});
}

TEST(RowPlanTest, LayerNormIsOneStep) {
  RowGraphs b = Rows2d(64, 4096);
  const std::string out = b.LayerNorm("x", "g", "b");
  auto [graph, plan] = b.Build({out});
  ASSERT_NE(plan, nullptr);
  ASSERT_EQ(plan->steps.size(), 1u);
  const Step& step = plan->steps[0];
  EXPECT_EQ(step.kind, StepKind::kRows);
  EXPECT_EQ(step.reduction, -1);
  EXPECT_EQ(step.root, graph.FindNode(out));
  EXPECT_EQ(step.nodes.size(), graph.nodes.size());
  EXPECT_EQ(step.description, "rows [mean, sub, mul, mean, add, sqrt, div, mul, add]");
  EXPECT_EQ(StepKindName(step.kind), "rows");
}

TEST(RowPlanTest, CenteringAndStdAreRowSteps) {
  RowGraphs b = Rows2d(8, 100);
  const std::string c = b.Center(RowGraphs::A("x"));
  auto [g1, p1] = b.Build({c});
  ASSERT_EQ(p1->steps.size(), 1u);
  EXPECT_EQ(p1->steps[0].kind, StepKind::kRows);
  // std alone: two passes over a row beat one Welford pass.
  RowGraphs s = Rows2d(8, 100);
  const std::string sd = s.Reduce("std", RowGraphs::A("x"), {-1}, false, {{"ddof", 1.0}});
  auto [g2, p2] = s.Build({sd});
  ASSERT_EQ(p2->steps.size(), 1u);
  EXPECT_EQ(p2->steps[0].kind, StepKind::kRows);
}

TEST(RowPlanTest, ASingleReductionStaysAReduction) {
  RowGraphs b = Rows2d(8, 100);
  const std::string x2 = b.Op("mul", {RowGraphs::A("x"), RowGraphs::A("x")});
  const std::string out =
      b.Op("sqrt", {RowGraphs::N(b.Reduce("sum", RowGraphs::N(x2), {-1}, false))});
  auto [graph, plan] = b.Build({out});
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(plan->steps[0].kind, StepKind::kReduction);
  EXPECT_EQ(plan->steps[0].description, "sum prologue [mul] epilogue [sqrt]");
}

TEST(RowPlanTest, ColumnsAreNotRows) {
  RowGraphs b = Rows2d(64, 256);
  const std::string m = b.Reduce("mean", RowGraphs::A("x"), {0}, true);
  const std::string out = b.Op("sub", {RowGraphs::A("x"), RowGraphs::N(m)});
  auto [graph, plan] = b.Build({out});
  EXPECT_EQ(CountKind(*plan, StepKind::kRows), 0);
  EXPECT_EQ(plan->steps.size(), 2u);
}

TEST(RowPlanTest, AValueThatIsAlsoAnOutputStaysOutside) {
  RowGraphs b = Rows2d(64, 256);
  const std::string out = b.LayerNorm("x", "g", "b");
  auto [graph, plan] = b.Build({"n0", out});  // n0: the first mean
  ASSERT_EQ(plan->steps.size(), 2u);
  EXPECT_EQ(plan->steps[0].kind, StepKind::kReduction);
  EXPECT_EQ(plan->steps[0].root, graph.FindNode("n0"));
  EXPECT_EQ(plan->steps[1].kind, StepKind::kRows);
  EXPECT_THAT(plan->steps[1].description, StartsWith("rows [sub, mul, mean"));
}

TEST(RowPlanTest, RowsLongerThanTheLimitAreNotRowPrograms) {
  RowGraphs b = Rows2d(4, 16385);
  const std::string out = b.LayerNorm("x", "g", "b");
  auto [g1, long_rows] = b.Build({out});
  EXPECT_EQ(CountKind(*long_rows, StepKind::kRows), 0);
  EXPECT_GT(long_rows->steps.size(), 1u);
  RowGraphs c = Rows2d(4, 16384);
  const std::string out2 = c.LayerNorm("x", "g", "b");
  auto [g2, at_limit] = c.Build({out2});
  EXPECT_EQ(CountKind(*at_limit, StepKind::kRows), 1);
  auto [g3, off] = c.Build({out2}, PlanOptions{.max_row_length = 0});
  EXPECT_EQ(CountKind(*off, StepKind::kRows), 0);
}

TEST(RowPlanTest, ReductionsOverOtherAxesDoNotJoin) {
  RowGraphs b({{"x", {DType::kFloat32, {4, 6, 50}}}});
  const std::string c = b.Center(RowGraphs::A("x"));  // over the last axis
  const std::string out = b.Reduce("sum", RowGraphs::N(c), {1, 2}, false);
  auto [graph, plan] = b.Build({out});
  for (const Step& s : plan->steps) {
    int reductions = 0;
    for (int n : s.nodes) reductions += graph.nodes[n].op->family == OpFamily::kReduction ? 1 : 0;
    EXPECT_LE(reductions, 1) << s.description;
  }
  // Over the same trailing axes they do: sum over (1, 2) of x - mean over (1, 2).
  RowGraphs d({{"x", {DType::kFloat32, {4, 6, 50}}}});
  const std::string m = d.Reduce("mean", RowGraphs::A("x"), {1, 2}, true);
  const std::string c2 = d.Op("sub", {RowGraphs::A("x"), RowGraphs::N(m)});
  const std::string out2 =
      d.Reduce("sum", RowGraphs::N(d.Op("abs", {RowGraphs::N(c2)})), {1, 2}, false);
  auto [g2, p2] = d.Build({out2});
  ASSERT_EQ(p2->steps.size(), 1u);
  EXPECT_EQ(p2->steps[0].kind, StepKind::kRows);
}

TEST(RowPlanTest, AFlatRowValueReadByAFullNodeIsNotARowProgram) {
  // mean without keepdims, of shape (256,), broadcast against (256, 256)
  // along the *last* axis: another row's value, not this row's.
  RowGraphs b = Rows2d(256, 256);
  const std::string m = b.Reduce("mean", RowGraphs::A("x"), {-1}, false);
  const std::string out = b.Op("sub", {RowGraphs::A("x"), RowGraphs::N(m)});
  auto [graph, plan] = b.Build({out});
  EXPECT_EQ(CountKind(*plan, StepKind::kRows), 0);
}

TEST(RowPlanTest, ComplexValuesAreNotRowPrograms) {
  RowGraphs b = Rows2d(8, 64, DType::kComplex64);
  const std::string out = b.Center(RowGraphs::A("x"));
  auto [graph, plan] = b.Build({out});
  EXPECT_EQ(CountKind(*plan, StepKind::kRows), 0);
}

TEST(RowPlanTest, RepeatedRoundsFuseUpToTheOpLimit) {
  RowGraphs b = Rows2d(64, 256);
  std::string x = "";
  Input cur = RowGraphs::A("x");
  for (int i = 0; i < 10; ++i) {
    const std::string s = b.Reduce("sum", cur, {-1}, true);
    x = b.Op("sub", {cur, RowGraphs::N(b.Op("mul", {RowGraphs::N(s), RowGraphs::S(0.001)}))});
    cur = RowGraphs::N(x);
  }
  auto [graph, plan] = b.Build({x});
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(plan->steps[0].kind, StepKind::kRows);
  EXPECT_EQ(plan->steps[0].nodes.size(), 30u);
  auto [g2, limited] = b.Build({x}, PlanOptions{.max_fused_ops = 12});
  EXPECT_GT(limited->steps.size(), 1u);
  for (const Step& s : limited->steps) EXPECT_LE(s.nodes.size(), 12u);
}

}  // namespace
}  // namespace gpuflow

namespace gpuflow {
namespace {

using gpuflow::testing::RowGraphs;

// x[x > 0]: take(x, flatnonzero(x > 0, size)) is one compress step.
TEST(CompressPlanTest, MaskProducersFlatnonzeroAndTakeAreOneStep) {
  RowGraphs b({{"x", {DType::kFloat32, {1000}}}, {"y", {DType::kFloat32, {1000}}}});
  const std::string m = b.Op(
      "gt", {RowGraphs::A("x"), RowGraphs::N(b.Op("mul", {RowGraphs::A("y"), RowGraphs::S(2)}))});
  const std::string f = b.Op("flatnonzero", {RowGraphs::N(m)}, {{"size", int64_t{10}}});
  const std::string out = b.Op("take", {RowGraphs::A("x"), RowGraphs::N(f)});
  auto [graph, plan] = b.Build({out});
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(plan->steps[0].kind, StepKind::kShape);
  EXPECT_EQ(plan->steps[0].description, "compress [mul, gt, flatnonzero, take]");
}

TEST(CompressPlanTest, IndicesReadElsewhereOrATakeAlongAnAxisStayApart) {
  RowGraphs b({{"x", {DType::kFloat32, {1000}}}});
  const std::string m = b.Op("gt", {RowGraphs::A("x"), RowGraphs::S(0)});
  const std::string f = b.Op("flatnonzero", {RowGraphs::N(m)}, {{"size", int64_t{10}}});
  const std::string out = b.Op("take", {RowGraphs::A("x"), RowGraphs::N(f)});
  auto [g1, both] = b.Build({out, f});  // the indices are an output too
  EXPECT_EQ(both->steps.size(), 3u);
  RowGraphs c({{"x", {DType::kFloat32, {4, 250}}}});
  const std::string m2 = c.Op("gt", {RowGraphs::A("x"), RowGraphs::S(0)});
  const std::string f2 = c.Op("flatnonzero", {RowGraphs::N(m2)}, {{"size", int64_t{10}}});
  const std::string t2 =
      c.Op("take", {RowGraphs::A("x"), RowGraphs::N(f2)}, {{"axis", int64_t{1}}});
  auto [g2, along] = c.Build({t2});
  for (const Step& s : along->steps) EXPECT_EQ(s.nodes.size(), 1u) << s.description;
}

}  // namespace
}  // namespace gpuflow
