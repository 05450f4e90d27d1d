#include "engine/backend.h"

#include "absl/strings/str_cat.h"

namespace gpuflow {

absl::Status CheckCopyRange(int64_t size, int64_t offset, int64_t n) {
  if (offset < 0 || n < 0 || offset > size || n > size - offset) {
    return absl::OutOfRangeError(absl::StrCat("copy of ", n, " bytes at offset ", offset,
                                              " outside a buffer of ", size, " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace gpuflow
