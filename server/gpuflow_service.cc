#include "server/gpuflow_service.h"

#include <grpcpp/support/proto_buffer_reader.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/ir/op_registry.h"
#include "server/graph_convert.h"
#include "server/grpc_status.h"
#include "server/proto_convert.h"
#include "server/request_control.h"
#include "server/retry_hint.h"
#include "server/trace_context.h"
#include "server/upload_stream.h"

#ifndef GPUFLOW_VERSION
#error "GPUFLOW_VERSION must be defined by the build"
#endif

namespace gpuflow::server {

namespace {

// Sums the inline result bytes of an Execute reply (metrics).
int64_t InlineBytes(const v1::ExecuteResponse& response) {
  int64_t bytes = 0;
  for (const v1::OutputResult& output : response.outputs()) {
    if (output.has_value()) bytes += static_cast<int64_t>(output.value().data().size());
  }
  return bytes;
}

void FillSessionInfo(const Session& session, const std::string& endpoint, v1::SessionInfo* info) {
  info->set_session_id(session.id());
  info->set_device(session.device());
  info->set_endpoint(endpoint);
  info->set_label(session.label());
  info->set_memory_limit_bytes(session.memory_limit_bytes());
  info->set_memory_used_bytes(session.memory_used_bytes());
  info->set_num_arrays(session.num_arrays());
  info->set_memory_metadata_bytes(session.metadata_bytes());
  DurationToProto(session.idle_ttl(), info->mutable_idle_ttl());
}

// ServerInfo.devices, and the load's device_free_bytes summed over the
// healthy devices that report it.
void FillDevices(const DeviceSet& devices, const std::vector<SessionRegistry::DeviceLoad>& loads,
                 v1::ServerInfo* response) {
  std::optional<int64_t> free_total;
  for (int d = 0; d < devices.size(); ++d) {
    const Backend& backend = devices.backend(d);
    v1::DeviceInfo* info = response->add_devices();
    info->set_id(devices.id(d));
    info->set_description(backend.device_description());
    info->set_uuid(backend.device_uuid());
    info->set_healthy(backend.healthy());
    info->set_sessions(loads[d].sessions);
    info->set_bytes_held(loads[d].bytes);
    const MemoryStats memory = backend.memory_stats();
    if (memory.pool_used_bytes) info->set_pool_used_bytes(*memory.pool_used_bytes);
    if (memory.pool_reserved_bytes) info->set_pool_reserved_bytes(*memory.pool_reserved_bytes);
    if (memory.device_free_bytes) {
      info->set_device_free_bytes(*memory.device_free_bytes);
      if (backend.healthy()) free_total = free_total.value_or(0) + *memory.device_free_bytes;
    }
    if (memory.device_total_bytes) info->set_device_total_bytes(*memory.device_total_bytes);
  }
  if (free_total) response->mutable_load()->set_device_free_bytes(*free_total);
}

}  // namespace

GpuFlowService::GpuFlowService(SessionRegistry& registry, PlanCache& plans, GraphRunner& runner,
                               ComputePool& pool, ServiceOptions options, Telemetry telemetry,
                               const CallAuthenticator* auth)
    : registry_(registry),
      plans_(plans),
      runner_(runner),
      pool_(pool),
      options_(options),
      telemetry_(telemetry),
      own_auth_(auth != nullptr ? nullptr
                                : std::make_unique<CallAuthenticator>(
                                      nullptr, std::make_shared<Tenant>("", TenantLimits{}))),
      auth_(auth != nullptr ? auth : own_auth_.get()) {}

void GpuFlowService::AddRetryHint(grpc::ServerContextBase* context, const absl::Status& status) {
  if (std::optional<absl::Duration> after = RetryAfter(status)) {
    context->AddTrailingMetadata("grpc-retry-pushback-ms",
                                 absl::StrCat(absl::ToInt64Milliseconds(*after)));
  }
}

grpc::ServerUnaryReactor* GpuFlowService::Finish(grpc::CallbackServerContext* context,
                                                 RpcObserver& call, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  AddRetryHint(context, status);
  reactor->Finish(call.Finish(status));
  return reactor;
}

absl::Status GpuFlowService::Admit(grpc::CallbackServerContext* context, RpcObserver& call) const {
  // A caller's trace context is logged with the call and echoed back,
  // whether or not the call is admitted (it carries no secret).
  if (std::optional<std::string> traceparent = TraceparentOf(*context)) {
    context->AddInitialMetadata(kTraceparentKey, *traceparent);
    call.set_traceparent(*std::move(traceparent));
  }
  AuthResult who = auth_->Authenticate(*context);
  if (who.tenant == nullptr) {
    call.set_auth_failure(who.failure, context->peer());
    return CallAuthenticator::Refusal();
  }
  call.set_tenant(who.tenant);
  absl::StatusOr<Tenant::RequestSlot> slot = who.tenant->BeginRequest();
  if (!slot.ok()) return slot.status();
  call.set_request_slot(*std::move(slot));
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<Session>> GpuFlowService::FindSession(const std::string& id,
                                                                     const Tenant* tenant) {
  const DeviceSet& devices = registry_.devices();
  if (devices.healthy_count() == 0) return CheckServing(devices, 0);
  absl::StatusOr<std::shared_ptr<Session>> session = registry_.Get(id, tenant);
  if (!session.ok()) return session.status();
  // A sticky error on its device loses the session, not the others.
  if (absl::Status s = CheckServing(devices, (*session)->device_index()); !s.ok()) return s;
  return session;
}

CallerPermissions GpuFlowService::PermissionsOf(const Tenant& tenant) const {
  const TenantLimits limits = tenant.limits();
  return {.raw_kernels = tenant.anonymous() || limits.allow_raw_kernels,
          .custom_kernels = tenant.anonymous() || limits.allow_custom_kernels,
          .who = tenant.Describe()};
}

// ---------------------------------------------------------------- info

grpc::ServerUnaryReactor* GpuFlowService::GetServerInfo(grpc::CallbackServerContext* context,
                                                        const v1::GetServerInfoRequest* /*request*/,
                                                        v1::ServerInfo* response) {
  RpcObserver call(telemetry_, RpcMethod::kGetServerInfo);
  if (absl::Status s = Admit(context, call); !s.ok()) return Finish(context, call, s);
  const Tenant& tenant = *call.tenant();
  const TenantLimits tenant_limits = tenant.limits();
  // The smaller of the server's limit and the tenant's (<= 0: none).
  auto tightest = [](int64_t server, int64_t own) {
    if (own <= 0) return server;
    return server <= 0 ? own : std::min(server, own);
  };
  const DeviceSet& devices = registry_.devices();
  response->set_version(GPUFLOW_VERSION);
  response->set_backend(std::string(devices.backend(0).name()));
  response->set_device(devices.backend(0).device_description());
  response->set_device_uuid(devices.backend(0).device_uuid());
  response->set_healthy(devices.healthy_count() > 0);
  response->set_tenant(tenant.name());
  // A tenant sees its own sessions only, and nothing of the caches' use,
  // which would tell it about the other tenants' work.
  response->set_active_sessions(auth_->enabled() ? registry_.sessions_of(&tenant)
                                                 : registry_.size());
  const SessionRegistryOptions& sessions = registry_.options();
  v1::Limits* limits = response->mutable_limits();
  limits->set_max_sessions(
      static_cast<int32_t>(tightest(sessions.max_sessions, tenant_limits.max_sessions)));
  limits->set_default_session_memory_limit_bytes(sessions.default_memory_limit_bytes);
  limits->set_max_session_memory_limit_bytes(sessions.max_memory_limit_bytes);
  limits->set_max_array_bytes(options_.max_array_bytes);
  limits->set_max_chunk_bytes(options_.max_chunk_bytes);
  limits->set_max_inline_bytes(options_.max_inline_bytes);
  limits->set_max_graph_nodes(options_.max_graph_nodes);
  limits->set_max_message_bytes(options_.max_message_bytes);
  limits->set_max_memory_bytes(
      std::max<int64_t>(0, tightest(registry_.budget().limit(), tenant_limits.max_memory_bytes)));
  limits->set_max_concurrent_requests(std::max(0, tenant_limits.max_concurrent_requests));
  const CallerPermissions permissions = PermissionsOf(tenant);
  limits->set_allow_raw_kernels(runner_.allows_raw_kernels() && permissions.raw_kernels);
  limits->set_allow_custom_kernels(permissions.custom_kernels);
  limits->set_max_prepared_graphs(runner_.max_prepared_graphs());
  limits->set_allow_shared_memory(options_.allow_shared_memory);
  limits->set_max_shared_memory_bytes(
      options_.allow_shared_memory ? options_.max_shared_memory_bytes : 0);
  limits->set_allow_cuda_ipc(options_.allow_cuda_ipc);
  DurationToProto(options_.max_request_duration, limits->mutable_max_request_duration());
  limits->set_max_arrays_per_session(sessions.max_arrays_per_session);
  limits->set_max_benchmark_repeats(options_.max_benchmark_repeats);
  DurationToProto(sessions.default_idle_ttl, limits->mutable_default_session_idle_ttl());
  DurationToProto(sessions.max_idle_ttl, limits->mutable_max_session_idle_ttl());
  response->set_endpoint(options_.advertise_address);
  v1::WorkerLoad* load = response->mutable_load();
  load->set_sessions(static_cast<int32_t>(registry_.size()));
  load->set_bytes_held(registry_.budget().used());
  load->set_requests_in_flight(requests_in_flight_.load(std::memory_order_relaxed));
  FillDevices(devices, registry_.device_loads(), response);
  for (const DTypeInfo& info : AllDTypes()) response->add_dtypes(DTypeToProto(info.dtype));
  FillOpInfos(OpRegistry::Default(), response->mutable_ops());
  if (auth_->enabled()) return Finish(context, call, absl::OkStatus());
  const PlanCache::Stats plan_stats = plans_.stats();
  v1::CacheStats* plan_cache = response->mutable_plan_cache();
  plan_cache->set_memory_hits(plan_stats.hits);
  plan_cache->set_misses(plan_stats.misses);
  plan_cache->set_evictions(plan_stats.evictions);
  plan_cache->set_entries(plan_stats.entries);
  // entries: kernels loaded in memory; bytes: the on-disk cache's size.
  KernelCacheStats kernel_stats;
  for (int d = 0; d < devices.size(); ++d) {
    const KernelCacheStats one = devices.backend(d).kernel_cache_stats();
    kernel_stats.memory_hits += one.memory_hits;
    kernel_stats.disk_hits += one.disk_hits;
    kernel_stats.misses += one.misses;
    kernel_stats.evictions += one.evictions;
    kernel_stats.compile_seconds += one.compile_seconds;
    kernel_stats.memory_entries += one.memory_entries;
    // One directory shared by every device: its size, not a sum.
    kernel_stats.disk_bytes = std::max(kernel_stats.disk_bytes, one.disk_bytes);
    kernel_stats.disk_entries = std::max(kernel_stats.disk_entries, one.disk_entries);
  }
  v1::CacheStats* kernel_cache = response->mutable_kernel_cache();
  kernel_cache->set_memory_hits(kernel_stats.memory_hits);
  kernel_cache->set_disk_hits(kernel_stats.disk_hits);
  kernel_cache->set_misses(kernel_stats.misses);
  kernel_cache->set_evictions(kernel_stats.evictions);
  kernel_cache->set_compile_seconds(kernel_stats.compile_seconds);
  kernel_cache->set_entries(kernel_stats.memory_entries);
  kernel_cache->set_bytes(kernel_stats.disk_bytes);
  kernel_cache->set_disk_entries(kernel_stats.disk_entries);
  return Finish(context, call, absl::OkStatus());
}

// ---------------------------------------------------------------- sessions

grpc::ServerUnaryReactor* GpuFlowService::CreateSession(grpc::CallbackServerContext* context,
                                                        const v1::CreateSessionRequest* request,
                                                        v1::SessionInfo* response) {
  RpcObserver call(telemetry_, RpcMethod::kCreateSession);
  call.set_session_label(request->label());
  if (absl::Status s = Admit(context, call); !s.ok()) return Finish(context, call, s);
  if (registry_.devices().healthy_count() == 0) {
    return Finish(context, call, absl::UnavailableError("the backend is unhealthy"));
  }
  SessionOptions options;
  if (request->has_device()) options.device = request->device();
  options.label = request->label();
  options.tenant = call.tenant();
  options.memory_limit_bytes = request->memory_limit_bytes();
  if (request->has_idle_ttl()) options.idle_ttl = DurationFromProto(request->idle_ttl());
  absl::StatusOr<std::shared_ptr<Session>> session = registry_.Create(options);
  if (!session.ok()) return Finish(context, call, session.status());
  call.set_session(**session);
  FillSessionInfo(**session, options_.advertise_address, response);
  return Finish(context, call, absl::OkStatus());
}

grpc::ServerUnaryReactor* GpuFlowService::CloseSession(grpc::CallbackServerContext* context,
                                                       const v1::CloseSessionRequest* request,
                                                       v1::CloseSessionResponse* response) {
  RpcObserver call(telemetry_, RpcMethod::kCloseSession);
  call.set_session_id(request->session_id());
  if (absl::Status s = Admit(context, call); !s.ok()) return Finish(context, call, s);
  const Tenant* tenant = call.tenant().get();
  if (std::shared_ptr<Session> session = registry_.Peek(request->session_id(), tenant)) {
    call.set_session(*session);
  }
  absl::StatusOr<int64_t> freed = registry_.Close(request->session_id(), tenant);
  if (freed.ok()) response->set_freed_bytes(*freed);
  return Finish(context, call, freed.status());
}

grpc::ServerUnaryReactor* GpuFlowService::KeepAlive(grpc::CallbackServerContext* context,
                                                    const v1::KeepAliveRequest* request,
                                                    v1::SessionInfo* response) {
  RpcObserver call(telemetry_, RpcMethod::kKeepAlive);
  call.set_session_id(request->session_id());
  if (absl::Status s = Admit(context, call); !s.ok()) return Finish(context, call, s);
  absl::StatusOr<std::shared_ptr<Session>> session =
      FindSession(request->session_id(), call.tenant().get());
  if (session.ok()) {
    call.set_session(**session);
    FillSessionInfo(**session, options_.advertise_address, response);
  }
  return Finish(context, call, session.status());
}

// ---------------------------------------------------------------- upload

// Reads raw messages and hands each, strictly decoded, to an UploadStream,
// which reserves quota, allocates, copies chunks into place and publishes
// the array only when exactly the announced bytes arrived. Every other
// ending (undecodable or out-of-order message, short, long, cancelled, the
// session closed or expired) aborts the stream, so nothing is left behind.
class GpuFlowService::UploadReactor final : public grpc::ServerReadReactor<grpc::ByteBuffer> {
 public:
  UploadReactor(GpuFlowService& service, grpc::CallbackServerContext* context,
                grpc::ByteBuffer* response)
      : service_(service),
        context_(context),
        response_(response),
        upload_(service.registry_, {.max_array_bytes = service.options_.max_array_bytes,
                                    .max_chunk_bytes = service.options_.max_chunk_bytes}),
        call_(service.telemetry_, RpcMethod::kUploadArray) {
    if (absl::Status s = service.Admit(context, call_); !s.ok()) {
      FinishUpload(s);
      return;
    }
    upload_.set_tenant(call_.tenant().get());
    StartRead(&message_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The client half-closed, or the call was cancelled (by the client,
      // the session's closing or the server's shutdown).
      if (context_->IsCancelled() || session_closed_.load()) {
        FinishUpload(absl::CancelledError(session_closed_.load()
                                              ? "upload cancelled: the session was closed"
                                              : "upload cancelled"));
      } else {
        FinishUpload(Complete());
      }
      return;
    }
    absl::Status status = Handle();
    message_.Clear();
    if (!status.ok()) {
      FinishUpload(status);
      return;
    }
    StartRead(&message_);
  }

  void OnDone() override { delete this; }

 private:
  absl::Status Handle() {
    const bool had_session = upload_.session() != nullptr;
    v1::UploadArrayRequest request;
    absl::Status status = ParseMessage(&request);
    if (status.ok()) {
      if (request.has_header()) call_.set_session_id(request.header().session_id());
      status = upload_.OnMessage(request);
    }
    if (!had_session && upload_.session() != nullptr) {
      call_.set_session(*upload_.session());
      // Closing or expiring the session cancels the upload.
      close_hook_ = upload_.session()->OnClose([this] {
        session_closed_.store(true);
        context_->TryCancel();
      });
    }
    if (status.ok() && request.has_chunk()) {
      if (ServerMetrics* metrics = service_.telemetry_.metrics) {
        metrics->AddTransferBytes(TransferDirection::kUpload,
                                  static_cast<int64_t>(request.chunk().size()));
      }
    }
    return status;
  }

  // Decodes message_ strictly: gRPC's own decoding would end the stream
  // quietly on bytes that do not parse.
  absl::Status ParseMessage(v1::UploadArrayRequest* request) {
    grpc::ProtoBufferReader reader(&message_);
    if (!request->ParseFromZeroCopyStream(&reader)) {
      return absl::InvalidArgumentError(absl::StrCat("upload message of ", message_.Length(),
                                                     " bytes is not a valid UploadArrayRequest"));
    }
    return absl::OkStatus();
  }

  absl::Status Complete() {
    v1::ArrayInfo info;
    if (absl::Status s = upload_.Finish(&info); !s.ok()) return s;
    const std::string bytes = info.SerializeAsString();
    grpc::Slice slice(bytes);
    *response_ = grpc::ByteBuffer(&slice, 1);
    return absl::OkStatus();
  }

  // Ends the call. A failed upload gives back its buffer and quota before
  // the client hears of the failure (OnDone may run later), so the client
  // never sees the memory of an upload it knows failed still in use.
  void FinishUpload(const absl::Status& status) {
    if (!status.ok()) upload_.Abort();
    close_hook_ = Session::CloseHook();
    AddRetryHint(context_, status);
    Finish(call_.Finish(status));
  }

  GpuFlowService& service_;
  grpc::CallbackServerContext* const context_;
  grpc::ByteBuffer* const response_;
  grpc::ByteBuffer message_;
  UploadStream upload_;
  std::atomic<bool> session_closed_{false};
  Session::CloseHook close_hook_;
  RpcObserver call_;
};

grpc::ServerReadReactor<grpc::ByteBuffer>* GpuFlowService::UploadArray(
    grpc::CallbackServerContext* context, grpc::ByteBuffer* response) {
  return new UploadReactor(*this, context, response);
}

// ---------------------------------------------------------------- download

// Streams a header then the bytes of a snapshot of the array (the buffer is
// shared, so replacing or deleting the array meanwhile does not matter).
// Two messages take turns: while gRPC sends one, the next chunk is copied
// from the device into the other.
class GpuFlowService::DownloadReactor final
    : public grpc::ServerWriteReactor<v1::DownloadArrayResponse> {
 public:
  DownloadReactor(GpuFlowService& service, grpc::CallbackServerContext* context,
                  const v1::DownloadArrayRequest& request)
      : registry_(service.registry_),
        context_(context),
        metrics_(service.telemetry_.metrics),
        call_(service.telemetry_, RpcMethod::kDownloadArray) {
    absl::Status status = Start(service, request);
    if (!status.ok()) End(status);
  }

  void OnWriteDone(bool ok) override {
    std::optional<absl::Status> end;
    {
      // Waits for the copy that followed the write now done.
      absl::MutexLock lock(&mu_);
      if (!ok || session_closed_.load()) {
        end = absl::CancelledError(session_closed_.load()
                                       ? "download cancelled: the session was closed"
                                       : "download cancelled");
      } else if (!copy_status_.ok()) {
        end = copy_status_;
      } else if (!next_ready_) {
        // The last chunks may still be on their way to a slow reader: the
        // session counts as busy until the call is done (OnDone), so it does
        // not expire under a download the client is still reading.
        draining_.emplace(registry_.BeginRequest(session_));
        end = absl::OkStatus();
      } else {
        current_ ^= 1;
        next_ready_ = false;
        StartWrite(&responses_[current_]);
        CopyNextChunk();
      }
    }
    // Outside the lock: OnDone may delete this as soon as Finish is called.
    if (end.has_value()) End(*end);
  }

  void OnDone() override { delete this; }

 private:
  // Ends the call, letting go of the array's buffer at once.
  void End(const absl::Status& status) {
    close_hook_ = Session::CloseHook();
    array_ = Array();
    AddRetryHint(context_, status);
    Finish(call_.Finish(status));
  }

  absl::Status Start(GpuFlowService& service, const v1::DownloadArrayRequest& request) {
    call_.set_session_id(request.session_id());
    if (absl::Status s = service.Admit(context_, call_); !s.ok()) return s;
    absl::StatusOr<std::shared_ptr<Session>> session =
        service.FindSession(request.session_id(), call_.tenant().get());
    if (!session.ok()) return session.status();
    session_ = std::move(*session);
    backend_ = &session_->backend();
    call_.set_session(*session_);
    absl::StatusOr<Array> array = session_->GetArray(request.name());
    if (!array.ok()) return array.status();
    array_ = std::move(*array);
    // Closing or expiring the session cancels the download.
    close_hook_ = session_->OnClose([this] {
      session_closed_.store(true);
      context_->TryCancel();
    });
    if (request.chunk_bytes() < 0) {
      return absl::InvalidArgumentError("chunk_bytes must not be negative");
    }
    chunk_bytes_ = request.chunk_bytes() == 0
                       ? service.options_.default_chunk_bytes
                       : std::min(request.chunk_bytes(), service.options_.max_chunk_bytes);
    FillArrayInfo(request.name(), array_, responses_[0].mutable_header());
    // OnWriteDone may run on another thread before the copy ends.
    absl::MutexLock lock(&mu_);
    StartWrite(&responses_[0]);
    CopyNextChunk();
    return absl::OkStatus();
  }

  // Copies the next chunk into the message not being sent; a failure ends
  // the call once the write in flight is done (Finish must wait for it).
  void CopyNextChunk() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const int64_t n = std::min(chunk_bytes_, array_.num_bytes() - copied_);
    if (n <= 0) return;
    std::string* chunk = responses_[current_ ^ 1].mutable_chunk();
    chunk->resize(n);
    Stream& stream = session_->stream();
    copy_status_ = backend_->CopyToHost(*array_.buffer, copied_, n, chunk->data(), stream);
    if (copy_status_.ok()) copy_status_ = backend_->Synchronize(stream);
    if (!copy_status_.ok()) return;
    copied_ += n;
    next_ready_ = true;
    // A long download keeps its session alive.
    registry_.Touch(*session_);
    if (metrics_ != nullptr) metrics_->AddTransferBytes(TransferDirection::kDownload, n);
  }

  SessionRegistry& registry_;
  grpc::CallbackServerContext* const context_;
  Backend* backend_ = nullptr;
  std::shared_ptr<Session> session_;
  Array array_;
  int64_t chunk_bytes_ = 0;
  // Bytes copied from the device into messages so far.
  int64_t copied_ = 0;
  // responses_[current_] is being sent; the other holds the next chunk once
  // next_ready_.
  absl::Mutex mu_;
  v1::DownloadArrayResponse responses_[2] ABSL_GUARDED_BY(mu_);
  int current_ ABSL_GUARDED_BY(mu_) = 0;
  bool next_ready_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status copy_status_ ABSL_GUARDED_BY(mu_);
  ServerMetrics* const metrics_;
  std::atomic<bool> session_closed_{false};
  Session::CloseHook close_hook_;
  std::optional<Session::RequestScope> draining_;
  RpcObserver call_;
};

grpc::ServerWriteReactor<v1::DownloadArrayResponse>* GpuFlowService::DownloadArray(
    grpc::CallbackServerContext* context, const v1::DownloadArrayRequest* request) {
  return new DownloadReactor(*this, context, *request);
}

// ---------------------------------------------------------------- arrays

grpc::ServerUnaryReactor* GpuFlowService::ListArrays(grpc::CallbackServerContext* context,
                                                     const v1::ListArraysRequest* request,
                                                     v1::ListArraysResponse* response) {
  RpcObserver call(telemetry_, RpcMethod::kListArrays);
  call.set_session_id(request->session_id());
  if (absl::Status s = Admit(context, call); !s.ok()) return Finish(context, call, s);
  absl::StatusOr<std::shared_ptr<Session>> session =
      FindSession(request->session_id(), call.tenant().get());
  if (!session.ok()) return Finish(context, call, session.status());
  call.set_session(**session);
  for (const ArrayEntry& entry : (*session)->ListArrays()) {
    FillArrayInfo(entry.name, entry.array, response->add_arrays());
  }
  response->set_memory_used_bytes((*session)->memory_used_bytes());
  response->set_memory_limit_bytes((*session)->memory_limit_bytes());
  response->set_memory_metadata_bytes((*session)->metadata_bytes());
  return Finish(context, call, absl::OkStatus());
}

grpc::ServerUnaryReactor* GpuFlowService::GetArrayInfo(grpc::CallbackServerContext* context,
                                                       const v1::GetArrayInfoRequest* request,
                                                       v1::ArrayInfo* response) {
  RpcObserver call(telemetry_, RpcMethod::kGetArrayInfo);
  call.set_session_id(request->session_id());
  if (absl::Status s = Admit(context, call); !s.ok()) return Finish(context, call, s);
  absl::StatusOr<std::shared_ptr<Session>> session =
      FindSession(request->session_id(), call.tenant().get());
  if (!session.ok()) return Finish(context, call, session.status());
  call.set_session(**session);
  absl::StatusOr<Array> array = (*session)->GetArray(request->name());
  if (array.ok()) FillArrayInfo(request->name(), *array, response);
  return Finish(context, call, array.status());
}

grpc::ServerUnaryReactor* GpuFlowService::DeleteArray(grpc::CallbackServerContext* context,
                                                      const v1::DeleteArrayRequest* request,
                                                      v1::DeleteArrayResponse* response) {
  RpcObserver call(telemetry_, RpcMethod::kDeleteArray);
  call.set_session_id(request->session_id());
  if (absl::Status s = Admit(context, call); !s.ok()) return Finish(context, call, s);
  absl::StatusOr<std::shared_ptr<Session>> session =
      FindSession(request->session_id(), call.tenant().get());
  if (!session.ok()) return Finish(context, call, session.status());
  call.set_session(**session);
  absl::StatusOr<int64_t> freed = (*session)->DeleteArray(request->name());
  if (freed.ok()) response->set_freed_bytes(*freed);
  return Finish(context, call, freed.status());
}

// ---------------------------------------------------------------- graphs

grpc::ServerUnaryReactor* GpuFlowService::RunOnPool(
    grpc::CallbackServerContext* context, RpcObserver call, const std::string& session_id,
    std::function<absl::Status(Session&, RunControl&, const CallerPermissions&)> work,
    const std::function<bool(Session&, const CallerPermissions&)>& may_run_inline,
    std::function<void(const absl::Status&)> before_reply) {
  call.set_session_id(session_id);
  if (absl::Status s = Admit(context, call); !s.ok()) return Finish(context, call, s);
  absl::StatusOr<std::shared_ptr<Session>> session = FindSession(session_id, call.tenant().get());
  if (!session.ok()) return Finish(context, call, session.status());
  call.set_session(**session);
  const std::string group = call.tenant()->name();
  CallerPermissions caller = PermissionsOf(*call.tenant());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // std::function needs a copyable task, so the observer travels by pointer.
  auto observer = std::make_shared<RpcObserver>(std::move(call));
  // Sessions take turns on the pool's threads.
  const std::string key = (*session)->id();
  // The session does not expire while its request waits or runs.
  auto running = std::make_shared<Session::RequestScope>(registry_.BeginRequest(*session));
  const bool try_inline = may_run_inline != nullptr && may_run_inline(**session, caller);
  requests_in_flight_.fetch_add(1, std::memory_order_relaxed);
  auto task = [this, context, reactor, observer, running, session = *std::move(session),
               work = std::move(work), caller = std::move(caller),
               before_reply = std::move(before_reply)] {
    absl::Status status;
    {
      RequestControl control(context, session.get(), options_.max_request_duration);
      // A call cancelled while it queued does not start.
      status = control.CheckContinue();
      if (status.ok()) status = work(*session, control, caller);
    }
    status = EndedAs(context, status);
    AddRetryHint(context, status);
    requests_in_flight_.fetch_sub(1, std::memory_order_relaxed);
    grpc::Status reply = observer->Finish(status);
    // Last, after the call's own metrics and log line, so that the reply can
    // say how long everything before it took.
    if (before_reply != nullptr) before_reply(status);
    reactor->Finish(reply);
  };
  if (try_inline && pool_.TryRunInline(group, key, task)) return reactor;
  // Tenants take turns, then their sessions.
  pool_.Submit(group, key, std::move(task));
  return reactor;
}

absl::Status GpuFlowService::EndedAs(grpc::CallbackServerContext* context,
                                     const absl::Status& status) {
  // The client is gone (cancelled, past its deadline, or the server cut the
  // call at shutdown): say so in the log and metrics, not what the work
  // returned, which nobody receives.
  if (status.ok() && context->IsCancelled()) {
    return absl::CancelledError("the call was cancelled before its reply was sent");
  }
  return status;
}

void GpuFlowService::ObserveCompiles(RpcMethod method, const std::string& session_label,
                                     int kernels, double seconds, int cached) {
  if (kernels <= 0) return;
  if (telemetry_.metrics != nullptr) telemetry_.metrics->RecordCompiles(kernels, seconds);
  if (telemetry_.log != nullptr) {
    telemetry_.log->Debug("kernels compiled", {{"method", RpcMethodName(method)},
                                               {"session_label", session_label},
                                               {"kernels", kernels},
                                               {"compile_ms", seconds * 1e3},
                                               {"cached", cached}});
  }
}

absl::Status GpuFlowService::ObservedExecute(Session& session, const v1::ExecuteRequest& request,
                                             v1::ExecuteResponse* response, RunControl& control,
                                             const CallerPermissions& caller, const RequestKey* key,
                                             CallTiming timing) {
  absl::Status status = runner_.Execute(session, request, response, &control, caller, key, timing);
  if (!status.ok()) return status;
  const v1::Timings& timings = response->timings();
  if (telemetry_.metrics != nullptr) {
    telemetry_.metrics->RecordExecute(timings, session.device_index());
    telemetry_.metrics->AddTransferBytes(TransferDirection::kDownload, InlineBytes(*response));
  }
  if (!timings.plan_cache_hit() && telemetry_.log != nullptr) {
    telemetry_.log->Debug("plan cache miss", {{"method", "Execute"},
                                              {"session_label", session.label()},
                                              {"plan_ms", timings.plan_seconds() * 1e3}});
  }
  ObserveCompiles(RpcMethod::kExecute, session.label(), timings.kernels_compiled(),
                  timings.compile_seconds(), timings.kernel_cache_hits());
  return status;
}

absl::Status GpuFlowService::ObservedBenchmark(Session& session,
                                               const v1::BenchmarkRequest& request,
                                               v1::BenchmarkResponse* response, RunControl& control,
                                               const CallerPermissions& caller) {
  absl::Status status = runner_.Benchmark(session, request, response, &control, caller);
  if (!status.ok()) return status;
  response->set_device(session.backend().device());
  // Kernels compile in the first run only.
  const v1::Timings& first = response->first_run();
  ObserveCompiles(RpcMethod::kBenchmark, session.label(), first.kernels_compiled(),
                  first.compile_seconds(), first.kernel_cache_hits());
  return status;
}

grpc::ServerUnaryReactor* GpuFlowService::Execute(grpc::CallbackServerContext* context,
                                                  const v1::ExecuteRequest* request,
                                                  v1::ExecuteResponse* response) {
  const CallTiming timing{.received = absl::Now()};
  // Made once the caller is known, and kept for the run.
  auto key = std::make_shared<RequestKey>();
  auto work = [this, request, response, key, timing](Session& session, RunControl& control,
                                                     const CallerPermissions& caller) {
    return ObservedExecute(session, *request, response, control, caller, key.get(), timing);
  };
  // A short repeated request runs here, without a hand-off to a compute
  // thread and back.
  auto may_run_inline = [this, request, key](Session& session, const CallerPermissions& caller) {
    if (request->prepared_graph() == 0) *key = runner_.KeyOf(*request, caller);
    if (options_.inline_max_run <= absl::ZeroDuration()) return false;
    const std::optional<absl::Duration> last =
        request->prepared_graph() != 0 ? runner_.LastRunTime(session, request->prepared_graph())
                                       : runner_.LastRunTime(*key);
    return last.has_value() && *last <= options_.inline_max_run;
  };
  // Timings.total ends here, just before the reply goes to gRPC: it covers
  // the call's admission, metrics and log line too, not only the runner's
  // part (which set it first).
  auto close_timings = [response, timing](const absl::Status& status) {
    if (!status.ok()) return;
    response->mutable_timings()->set_total_seconds(
        absl::ToDoubleSeconds(absl::Now() - timing.received));
  };
  return RunOnPool(context, RpcObserver(telemetry_, RpcMethod::kExecute), request->session_id(),
                   std::move(work), may_run_inline, std::move(close_timings));
}

grpc::ServerUnaryReactor* GpuFlowService::Benchmark(grpc::CallbackServerContext* context,
                                                    const v1::BenchmarkRequest* request,
                                                    v1::BenchmarkResponse* response) {
  auto work = [this, request, response](Session& session, RunControl& control,
                                        const CallerPermissions& caller) {
    return ObservedBenchmark(session, *request, response, control, caller);
  };
  return RunOnPool(context, RpcObserver(telemetry_, RpcMethod::kBenchmark), request->session_id(),
                   std::move(work));
}

grpc::ServerUnaryReactor* GpuFlowService::Precompile(grpc::CallbackServerContext* context,
                                                     const v1::PrecompileRequest* request,
                                                     v1::PrecompileResponse* response) {
  RpcObserver call(telemetry_, RpcMethod::kPrecompile);
  if (absl::Status s = Admit(context, call); !s.ok()) return Finish(context, call, s);
  if (registry_.devices().healthy_count() == 0) {
    return Finish(context, call, absl::UnavailableError("the backend is unhealthy"));
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const std::string group = call.tenant()->name();
  CallerPermissions caller = PermissionsOf(*call.tenant());
  auto observer = std::make_shared<RpcObserver>(std::move(call));
  pool_.Submit(
      group, "", [this, context, reactor, observer, request, response, caller = std::move(caller)] {
        absl::Status status;
        {
          RequestControl control(context, /*session=*/nullptr, options_.max_request_duration);
          status = runner_.Precompile(*request, response, &control, caller);
        }
        if (status.ok()) {
          ObserveCompiles(RpcMethod::kPrecompile, "", response->kernels_compiled(),
                          response->compile_seconds(), response->kernels_cached());
        }
        reactor->Finish(observer->Finish(EndedAs(context, status)));
      });
  return reactor;
}

grpc::ServerUnaryReactor* GpuFlowService::PrepareGraph(grpc::CallbackServerContext* context,
                                                       const v1::PrepareGraphRequest* request,
                                                       v1::PreparedGraphInfo* response) {
  auto work = [this, request, response](Session& session, RunControl& control,
                                        const CallerPermissions& caller) {
    absl::Status status = runner_.PrepareGraph(session, *request, response, &control, caller);
    if (status.ok()) {
      ObserveCompiles(RpcMethod::kPrepareGraph, session.label(), response->kernels_compiled(),
                      response->compile_seconds(), response->kernels_cached());
    }
    return status;
  };
  return RunOnPool(context, RpcObserver(telemetry_, RpcMethod::kPrepareGraph),
                   request->session_id(), std::move(work));
}

grpc::ServerUnaryReactor* GpuFlowService::ReleaseGraph(grpc::CallbackServerContext* context,
                                                       const v1::ReleaseGraphRequest* request,
                                                       v1::ReleaseGraphResponse* response) {
  RpcObserver call(telemetry_, RpcMethod::kReleaseGraph);
  call.set_session_id(request->session_id());
  if (absl::Status s = Admit(context, call); !s.ok()) return Finish(context, call, s);
  absl::StatusOr<std::shared_ptr<Session>> session =
      FindSession(request->session_id(), call.tenant().get());
  if (!session.ok()) return Finish(context, call, session.status());
  call.set_session(**session);
  return Finish(context, call, runner_.ReleaseGraph(**session, *request, response));
}

}  // namespace gpuflow::server
