// The C++ client of gpuflowd: a small API over the generated v1 stub
// (proto/gpuflow/v1/service.proto), with absl::Status errors.
//
//   absl::StatusOr<Client> client = Client::Connect("localhost:50051");
//   absl::StatusOr<Session> s = client->CreateSession({.label = "demo"});
//   s->Upload("x", *Array::FromValues<float>({3}, {1, 2, 3}));
//   absl::StatusOr<v1::ExecuteRequest> request = ParseGraphJson(json);  // graph_json.h
//   absl::StatusOr<v1::ExecuteResponse> result = s->Execute(*request);
//   absl::StatusOr<Array> y = s->Download("y");
//   std::future<absl::StatusOr<v1::ExecuteResponse>> later = s->ExecuteAsync(*request);
//   ...                                              // more requests in flight meanwhile
//   absl::StatusOr<v1::ExecuteResponse> done = later.get();
//   s->Close();
//
// Errors: every call returns the server's gRPC status as an absl::Status
// with the same code and message (FromGrpcStatus); client-side checks (an
// invalid Array, a short download) use the same codes.
//
// A server with TLS and tenants (docs/security.md):
//
//   absl::StatusOr<TlsOptions> tls = TlsOptions::FromFiles("ca.crt", "", "");
//   absl::StatusOr<Client> client = Client::Connect(
//       "gpuflow.example:50051", {.token = token, .tls = *tls});
//
// Lifetime and threads: Client and Session are cheap, copyable handles on
// one shared connection, which lives while any handle does. Both are
// thread-safe: any number of threads may call them at once (each call is one
// RPC, or one stream for Upload and Download), and any number of
// ExecuteAsync calls may be in flight; destroying the last handle waits for
// those to end. A Session does not close
// itself when its handles go away: call Close(), or let the server expire it
// after its idle TTL. That is what lets the CLI reuse a session id across
// processes (Client::OpenSession).
#ifndef GPUFLOW_CLIENTS_CPP_CLIENT_H_
#define GPUFLOW_CLIENTS_CPP_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "clients/cpp/array.h"
#include "gpuflow/v1/service.grpc.pb.h"

namespace gpuflow::client {

// "localhost:50051": where gpuflowd listens by default.
inline constexpr absl::string_view kDefaultTarget = "localhost:50051";

// The absl::Status with `status`'s code (the two share the canonical code
// space) and message.
absl::Status FromGrpcStatus(const grpc::Status& status);

// TLS for the channel Connect opens. PEM contents, not paths.
struct TlsOptions {
  // The CA bundle that signed the server's certificate; empty: the system's
  // roots (gRPC's default).
  std::string root_certificates{};
  // This client's certificate chain and private key, for a server that
  // requires client certificates (mutual TLS); both or neither.
  std::string certificate_chain{};
  std::string private_key{};

  // Reads the PEM files named (an empty path: that part is left empty).
  // NOT_FOUND / PERMISSION_DENIED / INVALID_ARGUMENT naming the file.
  static absl::StatusOr<TlsOptions> FromFiles(const std::string& root_certificates_file,
                                              const std::string& certificate_chain_file,
                                              const std::string& private_key_file);
};

struct ClientOptions {
  // How long Connect waits for the server to answer.
  absl::Duration connect_timeout = absl::Seconds(10);
  // Deadline of each call; infinite by default (a Benchmark may run for as
  // long as the server allows).
  absl::Duration call_timeout = absl::InfiniteDuration();
  // The bearer token of a server with tenants, sent with every call as
  // `authorization: Bearer <token>`; empty: none.
  std::string token{};
  // Set: Connect opens a TLS channel; unset: plaintext.
  std::optional<TlsOptions> tls = std::nullopt;
};

struct SessionOptions {
  // Shown in the server's logs; at most 128 characters.
  std::string label;
  // Quota for the session's arrays; 0: the server's default.
  int64_t memory_limit_bytes = 0;
  // Idle time after which the server closes the session; zero: its default.
  absl::Duration idle_ttl = absl::ZeroDuration();
  // The id of the server's device to hold the session (ServerInfo.devices);
  // unset: the least-loaded healthy one.
  std::optional<int> device = std::nullopt;
};

class Session;

namespace internal {
struct Connection;
class SessionRoute;
class WorkerPool;
}  // namespace internal

class Client {
 public:
  // Opens a channel to `target` ("host:port", or any gRPC target string),
  // plaintext or TLS (options.tls), and waits up to options.connect_timeout
  // for it to connect. UNAVAILABLE, naming the target and what gRPC said (a
  // refused connection, a TLS handshake that failed), when it does not;
  // INVALID_ARGUMENT for a certificate chain without its key or the reverse.
  //
  // A pool target, a list "host1:port1,host2:port2" or "dns:///name:port"
  // (a name that resolves to every worker, such as a headless Service), is
  // a pool of workers (docs/scale-out.md): a connection to each, and
  // Connect returns once one of them connects. CreateSession places each
  // session on the least-loaded healthy worker, whose connection all its
  // calls then use. A dns:/// name is resolved (getaddrinfo) here and again
  // at every CreateSession and LocateSession, so workers that come and go
  // are followed; INVALID_ARGUMENT for one without a port.
  static absl::StatusOr<Client> Connect(const std::string& target,
                                        const ClientOptions& options = {});
  // A client on an existing channel (an in-process one, or one with custom
  // credentials). Does not wait for it to connect; options.tls is not used,
  // options.token is.
  static Client FromChannel(std::shared_ptr<grpc::Channel> channel,
                            const ClientOptions& options = {});

  // GetServerInfo: version, backend, device, limits, dtypes, ops.
  absl::StatusOr<v1::ServerInfo> Info() const;

  // The server's limits: fetched with GetServerInfo by the first call that
  // needs them (Upload, Download), then kept for the client's lifetime.
  absl::StatusOr<v1::Limits> Limits() const;

  // Opens a session.
  absl::StatusOr<Session> CreateSession(const SessionOptions& options = {}) const;

  // A handle on a session that already exists (its id from CreateSession,
  // perhaps in another process). Makes no call: an unknown or expired id
  // shows as NOT_FOUND on the first call that uses it. On a pool the handle
  // is on the first worker that answered Connect: use LocateSession.
  Session OpenSession(std::string session_id) const;

  // OpenSession on one server. On a pool, finds the worker that holds the
  // session: asks every worker at once (KeepAlive, which resets the
  // session's idle timer; two seconds at most) and returns a handle on it.
  // NOT_FOUND when no worker holds it.
  absl::StatusOr<Session> LocateSession(std::string session_id) const;

  // The generated stub, for calls this API does not wrap (Precompile); make
  // their contexts with NewContext, which carries the token and deadline.
  v1::GpuFlow::Stub& stub() const;
  std::unique_ptr<grpc::ClientContext> NewContext() const;

  // The target given to Connect ("" for FromChannel).
  const std::string& target() const;

 private:
  friend class internal::WorkerPool;
  explicit Client(std::shared_ptr<internal::Connection> connection)
      : connection_(std::move(connection)) {}
  // One server's connection; on a pool, the first worker that connected
  // (Info, Limits, stub).
  std::shared_ptr<internal::Connection> connection_;
  // A pool's workers; null: one server.
  std::shared_ptr<internal::WorkerPool> pool_;
};

// One session of a server: a namespace of arrays with a memory quota.
class Session {
 public:
  // 32 lowercase hex digits.
  const std::string& id() const { return id_; }
  // The target of the server (a pool's worker) that holds it: where its
  // calls go.
  //
  // Owner redirects: a call answered FAILED_PRECONDITION with the session's
  // owner in the trailing metadata `gpuflow-session-endpoint` (what a
  // gateway may send; gpuflowd itself never does, docs/scale-out.md) is
  // sent once more, to that endpoint, and every later call of the session
  // (from any handle) goes there too. Followed once per call, by every call
  // but ExecuteAsync, whose future holds the FAILED_PRECONDITION as it came
  // (the next other call follows it).
  std::string endpoint() const;

  // Uploads `array` under `name`, replacing an array of that name once the
  // upload completes. The data goes in chunks of the server's
  // max_chunk_bytes. INVALID_ARGUMENT, before anything is sent, when the
  // array is not valid (Array::Validate).
  absl::StatusOr<v1::ArrayInfo> Upload(absl::string_view name, const Array& array) const;

  // Downloads an array, bit-exact, in chunks of the server's max_chunk_bytes.
  // DATA_LOSS when the stream ends before (or runs past) the header's byte
  // count.
  absl::StatusOr<Array> Download(absl::string_view name) const;

  // Every array of the session, sorted by name, and the memory use.
  absl::StatusOr<v1::ListArraysResponse> List() const;
  absl::StatusOr<v1::ArrayInfo> Info(absl::string_view name) const;
  // Deletes an array; returns the bytes freed.
  absl::StatusOr<int64_t> Delete(absl::string_view name) const;

  // Runs a graph. The request's session_id is set to this session's.
  // Inline results come back in ExecuteResponse.outputs[i].value (FromInline
  // turns one into an Array).
  absl::StatusOr<v1::ExecuteResponse> Execute(v1::ExecuteRequest request) const;
  // Execute without waiting (gRPC's callback API): sends the request and
  // returns at once; the future holds what Execute would return, with the
  // same codes and messages. The call runs to its end (or the client's
  // call_timeout); the last handle of the connection waits for it when
  // destroyed, so the future may outlive every handle.
  std::future<absl::StatusOr<v1::ExecuteResponse>> ExecuteAsync(v1::ExecuteRequest request) const;
  // Times a graph (see BenchmarkRequest). The session_id is set likewise.
  absl::StatusOr<v1::BenchmarkResponse> Benchmark(v1::BenchmarkRequest request) const;

  // Prepares a graph once (validated, planned, compiled) and returns its
  // handle; Execute then runs it with ExecuteRequest.prepared_graph set,
  // binding arrays and scalars (docs/performance.md).
  absl::StatusOr<v1::PreparedGraphInfo> PrepareGraph(v1::PrepareGraphRequest request) const;
  // Forgets a prepared graph; returns the quota given back.
  absl::StatusOr<int64_t> ReleaseGraph(uint64_t handle) const;

  // Same-host transfers through POSIX shared memory (SharedMemory below;
  // docs/shared-memory.md), on a server run with --allow_shared_memory.
  // Registers the object `key` (its first `byte_size` bytes) as `region`.
  absl::StatusOr<v1::SharedMemoryRegion> RegisterSharedMemory(absl::string_view region,
                                                              absl::string_view key,
                                                              int64_t byte_size) const;
  // Registers device memory of this process as `region` through CUDA IPC,
  // on a server run with --allow_cuda_ipc on the same GPU: `ipc_handle` is
  // the 64 bytes cudaIpcGetMemHandle gives for the allocation's base, and
  // `byte_size` at most the allocation's size. The same transfers then copy
  // device to device; keep the allocation alive until it is unregistered.
  absl::StatusOr<v1::SharedMemoryRegion> RegisterCudaMemory(absl::string_view region,
                                                            absl::string_view ipc_handle,
                                                            int64_t byte_size) const;
  absl::Status UnregisterSharedMemory(absl::string_view region) const;
  // Stores region bytes [offset, offset + size) as an array of `dtype` and
  // `shape`.
  absl::StatusOr<v1::ArrayInfo> UploadFromSharedMemory(absl::string_view name, v1::DType dtype,
                                                       const std::vector<int64_t>& shape,
                                                       absl::string_view region,
                                                       int64_t offset) const;
  // Writes an array's bytes into the region at `offset`.
  absl::StatusOr<v1::ArrayInfo> DownloadToSharedMemory(absl::string_view name,
                                                       absl::string_view region,
                                                       int64_t offset) const;

  // Resets the idle timer; returns the session's state.
  absl::StatusOr<v1::SessionInfo> KeepAlive() const;
  // Closes the session, freeing everything it holds; returns the bytes
  // freed. Every later call on it (from any handle) is NOT_FOUND.
  absl::StatusOr<int64_t> Close() const;

 private:
  friend class Client;
  Session(std::shared_ptr<internal::SessionRoute> route, std::string id)
      : route_(std::move(route)), id_(std::move(id)) {}

  std::shared_ptr<internal::SessionRoute> route_;
  std::string id_;
};

// A POSIX shared-memory object this process creates (shm_open, named
// "gpuflow_" and 128 random bits, so the server will open it and nobody can
// guess it), mapped for reading and writing; unlinked and unmapped when
// destroyed. Move-only.
//
//   absl::StatusOr<SharedMemory> shm = SharedMemory::Create(bytes);
//   std::memcpy(shm->data(), host, bytes);
//   session.RegisterSharedMemory("staging", shm->key(), shm->size());
//   session.UploadFromSharedMemory("x", v1::DTYPE_FLOAT32, {n}, "staging", 0);
class SharedMemory {
 public:
  static absl::StatusOr<SharedMemory> Create(int64_t bytes);
  SharedMemory(SharedMemory&& other) noexcept;
  SharedMemory& operator=(SharedMemory&& other) noexcept;
  SharedMemory(const SharedMemory&) = delete;
  SharedMemory& operator=(const SharedMemory&) = delete;
  ~SharedMemory();

  // The name to register (without shm_open's leading '/').
  const std::string& key() const { return key_; }
  void* data() const { return data_; }
  int64_t size() const { return size_; }

 private:
  SharedMemory(std::string key, void* data, int64_t size)
      : key_(std::move(key)), data_(data), size_(size) {}
  void Reset();

  std::string key_;
  void* data_ = nullptr;
  int64_t size_ = 0;
};

}  // namespace gpuflow::client

#endif  // GPUFLOW_CLIENTS_CPP_CLIENT_H_
