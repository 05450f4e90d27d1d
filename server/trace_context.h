// W3C Trace Context (https://www.w3.org/TR/trace-context/): a caller's
// `traceparent` request metadata, checked, so that gpuflowd can log it with
// the request and echo it in the reply's initial metadata, and a call can be
// followed across services.
//
//   std::optional<std::string> tp = TraceparentOf(*context);
//   // "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
//
// Only a well-formed value is taken; anything else is ignored, as the
// specification asks (a malformed or repeated header starts no trace here).
#ifndef GPUFLOW_SERVER_TRACE_CONTEXT_H_
#define GPUFLOW_SERVER_TRACE_CONTEXT_H_

#include <grpcpp/server_context.h>

#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace gpuflow::server {

// The metadata key, as gRPC's (lower-case) metadata names it.
inline constexpr char kTraceparentKey[] = "traceparent";

// `value` if it is a valid traceparent: version (two lower-case hex digits,
// not "ff"), a 32-digit trace id and a 16-digit parent id (lower-case hex,
// not all zeros) and two digits of flags, joined by '-'. Version 00 is
// exactly that; a later version may append "-..." fields, which are dropped
// (what is kept is what version 00 defines). nullopt otherwise.
std::optional<std::string> ParseTraceparent(absl::string_view value);

// The caller's traceparent: its one `traceparent` metadata entry, if valid.
std::optional<std::string> TraceparentOf(const grpc::ServerContextBase& context);

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_TRACE_CONTEXT_H_
