#include "server/reloadable_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace gpuflow::server {

absl::StatusOr<std::string> ReadSmallFile(absl::string_view flag, const std::string& path,
                                          size_t max_bytes) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    return absl::FailedPreconditionError(
        absl::StrCat("--", flag, "=", path, ": cannot read it: ", std::strerror(errno)));
  }
  std::string contents;
  char buffer[16384];
  while (file.read(buffer, sizeof(buffer)) || file.gcount() > 0) {
    contents.append(buffer, static_cast<size_t>(file.gcount()));
    if (contents.size() > max_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", path, ": larger than ",
                                                     max_bytes, " bytes, not what it should be"));
    }
  }
  return contents;
}

std::string UnreadableFingerprint(const absl::Status& status) {
  // A control byte no PEM or JSON file of ours starts with.
  return absl::StrCat("\x01unreadable: ", status.message());
}

bool ReloadTracker::InForce(const std::string& seen) {
  if (seen != in_force_) return false;
  last_seen_ = seen;
  reported_.clear();
  return true;
}

void ReloadTracker::Applied(const std::string& seen) {
  in_force_ = last_seen_ = seen;
  reported_.clear();
}

bool ReloadTracker::ShouldReport(const std::string& seen) {
  const bool settled = seen == last_seen_;
  last_seen_ = seen;
  if (!settled || seen == reported_) return false;
  reported_ = seen;
  return true;
}

}  // namespace gpuflow::server
