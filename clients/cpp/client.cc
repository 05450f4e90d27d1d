#include "clients/cpp/client.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <future>
#include <iterator>
#include <optional>
#include <tuple>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "clients/cpp/connection_internal.h"
#include "clients/cpp/pool_internal.h"
#include "clients/cpp/status_macros_internal.h"

namespace gpuflow::client {

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  // grpc::StatusCode and absl::StatusCode are both the canonical codes
  // (google.rpc.Code); anything outside them is UNKNOWN.
  const int code = static_cast<int>(status.error_code());
  const absl::StatusCode absl_code =
      code > 0 && code <= static_cast<int>(absl::StatusCode::kUnauthenticated)
          ? static_cast<absl::StatusCode>(code)
          : absl::StatusCode::kUnknown;
  return absl::Status(absl_code, status.error_message());
}

// ---------------------------------------------------------------- Client

absl::StatusOr<TlsOptions> TlsOptions::FromFiles(const std::string& root_certificates_file,
                                                 const std::string& certificate_chain_file,
                                                 const std::string& private_key_file) {
  auto read = [](const std::string& path, std::string* out) -> absl::Status {
    if (path.empty()) return absl::OkStatus();
    std::ifstream file(path, std::ios::binary);
    if (!file) {
      const int error_number = errno;
      return absl::Status(absl::ErrnoToStatusCode(error_number),
                          absl::StrCat("cannot read ", path, ": ", std::strerror(error_number)));
    }
    out->assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
    return absl::OkStatus();
  };
  TlsOptions tls;
  GPUFLOW_CLIENT_RETURN_IF_ERROR(read(root_certificates_file, &tls.root_certificates));
  GPUFLOW_CLIENT_RETURN_IF_ERROR(read(certificate_chain_file, &tls.certificate_chain));
  GPUFLOW_CLIENT_RETURN_IF_ERROR(read(private_key_file, &tls.private_key));
  return tls;
}

namespace internal {

absl::StatusOr<std::shared_ptr<grpc::Channel>> OpenChannel(const std::string& target,
                                                           const ClientOptions& options,
                                                           bool wait) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (options.tls.has_value()) {
    const TlsOptions& tls = *options.tls;
    if (tls.certificate_chain.empty() != tls.private_key.empty()) {
      return absl::InvalidArgumentError(
          "a client certificate chain and its private key go together (mutual TLS)");
    }
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = tls.root_certificates;
    ssl.pem_cert_chain = tls.certificate_chain;
    ssl.pem_private_key = tls.private_key;
    credentials = grpc::SslCredentials(ssl);
  }
  grpc::ChannelArguments args;
  // Inline results and download chunks are bounded by the server's limits,
  // which the client does not know yet: accept any size.
  args.SetMaxReceiveMessageSize(-1);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateCustomChannel(target, credentials, args);
  if (wait &&
      !channel->WaitForConnected(absl::ToChronoTime(absl::Now() + options.connect_timeout))) {
    // One quick call says why (connection refused, a TLS handshake failed).
    grpc::ClientContext probe;
    probe.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(1)));
    v1::ServerInfo ignored;
    const grpc::Status why =
        v1::GpuFlow::NewStub(channel)->GetServerInfo(&probe, v1::GetServerInfoRequest(), &ignored);
    return absl::UnavailableError(absl::StrCat(
        "no gpuflow server answered at ", target, " within ",
        absl::FormatDuration(options.connect_timeout),
        why.ok() || why.error_message().empty() ? "" : absl::StrCat(": ", why.error_message())));
  }
  return channel;
}

std::shared_ptr<Connection> Connection::On(std::shared_ptr<grpc::Channel> channel,
                                           const ClientOptions& options, std::string target) {
  auto connection = std::make_shared<Connection>();
  connection->target = std::move(target);
  connection->options = options;
  connection->stub = v1::GpuFlow::NewStub(channel);
  connection->channel = std::move(channel);
  return connection;
}

}  // namespace internal

absl::StatusOr<Client> Client::Connect(const std::string& target, const ClientOptions& options) {
  if (internal::IsPoolTarget(target)) {
    return internal::WorkerPool::Connect(target, options,
                                         [target] { return internal::ResolvePoolTarget(target); });
  }
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                                  internal::OpenChannel(target, options, /*wait=*/true));
  return Client(internal::Connection::On(std::move(channel), options, target));
}

Client Client::FromChannel(std::shared_ptr<grpc::Channel> channel, const ClientOptions& options) {
  return Client(internal::Connection::On(std::move(channel), options, ""));
}

absl::StatusOr<v1::ServerInfo> Client::Info() const { return connection_->Info(); }

absl::StatusOr<v1::Limits> Client::Limits() const { return connection_->Limits(); }

absl::StatusOr<Session> Client::CreateSession(const SessionOptions& options) const {
  v1::CreateSessionRequest request;
  request.set_label(options.label);
  request.set_memory_limit_bytes(options.memory_limit_bytes);
  if (options.device.has_value()) request.set_device(*options.device);
  if (options.idle_ttl > absl::ZeroDuration()) {
    const int64_t nanos = absl::ToInt64Nanoseconds(options.idle_ttl);
    request.mutable_idle_ttl()->set_seconds(nanos / 1'000'000'000);
    request.mutable_idle_ttl()->set_nanos(static_cast<int32_t>(nanos % 1'000'000'000));
  }
  std::shared_ptr<internal::Connection> worker = connection_;
  if (pool_ != nullptr) {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(worker, pool_->Place());
  }
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(v1::SessionInfo info,
                                  worker->Call(&v1::GpuFlow::Stub::CreateSession, request));
  return Session(std::make_shared<internal::SessionRoute>(std::move(worker), pool_),
                 info.session_id());
}

Session Client::OpenSession(std::string session_id) const {
  return Session(std::make_shared<internal::SessionRoute>(connection_, pool_),
                 std::move(session_id));
}

absl::StatusOr<Session> Client::LocateSession(std::string session_id) const {
  if (pool_ == nullptr) return OpenSession(std::move(session_id));
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(std::shared_ptr<internal::Connection> holder,
                                  pool_->Locate(session_id));
  return Session(std::make_shared<internal::SessionRoute>(std::move(holder), pool_),
                 std::move(session_id));
}

v1::GpuFlow::Stub& Client::stub() const { return *connection_->stub; }

std::unique_ptr<grpc::ClientContext> Client::NewContext() const {
  return connection_->NewContext();
}

const std::string& Client::target() const {
  return pool_ != nullptr ? pool_->target() : connection_->target;
}

// ---------------------------------------------------------------- Session

std::string Session::endpoint() const { return route_->Current()->target; }

absl::StatusOr<v1::ArrayInfo> Session::Upload(absl::string_view name, const Array& array) const {
  if (absl::Status status = array.Validate(); !status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot upload '", name, "': ", status.message()));
  }
  std::shared_ptr<internal::Connection> connection = route_->Current();
  for (int attempt = 0;; ++attempt) {
    GPUFLOW_CLIENT_ASSIGN_OR_RETURN(const int64_t chunk_bytes, connection->ChunkBytes());
    v1::ArrayInfo info;
    std::unique_ptr<grpc::ClientContext> context = connection->NewContext();
    std::unique_ptr<grpc::ClientWriter<v1::UploadArrayRequest>> writer =
        connection->stub->UploadArray(context.get(), &info);
    v1::UploadArrayRequest message;
    v1::UploadHeader* header = message.mutable_header();
    header->set_session_id(id_);
    header->set_name(std::string(name));
    header->set_dtype(array.dtype);
    header->mutable_shape()->Add(array.shape.begin(), array.shape.end());
    // A failed Write means the server ended the call: Finish says why.
    bool open = writer->Write(message);
    const absl::string_view data = array.data;
    for (size_t offset = 0; open && offset < data.size(); offset += chunk_bytes) {
      message.set_chunk(std::string(data.substr(offset, chunk_bytes)));
      open = writer->Write(message);
    }
    if (open) writer->WritesDone();
    const grpc::Status status = writer->Finish();
    if (status.ok()) return info;
    // The array is still here: an upload redirected to the owner starts over.
    const std::string endpoint = internal::RedirectEndpoint(*context, status);
    if (attempt > 0 || endpoint.empty()) return FromGrpcStatus(status);
    absl::StatusOr<std::shared_ptr<internal::Connection>> owner =
        route_->MoveTo(connection, endpoint);
    if (!owner.ok()) return FromGrpcStatus(status);
    connection = *std::move(owner);
  }
}

namespace {

// One DownloadArray call of `name` on `connection`; `context` is the call's.
absl::StatusOr<Array> DownloadOnce(internal::Connection& connection, const std::string& session_id,
                                   absl::string_view name, grpc::ClientContext& context,
                                   grpc::Status& status) {
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(const int64_t chunk_bytes, connection.ChunkBytes());
  v1::DownloadArrayRequest request;
  request.set_session_id(session_id);
  request.set_name(std::string(name));
  request.set_chunk_bytes(chunk_bytes);
  std::unique_ptr<grpc::ClientReader<v1::DownloadArrayResponse>> reader =
      connection.stub->DownloadArray(&context, request);

  Array array;
  std::optional<v1::ArrayInfo> header;
  absl::Status stream_error;
  v1::DownloadArrayResponse message;
  while (reader->Read(&message)) {
    if (!stream_error.ok()) continue;  // drain, so that Finish can return
    if (message.has_header()) {
      if (header.has_value()) {
        stream_error = absl::DataLossError(
            absl::StrCat("download of '", name, "': the server sent a second header"));
        continue;
      }
      header = message.header();
      array.dtype = header->dtype();
      array.shape.assign(header->shape().begin(), header->shape().end());
      array.data.reserve(header->num_bytes());
    } else if (!header.has_value() ||
               static_cast<int64_t>(array.data.size() + message.chunk().size()) >
                   header->num_bytes()) {
      stream_error = absl::DataLossError(
          absl::StrCat("download of '", name, "': the server sent data ",
                       header.has_value() ? "past the header's byte count" : "before the header"));
    } else {
      array.data += message.chunk();
    }
  }
  status = reader->Finish();
  GPUFLOW_CLIENT_RETURN_IF_ERROR(FromGrpcStatus(status));
  GPUFLOW_CLIENT_RETURN_IF_ERROR(stream_error);
  if (!header.has_value() || static_cast<int64_t>(array.data.size()) != header->num_bytes()) {
    return absl::DataLossError(absl::StrCat(
        "download of '", name, "' ended after ", array.data.size(), " bytes of ",
        header.has_value() ? absl::StrCat(header->num_bytes()) : std::string("an unknown count")));
  }
  if (absl::Status valid = array.Validate(); !valid.ok()) {
    return absl::DataLossError(absl::StrCat("download of '", name, "': ", valid.message()));
  }
  return array;
}

}  // namespace

absl::StatusOr<Array> Session::Download(absl::string_view name) const {
  std::shared_ptr<internal::Connection> connection = route_->Current();
  for (int attempt = 0;; ++attempt) {
    std::unique_ptr<grpc::ClientContext> context = connection->NewContext();
    grpc::Status status;
    absl::StatusOr<Array> array = DownloadOnce(*connection, id_, name, *context, status);
    const std::string endpoint = internal::RedirectEndpoint(*context, status);
    if (array.ok() || attempt > 0 || endpoint.empty()) return array;
    absl::StatusOr<std::shared_ptr<internal::Connection>> owner =
        route_->MoveTo(connection, endpoint);
    if (!owner.ok()) return array;
    connection = *std::move(owner);
  }
}

absl::StatusOr<v1::ListArraysResponse> Session::List() const {
  v1::ListArraysRequest request;
  request.set_session_id(id_);
  return route_->Call(&v1::GpuFlow::Stub::ListArrays, request);
}

absl::StatusOr<v1::ArrayInfo> Session::Info(absl::string_view name) const {
  v1::GetArrayInfoRequest request;
  request.set_session_id(id_);
  request.set_name(std::string(name));
  return route_->Call(&v1::GpuFlow::Stub::GetArrayInfo, request);
}

absl::StatusOr<int64_t> Session::Delete(absl::string_view name) const {
  v1::DeleteArrayRequest request;
  request.set_session_id(id_);
  request.set_name(std::string(name));
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(v1::DeleteArrayResponse response,
                                  route_->Call(&v1::GpuFlow::Stub::DeleteArray, request));
  return response.freed_bytes();
}

absl::StatusOr<v1::ExecuteResponse> Session::Execute(v1::ExecuteRequest request) const {
  request.set_session_id(id_);
  return route_->Call(&v1::GpuFlow::Stub::Execute, request);
}

std::future<absl::StatusOr<v1::ExecuteResponse>> Session::ExecuteAsync(
    v1::ExecuteRequest request) const {
  // What the call needs until its callback: gRPC reads the context, request
  // and response by pointer. The connection outlives the call (its
  // destructor waits for EndCall).
  struct Call {
    internal::Connection* connection;
    std::unique_ptr<grpc::ClientContext> context;
    v1::ExecuteRequest request;
    v1::ExecuteResponse response;
    std::promise<absl::StatusOr<v1::ExecuteResponse>> promise;
  };
  request.set_session_id(id_);
  const std::shared_ptr<internal::Connection> connection = route_->Current();
  auto call = std::make_shared<Call>(Call{.connection = connection.get(),
                                          .context = connection->NewContext(),
                                          .request = std::move(request),
                                          .response = {},
                                          .promise = {}});
  std::future<absl::StatusOr<v1::ExecuteResponse>> future = call->promise.get_future();
  connection->BeginCall();
  auto done = [call](grpc::Status status) {
    // The context holds a reference to the channel, and the channel must
    // not be destroyed on this thread: let it go while the connection lives.
    call->context.reset();
    if (status.ok()) {
      call->promise.set_value(std::move(call->response));
    } else {
      call->promise.set_value(FromGrpcStatus(status));
    }
    // Last: the connection may be destroyed from here on.
    call->connection->EndCall();
  };
  connection->stub->async()->Execute(call->context.get(), &call->request, &call->response,
                                     std::move(done));
  return future;
}

absl::StatusOr<v1::BenchmarkResponse> Session::Benchmark(v1::BenchmarkRequest request) const {
  request.set_session_id(id_);
  return route_->Call(&v1::GpuFlow::Stub::Benchmark, request);
}

absl::StatusOr<v1::PreparedGraphInfo> Session::PrepareGraph(v1::PrepareGraphRequest request) const {
  request.set_session_id(id_);
  return route_->Call(&v1::GpuFlow::Stub::PrepareGraph, request);
}

absl::StatusOr<int64_t> Session::ReleaseGraph(uint64_t handle) const {
  v1::ReleaseGraphRequest request;
  request.set_session_id(id_);
  request.set_handle(handle);
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(v1::ReleaseGraphResponse response,
                                  route_->Call(&v1::GpuFlow::Stub::ReleaseGraph, request));
  return response.freed_bytes();
}

absl::StatusOr<v1::SharedMemoryRegion> Session::RegisterSharedMemory(absl::string_view region,
                                                                     absl::string_view key,
                                                                     int64_t byte_size) const {
  v1::RegisterSharedMemoryRequest request;
  request.set_session_id(id_);
  request.set_region(std::string(region));
  request.set_key(std::string(key));
  request.set_byte_size(byte_size);
  return route_->Call(&v1::GpuFlow::Stub::RegisterSharedMemory, request);
}

absl::StatusOr<v1::SharedMemoryRegion> Session::RegisterCudaMemory(absl::string_view region,
                                                                   absl::string_view ipc_handle,
                                                                   int64_t byte_size) const {
  v1::RegisterSharedMemoryRequest request;
  request.set_session_id(id_);
  request.set_region(std::string(region));
  request.set_cuda_ipc_handle(std::string(ipc_handle));
  request.set_byte_size(byte_size);
  return route_->Call(&v1::GpuFlow::Stub::RegisterSharedMemory, request);
}

absl::Status Session::UnregisterSharedMemory(absl::string_view region) const {
  v1::UnregisterSharedMemoryRequest request;
  request.set_session_id(id_);
  request.set_region(std::string(region));
  return route_->Call(&v1::GpuFlow::Stub::UnregisterSharedMemory, request).status();
}

absl::StatusOr<v1::ArrayInfo> Session::UploadFromSharedMemory(absl::string_view name,
                                                              v1::DType dtype,
                                                              const std::vector<int64_t>& shape,
                                                              absl::string_view region,
                                                              int64_t offset) const {
  v1::SharedMemoryUploadRequest request;
  request.set_session_id(id_);
  request.set_name(std::string(name));
  request.set_dtype(dtype);
  request.mutable_shape()->Assign(shape.begin(), shape.end());
  request.set_region(std::string(region));
  request.set_offset(offset);
  return route_->Call(&v1::GpuFlow::Stub::UploadFromSharedMemory, request);
}

absl::StatusOr<v1::ArrayInfo> Session::DownloadToSharedMemory(absl::string_view name,
                                                              absl::string_view region,
                                                              int64_t offset) const {
  v1::SharedMemoryDownloadRequest request;
  request.set_session_id(id_);
  request.set_name(std::string(name));
  request.set_region(std::string(region));
  request.set_offset(offset);
  return route_->Call(&v1::GpuFlow::Stub::DownloadToSharedMemory, request);
}

absl::StatusOr<v1::SessionInfo> Session::KeepAlive() const {
  v1::KeepAliveRequest request;
  request.set_session_id(id_);
  return route_->Call(&v1::GpuFlow::Stub::KeepAlive, request);
}

absl::StatusOr<int64_t> Session::Close() const {
  v1::CloseSessionRequest request;
  request.set_session_id(id_);
  GPUFLOW_CLIENT_ASSIGN_OR_RETURN(v1::CloseSessionResponse response,
                                  route_->Call(&v1::GpuFlow::Stub::CloseSession, request));
  return response.freed_bytes();
}

// ---------------------------------------------------------------- shared memory

absl::StatusOr<SharedMemory> SharedMemory::Create(int64_t bytes) {
  if (bytes <= 0) return absl::InvalidArgumentError("a shared-memory object needs bytes");
  std::array<unsigned char, 16> random{};
  if (getrandom(random.data(), random.size(), 0) != static_cast<ssize_t>(random.size())) {
    return absl::InternalError(absl::StrCat("getrandom: ", std::strerror(errno)));
  }
  std::string key = "gpuflow_";
  for (unsigned char b : random) absl::StrAppend(&key, absl::Hex(b, absl::kZeroPad2));
  const std::string path = absl::StrCat("/", key);
  const int fd = shm_open(path.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return absl::InternalError(absl::StrCat("shm_open: ", std::strerror(errno)));
  if (ftruncate(fd, bytes) != 0) {
    const int error = errno;
    close(fd);
    shm_unlink(path.c_str());
    return absl::ResourceExhaustedError(absl::StrCat("ftruncate: ", std::strerror(error)));
  }
  void* data = mmap(nullptr, static_cast<size_t>(bytes), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int error = errno;
  close(fd);  // the mapping keeps the object
  if (data == MAP_FAILED) {
    shm_unlink(path.c_str());
    return absl::ResourceExhaustedError(absl::StrCat("mmap: ", std::strerror(error)));
  }
  return SharedMemory(std::move(key), data, bytes);
}

SharedMemory::SharedMemory(SharedMemory&& other) noexcept
    : key_(std::move(other.key_)), data_(other.data_), size_(other.size_) {
  other.data_ = nullptr;
  other.size_ = 0;
}

SharedMemory& SharedMemory::operator=(SharedMemory&& other) noexcept {
  if (this != &other) {
    Reset();
    key_ = std::move(other.key_);
    data_ = other.data_;
    size_ = other.size_;
    other.data_ = nullptr;
    other.size_ = 0;
  }
  return *this;
}

SharedMemory::~SharedMemory() { Reset(); }

void SharedMemory::Reset() {
  if (data_ == nullptr) return;
  munmap(data_, static_cast<size_t>(size_));
  shm_unlink(absl::StrCat("/", key_).c_str());
  data_ = nullptr;
  size_ = 0;
}

}  // namespace gpuflow::client
