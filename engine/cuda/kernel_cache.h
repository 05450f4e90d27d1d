// The on-disk kernel cache: compiled cubins kept in a directory that outlives
// the process (and may be shared by many gpuflowd processes, e.g. pods on one
// node with a shared volume), so a restarted or new server does not run NVRTC
// again for kernels compiled before. It sits behind CudaBackend's in-memory
// cache and in front of NVRTC:
//
//   DiskKernelCache disk({.directory = ResolveKernelCacheDir(flag), .max_bytes = 1 << 30});
//   KernelKey key{.source = source, .name = "gf_softmax", .options = NvrtcOptions(compile),
//                 .arch = 90, .nvrtc_version = NvrtcVersion(),
//                 .header_identity = CudaHeaderIdentity(include_dir)};
//   absl::StatusOr<CachedCubin> cubin = disk.GetOrCompile(key, [&] { return Compile(); });
//
// Keys are SHA-256 digests over everything that changes the binary (see
// KernelKey). An entry is one file, `<hex digest>.cubin`: a fixed header
// (magic, format version, the full digest, cubin length, SHA-256 of the
// cubin) and the cubin. A load checks all of it; a bad entry is deleted and
// is a miss. Writes go to a temporary file in the same directory that is
// then renamed over the entry, so readers see a whole entry or none, and
// processes racing on one key each leave a valid file. A directory that
// cannot be created or written (read-only volume, full disk, no permission)
// degrades to memory-only caching with one warning; no request ever fails
// because of the disk layer. The directory is bounded by `max_bytes`:
// hits touch the entry's mtime and a store evicts the least recently used
// entries (oldest mtime first) until the total fits.
//
// No CUDA dependency: callers pass the compiler in, so the cache is tested
// without a GPU. Thread-safe; many processes may share one directory.
#ifndef GPUFLOW_ENGINE_CUDA_KERNEL_CACHE_H_
#define GPUFLOW_ENGINE_CUDA_KERNEL_CACHE_H_

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace gpuflow::cuda {

// gpuflow's version as the build defines it (GPUFLOW_VERSION), e.g. "0.1.0".
std::string GpuflowVersion();

// Everything that changes the cubin NVRTC produces for a kernel. Two keys
// with equal fields name the same binary.
struct KernelKey {
  // The whole translation unit.
  std::string source;
  // The program name given to NVRTC.
  std::string name;
  // The NVRTC options, in order (NvrtcOptions()).
  std::vector<std::string> options;
  // Target compute capability, major*10+minor (sm_90 -> 90).
  int arch = 0;
  // NvrtcVersion(), e.g. "13.0".
  std::string nvrtc_version;
  // CudaHeaderIdentity() of the include directory the source compiles against.
  std::string header_identity;
  std::string gpuflow_version = GpuflowVersion();
};

// SHA-256 over every field of the key (each length-prefixed) and the entry
// format version.
using KernelDigest = std::array<uint8_t, 32>;
KernelDigest DigestOf(const KernelKey& key);
// 64 lowercase hex digits.
std::string DigestHex(const KernelDigest& digest);

// A short hash that changes when the CUDA headers that generated kernels
// include change: SHA-256 over `include_dir` and the contents of the
// toolkit's version-bearing headers in it (cuda.h, cuda_fp16.h(pp),
// cuda_bf16.h(pp), CUB's version.cuh). A missing header counts as missing;
// never fails. Reads a few MB: compute it once per process.
std::string CudaHeaderIdentity(absl::string_view include_dir);

// The cache directory for a --kernel_cache_dir value: "none" disables the
// disk layer (returns ""); any other non-empty value is used as is; empty
// means the default, $XDG_CACHE_HOME/gpuflow/kernels, else
// $HOME/.cache/gpuflow/kernels, else "" (no disk layer).
std::string ResolveKernelCacheDir(absl::string_view configured);

struct DiskKernelCacheOptions {
  // Where entries live; created (with parents) when missing. Empty: no disk
  // layer (GetOrCompile always compiles, nothing is written).
  std::string directory;
  // Bound on the entries' total size; 0: unbounded. An entry larger than the
  // bound is not stored.
  int64_t max_bytes = int64_t{1} << 30;
  // Receives the (at most one) warning that the cache degraded to memory
  // only; writes "gpuflow: kernel cache: ..." to stderr when empty.
  std::function<void(absl::string_view)> warn;
};

// A cubin and where it came from.
struct CachedCubin {
  std::string cubin;
  bool from_disk = false;
};

class DiskKernelCache {
 public:
  struct Stats {
    int64_t hits = 0;         // loads that returned a valid entry
    int64_t misses = 0;       // loads that found no valid entry
    int64_t stores = 0;       // entries written
    int64_t bad_entries = 0;  // invalid entries found (and deleted)
    int64_t evictions = 0;    // entries this process removed to fit max_bytes
    // The directory as of this process's last scan (at start and after each
    // store); other processes may have changed it since.
    int64_t entries = 0;
    int64_t bytes = 0;
  };

  // Creates the directory when needed and scans it (evicting down to
  // max_bytes). Never fails: a directory it cannot use means no disk layer.
  explicit DiskKernelCache(DiskKernelCacheOptions options);
  DiskKernelCache(const DiskKernelCache&) = delete;
  DiskKernelCache& operator=(const DiskKernelCache&) = delete;

  // Whether lookups read the directory (it exists and is usable).
  bool enabled() const;
  // Whether new entries are written (false after the warning).
  bool writable() const;
  const std::string& directory() const { return options_.directory; }
  int64_t max_bytes() const { return options_.max_bytes; }

  // The entry file of `digest` (under directory()).
  std::string EntryPath(const KernelDigest& digest) const;

  // The cubin stored under `digest`, or nothing (no entry, unreadable, or
  // invalid: an invalid entry is deleted). Touches the entry's mtime.
  std::optional<std::string> Load(const KernelDigest& digest);

  // Marks the entry as just used (its mtime, the LRU clock), for callers
  // whose own cache serves a kernel without loading it again. Harmless when
  // the entry is gone or the directory read-only.
  void Touch(const KernelDigest& digest);

  // Writes the entry (temporary file + rename), then evicts least recently
  // used entries until the directory fits max_bytes. Best effort: a failure
  // to write turns writing off with one warning.
  void Store(const KernelDigest& digest, absl::string_view cubin);

  // Load, else `compile` and Store. Errors come only from `compile`.
  absl::StatusOr<CachedCubin> GetOrCompile(
      const KernelKey& key, absl::FunctionRef<absl::StatusOr<std::string>()> compile);

  Stats stats() const;

  // The digests of the most recently used entries, newest first, as many
  // as fit in `max_bytes` (for preloading them at start). Empty when the
  // disk layer is off.
  std::vector<KernelDigest> RecentEntries(int64_t max_bytes) const;

 private:
  // Scans the directory, removes stale temporary files and evicts down to
  // max_bytes; updates stats_.entries/bytes.
  void ScanAndEvict() ABSL_EXCLUSIVE_LOCKS_REQUIRED(scan_mu_);
  // Turns the disk layer (or only writing) off, warning once.
  void Degrade(bool reads_too, const std::string& why);

  const DiskKernelCacheOptions options_;
  // Serialises this process's scans (other processes may scan at once).
  absl::Mutex scan_mu_;
  mutable absl::Mutex mu_;
  bool enabled_ ABSL_GUARDED_BY(mu_) = false;
  bool writable_ ABSL_GUARDED_BY(mu_) = false;
  bool warned_ ABSL_GUARDED_BY(mu_) = false;
  Stats stats_ ABSL_GUARDED_BY(mu_);
};

}  // namespace gpuflow::cuda

#endif  // GPUFLOW_ENGINE_CUDA_KERNEL_CACHE_H_
