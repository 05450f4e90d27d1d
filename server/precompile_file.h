// The `gpuflowd --precompile=FILE` warm-up file: a PrecompileRequest
// (proto/gpuflow/v1/service.proto) in protobuf's JSON form, compiled before
// the server starts serving so the first requests find their kernels warm.
//
//   absl::StatusOr<v1::PrecompileRequest> request = ReadPrecompileFile(path);
//   if (!request.ok()) ...  // the message names the file and what is wrong
//   runner.Precompile(*request, &response);
//
// docs/server.md shows the form; docs/precompile.example.json is an example.
#ifndef GPUFLOW_SERVER_PRECOMPILE_FILE_H_
#define GPUFLOW_SERVER_PRECOMPILE_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gpuflow/v1/service.pb.h"

namespace gpuflow::server {

// Parses `json` as a PrecompileRequest. Unknown fields are errors (a typo
// would otherwise silently compile nothing), and so is a request without
// graphs. INVALID_ARGUMENT naming `source` (a file name, for messages) and
// the parser's complaint.
absl::StatusOr<v1::PrecompileRequest> ParsePrecompileJson(absl::string_view json,
                                                          absl::string_view source);

// Reads and parses the file at `path`: NOT_FOUND (or PERMISSION_DENIED etc.)
// when it cannot be read, else as ParsePrecompileJson.
absl::StatusOr<v1::PrecompileRequest> ReadPrecompileFile(const std::string& path);

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_PRECOMPILE_FILE_H_
