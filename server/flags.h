// Flag helpers for gpuflowd: byte sizes with units, and GPUFLOW_* environment
// variables as defaults for flags (for containers).
//
//   ABSL_FLAG(gpuflow::server::ByteCount, max_array_bytes, ..., "...");
//   --max_array_bytes=16GiB   (also 512MiB, 4096, 1.5G, 64KiB)
//   GPUFLOW_MAX_ARRAY_BYTES=16GiB gpuflowd   (the command line wins)
#ifndef GPUFLOW_SERVER_FLAGS_H_
#define GPUFLOW_SERVER_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuflow::server {

// A byte count flag value.
struct ByteCount {
  int64_t bytes = 0;
};

// Parses "4096", "64KiB", "512MiB", "16GiB", "1TiB" (powers of 1024) and
// "1K", "1M", "1G", "1T" (also powers of 1024, as in Kubernetes' "Gi"/"Mi"
// forms: "Gi", "Mi", "Ki" are accepted too). A fraction is allowed before a
// unit ("1.5GiB"). INVALID_ARGUMENT for anything else or a negative value.
absl::StatusOr<int64_t> ParseByteCount(absl::string_view text);
// The shortest exact form: "16GiB", "1536MiB", "1000".
std::string FormatByteCount(int64_t bytes);

bool AbslParseFlag(absl::string_view text, ByteCount* out, std::string* error);
std::string AbslUnparseFlag(ByteCount value);

// Sets each named flag from GPUFLOW_<NAME> (upper-cased) when that variable
// is set. Call before absl::ParseCommandLine so the command line wins.
// Returns an error naming the variable whose value does not parse.
absl::Status ApplyEnvironmentToFlags(const std::vector<std::string>& flag_names);

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_FLAGS_H_
