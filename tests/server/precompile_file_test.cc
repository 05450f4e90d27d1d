// The --precompile=FILE warm-up file: protobuf JSON parsing, its errors, and
// the documented example (docs/precompile.example.json) going through
// GraphRunner::Precompile.
#include "server/precompile_file.h"

#include <memory>
#include <string>

#include "engine/cpu/cpu_backend.h"
#include "engine/plan/plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/graph_runner.h"
#include "tests/testing/status_matchers.h"

#ifndef GPUFLOW_SOURCE_DIR
#error "GPUFLOW_SOURCE_DIR must name the source tree"
#endif

namespace gpuflow::server {
namespace {

using ::gpuflow::testing::IsOk;
using ::gpuflow::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kExample[] = GPUFLOW_SOURCE_DIR "/docs/precompile.example.json";

TEST(PrecompileFileTest, TheDocumentedExampleParsesAndPrecompiles) {
  absl::StatusOr<v1::PrecompileRequest> request = ReadPrecompileFile(kExample);
  ASSERT_THAT(request, IsOk());
  EXPECT_EQ(request->graphs_size(), 2);
  EXPECT_EQ(request->array_types().at("x").shape_size(), 2);

  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  PlanCache plans(PlanOptions{});
  GraphRunner runner(*cpu, plans, GraphLimits{});
  v1::PrecompileResponse response;
  EXPECT_THAT(runner.Precompile(*request, &response), IsOk());
  EXPECT_EQ(response.kernels_compiled(), 0);  // the CPU backend compiles nothing
}

TEST(PrecompileFileTest, BadJsonNamesTheFile) {
  EXPECT_THAT(ParsePrecompileJson("{\"graphs\": [", "warm.json"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("warm.json"), HasSubstr("protobuf JSON"))));
  EXPECT_THAT(ParsePrecompileJson("", "warm.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("warm.json")));
}

TEST(PrecompileFileTest, UnknownFieldIsAnError) {
  // "graph" for "graphs": silently compiling nothing would hide the typo.
  EXPECT_THAT(ParsePrecompileJson(R"({"graph": [{"nodes": []}]})", "warm.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("graph")));
}

TEST(PrecompileFileTest, NoGraphsIsAnError) {
  EXPECT_THAT(ParsePrecompileJson(R"({"arrayTypes": {}})", "warm.json"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no graphs")));
}

TEST(PrecompileFileTest, MissingFileIsNotFound) {
  EXPECT_THAT(ReadPrecompileFile("/nonexistent/warm.json"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/warm.json")));
}

TEST(PrecompileFileTest, PrecompileNamesTheGraphThatDoesNotValidate) {
  absl::StatusOr<v1::PrecompileRequest> request = ParsePrecompileJson(
      R"({"graphs": [{"nodes": [{"id": "n", "op": "neg", "inputs": [{"array": "x"}]}]},
                     {"nodes": [{"id": "n", "op": "neg", "inputs": [{"array": "z"}]}]}],
          "arrayTypes": {"x": {"dtype": "DTYPE_FLOAT32", "shape": [3]}}})",
      "warm.json");
  ASSERT_THAT(request, IsOk());
  std::unique_ptr<Backend> cpu = CreateCpuBackend();
  PlanCache plans(PlanOptions{});
  GraphRunner runner(*cpu, plans, GraphLimits{});
  v1::PrecompileResponse response;
  EXPECT_THAT(runner.Precompile(*request, &response),
              StatusIs(absl::StatusCode::kNotFound, AllOf(HasSubstr("graph 1"), HasSubstr("'z'"))));
}

}  // namespace
}  // namespace gpuflow::server
