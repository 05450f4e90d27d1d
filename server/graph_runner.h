// Execute, Benchmark and Precompile: the path from a wire graph to results.
//   convert (graph_convert.h) -> validate (engine/ir) -> plan (PlanCache)
//   -> Backend::Run -> store outputs in the session / return them inline.
// A repeated Execute skips the first three: the request cache keeps the
// validated graph and plan by the request's own bytes (RequestKey), and hits
// only while every array the graph names has the dtype and shape it had.
// A prepared graph (PrepareGraph, or Execute with `prepare`) is kept in its
// session under a handle; Execute by handle binds arrays and scalar values
// to it and runs it without any of the three (Bind).
// Called on ComputePool threads, or on gRPC's for a short repeated Execute
// (GpuFlowService decides, from LastRunTime).
//
// Thread-safe: one runner serves every session.
#ifndef GPUFLOW_SERVER_GRAPH_RUNNER_H_
#define GPUFLOW_SERVER_GRAPH_RUNNER_H_

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/backend.h"
#include "engine/plan/plan.h"
#include "gpuflow/v1/service.pb.h"
#include "server/device_set.h"
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
  // The request cache: at most this many prepared requests, of at most
  // request_cache_bytes of keys (a graph's protobuf bytes) in all; 0
  // entries turns it off.
  int32_t request_cache_entries = 1024;
  int64_t request_cache_bytes = int64_t{16} << 20;
  // Prepared graphs one session keeps (PrepareGraph); 0: none.
  int32_t max_prepared_graphs = 1024;
  // Outputs may be written into shared-memory regions (OutputSpec.
  // shared_memory; --allow_shared_memory).
  bool allow_shared_memory = false;
};

// A validated, planned graph, shared by the request cache, a session's
// prepared graphs and the runs using it. Immutable once shared (but for
// last_run_ns).
struct PreparedGraph {
  ValidatedGraph graph;
  std::vector<int> outputs;
  PlanCache::Result plan;
  // Device work surely short (ShortWork): it runs on the session's priority
  // stream.
  bool short_work = false;
  double convert_seconds = 0;
  double validate_seconds = 0;
  double plan_seconds = 0;
  // Nanoseconds the last successful Execute of it took; -1: none yet.
  // Shared, so a request holding the entry records it without a lookup.
  std::shared_ptr<std::atomic<int64_t>> last_run_ns = std::make_shared<std::atomic<int64_t>>(-1);

  // Kept for Execute by handle only (PrepareGraph):
  // The graph as converted, to validate again when an integer scalar
  // changes (its value can change what a node computes in).
  std::shared_ptr<const Graph> ir;
  // Each scalar input of `ir`, in graph order: where it is, which literal of
  // `graph` it became, and the literal and type it gave when prepared.
  struct ScalarSlot {
    int node = 0;
    int input = 0;
    int literal = 0;
    LiteralArray value;
    ValueType type;
  };
  std::vector<ScalarSlot> scalars;
  // The output node ids, in order.
  std::vector<std::string> output_ids;
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

// What identifies a prepared Execute: its graph's protobuf bytes, its output
// node ids and the caller's permissions (not the session, not the arrays'
// contents). Built once per call by GraphRunner::KeyOf.
struct RequestKey {
  std::string bytes;
};

// When the call reached the service, for Timings (queue_seconds and a total
// that covers the wait); InfinitePast: when Execute starts.
struct CallTiming {
  absl::Time received = absl::InfinitePast();
};

class GraphRunner {
 public:
  // `backend` and `plans` must outlive the runner. Sessions run on their
  // own device's backend (Session::backend()); `backend` serves Precompile.
  GraphRunner(Backend& backend, PlanCache& plans, GraphLimits limits);
  // Precompile compiles for every device of `devices` (which must outlive
  // the runner).
  GraphRunner(const DeviceSet& devices, PlanCache& plans, GraphLimits limits);

  // Runs request.graph in `session`; stores or returns the outputs. Every
  // limit (output sizes, the session's quota for stored outputs, the reply's
  // size) is checked before anything runs, and nothing is stored unless the
  // whole request succeeds. `control` (may be null) stops the run between
  // steps and is charged for its intermediates.
  // `key` (may be null) is KeyOf(request, caller), when the caller has it.
  absl::Status Execute(Session& session, const v1::ExecuteRequest& request,
                       v1::ExecuteResponse* response, RunControl* control = nullptr,
                       const CallerPermissions& caller = {}, const RequestKey* key = nullptr,
                       CallTiming timing = {});

  RequestKey KeyOf(const v1::ExecuteRequest& request, const CallerPermissions& caller) const;
  // How long the last successful Execute of a cached request took (from its
  // start to its reply), or nullopt when the request is not cached.
  std::optional<absl::Duration> LastRunTime(const RequestKey& key) const;
  // The same for `session`'s prepared graph `handle`.
  std::optional<absl::Duration> LastRunTime(Session& session, uint64_t handle) const;

  // Validates, plans and compiles request.graph and keeps it in `session`
  // (Session::AddPreparedGraph, at most GraphLimits::max_prepared_graphs).
  absl::Status PrepareGraph(Session& session, const v1::PrepareGraphRequest& request,
                            v1::PreparedGraphInfo* info, RunControl* control = nullptr,
                            const CallerPermissions& caller = {});
  absl::Status ReleaseGraph(Session& session, const v1::ReleaseGraphRequest& request,
                            v1::ReleaseGraphResponse* response);
  // Requests in the request cache now.
  int request_cache_size() const;

  // Runs request.graph up to n_warmup times untimed, then up to n_repeat
  // times, all within max_duration (warm-up included; at least one timed run
  // once warm-up ends), recording each repeat's host (and device) time.
  // `control` is checked between runs as well as between steps.
  absl::Status Benchmark(Session& session, const v1::BenchmarkRequest& request,
                         v1::BenchmarkResponse* response, RunControl* control = nullptr,
                         const CallerPermissions& caller = {});

  // Validates and plans the graphs against the declared array types (and, on
  // the CUDA backend, compiles their kernels for every healthy device: the
  // first compiles, the others find the cubins in the shared on-disk cache;
  // the counts are summed over devices). Errors name the graph
  // ("graph 2: ..."). `control` is checked between graphs.
  absl::Status Precompile(const v1::PrecompileRequest& request, v1::PrecompileResponse* response,
                          RunControl* control = nullptr, const CallerPermissions& caller = {});

  // Whether the server takes raw kernels at all (GraphLimits).
  bool allows_raw_kernels() const { return limits_.allow_raw_kernels; }
  int32_t max_prepared_graphs() const { return limits_.max_prepared_graphs; }

 private:
  using Prepared = PreparedGraph;
  // Converts, validates and plans; `output_ids` empty means every sink node.
  // With `keep_ir`, fills what Execute by handle needs (ir, scalars,
  // output_ids).
  absl::StatusOr<Prepared> Prepare(const v1::Graph& proto, const ArrayTypeLookup& lookup,
                                   const std::vector<std::string>& output_ids,
                                   const CallerPermissions& caller, bool keep_ir = false);
  // Validates and plans a converted graph.
  absl::StatusOr<Prepared> PrepareConverted(const Graph& graph, const ArrayTypeLookup& lookup,
                                            const std::vector<std::string>& output_ids,
                                            const CallerPermissions& caller);
  // Keeps `prepared` in `session` and describes it in `info`; compiles its
  // kernels first when `compile`.
  absl::Status Keep(Session& session, std::shared_ptr<const Prepared> prepared, int64_t graph_bytes,
                    bool compile, v1::PreparedGraphInfo* info);
  // What Execute by handle runs: the session's prepared graph with the
  // request's arrays (looked up into `arrays`) and scalar values bound;
  // `revalidated` tells whether a changed integer scalar made it validate
  // and plan again.
  absl::StatusOr<std::shared_ptr<const Prepared>> Bind(Session& session,
                                                       const v1::ExecuteRequest& request,
                                                       const CallerPermissions& caller,
                                                       std::vector<Array>* arrays,
                                                       bool* revalidated);

  // The prepared request of `key`, when cached and every array it names
  // (looked up in `session`) still has the type it had; fills `arrays`.
  std::shared_ptr<const Prepared> FindPrepared(const RequestKey& key, Session& session,
                                               std::vector<Array>* arrays) const;
  void Remember(const RequestKey& key, std::shared_ptr<const Prepared> prepared);

  GraphRunner(std::unique_ptr<DeviceSet> own, const DeviceSet* devices, PlanCache& plans,
              GraphLimits limits);

  // Set when the runner was given one backend (before devices_).
  const std::unique_ptr<DeviceSet> own_devices_;
  const DeviceSet& devices_;
  PlanCache& plans_;
  const GraphLimits limits_;

  struct CachedRequest {
    std::shared_ptr<const Prepared> prepared;
    std::list<std::string>::iterator lru;
  };
  mutable absl::Mutex cache_mu_;
  // Most recently used first.
  mutable std::list<std::string> lru_ ABSL_GUARDED_BY(cache_mu_);
  absl::flat_hash_map<std::string, CachedRequest> cache_ ABSL_GUARDED_BY(cache_mu_);
  int64_t cache_bytes_ ABSL_GUARDED_BY(cache_mu_) = 0;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_GRAPH_RUNNER_H_
