#include "engine/cuda/kernel_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <system_error>
#include <tuple>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/cuda/kernel_cache_internal.h"

#ifndef GPUFLOW_VERSION
#error "GPUFLOW_VERSION must be defined by the build"
#endif

namespace gpuflow::cuda {

namespace internal {
namespace {

// Incremental SHA-256 (OpenSSL's EVP interface).
class Sha256Hasher {
 public:
  Sha256Hasher() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr); }
  void Update(absl::string_view data) { EVP_DigestUpdate(ctx_.get(), data.data(), data.size()); }
  // A length-prefixed field, so that no two different keys hash the same
  // byte stream.
  void Field(absl::string_view value) {
    uint8_t length[8];
    for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(uint64_t{value.size()} >> (8 * i));
    Update(absl::string_view(reinterpret_cast<const char*>(length), sizeof(length)));
    Update(value);
  }
  KernelDigest Finish() {
    KernelDigest digest{};
    unsigned int size = 0;
    EVP_DigestFinal_ex(ctx_.get(), digest.data(), &size);
    return digest;
  }

 private:
  struct Free {
    void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
  };
  std::unique_ptr<EVP_MD_CTX, Free> ctx_;
};

void PutLittleEndian(uint64_t value, int bytes, char* out) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>(value >> (8 * i));
}

uint64_t GetLittleEndian(const char* in, int bytes) {
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) value |= uint64_t{static_cast<uint8_t>(in[i])} << (8 * i);
  return value;
}

}  // namespace

KernelDigest Sha256(absl::string_view data) {
  Sha256Hasher hasher;
  hasher.Update(data);
  return hasher.Finish();
}

std::string EncodeEntry(const KernelDigest& digest, absl::string_view cubin) {
  std::string entry(kEntryHeaderBytes, '\0');
  std::memcpy(entry.data(), kEntryMagic, sizeof(kEntryMagic));
  PutLittleEndian(kEntryFormatVersion, 4, entry.data() + kEntryVersionOffset);
  std::memcpy(entry.data() + kEntryDigestOffset, digest.data(), digest.size());
  PutLittleEndian(cubin.size(), 8, entry.data() + kEntryLengthOffset);
  const KernelDigest checksum = Sha256(cubin);
  std::memcpy(entry.data() + kEntryChecksumOffset, checksum.data(), checksum.size());
  entry.append(cubin.data(), cubin.size());
  return entry;
}

absl::StatusOr<std::string> DecodeEntry(absl::string_view file, const KernelDigest& digest) {
  if (static_cast<int64_t>(file.size()) < kEntryHeaderBytes) {
    return absl::DataLossError(absl::StrCat("truncated header (", file.size(), " bytes)"));
  }
  if (std::memcmp(file.data(), kEntryMagic, sizeof(kEntryMagic)) != 0) {
    return absl::DataLossError("not a gpuflow kernel cache entry (bad magic)");
  }
  const uint64_t version = GetLittleEndian(file.data() + kEntryVersionOffset, 4);
  if (version != kEntryFormatVersion) {
    return absl::DataLossError(
        absl::StrCat("format version ", version, ", expected ", kEntryFormatVersion));
  }
  if (std::memcmp(file.data() + kEntryDigestOffset, digest.data(), digest.size()) != 0) {
    return absl::DataLossError("the entry holds another key");
  }
  const uint64_t length = GetLittleEndian(file.data() + kEntryLengthOffset, 8);
  const uint64_t actual = file.size() - kEntryHeaderBytes;
  if (length != actual) {
    return absl::DataLossError(
        absl::StrCat("the header says ", length, " cubin bytes, the file holds ", actual));
  }
  const absl::string_view cubin = file.substr(kEntryHeaderBytes);
  const KernelDigest checksum = Sha256(cubin);
  if (std::memcmp(file.data() + kEntryChecksumOffset, checksum.data(), checksum.size()) != 0) {
    return absl::DataLossError("cubin checksum mismatch");
  }
  return std::string(cubin);
}

bool IsEntryFileName(absl::string_view name) {
  if (!absl::EndsWith(name, kEntrySuffix)) return false;
  name.remove_suffix(kEntrySuffix.size());
  return name.size() == 64 && std::all_of(name.begin(), name.end(), [](char c) {
           return absl::ascii_isdigit(c) || (c >= 'a' && c <= 'f');
         });
}

}  // namespace internal

namespace {

using internal::kEntryHeaderBytes;

// Closes a file descriptor on every path out.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }
  // Closes now, returning close()'s errno (0 on success).
  int Close() {
    const int fd = fd_;
    fd_ = -1;
    return close(fd) == 0 ? 0 : errno;
  }

 private:
  int fd_;
};

bool ReadAll(int fd, std::string& out) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  out.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) break;  // shrank under us: the decode sees it as truncated
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return true;
}

// 0, or the errno of the failed write.
int WriteAll(int fd, absl::string_view data) {
  while (!data.empty()) {
    const ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return 0;
}

// A temporary file name no other writer (thread or process) uses.
std::string TempFileName(const KernelDigest& digest) {
  static std::atomic<uint64_t> counter{0};
  return absl::StrCat(internal::kTempPrefix, DigestHex(digest).substr(0, 16), "-", getpid(), "-",
                      counter.fetch_add(1));
}

constexpr int64_t kStaleTempSeconds = 3600;

}  // namespace

std::string GpuflowVersion() { return GPUFLOW_VERSION; }

KernelDigest DigestOf(const KernelKey& key) {
  internal::Sha256Hasher hasher;
  hasher.Field("gpuflow kernel cache key");
  hasher.Field(absl::StrCat(internal::kEntryFormatVersion));
  hasher.Field(key.source);
  hasher.Field(key.name);
  hasher.Field(absl::StrCat(key.options.size()));
  for (const std::string& option : key.options) hasher.Field(option);
  hasher.Field(absl::StrCat(key.arch));
  hasher.Field(key.nvrtc_version);
  hasher.Field(key.header_identity);
  hasher.Field(key.gpuflow_version);
  return hasher.Finish();
}

std::string DigestHex(const KernelDigest& digest) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * digest.size());
  for (uint8_t b : digest) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 15]);
  }
  return hex;
}

std::string CudaHeaderIdentity(absl::string_view include_dir) {
  // The headers generated kernels include, and the ones that carry the
  // toolkit's and CUB's versions. NVRTC's own built-in headers change with
  // its version, which the key holds separately.
  static constexpr const char* kHeaders[] = {
      "cuda.h",        "cuda_fp16.h",          "cuda_fp16.hpp",   "cuda_bf16.h",
      "cuda_bf16.hpp", "cccl/cub/version.cuh", "cub/version.cuh",
  };
  internal::Sha256Hasher hasher;
  hasher.Field(include_dir);
  for (const char* header : kHeaders) {
    hasher.Field(header);
    std::ifstream file(absl::StrCat(include_dir, "/", header), std::ios::binary);
    if (!file) {
      hasher.Field("<missing>");
      continue;
    }
    std::ostringstream contents;
    contents << file.rdbuf();
    hasher.Field(contents.str());
  }
  return DigestHex(hasher.Finish()).substr(0, 16);
}

std::string ResolveKernelCacheDir(absl::string_view configured) {
  if (configured == "none") return "";
  if (!configured.empty()) return std::string(configured);
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    return absl::StrCat(xdg, "/gpuflow/kernels");
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] != '\0') {
    return absl::StrCat(home, "/.cache/gpuflow/kernels");
  }
  return "";
}

DiskKernelCache::DiskKernelCache(DiskKernelCacheOptions options) : options_(std::move(options)) {
  if (options_.directory.empty()) return;
  std::error_code error;
  std::filesystem::create_directories(options_.directory, error);
  if (error) {
    Degrade(/*reads_too=*/true,
            absl::StrCat("cannot create ", options_.directory, ": ", error.message()));
    return;
  }
  if (!std::filesystem::is_directory(options_.directory, error)) {
    Degrade(/*reads_too=*/true, absl::StrCat(options_.directory, " is not a directory"));
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    enabled_ = true;
    writable_ = true;
  }
  if (access(options_.directory.c_str(), W_OK) != 0) {
    Degrade(/*reads_too=*/false,
            absl::StrCat(options_.directory, " is not writable (", std::strerror(errno), ")"));
  }
  absl::MutexLock lock(&scan_mu_);
  ScanAndEvict();
}

bool DiskKernelCache::enabled() const {
  absl::MutexLock lock(&mu_);
  return enabled_;
}

bool DiskKernelCache::writable() const {
  absl::MutexLock lock(&mu_);
  return writable_;
}

DiskKernelCache::Stats DiskKernelCache::stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

std::string DiskKernelCache::EntryPath(const KernelDigest& digest) const {
  return absl::StrCat(options_.directory, "/", DigestHex(digest), internal::kEntrySuffix);
}

void DiskKernelCache::Degrade(bool reads_too, const std::string& why) {
  {
    absl::MutexLock lock(&mu_);
    if (reads_too) enabled_ = false;
    writable_ = false;
    if (warned_) return;
    warned_ = true;
  }
  const std::string message =
      absl::StrCat("kernel cache: ", why, "; ",
                   reads_too ? "caching kernels in memory only"
                             : "existing entries are still read, new kernels stay in memory only");
  if (options_.warn) {
    options_.warn(message);
  } else {
    std::fprintf(stderr, "gpuflow: %s\n", message.c_str());
  }
}

std::optional<std::string> DiskKernelCache::Load(const KernelDigest& digest) {
  if (!enabled()) return std::nullopt;
  auto miss = [&](bool bad) -> std::optional<std::string> {
    absl::MutexLock lock(&mu_);
    ++stats_.misses;
    if (bad) ++stats_.bad_entries;
    return std::nullopt;
  };
  const std::string path = EntryPath(digest);
  ScopedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  // Absent (or removed under us) or unreadable: a miss.
  if (fd.get() < 0) return miss(false);
  std::string file;
  if (!ReadAll(fd.get(), file)) return miss(false);
  absl::StatusOr<std::string> cubin = internal::DecodeEntry(file, digest);
  if (!cubin.ok()) {
    // Delete it only if the name still refers to the file we read: another
    // process may have renamed a good entry over it meanwhile.
    struct stat ours {};
    struct stat now {};
    if (fstat(fd.get(), &ours) == 0 && stat(path.c_str(), &now) == 0 && ours.st_dev == now.st_dev &&
        ours.st_ino == now.st_ino) {
      unlink(path.c_str());
    }
    return miss(true);
  }
  // The entry was just used: its mtime is the LRU clock. Fails harmlessly
  // on a read-only directory.
  futimens(fd.get(), nullptr);
  absl::MutexLock lock(&mu_);
  ++stats_.hits;
  return *std::move(cubin);
}

void DiskKernelCache::Touch(const KernelDigest& digest) {
  if (!enabled()) return;
  utimensat(AT_FDCWD, EntryPath(digest).c_str(), nullptr, 0);
}

void DiskKernelCache::Store(const KernelDigest& digest, absl::string_view cubin) {
  if (!writable()) return;
  const std::string entry = internal::EncodeEntry(digest, cubin);
  if (options_.max_bytes > 0 && static_cast<int64_t>(entry.size()) > options_.max_bytes) return;
  const std::string temp = absl::StrCat(options_.directory, "/", TempFileName(digest));
  auto fail = [&](const char* what, int error) {
    unlink(temp.c_str());
    Degrade(/*reads_too=*/false, absl::StrCat("cannot ", what, " in ", options_.directory, " (",
                                              std::strerror(error), ")"));
  };
  ScopedFd fd(open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (fd.get() < 0) return fail("create a file", errno);
  // No fsync: after a crash a torn entry fails its checksum and is a miss.
  if (int error = WriteAll(fd.get(), entry); error != 0) return fail("write an entry", error);
  if (int error = fd.Close(); error != 0) return fail("write an entry", error);
  if (rename(temp.c_str(), EntryPath(digest).c_str()) != 0) return fail("rename an entry", errno);
  {
    absl::MutexLock lock(&mu_);
    ++stats_.stores;
  }
  absl::MutexLock lock(&scan_mu_);
  ScanAndEvict();
}

std::vector<KernelDigest> DiskKernelCache::RecentEntries(int64_t max_bytes) const {
  std::vector<KernelDigest> out;
  if (!enabled() || max_bytes <= 0) return out;
  DIR* dir = opendir(options_.directory.c_str());
  if (dir == nullptr) return out;
  struct Entry {
    struct timespec mtime;
    int64_t size;
    std::string name;
  };
  std::vector<Entry> entries;
  const int dir_fd = dirfd(dir);
  while (struct dirent* d = readdir(dir)) {
    const absl::string_view name = d->d_name;
    if (!internal::IsEntryFileName(name)) continue;
    struct stat st {};
    if (fstatat(dir_fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    entries.push_back({st.st_mtim, static_cast<int64_t>(st.st_size), std::string(name)});
  }
  closedir(dir);
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.mtime.tv_sec, a.mtime.tv_nsec) > std::tie(b.mtime.tv_sec, b.mtime.tv_nsec);
  });
  int64_t total = 0;
  for (const Entry& e : entries) {
    if (total + e.size > max_bytes) break;
    total += e.size;
    KernelDigest digest{};
    const std::string hex = e.name.substr(0, 64);
    bool ok = hex.size() == 64;
    for (size_t i = 0; ok && i < digest.size(); ++i) {
      unsigned value = 0;
      ok = std::sscanf(hex.c_str() + 2 * i, "%2x", &value) == 1;
      digest[i] = static_cast<uint8_t>(value);
    }
    if (ok) out.push_back(digest);
  }
  return out;
}

void DiskKernelCache::ScanAndEvict() {
  DIR* dir = opendir(options_.directory.c_str());
  if (dir == nullptr) return;
  struct Entry {
    struct timespec mtime;
    int64_t size;
    std::string name;
  };
  std::vector<Entry> entries;
  int64_t total = 0;
  const int dir_fd = dirfd(dir);
  const time_t now = std::time(nullptr);
  while (struct dirent* d = readdir(dir)) {
    const absl::string_view name = d->d_name;
    const bool temp = absl::StartsWith(name, internal::kTempPrefix);
    if (!temp && !internal::IsEntryFileName(name)) continue;
    struct stat st {};
    if (fstatat(dir_fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    if (temp) {
      if (now - st.st_mtim.tv_sec > kStaleTempSeconds) unlinkat(dir_fd, d->d_name, 0);
      continue;
    }
    entries.push_back({st.st_mtim, static_cast<int64_t>(st.st_size), std::string(name)});
    total += st.st_size;
  }
  int64_t evicted = 0;
  int64_t count = static_cast<int64_t>(entries.size());
  if (options_.max_bytes > 0 && total > options_.max_bytes) {
    // Least recently used (oldest mtime) first; the name breaks ties so
    // processes agree.
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.mtime.tv_sec, a.mtime.tv_nsec, a.name) <
             std::tie(b.mtime.tv_sec, b.mtime.tv_nsec, b.name);
    });
    for (const Entry& e : entries) {
      if (total <= options_.max_bytes) break;
      if (unlinkat(dir_fd, e.name.c_str(), 0) == 0) {
        ++evicted;
      } else if (errno != ENOENT) {
        continue;  // still there (e.g. read-only directory)
      }
      // Removed, by us or by another process.
      total -= e.size;
      --count;
    }
  }
  closedir(dir);
  absl::MutexLock lock(&mu_);
  stats_.evictions += evicted;
  stats_.entries = count;
  stats_.bytes = total;
}

absl::StatusOr<CachedCubin> DiskKernelCache::GetOrCompile(
    const KernelKey& key, absl::FunctionRef<absl::StatusOr<std::string>()> compile) {
  std::optional<KernelDigest> digest;
  if (enabled()) {
    digest = DigestOf(key);
    if (std::optional<std::string> cubin = Load(*digest); cubin.has_value()) {
      return CachedCubin{*std::move(cubin), /*from_disk=*/true};
    }
  }
  absl::StatusOr<std::string> cubin = compile();
  if (!cubin.ok()) return cubin.status();
  if (digest.has_value()) Store(*digest, *cubin);
  return CachedCubin{*std::move(cubin), /*from_disk=*/false};
}

}  // namespace gpuflow::cuda
