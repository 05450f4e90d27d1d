#include "server/private_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace gpuflow::server {

namespace {

// mkdir -p with mode 0700 for every directory it creates.
void CreatePrivately(const std::filesystem::path& path) {
  std::error_code error;
  if (std::filesystem::exists(path, error) || path.empty()) return;
  if (path.has_parent_path() && path.parent_path() != path) CreatePrivately(path.parent_path());
  mkdir(path.c_str(), 0700);  // a failure shows when the cache opens it
}

}  // namespace

absl::Status PreparePrivateDirectory(const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  CreatePrivately(std::filesystem::path(path));
  struct stat info {};
  if (stat(path.c_str(), &info) != 0) return absl::OkStatus();
  if (!S_ISDIR(info.st_mode)) return absl::OkStatus();  // the cache reports it
  const std::string mode = absl::StrFormat("%04o", info.st_mode & 07777);
  const std::string why =
      " (compiled kernels there are loaded and run by the server: a file another user planted "
      "would run as its code)";
  if (info.st_uid != geteuid() && info.st_uid != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("kernel cache directory ", path, " belongs to uid ", info.st_uid,
                     ", not to this server's user (uid ", geteuid(), ") or root", why,
                     "; chown it, or choose another with --kernel_cache_dir"));
  }
  if ((info.st_mode & S_IWOTH) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "kernel cache directory ", path, " is writable by every user (mode ", mode, ")", why,
        "; chmod o-w it (and remove what you did not put there), or "
        "choose another with --kernel_cache_dir"));
  }
  if ((info.st_mode & S_IWGRP) != 0 && info.st_gid != getegid()) {
    return absl::FailedPreconditionError(
        absl::StrCat("kernel cache directory ", path, " is writable by group ", info.st_gid,
                     " (mode ", mode, "), not this server's own group (gid ", getegid(), ")", why,
                     "; chmod g-w it, or choose another with --kernel_cache_dir"));
  }
  return absl::OkStatus();
}

}  // namespace gpuflow::server
