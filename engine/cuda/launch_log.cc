#include "engine/cuda/launch_log.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace gpuflow::cuda::launch_log {
namespace {

struct Log {
  absl::Mutex mu;
  std::FILE* file = nullptr;
};

Log* Open() {
  const char* dir = std::getenv("GPUFLOW_LAUNCH_LOG");
  if (dir == nullptr || *dir == '\0') return nullptr;
  auto* log = new Log;  // lives as long as the process
  const std::string path = absl::StrCat(dir, "/launches-", getpid(), ".log");
  log->file = std::fopen(path.c_str(), "w");
  if (log->file == nullptr) {
    std::fprintf(stderr, "gpuflow: GPUFLOW_LAUNCH_LOG: cannot write %s\n", path.c_str());
    delete log;
    return nullptr;
  }
  return log;
}

Log* TheLog() {
  static Log* const log = Open();
  return log;
}

void Write(absl::string_view line) {
  Log* log = TheLog();
  if (log == nullptr) return;
  absl::MutexLock lock(&log->mu);
  std::fwrite(line.data(), 1, line.size(), log->file);
  std::fputc('\n', log->file);
  std::fflush(log->file);
}

bool IsDeviceAddress(uint64_t word) {
  if (word < (uint64_t{1} << 16)) return false;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, reinterpret_cast<const void*>(word)) != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it
    return false;
  }
  // Pinned host memory mapped into the device (the run's error words) is an
  // address too.
  return attributes.type != cudaMemoryTypeUnregistered;
}

// FNV-1a, 64 bits: enough to tell two sources apart in a log.
uint64_t Digest(absl::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (char c : bytes) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

bool Enabled() { return TheLog() != nullptr; }

void Kernel(const void* func, dim3 grid, dim3 block, size_t shared_bytes,
            absl::Span<const uint64_t> words) {
  if (!Enabled()) return;
  const char* name = nullptr;
  if (cudaFuncGetName(&name, func) != cudaSuccess || name == nullptr) {
    cudaGetLastError();
    name = "?";
  }
  std::string line =
      absl::StrCat("K ", name, " grid=", grid.x, ",", grid.y, ",", grid.z, " block=", block.x, ",",
                   block.y, ",", block.z, " shared=", shared_bytes, " words=");
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) line += ",";
    if (IsDeviceAddress(words[i])) {
      line += "P";
    } else {
      absl::StrAppend(&line, words[i]);
    }
  }
  Write(line);
}

void Source(absl::string_view name, absl::string_view module_key) {
  if (!Enabled()) return;
  Write(absl::StrCat("S ", name, " ", absl::Hex(Digest(module_key), absl::kZeroPad16), " ",
                     module_key.size()));
}

void Note(absl::string_view line) {
  if (!Enabled()) return;
  Write(absl::StrCat("N ", line));
}

}  // namespace gpuflow::cuda::launch_log
