// The entry file format of the on-disk kernel cache (kernel_cache.h), for
// the cache itself and its tests. Little-endian:
//
//   offset  size  field
//        0     8  magic "GFKERNEL"
//        8     4  format version (kEntryFormatVersion)
//       12     4  zero
//       16    32  the entry's full key digest (SHA-256, see DigestOf)
//       48     8  cubin length in bytes
//       56    32  SHA-256 of the cubin
//       88     -  the cubin (exactly `cubin length` bytes to the end of file)
#ifndef GPUFLOW_ENGINE_CUDA_KERNEL_CACHE_INTERNAL_H_
#define GPUFLOW_ENGINE_CUDA_KERNEL_CACHE_INTERNAL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/cuda/kernel_cache.h"

namespace gpuflow::cuda::internal {

inline constexpr char kEntryMagic[8] = {'G', 'F', 'K', 'E', 'R', 'N', 'E', 'L'};
inline constexpr uint32_t kEntryFormatVersion = 1;
inline constexpr int64_t kEntryVersionOffset = 8;
inline constexpr int64_t kEntryDigestOffset = 16;
inline constexpr int64_t kEntryLengthOffset = 48;
inline constexpr int64_t kEntryChecksumOffset = 56;
inline constexpr int64_t kEntryHeaderBytes = 88;
// Entry files are "<64 hex digits><kEntrySuffix>"; temporary files start
// with kTempPrefix and are removed by a scan once older than an hour (a
// writer that died mid-write).
inline constexpr absl::string_view kEntrySuffix = ".cubin";
inline constexpr absl::string_view kTempPrefix = ".tmp-";

// SHA-256 of `data`.
KernelDigest Sha256(absl::string_view data);

// Header + cubin for `digest`.
std::string EncodeEntry(const KernelDigest& digest, absl::string_view cubin);

// The cubin of an entry file's contents. DATA_LOSS naming what is wrong
// (bad magic, another format version, another key, truncated or extended,
// checksum mismatch).
absl::StatusOr<std::string> DecodeEntry(absl::string_view file, const KernelDigest& digest);

// Whether `name` is an entry file name ("<64 hex digits>.cubin").
bool IsEntryFileName(absl::string_view name);

}  // namespace gpuflow::cuda::internal

#endif  // GPUFLOW_ENGINE_CUDA_KERNEL_CACHE_INTERNAL_H_
