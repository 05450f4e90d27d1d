// A POSIX shared-memory object a client on this host made and registered in
// its session (RegisterSharedMemory; docs/shared-memory.md), or device
// memory another process on the same GPU exported through CUDA IPC, and the
// copies between it and device buffers.
//
//   absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> r =
//       SharedMemoryRegion::Open("gpuflow_3f9c...", bytes, session.id(), backend);
//   (*r)->CopyToDevice(backend, offset, n, buffer, session.stream());
//
// Safety:
//  - only keys "gpuflow" + [A-Za-z0-9_.-]{1,200} are opened, with shm_open
//    (so under /dev/shm, never following a link), and only regular files of
//    at least the registered size;
//  - a key is held by one session at a time (PERMISSION_DENIED for
//    another), released when its last region object goes;
//  - the server never reads or writes the object through a CPU mapping: the
//    client may shrink it at any time, and a CPU access past its end would
//    be SIGBUS. The staged path uses pread/pwrite on the descriptor (a short
//    object is a clean FAILED_PRECONDITION); the mapping exists only as the
//    device's DMA target once the backend has pinned it (pinned pages stay
//    valid for the device whatever the client does).
//
// Thread-safe: copies of one region may run side by side (each stages
// through its own buffer).
#ifndef GPUFLOW_SERVER_SHARED_MEMORY_H_
#define GPUFLOW_SERVER_SHARED_MEMORY_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/backend.h"

namespace gpuflow::server {

// Bytes of a cudaIpcMemHandle_t.
inline constexpr size_t kCudaIpcHandleBytes = 64;
// The claim key of a CUDA IPC region: this, then the handle in hex.
inline constexpr absl::string_view kCudaIpcKeyPrefix = "cuda-ipc:";

// OK when `key` names a shared-memory object gpuflow may open.
absl::Status CheckSharedMemoryKey(absl::string_view key);

class SharedMemoryRegion {
 public:
  // Opens `key`, checks it holds at least `byte_size` bytes, claims it for
  // `owner` (a session id) and registers it with `backend` for direct
  // copies where the backend can.
  static absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> Open(const std::string& key,
                                                                  int64_t byte_size,
                                                                  const std::string& owner,
                                                                  Backend& backend);
  // Device memory another process exported (a cudaIpcMemHandle_t's 64
  // bytes), claimed for `owner` like a key (one session per handle) and
  // opened once per process however many regions name it. `byte_size` may
  // not exceed the exported allocation. FAILED_PRECONDITION when the
  // backend cannot open it (see Backend::ImportDeviceMemory).
  static absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> OpenCudaIpc(absl::string_view handle,
                                                                         int64_t byte_size,
                                                                         const std::string& owner,
                                                                         Backend& backend);
  ~SharedMemoryRegion();
  SharedMemoryRegion(const SharedMemoryRegion&) = delete;
  SharedMemoryRegion& operator=(const SharedMemoryRegion&) = delete;

  const std::string& key() const { return key_; }
  int64_t byte_size() const { return byte_size_; }
  // The device copies straight from and to it (no staging).
  bool direct() const { return registration_ != nullptr || import_ != nullptr; }
  // Device memory of another process (OpenCudaIpc).
  bool cuda_ipc() const { return import_ != nullptr; }
  // The key, or for CUDA IPC memory the start of its handle, for messages.
  std::string Describe() const;

  // INVALID_ARGUMENT unless [offset, offset + n) lies inside the region.
  absl::Status CheckRange(int64_t offset, int64_t n) const;
  // FAILED_PRECONDITION when the object is now shorter than registered
  // (its owner truncated it). Both copies check it first: the driver's
  // pinned pages would otherwise outlive the truncated ones unnoticed.
  absl::Status CheckSize() const;
  // Copies region bytes [offset, offset + n) into dst[0, n) and waits for
  // the copy.
  absl::Status CopyToDevice(Backend& backend, int64_t offset, int64_t n, DeviceBuffer& dst,
                            Stream& stream) const;
  // Copies src[0, n) into region bytes [offset, offset + n) and waits.
  absl::Status CopyFromDevice(Backend& backend, const DeviceBuffer& src, int64_t n, int64_t offset,
                              Stream& stream) const;

 private:
  SharedMemoryRegion(std::string key, int64_t byte_size, std::string owner, int fd)
      : key_(std::move(key)), byte_size_(byte_size), owner_(std::move(owner)), fd_(fd) {}

  const std::string key_;
  const int64_t byte_size_;
  const std::string owner_;
  const int fd_;
  // The mapping, only while the backend has it registered.
  void* mapping_ = nullptr;
  std::unique_ptr<HostRegistration> registration_;
  // CUDA IPC memory (fd_ is then -1).
  std::shared_ptr<const DeviceImport> import_;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_SHARED_MEMORY_H_
