#include "tests/fuzz/fuzz_graph.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "server/graph_convert.h"

namespace gpuflow::fuzz {
namespace {

// The server's defaults, smaller: libFuzzer inputs are a few KiB at most.
constexpr ValidationLimits kLimits = {.max_graph_nodes = 1000,
                                      .max_inline_bytes = int64_t{1} << 20};

absl::flat_hash_map<std::string, ValueType> MakeArrays() {
  constexpr int64_t k2p31 = int64_t{1} << 31;
  constexpr int64_t k2p40 = int64_t{1} << 40;
  constexpr int64_t k2p62 = int64_t{1} << 62;
  const std::vector<std::pair<std::string, std::pair<DType, std::vector<int64_t>>>> specs = {
      // The names the docs and tests use.
      {"x", {DType::kFloat32, {4, 8}}},
      {"y", {DType::kFloat32, {8}}},
      {"w", {DType::kFloat32, {8, 3}}},
      {"a", {DType::kInt8, {3, 1, 5}}},
      {"b", {DType::kBool, {5}}},
      {"c", {DType::kInt32, {1, 5}}},
      {"m", {DType::kFloat64, {7, 7}}},
      // One of every other dtype, some 0-d, some odd sizes.
      {"i16", {DType::kInt16, {2, 3, 4}}},
      {"i64", {DType::kInt64, {}}},
      {"u8", {DType::kUInt8, {1023}}},
      {"u16", {DType::kUInt16, {1, 1}}},
      {"u32", {DType::kUInt32, {6}}},
      {"u64", {DType::kUInt64, {}}},
      {"f16", {DType::kFloat16, {2, 3}}},
      {"bf16", {DType::kBFloat16, {3, 2}}},
      {"f64", {DType::kFloat64, {(int64_t{1} << 20) + 3}}},
      // Empty arrays, some whose other dims multiply far past 2^62.
      {"empty", {DType::kFloat32, {0}}},
      {"empty2", {DType::kInt32, {3, 0, 2}}},
      {"huge_empty", {DType::kFloat32, {0, k2p62}}},
      {"huge_empty3", {DType::kFloat64, {k2p40, 0, k2p40}}},
      // Huge but legal element counts (never allocated: only validated).
      {"huge", {DType::kUInt8, {k2p62}}},
      {"big", {DType::kFloat32, {k2p31, 4}}},
      {"big_i64", {DType::kInt64, {k2p31, k2p31}}},
  };
  absl::flat_hash_map<std::string, ValueType> arrays;
  for (const auto& [name, spec] : specs) {
    absl::StatusOr<Shape> shape = Shape::Create(spec.second);
    if (!shape.ok()) {
      std::fprintf(stderr, "fuzz arrays: %s: %s\n", name.c_str(),
                   std::string(shape.status().message()).c_str());
      std::abort();
    }
    arrays[name] = ValueType{.dtype = spec.first, .shape = *std::move(shape), .weak = false};
  }
  return arrays;
}

bool SamePlan(const Plan& a, const Plan& b) {
  if (a.steps.size() != b.steps.size() || a.output_nodes != b.output_nodes ||
      a.node_step != b.node_step || a.last_use_step != b.last_use_step) {
    return false;
  }
  for (size_t i = 0; i < a.steps.size(); ++i) {
    const Step& x = a.steps[i];
    const Step& y = b.steps[i];
    if (x.kind != y.kind || x.nodes != y.nodes || x.root != y.root || x.reduction != y.reduction ||
        x.cut != y.cut) {
      return false;
    }
  }
  return true;
}

}  // namespace

const ArrayTypeLookup& FuzzArrayLookup() {
  static const auto* const arrays = new absl::flat_hash_map<std::string, ValueType>(MakeArrays());
  static const auto* const lookup =
      new ArrayTypeLookup([](const std::string& name) -> absl::StatusOr<ValueType> {
        auto it = arrays->find(name);
        if (it == arrays->end()) return absl::NotFoundError(absl::StrCat("no array '", name, "'"));
        return it->second;
      });
  return *lookup;
}

absl::Status ValidateAndPlan(const v1::ExecuteRequest& request, PlanCache& cache) {
  absl::StatusOr<Graph> graph = server::GraphFromProto(request.graph());
  if (!graph.ok()) return graph.status();
  absl::StatusOr<ValidatedGraph> validated = ValidateGraph(*graph, FuzzArrayLookup(), kLimits);
  if (!validated.ok()) return validated.status();

  std::vector<int> outputs;
  if (request.outputs_size() == 0) {
    std::vector<bool> consumed(validated->nodes.size(), false);
    for (const ValidatedNode& node : validated->nodes) {
      for (const ValueRef& ref : node.inputs) {
        if (ref.kind == ValueRef::Kind::kNode) consumed[ref.index] = true;
      }
    }
    for (size_t i = 0; i < consumed.size(); ++i) {
      if (!consumed[i]) outputs.push_back(static_cast<int>(i));
    }
  } else {
    for (const v1::OutputSpec& spec : request.outputs()) {
      const int index = validated->FindNode(spec.node());
      if (index < 0) return absl::InvalidArgumentError("output names no node");
      outputs.push_back(index);
    }
  }

  absl::StatusOr<PlanCache::Result> cached = cache.GetOrBuild(*validated, outputs);
  if (!cached.ok()) return cached.status();
  if (cached->hit) {
    absl::StatusOr<std::shared_ptr<const Plan>> fresh = BuildPlan(*validated, outputs, {});
    if (!fresh.ok() || !SamePlan(**fresh, *cached->plan)) {
      std::fprintf(stderr,
                   "fuzz: the plan cache served a plan that differs from a fresh one for "
                   "signature\n%s\n",
                   PlanSignature(*validated, outputs).c_str());
      std::abort();
    }
  }
  return absl::OkStatus();
}

}  // namespace gpuflow::fuzz
