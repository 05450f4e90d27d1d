// CudaBackend with the on-disk kernel cache and Precompile, on a real device
// (skipped without one): a second backend on the same directory loads what
// the first compiled, and after Precompile a Run compiles nothing.
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend.h"
#include "engine/cuda/cuda_backend.h"
#include "engine/ir/graph.h"
#include "engine/ir/validate.h"
#include "engine/plan/plan.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::cuda {
namespace {

using ::gpuflow::testing::IsOk;

Node MakeNode(const std::string& id, const std::string& op, std::vector<Input> inputs) {
  Node n;
  n.id = id;
  n.op = op;
  n.inputs = std::move(inputs);
  return n;
}

struct Prepared {
  ValidatedGraph graph;
  std::shared_ptr<const Plan> plan;
};

// `graph` over float32 arrays x and y of `shape`, its last node the output.
Prepared Prepare(const Graph& graph, const std::vector<int64_t>& shape) {
  ArrayTypeLookup lookup = [&](const std::string&) -> absl::StatusOr<ValueType> {
    return ValueType{DType::kFloat32, *Shape::Create(shape), false};
  };
  absl::StatusOr<ValidatedGraph> v = ValidateGraph(graph, lookup, {});
  EXPECT_THAT(v, IsOk());
  absl::StatusOr<std::shared_ptr<const Plan>> plan =
      BuildPlan(*v, {static_cast<int>(v->nodes.size()) - 1}, {});
  EXPECT_THAT(plan, IsOk());
  return {*std::move(v), *plan};
}

Prepared Softmax() {
  Graph g;
  g.nodes.push_back(MakeNode("s", "softmax", {Input::Array("x")}));
  return Prepare(g, {64, 1000});
}

class CudaKernelCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<Backend>> probe = CreateCudaBackend({});
    if (!probe.ok()) GTEST_SKIP() << "no usable CUDA device: " << probe.status();
    std::string dir = ::testing::TempDir() + "cuda_kernel_cache_test.XXXXXX";
    ASSERT_NE(mkdtemp(dir.data()), nullptr);
    dir_ = dir;
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<Backend> NewBackend() {
    CudaBackendOptions options;
    options.kernel_cache_dir = dir_ + "/kernels";
    absl::StatusOr<std::unique_ptr<Backend>> backend = CreateCudaBackend(options);
    EXPECT_THAT(backend, IsOk());
    return backend.ok() ? *std::move(backend) : nullptr;
  }

  std::string dir_;
};

TEST_F(CudaKernelCacheTest, SecondBackendLoadsFromDiskWhatTheFirstCompiled) {
  const Prepared softmax = Softmax();
  {
    std::unique_ptr<Backend> first = NewBackend();
    ASSERT_NE(first, nullptr);
    absl::StatusOr<PrecompileResult> compiled = first->Precompile(softmax.graph, *softmax.plan);
    ASSERT_THAT(compiled, IsOk());
    EXPECT_EQ(compiled->kernels_compiled, 1);
    EXPECT_GT(compiled->compile_seconds, 0);
    const KernelCacheStats stats = first->kernel_cache_stats();
    EXPECT_EQ(stats.misses, 1);
    EXPECT_EQ(stats.compiles, 1);
    EXPECT_EQ(stats.disk_entries, 1);
    EXPECT_GT(stats.disk_bytes, 0);
  }
  std::unique_ptr<Backend> second = NewBackend();
  ASSERT_NE(second, nullptr);
  absl::StatusOr<PrecompileResult> loaded = second->Precompile(softmax.graph, *softmax.plan);
  ASSERT_THAT(loaded, IsOk());
  EXPECT_EQ(loaded->kernels_compiled, 0);
  EXPECT_EQ(loaded->kernels_cached, 1);
  ASSERT_THAT(second->Precompile(softmax.graph, *softmax.plan), IsOk());
  const KernelCacheStats stats = second->kernel_cache_stats();
  EXPECT_EQ(stats.disk_hits, 1);
  EXPECT_EQ(stats.memory_hits, 1);
  EXPECT_EQ(stats.misses, 0);
  EXPECT_EQ(stats.memory_entries, 1);
}

TEST_F(CudaKernelCacheTest, RunAfterPrecompileCompilesNothing) {
  std::vector<Prepared> graphs;
  graphs.push_back(Softmax());
  {
    // Few outputs, long rows: the reduced range is split and a finalize
    // kernel combines the parts.
    Graph g;
    Node sum = MakeNode("r", "sum", {Input::Array("x")});
    sum.attrs["axes"] = std::vector<int64_t>{1};
    g.nodes.push_back(sum);
    graphs.push_back(Prepare(g, {4, 1 << 18}));
  }
  {
    Graph g;
    g.nodes.push_back(MakeNode("m", "mul", {Input::Array("x"), Input::Array("y")}));
    g.nodes.push_back(MakeNode("e", "exp", {Input::Node("m")}));
    graphs.push_back(Prepare(g, {1000, 3}));
  }
  {
    Graph g;
    Node t = MakeNode("t", "transpose", {Input::Array("x")});
    t.attrs["axes"] = std::vector<int64_t>{1, 0};
    g.nodes.push_back(t);
    graphs.push_back(Prepare(g, {1000, 3}));
  }
  {
    Graph g;
    Node c = MakeNode("c", "cumsum", {Input::Array("x")});
    c.attrs["axis"] = int64_t{1};
    g.nodes.push_back(c);
    graphs.push_back(Prepare(g, {4, 1 << 18}));
  }
  {
    Graph g;
    Node k = MakeNode("k", "elementwise_kernel", {Input::Array("x"), Input::Array("y")});
    k.attrs["in_params"] = std::string("float32 x, float32 y");
    k.attrs["out_params"] = std::string("float32 z");
    k.attrs["operation"] = std::string("z = (x - y) * (x - y)");
    k.attrs["name"] = std::string("squared_diff");
    g.nodes.push_back(k);
    graphs.push_back(Prepare(g, {1000}));
  }
  std::unique_ptr<Backend> backend = NewBackend();
  ASSERT_NE(backend, nullptr);
  absl::StatusOr<std::unique_ptr<Stream>> stream = backend->CreateStream();
  ASSERT_THAT(stream, IsOk());
  for (const Prepared& p : graphs) {
    ASSERT_THAT(backend->Precompile(p.graph, *p.plan), IsOk());
    std::vector<Array> arrays;
    for (size_t i = 0; i < p.graph.arrays.size(); ++i) {
      const ValueType& type = p.graph.nodes[0].input_types[0];
      absl::StatusOr<std::unique_ptr<DeviceBuffer>> buffer =
          backend->Allocate(type.shape.num_elements() * ItemSize(type.dtype), **stream);
      ASSERT_THAT(buffer, IsOk());
      const std::vector<float> zeros(type.shape.num_elements(), 0.0f);
      ASSERT_THAT(backend->CopyToDevice(zeros.data(), **buffer, 0, (*buffer)->size(), **stream),
                  IsOk());
      ASSERT_THAT(backend->Synchronize(**stream), IsOk());
      arrays.push_back(Array{type.dtype, type.shape, std::move(*buffer)});
    }
    absl::StatusOr<RunResult> run = backend->Run(p.graph, *p.plan, arrays, **stream, {});
    ASSERT_THAT(run, IsOk());
    EXPECT_EQ(run->kernels_compiled, 0) << p.plan->steps[0].description;
    EXPECT_GT(run->kernel_cache_hits, 0) << p.plan->steps[0].description;
  }
}

}  // namespace
}  // namespace gpuflow::cuda
