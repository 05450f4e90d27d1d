// Planning: partitions a validated graph into steps, the units a backend
// runs (on the CUDA backend, one kernel or library call each):
//  - a fused elementwise group: a tree of elementwise nodes of one output
//    shape whose intermediates nobody else needs;
//  - a reduction with its elementwise producers fused in as a prologue and
//    its elementwise consumers as an epilogue;
//  - a row program (PlanOptions::max_row_length): reductions over the
//    trailing axes of one shape together with the elementwise work that
//    feeds them and that reads their results back into the same rows
//    (`x - x.mean(-1, keepdims=True)`, layer norm, var/std), so that a
//    backend can hold each row on chip and read the input once;
//  - a compress: take(a, flatnonzero(mask, size)) of the flattened a (or
//    along axis 0 of a 1-D a) with a mask of as many elements (`x[x > 0]`),
//    with the mask's elementwise producers;
//  - a matmul, a scan, a shape op, a creation op or a custom kernel, alone.
// Plans depend only on the graph's canonical signature (structure, dtypes,
// shapes, attributes; not names or literal values), so PlanCache reuses them
// across requests.
//
//   PlanCache cache(PlanOptions{});
//   PlanCache::Result r = cache.GetOrBuild(validated, output_nodes);
//   for (const Step& step : r.plan->steps) ...
#ifndef GPUFLOW_ENGINE_PLAN_PLAN_H_
#define GPUFLOW_ENGINE_PLAN_PLAN_H_

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "engine/ir/validate.h"

namespace gpuflow {

enum class StepKind : uint8_t {
  kElementwise,
  kReduction,
  kScan,
  kMatmul,
  kShape,
  kCreation,
  kCustom,
  kSort,
  kRows
};
// "elementwise", "reduction", ... (the label of per-step metrics).
absl::string_view StepKindName(StepKind kind);

// Why a fused step did not grow further (logged at debug, shown in plans).
enum class FusionCut : uint8_t {
  kNone,               // the step is complete (no elementwise consumer)
  kNotFusible,         // the consumer is not elementwise (or not fusible here)
  kMultipleConsumers,  // the value is needed by more than one node
  kGraphOutput,        // the value is a requested output
  kShapeChange,        // the consumer's output shape differs
  kMaxOps,             // PlanOptions::max_fused_ops reached
};
absl::string_view FusionCutName(FusionCut cut);

struct Step {
  StepKind kind = StepKind::kElementwise;
  // Node indices, in an order that respects dependencies.
  std::vector<int> nodes;
  // The node whose value the step produces (the last of `nodes`).
  int root = -1;
  // For reductions: the reduction node (prologue before it, epilogue after).
  // Row programs (kRows) may hold several reductions: -1.
  int reduction = -1;
  FusionCut cut = FusionCut::kNone;
  // e.g. "fused elementwise [mul, mul, add, sqrt]".
  std::string description;
};

struct Plan {
  // Unique per BuildPlan call in this process (0 for a plan built by
  // hand): backends key what they derive from a plan (generated kernels) by
  // it, since a plan's address may be reused once it is freed.
  uint64_t id = 0;
  std::vector<Step> steps;
  // The requested output nodes, in request order.
  std::vector<int> output_nodes;
  // For every node: the step that computes it, and the last step that reads
  // its value (-1 when only the step itself does; outputs live to the end).
  std::vector<int> node_step;
  std::vector<int> last_use_step;
};

struct PlanOptions {
  // Most nodes in one fused step.
  int max_fused_ops = 64;
  // Fuse elementwise producers into reductions, and consumers after them.
  bool fuse_reductions = true;
  // Row programs (StepKind::kRows): a step of nodes over one shape S whose
  // reductions (sum, prod, min, max, mean, any, all, var, std; real
  // dtypes) all reduce the same trailing axes of S, of at most this many
  // elements per row (0: none). Its nodes are of S ("full": elementwise
  // nodes and the reductions' inputs) or of the reduced shape, with or
  // without keepdims ("row" values); a full node reads row values only in
  // their keepdims form (broadcast along the row); values it does not
  // compute may have any shape that broadcasts. Only the root's value
  // leaves the step. Formed from the steps the rules above make, when at
  // least two of them join or the step computes a var or std (two passes
  // over a row held on chip beat one streaming Welford pass).
  int64_t max_row_length = 16384;
};

// The reductions a row program may hold (PlanOptions::max_row_length).
bool IsRowReductionOp(absl::string_view op);

// INVALID_ARGUMENT for an output index out of range.
absl::StatusOr<std::shared_ptr<const Plan>> BuildPlan(const ValidatedGraph& graph,
                                                      absl::Span<const int> output_nodes,
                                                      const PlanOptions& options);

// The canonical signature: equal for graphs that differ only in node ids,
// array names and literal values, and only when those values leave every
// node's input, compute and output types the same. Backends may derive
// anything from a plan but literal values (they read those at run time).
std::string PlanSignature(const ValidatedGraph& graph, absl::Span<const int> output_nodes);

// A bounded LRU map from signature to plan. Thread-safe.
class PlanCache {
 public:
  struct Result {
    std::shared_ptr<const Plan> plan;
    bool hit = false;
  };
  struct Stats {
    int64_t hits = 0;
    int64_t misses = 0;
    int64_t evictions = 0;
    int64_t entries = 0;
  };

  explicit PlanCache(PlanOptions options, int max_entries = 1024)
      : options_(options), max_entries_(max_entries) {}

  absl::StatusOr<Result> GetOrBuild(const ValidatedGraph& graph,
                                    absl::Span<const int> output_nodes);
  Stats stats() const;

 private:
  const PlanOptions options_;
  const int max_entries_;
  mutable absl::Mutex mu_;
  // Most recently used first.
  std::list<std::pair<std::string, std::shared_ptr<const Plan>>> lru_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, decltype(lru_)::iterator> index_ ABSL_GUARDED_BY(mu_);
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_PLAN_PLAN_H_
