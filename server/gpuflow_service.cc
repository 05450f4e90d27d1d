#include "server/gpuflow_service.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/ir/op_registry.h"
#include "server/graph_convert.h"
#include "server/grpc_status.h"
#include "server/proto_convert.h"

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

void FillSessionInfo(const Session& session, v1::SessionInfo* info) {
  info->set_session_id(session.id());
  info->set_label(session.label());
  info->set_memory_limit_bytes(session.memory_limit_bytes());
  info->set_memory_used_bytes(session.memory_used_bytes());
  info->set_num_arrays(session.num_arrays());
  DurationToProto(session.idle_ttl(), info->mutable_idle_ttl());
}

}  // namespace

GpuFlowService::GpuFlowService(Backend& backend, SessionRegistry& registry, PlanCache& plans,
                               GraphRunner& runner, ComputePool& pool, ServiceOptions options,
                               Telemetry telemetry)
    : backend_(backend),
      registry_(registry),
      plans_(plans),
      runner_(runner),
      pool_(pool),
      options_(options),
      telemetry_(telemetry) {}

grpc::ServerUnaryReactor* GpuFlowService::Finish(grpc::CallbackServerContext* context,
                                                 RpcObserver& call, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(call.Finish(status));
  return reactor;
}

absl::StatusOr<std::shared_ptr<Session>> GpuFlowService::FindSession(const std::string& id) {
  if (!backend_.healthy()) {
    return absl::UnavailableError(absl::StrCat("the ", backend_.name(), " backend is unhealthy"));
  }
  return registry_.Get(id);
}

// ---------------------------------------------------------------- info

grpc::ServerUnaryReactor* GpuFlowService::GetServerInfo(grpc::CallbackServerContext* context,
                                                        const v1::GetServerInfoRequest* /*request*/,
                                                        v1::ServerInfo* response) {
  RpcObserver call(telemetry_, RpcMethod::kGetServerInfo);
  response->set_version(GPUFLOW_VERSION);
  response->set_backend(std::string(backend_.name()));
  response->set_device(backend_.device_description());
  response->set_healthy(backend_.healthy());
  response->set_active_sessions(registry_.size());
  const SessionRegistryOptions& sessions = registry_.options();
  v1::Limits* limits = response->mutable_limits();
  limits->set_max_sessions(sessions.max_sessions);
  limits->set_default_session_memory_limit_bytes(sessions.default_memory_limit_bytes);
  limits->set_max_session_memory_limit_bytes(sessions.max_memory_limit_bytes);
  limits->set_max_array_bytes(options_.max_array_bytes);
  limits->set_max_chunk_bytes(options_.max_chunk_bytes);
  limits->set_max_inline_bytes(options_.max_inline_bytes);
  limits->set_max_graph_nodes(options_.max_graph_nodes);
  limits->set_max_message_bytes(options_.max_message_bytes);
  DurationToProto(sessions.default_idle_ttl, limits->mutable_default_session_idle_ttl());
  DurationToProto(sessions.max_idle_ttl, limits->mutable_max_session_idle_ttl());
  for (const DTypeInfo& info : AllDTypes()) response->add_dtypes(DTypeToProto(info.dtype));
  FillOpInfos(OpRegistry::Default(), response->mutable_ops());
  const PlanCache::Stats plan_stats = plans_.stats();
  v1::CacheStats* plan_cache = response->mutable_plan_cache();
  plan_cache->set_memory_hits(plan_stats.hits);
  plan_cache->set_misses(plan_stats.misses);
  plan_cache->set_evictions(plan_stats.evictions);
  plan_cache->set_entries(plan_stats.entries);
  // entries: kernels loaded in memory; bytes: the on-disk cache's size.
  const KernelCacheStats kernel_stats = backend_.kernel_cache_stats();
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
  if (!backend_.healthy()) {
    return Finish(context, call, absl::UnavailableError("the backend is unhealthy"));
  }
  SessionOptions options;
  options.label = request->label();
  options.memory_limit_bytes = request->memory_limit_bytes();
  if (request->has_idle_ttl()) options.idle_ttl = DurationFromProto(request->idle_ttl());
  absl::StatusOr<std::shared_ptr<Session>> session = registry_.Create(options);
  if (!session.ok()) return Finish(context, call, session.status());
  call.set_session(**session);
  FillSessionInfo(**session, response);
  return Finish(context, call, absl::OkStatus());
}

grpc::ServerUnaryReactor* GpuFlowService::CloseSession(grpc::CallbackServerContext* context,
                                                       const v1::CloseSessionRequest* request,
                                                       v1::CloseSessionResponse* response) {
  RpcObserver call(telemetry_, RpcMethod::kCloseSession);
  call.set_session_id(request->session_id());
  if (std::shared_ptr<Session> session = registry_.Peek(request->session_id())) {
    call.set_session(*session);
  }
  absl::StatusOr<int64_t> freed = registry_.Close(request->session_id());
  if (freed.ok()) response->set_freed_bytes(*freed);
  return Finish(context, call, freed.status());
}

grpc::ServerUnaryReactor* GpuFlowService::KeepAlive(grpc::CallbackServerContext* context,
                                                    const v1::KeepAliveRequest* request,
                                                    v1::SessionInfo* response) {
  RpcObserver call(telemetry_, RpcMethod::kKeepAlive);
  call.set_session_id(request->session_id());
  absl::StatusOr<std::shared_ptr<Session>> session = FindSession(request->session_id());
  if (session.ok()) {
    call.set_session(**session);
    FillSessionInfo(**session, response);
  }
  return Finish(context, call, session.status());
}

// ---------------------------------------------------------------- upload

// Reads the header, reserves quota and allocates, copies each chunk into
// place, and publishes the array only when exactly the announced bytes
// arrived. Every other ending (error, short, long, cancelled) destroys the
// reactor with its buffer and reservation, so nothing is left behind.
class GpuFlowService::UploadReactor final : public grpc::ServerReadReactor<v1::UploadArrayRequest> {
 public:
  UploadReactor(GpuFlowService& service, grpc::CallbackServerContext* context,
                v1::ArrayInfo* response)
      : service_(service),
        context_(context),
        response_(response),
        call_(service.telemetry_, RpcMethod::kUploadArray) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      // The client half-closed, or the call was cancelled.
      FinishUpload(context_->IsCancelled() ? absl::CancelledError("upload cancelled") : Complete());
      return;
    }
    absl::Status status = header_seen_ ? HandleChunk() : HandleHeader();
    if (!status.ok()) {
      FinishUpload(status);
      return;
    }
    request_.Clear();
    StartRead(&request_);
  }

  void OnDone() override { delete this; }

 private:
  // Ends the call. A failed upload gives back its buffer and quota before the
  // client hears of the failure (OnDone may run later), so the client never
  // sees the memory of an upload it knows failed still in use.
  void FinishUpload(const absl::Status& status) {
    if (!status.ok()) {
      buffer_.reset();
      reservation_ = MemoryReservation();
    }
    Finish(call_.Finish(status));
  }

  absl::Status HandleHeader() {
    if (!request_.has_header()) {
      return absl::InvalidArgumentError("the first upload message must be a header");
    }
    header_seen_ = true;
    const v1::UploadHeader& header = request_.header();
    call_.set_session_id(header.session_id());
    absl::StatusOr<std::shared_ptr<Session>> session = service_.FindSession(header.session_id());
    if (!session.ok()) return session.status();
    session_ = std::move(*session);
    call_.set_session(*session_);
    if (absl::Status s = ValidateName(header.name(), "array name"); !s.ok()) return s;
    name_ = header.name();
    absl::StatusOr<DType> dtype = DTypeFromProto(header.dtype());
    if (!dtype.ok()) return dtype.status();
    absl::StatusOr<Shape> shape = ShapeFromProto(header.shape());
    if (!shape.ok()) return shape.status();
    absl::StatusOr<int64_t> bytes = ByteSize(*shape, *dtype);
    if (!bytes.ok()) return bytes.status();
    if (*bytes > service_.options_.max_array_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("array '", name_, "' of ", *bytes,
                                                       " bytes exceeds --max_array_bytes (",
                                                       service_.options_.max_array_bytes, ")"));
    }
    absl::StatusOr<MemoryReservation> reservation = session_->Reserve(*bytes);
    if (!reservation.ok()) return reservation.status();
    reservation_ = std::move(*reservation);
    absl::StatusOr<std::unique_ptr<DeviceBuffer>> buffer =
        service_.backend_.Allocate(*bytes, session_->stream());
    if (!buffer.ok()) return buffer.status();
    buffer_ = std::move(*buffer);
    array_.dtype = *dtype;
    array_.shape = *std::move(shape);
    return absl::OkStatus();
  }

  absl::Status HandleChunk() {
    if (!request_.has_chunk()) {
      return absl::InvalidArgumentError("only the first upload message may be a header");
    }
    const std::string& chunk = request_.chunk();
    const auto n = static_cast<int64_t>(chunk.size());
    if (n > service_.options_.max_chunk_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("chunk of ", n, " bytes exceeds the limit of ",
                                                     service_.options_.max_chunk_bytes));
    }
    if (n > buffer_->size() - received_) {
      return absl::InvalidArgumentError(
          absl::StrCat("upload of '", name_, "' sent more than the ", buffer_->size(),
                       " bytes its header announced (dtype ", DTypeName(array_.dtype), ", shape ",
                       array_.shape.ToString(), ")"));
    }
    Stream& stream = session_->stream();
    if (absl::Status s =
            service_.backend_.CopyToDevice(chunk.data(), *buffer_, received_, n, stream);
        !s.ok()) {
      return s;
    }
    // CopyToDevice has staged the bytes, so the next read may reuse
    // `request_` while the copy runs.
    received_ += n;
    if (ServerMetrics* metrics = service_.telemetry_.metrics) {
      metrics->AddTransferBytes(TransferDirection::kUpload, n);
    }
    service_.registry_.Touch(*session_);
    return absl::OkStatus();
  }

  absl::Status Complete() {
    if (!header_seen_) return absl::InvalidArgumentError("upload stream ended before its header");
    if (received_ != buffer_->size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("upload of '", name_, "' ended after ", received_, " of the ",
                       buffer_->size(), " bytes its header announced (dtype ",
                       DTypeName(array_.dtype), ", shape ", array_.shape.ToString(), ")"));
    }
    // Copy errors surface here, before the array is visible.
    if (absl::Status s = service_.backend_.Synchronize(session_->stream()); !s.ok()) return s;
    array_.buffer = std::move(buffer_);
    FillArrayInfo(name_, array_, response_);
    return session_->PutArray(name_, std::move(array_), std::move(reservation_));
  }

  GpuFlowService& service_;
  grpc::CallbackServerContext* const context_;
  v1::ArrayInfo* const response_;
  v1::UploadArrayRequest request_;
  bool header_seen_ = false;
  std::shared_ptr<Session> session_;
  std::string name_;
  MemoryReservation reservation_;
  std::unique_ptr<DeviceBuffer> buffer_;
  Array array_;
  int64_t received_ = 0;
  RpcObserver call_;
};

grpc::ServerReadReactor<v1::UploadArrayRequest>* GpuFlowService::UploadArray(
    grpc::CallbackServerContext* context, v1::ArrayInfo* response) {
  return new UploadReactor(*this, context, response);
}

// ---------------------------------------------------------------- download

// Streams a header then the bytes of a snapshot of the array (the buffer is
// shared, so replacing or deleting the array meanwhile does not matter).
class GpuFlowService::DownloadReactor final
    : public grpc::ServerWriteReactor<v1::DownloadArrayResponse> {
 public:
  DownloadReactor(GpuFlowService& service, const v1::DownloadArrayRequest& request)
      : metrics_(service.telemetry_.metrics), call_(service.telemetry_, RpcMethod::kDownloadArray) {
    absl::Status status = Start(service, request);
    if (!status.ok()) Finish(call_.Finish(status));
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(call_.Finish(grpc::Status(grpc::StatusCode::CANCELLED, "download cancelled")));
      return;
    }
    if (sent_ == array_.num_bytes()) {
      Finish(call_.Finish(grpc::Status::OK));
      return;
    }
    absl::Status status = WriteNextChunk();
    if (!status.ok()) Finish(call_.Finish(status));
  }

  void OnDone() override { delete this; }

 private:
  absl::Status Start(GpuFlowService& service, const v1::DownloadArrayRequest& request) {
    backend_ = &service.backend_;
    call_.set_session_id(request.session_id());
    absl::StatusOr<std::shared_ptr<Session>> session = service.FindSession(request.session_id());
    if (!session.ok()) return session.status();
    session_ = std::move(*session);
    call_.set_session(*session_);
    absl::StatusOr<Array> array = session_->GetArray(request.name());
    if (!array.ok()) return array.status();
    array_ = std::move(*array);
    if (request.chunk_bytes() < 0) {
      return absl::InvalidArgumentError("chunk_bytes must not be negative");
    }
    chunk_bytes_ = request.chunk_bytes() == 0
                       ? service.options_.default_chunk_bytes
                       : std::min(request.chunk_bytes(), service.options_.max_chunk_bytes);
    FillArrayInfo(request.name(), array_, response_.mutable_header());
    StartWrite(&response_);
    return absl::OkStatus();
  }

  absl::Status WriteNextChunk() {
    const int64_t n = std::min(chunk_bytes_, array_.num_bytes() - sent_);
    std::string* chunk = response_.mutable_chunk();
    chunk->resize(n);
    Stream& stream = session_->stream();
    if (absl::Status s = backend_->CopyToHost(*array_.buffer, sent_, n, chunk->data(), stream);
        !s.ok()) {
      return s;
    }
    if (absl::Status s = backend_->Synchronize(stream); !s.ok()) return s;
    sent_ += n;
    if (metrics_ != nullptr) metrics_->AddTransferBytes(TransferDirection::kDownload, n);
    StartWrite(&response_);
    return absl::OkStatus();
  }

  Backend* backend_ = nullptr;
  std::shared_ptr<Session> session_;
  Array array_;
  int64_t chunk_bytes_ = 0;
  int64_t sent_ = 0;
  v1::DownloadArrayResponse response_;
  ServerMetrics* const metrics_;
  RpcObserver call_;
};

grpc::ServerWriteReactor<v1::DownloadArrayResponse>* GpuFlowService::DownloadArray(
    grpc::CallbackServerContext* /*context*/, const v1::DownloadArrayRequest* request) {
  return new DownloadReactor(*this, *request);
}

// ---------------------------------------------------------------- arrays

grpc::ServerUnaryReactor* GpuFlowService::ListArrays(grpc::CallbackServerContext* context,
                                                     const v1::ListArraysRequest* request,
                                                     v1::ListArraysResponse* response) {
  RpcObserver call(telemetry_, RpcMethod::kListArrays);
  call.set_session_id(request->session_id());
  absl::StatusOr<std::shared_ptr<Session>> session = FindSession(request->session_id());
  if (!session.ok()) return Finish(context, call, session.status());
  call.set_session(**session);
  for (const ArrayEntry& entry : (*session)->ListArrays()) {
    FillArrayInfo(entry.name, entry.array, response->add_arrays());
  }
  response->set_memory_used_bytes((*session)->memory_used_bytes());
  response->set_memory_limit_bytes((*session)->memory_limit_bytes());
  return Finish(context, call, absl::OkStatus());
}

grpc::ServerUnaryReactor* GpuFlowService::GetArrayInfo(grpc::CallbackServerContext* context,
                                                       const v1::GetArrayInfoRequest* request,
                                                       v1::ArrayInfo* response) {
  RpcObserver call(telemetry_, RpcMethod::kGetArrayInfo);
  call.set_session_id(request->session_id());
  absl::StatusOr<std::shared_ptr<Session>> session = FindSession(request->session_id());
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
  absl::StatusOr<std::shared_ptr<Session>> session = FindSession(request->session_id());
  if (!session.ok()) return Finish(context, call, session.status());
  call.set_session(**session);
  absl::StatusOr<int64_t> freed = (*session)->DeleteArray(request->name());
  if (freed.ok()) response->set_freed_bytes(*freed);
  return Finish(context, call, freed.status());
}

// ---------------------------------------------------------------- graphs

grpc::ServerUnaryReactor* GpuFlowService::RunOnPool(grpc::CallbackServerContext* context,
                                                    RpcObserver call, const std::string& session_id,
                                                    std::function<absl::Status(Session&)> work) {
  call.set_session_id(session_id);
  absl::StatusOr<std::shared_ptr<Session>> session = FindSession(session_id);
  if (!session.ok()) return Finish(context, call, session.status());
  call.set_session(**session);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // std::function needs a copyable task, so the observer travels by pointer.
  auto observer = std::make_shared<RpcObserver>(std::move(call));
  pool_.Submit([reactor, observer, session = *std::move(session), work = std::move(work)] {
    reactor->Finish(observer->Finish(work(*session)));
  });
  return reactor;
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
                                             v1::ExecuteResponse* response) {
  absl::Status status = runner_.Execute(session, request, response);
  if (!status.ok()) return status;
  const v1::Timings& timings = response->timings();
  if (telemetry_.metrics != nullptr) {
    telemetry_.metrics->RecordExecute(timings);
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
                                               v1::BenchmarkResponse* response) {
  absl::Status status = runner_.Benchmark(session, request, response);
  if (!status.ok()) return status;
  response->set_device(backend_.device());
  // Kernels compile in the first run only.
  const v1::Timings& first = response->first_run();
  ObserveCompiles(RpcMethod::kBenchmark, session.label(), first.kernels_compiled(),
                  first.compile_seconds(), first.kernel_cache_hits());
  return status;
}

grpc::ServerUnaryReactor* GpuFlowService::Execute(grpc::CallbackServerContext* context,
                                                  const v1::ExecuteRequest* request,
                                                  v1::ExecuteResponse* response) {
  auto work = [this, request, response](Session& session) {
    return ObservedExecute(session, *request, response);
  };
  return RunOnPool(context, RpcObserver(telemetry_, RpcMethod::kExecute), request->session_id(),
                   std::move(work));
}

grpc::ServerUnaryReactor* GpuFlowService::Benchmark(grpc::CallbackServerContext* context,
                                                    const v1::BenchmarkRequest* request,
                                                    v1::BenchmarkResponse* response) {
  auto work = [this, request, response](Session& session) {
    return ObservedBenchmark(session, *request, response);
  };
  return RunOnPool(context, RpcObserver(telemetry_, RpcMethod::kBenchmark), request->session_id(),
                   std::move(work));
}

grpc::ServerUnaryReactor* GpuFlowService::Precompile(grpc::CallbackServerContext* context,
                                                     const v1::PrecompileRequest* request,
                                                     v1::PrecompileResponse* response) {
  RpcObserver call(telemetry_, RpcMethod::kPrecompile);
  if (!backend_.healthy()) {
    return Finish(context, call, absl::UnavailableError("the backend is unhealthy"));
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  auto observer = std::make_shared<RpcObserver>(std::move(call));
  pool_.Submit([this, reactor, observer, request, response] {
    absl::Status status = runner_.Precompile(*request, response);
    if (status.ok()) {
      ObserveCompiles(RpcMethod::kPrecompile, "", response->kernels_compiled(),
                      response->compile_seconds(), response->kernels_cached());
    }
    reactor->Finish(observer->Finish(status));
  });
  return reactor;
}

}  // namespace gpuflow::server
