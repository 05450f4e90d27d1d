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
  absl::Duration max_benchmark_duration = absl::Seconds(60);
  // raw_kernel nodes run arbitrary CUDA code; PERMISSION_DENIED unless set.
  bool allow_raw_kernels = false;
};

class GraphRunner {
 public:
  // `backend` and `plans` must outlive the runner.
  GraphRunner(Backend& backend, PlanCache& plans, GraphLimits limits);

  // Runs request.graph in `session`; stores or returns the outputs.
  absl::Status Execute(Session& session, const v1::ExecuteRequest& request,
                       v1::ExecuteResponse* response);

  // Runs request.graph n_warmup times untimed, then up to n_repeat times
  // within max_duration, recording each repeat's host (and device) time.
  absl::Status Benchmark(Session& session, const v1::BenchmarkRequest& request,
                         v1::BenchmarkResponse* response);

  // Validates and plans the graphs against the declared array types (and, on
  // the CUDA backend, compiles their kernels).
  absl::Status Precompile(const v1::PrecompileRequest& request, v1::PrecompileResponse* response);

 private:
  struct Prepared;
  // Converts, validates and plans; `output_ids` empty means every sink node.
  absl::StatusOr<Prepared> Prepare(const v1::Graph& proto, const ArrayTypeLookup& lookup,
                                   const std::vector<std::string>& output_ids);

  Backend& backend_;
  PlanCache& plans_;
  const GraphLimits limits_;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_GRAPH_RUNNER_H_
