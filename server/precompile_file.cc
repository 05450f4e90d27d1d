#include "server/precompile_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"

namespace gpuflow::server {

absl::StatusOr<v1::PrecompileRequest> ParsePrecompileJson(absl::string_view json,
                                                          absl::string_view source) {
  v1::PrecompileRequest request;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  const auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &request, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        source, ": not a PrecompileRequest in protobuf JSON form: ", status.message().ToString()));
  }
  if (request.graphs_size() == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(source,
                     ": the PrecompileRequest has no graphs (expected {\"graphs\": [...], "
                     "\"arrayTypes\": {...}})"));
  }
  return request;
}

absl::StatusOr<v1::PrecompileRequest> ReadPrecompileFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    const int error = errno;
    const std::string message = absl::StrCat("cannot read ", path, ": ", std::strerror(error));
    if (error == ENOENT) return absl::NotFoundError(message);
    if (error == EACCES) return absl::PermissionDeniedError(message);
    return absl::InvalidArgumentError(message);
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  return ParsePrecompileJson(contents.str(), path);
}

}  // namespace gpuflow::server
