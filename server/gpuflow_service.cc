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

grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* context,
                                      const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
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
                               GraphRunner& runner, ComputePool& pool, ServiceOptions options)
    : backend_(backend),
      registry_(registry),
      plans_(plans),
      runner_(runner),
      pool_(pool),
      options_(options) {}

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
  return FinishUnary(context, absl::OkStatus());
}

// ---------------------------------------------------------------- sessions

grpc::ServerUnaryReactor* GpuFlowService::CreateSession(grpc::CallbackServerContext* context,
                                                        const v1::CreateSessionRequest* request,
                                                        v1::SessionInfo* response) {
  if (!backend_.healthy()) {
    return FinishUnary(context, absl::UnavailableError("the backend is unhealthy"));
  }
  SessionOptions options;
  options.label = request->label();
  options.memory_limit_bytes = request->memory_limit_bytes();
  if (request->has_idle_ttl()) options.idle_ttl = DurationFromProto(request->idle_ttl());
  absl::StatusOr<std::shared_ptr<Session>> session = registry_.Create(options);
  if (!session.ok()) return FinishUnary(context, session.status());
  FillSessionInfo(**session, response);
  return FinishUnary(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* GpuFlowService::CloseSession(grpc::CallbackServerContext* context,
                                                       const v1::CloseSessionRequest* request,
                                                       v1::CloseSessionResponse* response) {
  absl::StatusOr<int64_t> freed = registry_.Close(request->session_id());
  if (freed.ok()) response->set_freed_bytes(*freed);
  return FinishUnary(context, freed.status());
}

grpc::ServerUnaryReactor* GpuFlowService::KeepAlive(grpc::CallbackServerContext* context,
                                                    const v1::KeepAliveRequest* request,
                                                    v1::SessionInfo* response) {
  absl::StatusOr<std::shared_ptr<Session>> session = FindSession(request->session_id());
  if (session.ok()) FillSessionInfo(**session, response);
  return FinishUnary(context, session.status());
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
      : service_(service), context_(context), response_(response) {
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
    Finish(ToGrpcStatus(status));
  }

  absl::Status HandleHeader() {
    if (!request_.has_header()) {
      return absl::InvalidArgumentError("the first upload message must be a header");
    }
    header_seen_ = true;
    const v1::UploadHeader& header = request_.header();
    absl::StatusOr<std::shared_ptr<Session>> session = service_.FindSession(header.session_id());
    if (!session.ok()) return session.status();
    session_ = std::move(*session);
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
    // The next read reuses `request_`, so the copy must be done with it.
    if (absl::Status s = service_.backend_.Synchronize(stream); !s.ok()) return s;
    received_ += n;
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
  DownloadReactor(GpuFlowService& service, const v1::DownloadArrayRequest& request) {
    absl::Status status = Start(service, request);
    if (!status.ok()) Finish(ToGrpcStatus(status));
  }

  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "download cancelled"));
      return;
    }
    if (sent_ == array_.num_bytes()) {
      Finish(grpc::Status::OK);
      return;
    }
    absl::Status status = WriteNextChunk();
    if (!status.ok()) Finish(ToGrpcStatus(status));
  }

  void OnDone() override { delete this; }

 private:
  absl::Status Start(GpuFlowService& service, const v1::DownloadArrayRequest& request) {
    backend_ = &service.backend_;
    absl::StatusOr<std::shared_ptr<Session>> session = service.FindSession(request.session_id());
    if (!session.ok()) return session.status();
    session_ = std::move(*session);
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
    StartWrite(&response_);
    return absl::OkStatus();
  }

  Backend* backend_ = nullptr;
  std::shared_ptr<Session> session_;
  Array array_;
  int64_t chunk_bytes_ = 0;
  int64_t sent_ = 0;
  v1::DownloadArrayResponse response_;
};

grpc::ServerWriteReactor<v1::DownloadArrayResponse>* GpuFlowService::DownloadArray(
    grpc::CallbackServerContext* /*context*/, const v1::DownloadArrayRequest* request) {
  return new DownloadReactor(*this, *request);
}

// ---------------------------------------------------------------- arrays

grpc::ServerUnaryReactor* GpuFlowService::ListArrays(grpc::CallbackServerContext* context,
                                                     const v1::ListArraysRequest* request,
                                                     v1::ListArraysResponse* response) {
  absl::StatusOr<std::shared_ptr<Session>> session = FindSession(request->session_id());
  if (!session.ok()) return FinishUnary(context, session.status());
  for (const ArrayEntry& entry : (*session)->ListArrays()) {
    FillArrayInfo(entry.name, entry.array, response->add_arrays());
  }
  response->set_memory_used_bytes((*session)->memory_used_bytes());
  response->set_memory_limit_bytes((*session)->memory_limit_bytes());
  return FinishUnary(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* GpuFlowService::GetArrayInfo(grpc::CallbackServerContext* context,
                                                       const v1::GetArrayInfoRequest* request,
                                                       v1::ArrayInfo* response) {
  absl::StatusOr<std::shared_ptr<Session>> session = FindSession(request->session_id());
  if (!session.ok()) return FinishUnary(context, session.status());
  absl::StatusOr<Array> array = (*session)->GetArray(request->name());
  if (array.ok()) FillArrayInfo(request->name(), *array, response);
  return FinishUnary(context, array.status());
}

grpc::ServerUnaryReactor* GpuFlowService::DeleteArray(grpc::CallbackServerContext* context,
                                                      const v1::DeleteArrayRequest* request,
                                                      v1::DeleteArrayResponse* response) {
  absl::StatusOr<std::shared_ptr<Session>> session = FindSession(request->session_id());
  if (!session.ok()) return FinishUnary(context, session.status());
  absl::StatusOr<int64_t> freed = (*session)->DeleteArray(request->name());
  if (freed.ok()) response->set_freed_bytes(*freed);
  return FinishUnary(context, freed.status());
}

// ---------------------------------------------------------------- graphs

grpc::ServerUnaryReactor* GpuFlowService::RunOnPool(grpc::CallbackServerContext* context,
                                                    const std::string& session_id,
                                                    std::function<absl::Status(Session&)> work) {
  absl::StatusOr<std::shared_ptr<Session>> session = FindSession(session_id);
  if (!session.ok()) return FinishUnary(context, session.status());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  pool_.Submit([reactor, session = *std::move(session), work = std::move(work)] {
    reactor->Finish(ToGrpcStatus(work(*session)));
  });
  return reactor;
}

grpc::ServerUnaryReactor* GpuFlowService::Execute(grpc::CallbackServerContext* context,
                                                  const v1::ExecuteRequest* request,
                                                  v1::ExecuteResponse* response) {
  return RunOnPool(context, request->session_id(), [this, request, response](Session& session) {
    return runner_.Execute(session, *request, response);
  });
}

grpc::ServerUnaryReactor* GpuFlowService::Benchmark(grpc::CallbackServerContext* context,
                                                    const v1::BenchmarkRequest* request,
                                                    v1::BenchmarkResponse* response) {
  return RunOnPool(context, request->session_id(), [this, request, response](Session& session) {
    return runner_.Benchmark(session, *request, response);
  });
}

grpc::ServerUnaryReactor* GpuFlowService::Precompile(grpc::CallbackServerContext* context,
                                                     const v1::PrecompileRequest* request,
                                                     v1::PrecompileResponse* response) {
  if (!backend_.healthy()) {
    return FinishUnary(context, absl::UnavailableError("the backend is unhealthy"));
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  pool_.Submit([this, reactor, request, response] {
    reactor->Finish(ToGrpcStatus(runner_.Precompile(*request, response)));
  });
  return reactor;
}

}  // namespace gpuflow::server
