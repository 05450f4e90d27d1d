// The shared-memory RPCs of GpuFlowService (docs/shared-memory.md):
// RegisterSharedMemory, UnregisterSharedMemory, UploadFromSharedMemory and
// DownloadToSharedMemory. The copies run on the compute pool, as graph work
// does, so a large one never holds a gRPC thread.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/ir/echo.h"
#include "server/gpuflow_service.h"
#include "server/proto_convert.h"
#include "server/shared_memory.h"

namespace gpuflow::server {
namespace {

absl::Status SharedMemoryOff() {
  return absl::PermissionDeniedError(
      "shared-memory transfers are off on this server; start gpuflowd with "
      "--allow_shared_memory to allow them (for clients on its host)");
}

absl::Status CudaIpcOff() {
  return absl::PermissionDeniedError(
      "CUDA IPC is off on this server; start gpuflowd with --allow_cuda_ipc to allow it (for "
      "processes on its host and GPU)");
}

}  // namespace

grpc::ServerUnaryReactor* GpuFlowService::RefuseSharedMemory(grpc::CallbackServerContext* context,
                                                             RpcMethod method,
                                                             const std::string& session_id,
                                                             absl::Status why) {
  RpcObserver call(telemetry_, method);
  call.set_session_id(session_id);
  if (absl::Status s = Admit(context, call); !s.ok()) return Finish(context, call, s);
  return Finish(context, call, std::move(why));
}

bool GpuFlowService::regions_allowed() const {
  return options_.allow_shared_memory || options_.allow_cuda_ipc;
}

grpc::ServerUnaryReactor* GpuFlowService::RegisterSharedMemory(
    grpc::CallbackServerContext* context, const v1::RegisterSharedMemoryRequest* request,
    v1::SharedMemoryRegion* response) {
  const bool ipc = !request->cuda_ipc_handle().empty();
  if (ipc ? !options_.allow_cuda_ipc : !options_.allow_shared_memory) {
    return RefuseSharedMemory(context, RpcMethod::kRegisterSharedMemory, request->session_id(),
                              ipc ? CudaIpcOff() : SharedMemoryOff());
  }
  auto work = [this, request, response, ipc](Session& session, RunControl& /*control*/,
                                             const CallerPermissions& /*caller*/) -> absl::Status {
    if (absl::Status s = ValidateName(request->region(), "region name"); !s.ok()) return s;
    if (ipc) {
      if (!request->key().empty()) {
        return absl::InvalidArgumentError(
            "a region is a shared-memory key or a CUDA IPC handle, not both");
      }
      absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> region = SharedMemoryRegion::OpenCudaIpc(
          request->cuda_ipc_handle(), request->byte_size(), session.id(), session.backend());
      if (!region.ok()) return region.status();
      response->set_region(request->region());
      response->set_byte_size(request->byte_size());
      response->set_direct(true);
      response->set_cuda_ipc(true);
      // Device memory of another process: no host bytes of ours to count.
      return session.AddSharedMemory(request->region(), *std::move(region), 0,
                                     options_.max_shared_memory_regions,
                                     options_.max_shared_memory_bytes);
    }
    if (absl::Status s = CheckSharedMemoryKey(request->key()); !s.ok()) return s;
    if (request->byte_size() > options_.max_shared_memory_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("byte_size ", request->byte_size(),
                                                       " is over --max_shared_memory_bytes (",
                                                       options_.max_shared_memory_bytes, ")"));
    }
    absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> region = SharedMemoryRegion::Open(
        request->key(), request->byte_size(), session.id(), session.backend());
    if (!region.ok()) return region.status();
    response->set_region(request->region());
    response->set_key(request->key());
    response->set_byte_size(request->byte_size());
    response->set_direct((*region)->direct());
    return session.AddSharedMemory(request->region(), *std::move(region), request->byte_size(),
                                   options_.max_shared_memory_regions,
                                   options_.max_shared_memory_bytes);
  };
  return RunOnPool(context, RpcObserver(telemetry_, RpcMethod::kRegisterSharedMemory),
                   request->session_id(), std::move(work));
}

grpc::ServerUnaryReactor* GpuFlowService::UnregisterSharedMemory(
    grpc::CallbackServerContext* context, const v1::UnregisterSharedMemoryRequest* request,
    v1::UnregisterSharedMemoryResponse* /*response*/) {
  RpcObserver call(telemetry_, RpcMethod::kUnregisterSharedMemory);
  call.set_session_id(request->session_id());
  if (absl::Status s = Admit(context, call); !s.ok()) return Finish(context, call, s);
  if (!regions_allowed()) return Finish(context, call, SharedMemoryOff());
  absl::StatusOr<std::shared_ptr<Session>> session =
      FindSession(request->session_id(), call.tenant().get());
  if (!session.ok()) return Finish(context, call, session.status());
  call.set_session(**session);
  return Finish(context, call, (*session)->RemoveSharedMemory(request->region()));
}

grpc::ServerUnaryReactor* GpuFlowService::UploadFromSharedMemory(
    grpc::CallbackServerContext* context, const v1::SharedMemoryUploadRequest* request,
    v1::ArrayInfo* response) {
  if (!regions_allowed()) {
    return RefuseSharedMemory(context, RpcMethod::kUploadFromSharedMemory, request->session_id(),
                              SharedMemoryOff());
  }
  auto work = [this, request, response](Session& session, RunControl& control,
                                        const CallerPermissions& /*caller*/) -> absl::Status {
    if (absl::Status s = ValidateName(request->name(), "array name"); !s.ok()) return s;
    absl::StatusOr<DType> dtype = DTypeFromProto(request->dtype());
    if (!dtype.ok()) return dtype.status();
    absl::StatusOr<Shape> shape = ShapeFromProto(request->shape());
    if (!shape.ok()) return shape.status();
    absl::StatusOr<int64_t> bytes = ByteSize(*shape, *dtype);
    if (!bytes.ok()) return bytes.status();
    if (*bytes > options_.max_array_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("array ", Echo(request->name()), " of ",
                                                       *bytes, " bytes exceeds --max_array_bytes (",
                                                       options_.max_array_bytes, ")"));
    }
    absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> region =
        session.FindSharedMemory(request->region());
    if (!region.ok()) return region.status();
    if (absl::Status s = (*region)->CheckRange(request->offset(), *bytes); !s.ok()) return s;
    absl::StatusOr<MemoryReservation> reservation =
        session.Reserve(Session::StoredBytes(request->name(), *shape, *bytes));
    if (!reservation.ok()) return reservation.status();
    absl::StatusOr<std::unique_ptr<DeviceBuffer>> buffer =
        session.backend().Allocate(*bytes, session.stream());
    if (!buffer.ok()) return buffer.status();
    if (absl::Status s = (*region)->CopyToDevice(session.backend(), request->offset(), *bytes,
                                                 **buffer, session.stream());
        !s.ok()) {
      return s;
    }
    if (absl::Status s = control.CheckContinue(); !s.ok()) return s;
    Array array;
    array.dtype = *dtype;
    array.shape = *std::move(shape);
    array.buffer = *std::move(buffer);
    FillArrayInfo(request->name(), array, response);
    if (absl::Status s =
            session.PutArray(request->name(), std::move(array), *std::move(reservation));
        !s.ok()) {
      return s;
    }
    if (telemetry_.metrics != nullptr) {
      telemetry_.metrics->AddTransferBytes(TransferDirection::kUpload, *bytes);
    }
    return absl::OkStatus();
  };
  return RunOnPool(context, RpcObserver(telemetry_, RpcMethod::kUploadFromSharedMemory),
                   request->session_id(), std::move(work));
}

grpc::ServerUnaryReactor* GpuFlowService::DownloadToSharedMemory(
    grpc::CallbackServerContext* context, const v1::SharedMemoryDownloadRequest* request,
    v1::ArrayInfo* response) {
  if (!regions_allowed()) {
    return RefuseSharedMemory(context, RpcMethod::kDownloadToSharedMemory, request->session_id(),
                              SharedMemoryOff());
  }
  auto work = [this, request, response](Session& session, RunControl& /*control*/,
                                        const CallerPermissions& /*caller*/) -> absl::Status {
    absl::StatusOr<std::shared_ptr<const SharedMemoryRegion>> region =
        session.FindSharedMemory(request->region());
    if (!region.ok()) return region.status();
    // A snapshot: replacing the array meanwhile does not affect the copy.
    absl::StatusOr<Array> array = session.GetArray(request->name());
    if (!array.ok()) return array.status();
    const int64_t bytes = array->num_bytes();
    if (absl::Status s = (*region)->CheckRange(request->offset(), bytes); !s.ok()) return s;
    if (bytes > 0) {
      if (absl::Status s = (*region)->CopyFromDevice(session.backend(), *array->buffer, bytes,
                                                     request->offset(), session.stream());
          !s.ok()) {
        return s;
      }
    }
    FillArrayInfo(request->name(), *array, response);
    if (telemetry_.metrics != nullptr) {
      telemetry_.metrics->AddTransferBytes(TransferDirection::kDownload, bytes);
    }
    return absl::OkStatus();
  };
  return RunOnPool(context, RpcObserver(telemetry_, RpcMethod::kDownloadToSharedMemory),
                   request->session_id(), std::move(work));
}

}  // namespace gpuflow::server
