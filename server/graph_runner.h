// Execute, Benchmark and Precompile: the path from a wire graph to results.
//   convert (graph_convert.h) -> validate (engine/ir) -> plan (PlanCache)
//   -> Backend::Run -> store outputs in the session / return them inline.
// Called on ComputePool threads, never on gRPC's.
//
// Thread-safe: one runner serves every session.
#ifndef GPUFLOW_SERVER_GRAPH_RUNNER_H_
#define GPUFLOW_SERVER_GRAPH_RUNNER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "engine/backend.h"
#include "engine/plan/plan.h"
#include "gpuflow/v1/service.pb.h"
#include "server/session_registry.h"

namespace gpuflow::server {

struct GraphLimits {
  int32_t max_graph_nodes = 10000;
  int64_t max_inline_bytes = int64_t{4} << 20;
  // Largest array an output may store (store_as), as for uploads.
  int64_t max_array_bytes = int64_t{16} << 30;
  // Largest reply the server sends (its gRPC send limit): an Execute whose
  // reply would be larger fails before anything runs or is stored.
  int64_t max_reply_bytes = int64_t{64} << 20;
  absl::Duration max_benchmark_duration = absl::Seconds(60);
  // Most timed repeats one Benchmark may ask for, so its reply stays small
  // (each repeat adds two doubles).
  int32_t max_benchmark_repeats = 100000;
  // raw_kernel nodes run arbitrary CUDA code; PERMISSION_DENIED unless set
  // (and, per caller, CallerPermissions::raw_kernels).
  bool allow_raw_kernels = false;
};

// Who runs a request, for what only some callers may do (a tenant's
// allow_raw_kernels). The defaults leave it to the server's GraphLimits.
struct CallerPermissions {
  // raw_kernel nodes, besides GraphLimits::allow_raw_kernels.
  bool raw_kernels = true;
  // elementwise_kernel and reduction_kernel nodes.
  bool custom_kernels = true;
  // Names the caller in a refusal ("tenant team-a").
  std::string who{};
};

class GraphRunner {
 public:
  // `backend` and `plans` must outlive the runner.
  GraphRunner(Backend& backend, PlanCache& plans, GraphLimits limits);

  // Runs request.graph in `session`; stores or returns the outputs. Every
  // limit (output sizes, the session's quota for stored outputs, the reply's
  // size) is checked before anything runs, and nothing is stored unless the
  // whole request succeeds. `control` (may be null) stops the run between
  // steps and is charged for its intermediates.
  absl::Status Execute(Session& session, const v1::ExecuteRequest& request,
                       v1::ExecuteResponse* response, RunControl* control = nullptr,
                       const CallerPermissions& caller = {});

  // Runs request.graph up to n_warmup times untimed, then up to n_repeat
  // times, all within max_duration (warm-up included; at least one timed run
  // once warm-up ends), recording each repeat's host (and device) time.
  // `control` is checked between runs as well as between steps.
  absl::Status Benchmark(Session& session, const v1::BenchmarkRequest& request,
                         v1::BenchmarkResponse* response, RunControl* control = nullptr,
                         const CallerPermissions& caller = {});

  // Validates and plans the graphs against the declared array types (and, on
  // the CUDA backend, compiles their kernels). Errors name the graph
  // ("graph 2: ..."). `control` is checked between graphs.
  absl::Status Precompile(const v1::PrecompileRequest& request, v1::PrecompileResponse* response,
                          RunControl* control = nullptr, const CallerPermissions& caller = {});

  // Whether the server takes raw kernels at all (GraphLimits).
  bool allows_raw_kernels() const { return limits_.allow_raw_kernels; }

 private:
  struct Prepared;
  // Converts, validates and plans; `output_ids` empty means every sink node.
  absl::StatusOr<Prepared> Prepare(const v1::Graph& proto, const ArrayTypeLookup& lookup,
                                   const std::vector<std::string>& output_ids,
                                   const CallerPermissions& caller);

  Backend& backend_;
  PlanCache& plans_;
  const GraphLimits limits_;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_GRAPH_RUNNER_H_
