// The GpuFlow gRPC service (callback API): sessions, chunked array transfer,
// server info. It translates protobuf to engine calls and absl::Status to
// grpc::Status; it holds no state of its own beyond what it is given.
//
//   GpuFlowService service(registry, plans, runner, pool, options, telemetry, &auth);
//   builder.RegisterService(&service);
//
// Every call is admitted first: its tenant authenticated (CallAuthenticator;
// UNAUTHENTICATED, the same for every reason) and a slot taken from that
// tenant's max_concurrent_requests (RESOURCE_EXHAUSTED). A call then sees
// only its tenant's sessions: another tenant's session id is NOT_FOUND,
// exactly as an unknown one. Refusals of shared limits carry the
// `grpc-retry-pushback-ms` trailer (retry_hint.h).
//
// Thread-safe: gRPC calls it from many threads at once.
#ifndef GPUFLOW_SERVER_GPUFLOW_SERVICE_H_
#define GPUFLOW_SERVER_GPUFLOW_SERVICE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "engine/backend.h"
#include "engine/plan/plan.h"
#include "gpuflow/v1/service.grpc.pb.h"
#include "server/call_auth.h"
#include "server/compute_pool.h"
#include "server/graph_runner.h"
#include "server/rpc_observer.h"
#include "server/session_registry.h"

namespace gpuflow::server {

struct ServiceOptions {
  int64_t max_array_bytes = int64_t{16} << 30;
  // Largest chunk accepted in an upload and sent in a download.
  int64_t max_chunk_bytes = int64_t{4} << 20;
  // Download chunk size when the client asks for none.
  int64_t default_chunk_bytes = int64_t{1} << 20;
  int64_t max_inline_bytes = int64_t{4} << 20;
  int32_t max_graph_nodes = 10000;
  int64_t max_message_bytes = int64_t{64} << 20;
  // Longest any one Execute, Benchmark or Precompile may run (checked
  // between steps); <= 0: no cap but the client's deadline.
  absl::Duration max_request_duration = absl::Minutes(10);
  // As GraphLimits::max_benchmark_repeats (reported in ServerInfo).
  int32_t max_benchmark_repeats = 100000;
  // An Execute the request cache holds whose last run took at most this
  // runs on the gRPC thread that received it, when the compute pool has
  // nothing queued (no hand-off to a compute thread and back); zero: never.
  absl::Duration inline_max_run = absl::Milliseconds(1);
  // Same-host transfers through POSIX shared memory (--allow_shared_memory):
  // off unless set; at most this many bytes registered per session.
  bool allow_shared_memory = false;
  int64_t max_shared_memory_bytes = int64_t{64} << 30;
  int32_t max_shared_memory_regions = 64;
  // Regions of device memory other processes on this GPU export
  // (--allow_cuda_ipc): off unless set.
  bool allow_cuda_ipc = false;
  // The address clients reach this worker by (SessionInfo.endpoint,
  // ServerInfo.endpoint); empty: not known.
  std::string advertise_address;
};

// UploadArray is served raw (grpc::ByteBuffer in and out) so the service
// decodes each message itself and can fail the upload on one that does not
// decode; gRPC's typed reader would end the stream as if the client had
// half-closed.
class GpuFlowService final
    : public v1::GpuFlow::WithRawCallbackMethod_UploadArray<v1::GpuFlow::CallbackService> {
 public:
  // Everything passed in must outlive the service. Sessions live on the
  // devices of registry.devices() (each call uses its session's device);
  // ServerInfo lists them all. Graph work runs on `pool`,
  // in the group of the caller's tenant. Every call is reported to
  // `telemetry` (metrics, request log, health). `auth` null: no tenants,
  // every caller is one anonymous tenant without limits.
  GpuFlowService(SessionRegistry& registry, PlanCache& plans, GraphRunner& runner,
                 ComputePool& pool, ServiceOptions options, Telemetry telemetry = {},
                 const CallAuthenticator* auth = nullptr);

  grpc::ServerUnaryReactor* GetServerInfo(grpc::CallbackServerContext* context,
                                          const v1::GetServerInfoRequest* request,
                                          v1::ServerInfo* response) override;
  grpc::ServerUnaryReactor* CreateSession(grpc::CallbackServerContext* context,
                                          const v1::CreateSessionRequest* request,
                                          v1::SessionInfo* response) override;
  grpc::ServerUnaryReactor* CloseSession(grpc::CallbackServerContext* context,
                                         const v1::CloseSessionRequest* request,
                                         v1::CloseSessionResponse* response) override;
  grpc::ServerUnaryReactor* KeepAlive(grpc::CallbackServerContext* context,
                                      const v1::KeepAliveRequest* request,
                                      v1::SessionInfo* response) override;
  grpc::ServerReadReactor<grpc::ByteBuffer>* UploadArray(grpc::CallbackServerContext* context,
                                                         grpc::ByteBuffer* response) override;
  grpc::ServerWriteReactor<v1::DownloadArrayResponse>* DownloadArray(
      grpc::CallbackServerContext* context, const v1::DownloadArrayRequest* request) override;
  grpc::ServerUnaryReactor* ListArrays(grpc::CallbackServerContext* context,
                                       const v1::ListArraysRequest* request,
                                       v1::ListArraysResponse* response) override;
  grpc::ServerUnaryReactor* GetArrayInfo(grpc::CallbackServerContext* context,
                                         const v1::GetArrayInfoRequest* request,
                                         v1::ArrayInfo* response) override;
  grpc::ServerUnaryReactor* DeleteArray(grpc::CallbackServerContext* context,
                                        const v1::DeleteArrayRequest* request,
                                        v1::DeleteArrayResponse* response) override;
  // Between sessions, whichever devices hold them (array_copy_service.cc).
  grpc::ServerUnaryReactor* CopyArray(grpc::CallbackServerContext* context,
                                      const v1::CopyArrayRequest* request,
                                      v1::CopyArrayResponse* response) override;
  grpc::ServerUnaryReactor* Execute(grpc::CallbackServerContext* context,
                                    const v1::ExecuteRequest* request,
                                    v1::ExecuteResponse* response) override;
  grpc::ServerUnaryReactor* Benchmark(grpc::CallbackServerContext* context,
                                      const v1::BenchmarkRequest* request,
                                      v1::BenchmarkResponse* response) override;
  grpc::ServerUnaryReactor* Precompile(grpc::CallbackServerContext* context,
                                       const v1::PrecompileRequest* request,
                                       v1::PrecompileResponse* response) override;
  grpc::ServerUnaryReactor* PrepareGraph(grpc::CallbackServerContext* context,
                                         const v1::PrepareGraphRequest* request,
                                         v1::PreparedGraphInfo* response) override;
  grpc::ServerUnaryReactor* ReleaseGraph(grpc::CallbackServerContext* context,
                                         const v1::ReleaseGraphRequest* request,
                                         v1::ReleaseGraphResponse* response) override;
  // Shared memory (shared_memory_service.cc).
  grpc::ServerUnaryReactor* RegisterSharedMemory(grpc::CallbackServerContext* context,
                                                 const v1::RegisterSharedMemoryRequest* request,
                                                 v1::SharedMemoryRegion* response) override;
  grpc::ServerUnaryReactor* UnregisterSharedMemory(
      grpc::CallbackServerContext* context, const v1::UnregisterSharedMemoryRequest* request,
      v1::UnregisterSharedMemoryResponse* response) override;
  grpc::ServerUnaryReactor* UploadFromSharedMemory(grpc::CallbackServerContext* context,
                                                   const v1::SharedMemoryUploadRequest* request,
                                                   v1::ArrayInfo* response) override;
  grpc::ServerUnaryReactor* DownloadToSharedMemory(grpc::CallbackServerContext* context,
                                                   const v1::SharedMemoryDownloadRequest* request,
                                                   v1::ArrayInfo* response) override;

 private:
  class UploadReactor;
  class DownloadReactor;

  // Authenticates the call and takes a request slot of its tenant, both
  // recorded on `call` (which holds the slot until it finishes).
  absl::Status Admit(grpc::CallbackServerContext* context, RpcObserver& call) const;

  // UNAVAILABLE when no device can serve, or the session's device is
  // unhealthy; else the live session of `tenant`.
  absl::StatusOr<std::shared_ptr<Session>> FindSession(const std::string& id, const Tenant* tenant);

  // Answers a shared-memory call the server's flags refuse with `why`
  // (PERMISSION_DENIED), after the caller is authenticated.
  grpc::ServerUnaryReactor* RefuseSharedMemory(grpc::CallbackServerContext* context,
                                               RpcMethod method, const std::string& session_id,
                                               absl::Status why);
  // Regions of either kind may exist (--allow_shared_memory or
  // --allow_cuda_ipc), so the transfers that name one are on.
  bool regions_allowed() const;

  // What raw kernels and the like the caller may use.
  CallerPermissions PermissionsOf(const Tenant& tenant) const;

  // Finds the session, then runs `work` on the compute pool and finishes the
  // call with its status.
  // The work gets the call's RequestControl (deadline, cancellation,
  // quota for intermediates). `may_run_inline` (may be null) is asked once
  // the caller is known: true runs the work on this thread instead, when
  // the pool allows (ComputePool::TryRunInline). `before_reply` (may be
  // null) gets the call's final status last, after its metrics and log
  // line, just before the reply is handed to gRPC.
  grpc::ServerUnaryReactor* RunOnPool(
      grpc::CallbackServerContext* context, RpcObserver call, const std::string& session_id,
      std::function<absl::Status(Session&, RunControl&, const CallerPermissions&)> work,
      const std::function<bool(Session&, const CallerPermissions&)>& may_run_inline = nullptr,
      std::function<void(const absl::Status&)> before_reply = nullptr);
  // What the call's log line and metrics record: `status`, or CANCELLED when
  // the client is no longer there to receive it.
  static absl::Status EndedAs(grpc::CallbackServerContext* context, const absl::Status& status);
  // The runner's Execute and Benchmark, plus their metrics and debug logs.
  absl::Status ObservedExecute(Session& session, const v1::ExecuteRequest& request,
                               v1::ExecuteResponse* response, RunControl& control,
                               const CallerPermissions& caller, const RequestKey* key,
                               CallTiming timing);
  absl::Status ObservedBenchmark(Session& session, const v1::BenchmarkRequest& request,
                                 v1::BenchmarkResponse* response, RunControl& control,
                                 const CallerPermissions& caller);
  // Counts and logs (at debug) kernels a request compiled.
  void ObserveCompiles(RpcMethod method, const std::string& session_label, int kernels,
                       double seconds, int cached);
  // Finishes a unary call through its observer.
  static grpc::ServerUnaryReactor* Finish(grpc::CallbackServerContext* context, RpcObserver& call,
                                          const absl::Status& status);
  // Adds the retry trailer to a call ending with a retryable refusal.
  static void AddRetryHint(grpc::ServerContextBase* context, const absl::Status& status);

  SessionRegistry& registry_;
  PlanCache& plans_;
  GraphRunner& runner_;
  ComputePool& pool_;
  const ServiceOptions options_;
  const Telemetry telemetry_;
  // Without `auth`: an authenticator of one anonymous tenant.
  std::unique_ptr<CallAuthenticator> own_auth_;
  const CallAuthenticator* auth_;
  // RunOnPool calls queued or running (WorkerLoad).
  std::atomic<int32_t> requests_in_flight_{0};
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_GPUFLOW_SERVICE_H_
