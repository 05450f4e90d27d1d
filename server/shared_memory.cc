#include "server/shared_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "engine/ir/echo.h"

namespace gpuflow::server {
namespace {

constexpr absl::string_view kKeyPrefix = "gpuflow";
constexpr size_t kMaxKeySuffix = 200;
// Bytes staged per pread/pwrite when the device cannot copy directly.
constexpr int64_t kStageBytes = int64_t{8} << 20;

// Which session holds each key, and how many of its regions use it.
struct KeyClaim {
  std::string owner;
  int regions = 0;
};
absl::Mutex claims_mu(absl::kConstInit);
absl::flat_hash_map<std::string, KeyClaim>& Claims() ABSL_EXCLUSIVE_LOCKS_REQUIRED(claims_mu) {
  static auto* claims = new absl::flat_hash_map<std::string, KeyClaim>();
  return *claims;
}

absl::Status ClaimKey(const std::string& key, const std::string& owner) {
  absl::MutexLock lock(&claims_mu);
  auto [it, fresh] = Claims().try_emplace(key, KeyClaim{owner, 0});
  if (!fresh && it->second.owner != owner) {
    return absl::PermissionDeniedError(
        absl::StrCat("shared-memory object ", Echo(key), " is registered by another session"));
  }
  ++it->second.regions;
  return absl::OkStatus();
}

void ReleaseKey(const std::string& key) {
  absl::MutexLock lock(&claims_mu);
  auto it = Claims().find(key);
  if (it != Claims().end() && --it->second.regions <= 0) Claims().erase(it);
}

std::string ErrnoText(int error) { return std::strerror(error); }

// CUDA IPC imports by key, shared by the regions of one handle (a process
// opens a handle once).
absl::Mutex imports_mu(absl::kConstInit);

absl::StatusOr<std::shared_ptr<const DeviceImport>> SharedImport(const std::string& key,
                                                                 absl::string_view handle,
                                                                 Backend& backend) {
  static auto* imports = new absl::flat_hash_map<std::string, std::weak_ptr<const DeviceImport>>();
  absl::MutexLock lock(&imports_mu);
  if (auto it = imports->find(key); it != imports->end()) {
    if (std::shared_ptr<const DeviceImport> alive = it->second.lock()) return alive;
  }
  absl::StatusOr<std::unique_ptr<DeviceImport>> opened = backend.ImportDeviceMemory(handle);
  if (!opened.ok()) {
    if (absl::IsUnimplemented(opened.status())) {
      return absl::FailedPreconditionError(opened.status().message());
    }
    return opened.status();
  }
  std::shared_ptr<const DeviceImport> import = *std::move(opened);
  (*imports)[key] = import;
  // Forget entries whose imports are gone, so the map stays as small as
  // the live ones.
  absl::erase_if(*imports, [](const auto& entry) { return entry.second.expired(); });
  return import;
}

}  // namespace

absl::Status CheckSharedMemoryKey(absl::string_view key) {
  const bool prefixed = key.substr(0, kKeyPrefix.size()) == kKeyPrefix;
  const absl::string_view suffix = prefixed ? key.substr(kKeyPrefix.size()) : key;
  bool ok = prefixed && !suffix.empty() && suffix.size() <= kMaxKeySuffix;
  for (char c : suffix) {
    if (!ok) break;
    ok = absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  }
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "shared-memory key ", Echo(key), " must be \"gpuflow\" followed by 1 to ", kMaxKeySuffix,
      " of [A-Za-z0-9_.-] (the name given to shm_open, without its '/')"));
}

absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> SharedMemoryRegion::Open(
    const std::string& key, int64_t byte_size, const std::string& owner, Backend& backend) {
  if (absl::Status s = CheckSharedMemoryKey(key); !s.ok()) return s;
  if (byte_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("byte_size must be positive, got ", byte_size));
  }
  // glibc's shm_open opens /dev/shm/<key> with O_NOFOLLOW and O_CLOEXEC.
  const int fd = shm_open(absl::StrCat("/", key).c_str(), O_RDWR, 0);
  if (fd < 0) {
    const int error = errno;
    if (error == ENOENT) {
      return absl::NotFoundError(absl::StrCat(
          "no shared-memory object ", Echo(key),
          " on the server's host (the client must run on the same host, sharing /dev/shm)"));
    }
    if (error == EACCES || error == ELOOP) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot open shared-memory object ", Echo(key), ": ", ErrnoText(error)));
    }
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open shared-memory object ", Echo(key), ": ", ErrnoText(error)));
  }
  struct stat st {};
  absl::Status checked;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    checked = absl::InvalidArgumentError(
        absl::StrCat("shared-memory object ", Echo(key), " is not a regular file"));
  } else if (st.st_size < byte_size) {
    checked = absl::InvalidArgumentError(absl::StrCat("shared-memory object ", Echo(key), " has ",
                                                      st.st_size, " bytes, fewer than byte_size ",
                                                      byte_size));
  } else {
    checked = ClaimKey(key, owner);
  }
  if (!checked.ok()) {
    close(fd);
    return checked;
  }
  // From here the region owns the descriptor and the claim.
  std::shared_ptr<SharedMemoryRegion> region(new SharedMemoryRegion(key, byte_size, owner, fd));
  void* mapping =
      mmap(nullptr, static_cast<size_t>(byte_size), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (mapping != MAP_FAILED) {
    absl::StatusOr<std::unique_ptr<HostRegistration>> registration =
        backend.RegisterHost(mapping, byte_size);
    if (registration.ok() && *registration != nullptr) {
      region->mapping_ = mapping;
      region->registration_ = *std::move(registration);
    } else {
      munmap(mapping, static_cast<size_t>(byte_size));
    }
  }
  return region;
}

absl::StatusOr<std::shared_ptr<SharedMemoryRegion>> SharedMemoryRegion::OpenCudaIpc(
    absl::string_view handle, int64_t byte_size, const std::string& owner, Backend& backend) {
  if (handle.size() != kCudaIpcHandleBytes) {
    return absl::InvalidArgumentError(absl::StrCat("cuda_ipc_handle must have ",
                                                   kCudaIpcHandleBytes,
                                                   " bytes (a "
                                                   "cudaIpcMemHandle_t), got ",
                                                   handle.size()));
  }
  if (byte_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("byte_size must be positive, got ", byte_size));
  }
  std::string key = absl::StrCat(kCudaIpcKeyPrefix, absl::BytesToHexString(handle));
  if (absl::Status s = ClaimKey(key, owner); !s.ok()) return s;
  // From here the region owns the claim.
  std::shared_ptr<SharedMemoryRegion> region(
      new SharedMemoryRegion(std::move(key), byte_size, owner, -1));
  absl::StatusOr<std::shared_ptr<const DeviceImport>> import =
      SharedImport(region->key_, handle, backend);
  if (!import.ok()) return import.status();
  if (byte_size > (*import)->byte_size()) {
    return absl::InvalidArgumentError(absl::StrCat("byte_size ", byte_size, " is more than the ",
                                                   (*import)->byte_size(),
                                                   " bytes of the exported allocation"));
  }
  region->import_ = *std::move(import);
  return region;
}

SharedMemoryRegion::~SharedMemoryRegion() {
  import_.reset();
  registration_.reset();  // Before the mapping goes.
  if (mapping_ != nullptr) munmap(mapping_, static_cast<size_t>(byte_size_));
  if (fd_ >= 0) close(fd_);
  ReleaseKey(key_);  // every region holds its key's claim
}

std::string SharedMemoryRegion::Describe() const {
  if (absl::StartsWith(key_, kCudaIpcKeyPrefix)) {
    return absl::StrCat("CUDA IPC memory ", key_.substr(kCudaIpcKeyPrefix.size(), 16), "...");
  }
  return Echo(key_);
}

absl::Status SharedMemoryRegion::CheckRange(int64_t offset, int64_t n) const {
  if (offset < 0 || n < 0 || offset > byte_size_ || n > byte_size_ - offset) {
    return absl::InvalidArgumentError(absl::StrCat("bytes [", offset, ", ", offset, " + ", n,
                                                   ") are outside the region's ", byte_size_,
                                                   " bytes (", Describe(), ")"));
  }
  return absl::OkStatus();
}

absl::Status SharedMemoryRegion::CheckSize() const {
  struct stat st {};
  if (fstat(fd_, &st) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("shared-memory object ", Echo(key_), ": ", ErrnoText(errno)));
  }
  if (st.st_size < byte_size_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "shared-memory object ", Echo(key_), " is shorter than registered (", st.st_size, " of ",
        byte_size_, " bytes; shrunk by its owner?): unregister it and register it again"));
  }
  return absl::OkStatus();
}

absl::Status SharedMemoryRegion::CopyToDevice(Backend& backend, int64_t offset, int64_t n,
                                              DeviceBuffer& dst, Stream& stream) const {
  if (absl::Status s = CheckRange(offset, n); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  if (import_ != nullptr) {
    if (absl::Status s = import_->CopyToDevice(offset, n, dst, stream); !s.ok()) return s;
    return backend.Synchronize(stream);
  }
  if (absl::Status s = CheckSize(); !s.ok()) return s;
  if (registration_ != nullptr) {
    if (absl::Status s = backend.CopyToDeviceDirect(static_cast<const char*>(mapping_) + offset,
                                                    dst, 0, n, stream);
        !s.ok()) {
      return s;
    }
    return backend.Synchronize(stream);
  }
  std::vector<char> stage(static_cast<size_t>(std::min(kStageBytes, n)));
  for (int64_t pos = 0; pos < n;) {
    const int64_t want = std::min<int64_t>(static_cast<int64_t>(stage.size()), n - pos);
    const ssize_t got = pread(fd_, stage.data(), static_cast<size_t>(want), offset + pos);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "reading shared-memory object ", Echo(key_), " at byte ", offset + pos, ": ",
          got == 0 ? std::string("it is shorter than registered (shrunk by its owner?)")
                   : ErrnoText(errno)));
    }
    if (absl::Status s = backend.CopyToDevice(stage.data(), dst, pos, got, stream); !s.ok()) {
      return s;
    }
    pos += got;
  }
  return backend.Synchronize(stream);
}

absl::Status SharedMemoryRegion::CopyFromDevice(Backend& backend, const DeviceBuffer& src,
                                                int64_t n, int64_t offset, Stream& stream) const {
  if (absl::Status s = CheckRange(offset, n); !s.ok()) return s;
  if (n == 0) return absl::OkStatus();
  if (import_ != nullptr) {
    if (absl::Status s = import_->CopyFromDevice(src, n, offset, stream); !s.ok()) return s;
    return backend.Synchronize(stream);
  }
  if (absl::Status s = CheckSize(); !s.ok()) return s;
  if (registration_ != nullptr) {
    if (absl::Status s =
            backend.CopyToHostDirect(src, 0, n, static_cast<char*>(mapping_) + offset, stream);
        !s.ok()) {
      return s;
    }
    return backend.Synchronize(stream);
  }
  std::vector<char> stage(static_cast<size_t>(std::min(kStageBytes, n)));
  for (int64_t pos = 0; pos < n;) {
    const int64_t piece = std::min<int64_t>(static_cast<int64_t>(stage.size()), n - pos);
    if (absl::Status s = backend.CopyToHost(src, pos, piece, stage.data(), stream); !s.ok()) {
      return s;
    }
    if (absl::Status s = backend.Synchronize(stream); !s.ok()) return s;
    for (int64_t done = 0; done < piece;) {
      const ssize_t put =
          pwrite(fd_, stage.data() + done, static_cast<size_t>(piece - done), offset + pos + done);
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) {
        return absl::FailedPreconditionError(
            absl::StrCat("writing shared-memory object ", Echo(key_), " at byte ",
                         offset + pos + done, ": ", ErrnoText(put < 0 ? errno : EIO)));
      }
      done += put;
    }
    pos += piece;
  }
  return absl::OkStatus();
}

}  // namespace gpuflow::server
