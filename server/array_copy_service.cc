// CopyArray of GpuFlowService: an array of one session copied into another
// session of the same tenant, whichever devices hold the two
// (Backend::CopyFrom: within one GPU, peer to peer, or staged through host
// memory). Runs on the compute pool in the destination session's turn, as
// graph work does, so a large copy never holds a gRPC thread.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/ir/echo.h"
#include "server/gpuflow_service.h"
#include "server/proto_convert.h"

namespace gpuflow::server {

grpc::ServerUnaryReactor* GpuFlowService::CopyArray(grpc::CallbackServerContext* context,
                                                    const v1::CopyArrayRequest* request,
                                                    v1::CopyArrayResponse* response) {
  auto work = [this, request, response](Session& session, RunControl& control,
                                        const CallerPermissions& /*caller*/) -> absl::Status {
    const std::string& name = request->name().empty() ? request->source_name() : request->name();
    if (absl::Status s = ValidateName(name, "array name"); !s.ok()) return s;
    // The source must be a session of the destination's tenant (the
    // caller's): another tenant's is NOT_FOUND, as an unknown one.
    absl::StatusOr<std::shared_ptr<Session>> source =
        FindSession(request->source_session_id(), session.owner().get());
    if (!source.ok()) return source.status();
    // A snapshot: replacing the source array meanwhile does not matter.
    absl::StatusOr<Array> array = (*source)->GetArray(request->source_name());
    if (!array.ok()) return array.status();
    const int64_t bytes = array->num_bytes();
    absl::StatusOr<MemoryReservation> reservation =
        session.Reserve(Session::StoredBytes(name, array->shape, bytes));
    if (!reservation.ok()) return reservation.status();
    absl::StatusOr<std::unique_ptr<DeviceBuffer>> buffer =
        session.backend().Allocate(bytes, session.stream());
    if (!buffer.ok()) return buffer.status();
    absl::StatusOr<CopyRoute> route =
        session.backend().CopyFrom((*source)->backend(), *array->buffer, (*source)->stream(),
                                   **buffer, session.stream(), bytes);
    if (!route.ok()) return route.status();
    if (absl::Status s = control.CheckContinue(); !s.ok()) return s;
    Array copy;
    copy.dtype = array->dtype;
    copy.shape = array->shape;
    copy.buffer = *std::move(buffer);
    FillArrayInfo(name, copy, response->mutable_array());
    response->set_transfer(std::string(CopyRouteName(*route)));
    response->set_source_device((*source)->device());
    response->set_device(session.device());
    return session.PutArray(name, std::move(copy), *std::move(reservation));
  };
  return RunOnPool(context, RpcObserver(telemetry_, RpcMethod::kCopyArray), request->session_id(),
                   std::move(work));
}

}  // namespace gpuflow::server
