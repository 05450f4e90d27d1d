// Files gpuflowd reads again while it runs (TLS certificates, the tokens
// file): a bounded read that names the flag, and the bookkeeping that puts
// a valid change in force at once and reports a bad one once it has settled.
//
//   absl::StatusOr<std::string> text = ReadSmallFile("auth_tokens_file", path);
//   ReloadTracker tracker(initial_fingerprint);
//   ...every look, under the owner's lock:
//   if (tracker.InForce(seen)) return;            // nothing changed
//   if (valid) { apply; tracker.Applied(seen); }
//   else if (tracker.ShouldReport(seen)) log(why);
//
// A bad state is reported only when the same one is seen twice in a row:
// a file caught halfway through being written, or a rotation caught between
// its two files, is not an error yet. Each bad state is reported once.
#ifndef GPUFLOW_SERVER_RELOADABLE_FILE_H_
#define GPUFLOW_SERVER_RELOADABLE_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace gpuflow::server {

// The contents of `path`, given by --`flag`. FAILED_PRECONDITION ("--flag=
// path: cannot read it: <why>") when it cannot be read, INVALID_ARGUMENT
// when it is larger than `max_bytes` (these files are small: certificates,
// tenants).
absl::StatusOr<std::string> ReadSmallFile(absl::string_view flag, const std::string& path,
                                          size_t max_bytes = size_t{1} << 20);

// A fingerprint for a read that failed, distinct from any contents.
std::string UnreadableFingerprint(const absl::Status& status);

// Not thread-safe: the owner's lock guards it.
class ReloadTracker {
 public:
  // `in_force`: the fingerprint of what was loaded at start.
  explicit ReloadTracker(std::string in_force)
      : in_force_(in_force), last_seen_(std::move(in_force)) {}

  // Whether `seen` is what is in force (then there is nothing to do).
  bool InForce(const std::string& seen);
  // `seen` was valid and is now in force.
  void Applied(const std::string& seen);
  // `seen` is not valid: whether to report it now (seen twice in a row, and
  // not reported before).
  bool ShouldReport(const std::string& seen);

 private:
  std::string in_force_;
  std::string last_seen_;
  std::string reported_;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_RELOADABLE_FILE_H_
