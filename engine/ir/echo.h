// Client input quoted back in error messages and logs, cut to a bound.
//
//   return absl::NotFoundError(absl::StrCat("no array ", Echo(name)));
//   // -> no array 'x'      or      no array 'xxxx...' (1048576 bytes)
//
// Every echo of a client's string (names, ids, op names, attribute names,
// labels) goes through Echo or EchoRaw, so no message or log line repeats
// more than kMaxEchoBytes of what a client sent, however large it was.
// Thread-safe; pure functions.
#ifndef GPUFLOW_ENGINE_IR_ECHO_H_
#define GPUFLOW_ENGINE_IR_ECHO_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace gpuflow {

// The most bytes of one client string that any message or log line echoes
// (quotes and the size note included).
inline constexpr size_t kMaxEchoBytes = 256;

// `text` quoted ('...'), escaped (C escapes for control and non-ASCII bytes),
// and, when longer than fits, cut with "...' (N bytes)" so the whole result
// has at most kMaxEchoBytes bytes.
std::string Echo(absl::string_view text);

// As Echo without the quotes and escaping (for log fields, which are escaped
// by the logger): at most kMaxEchoBytes bytes, cut at a UTF-8 boundary with
// "... (N bytes)".
std::string EchoRaw(absl::string_view text);

}  // namespace gpuflow

#endif  // GPUFLOW_ENGINE_IR_ECHO_H_
