// A directory only this server's user may write: the kernel cache, whose
// cubins the server loads and runs, so a file planted there by anyone else
// would be code execution in the server (and on the GPU).
//
//   if (absl::Status s = PreparePrivateDirectory(dir); !s.ok()) ... refuse it
//
// Like PostgreSQL with its data directory, the check is of the directory
// itself: put it in a subdirectory of a volume whose own mode is loose
// (a Kubernetes emptyDir is world-writable), as deploy/base does.
#ifndef GPUFLOW_SERVER_PRIVATE_DIRECTORY_H_
#define GPUFLOW_SERVER_PRIVATE_DIRECTORY_H_

#include <string>

#include "absl/status/status.h"

namespace gpuflow::server {

// Creates `path` when it does not exist (missing parents too, each mode
// 0700, so no umask can make it shared), then checks it: owned by this
// process's user or by root, and writable by nobody else: not by others,
// and by its group only when that is this process's own group.
// FAILED_PRECONDITION naming the path, what is wrong (owner, mode) and how
// to fix it. A directory that cannot be created or read is OK here: the
// cache's own handling reports it and runs from memory.
absl::Status PreparePrivateDirectory(const std::string& path);

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_PRIVATE_DIRECTORY_H_
