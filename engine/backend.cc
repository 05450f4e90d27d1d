#include "engine/backend.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace gpuflow {

absl::string_view CopyRouteName(CopyRoute route) {
  switch (route) {
    case CopyRoute::kDevice:
      return "device";
    case CopyRoute::kPeer:
      return "peer";
    case CopyRoute::kStaged:
      return "staged";
    case CopyRoute::kHost:
      return "host";
  }
  return "unknown";
}

absl::Status CopyThroughHost(Backend& source, const DeviceBuffer& src, Stream& src_stream,
                             Backend& target, DeviceBuffer& dst, Stream& dst_stream, int64_t n) {
  if (absl::Status s = CheckCopyRange(src.size(), 0, n); !s.ok()) return s;
  if (absl::Status s = CheckCopyRange(dst.size(), 0, n); !s.ok()) return s;
  constexpr int64_t kPiece = int64_t{4} << 20;
  std::vector<char> host(static_cast<size_t>(std::min(n, kPiece)));
  for (int64_t pos = 0; pos < n; pos += kPiece) {
    const int64_t piece = std::min(kPiece, n - pos);
    if (absl::Status s = source.CopyToHost(src, pos, piece, host.data(), src_stream); !s.ok()) {
      return s;
    }
    if (absl::Status s = source.Synchronize(src_stream); !s.ok()) return s;
    // CopyToDevice stages the bytes, so `host` is free again on return.
    if (absl::Status s = target.CopyToDevice(host.data(), dst, pos, piece, dst_stream); !s.ok()) {
      return s;
    }
  }
  return target.Synchronize(dst_stream);
}

absl::StatusOr<CopyRoute> Backend::CopyFrom(Backend& source, const DeviceBuffer& src,
                                            Stream& src_stream, DeviceBuffer& dst,
                                            Stream& dst_stream, int64_t n) {
  if (absl::Status s = CopyThroughHost(source, src, src_stream, *this, dst, dst_stream, n);
      !s.ok()) {
    return s;
  }
  return CopyRoute::kStaged;
}

absl::Status CheckCopyRange(int64_t size, int64_t offset, int64_t n) {
  if (offset < 0 || n < 0 || offset > size || n > size - offset) {
    return absl::OutOfRangeError(absl::StrCat("copy of ", n, " bytes at offset ", offset,
                                              " outside a buffer of ", size, " bytes"));
  }
  return absl::OkStatus();
}

absl::StatusOr<RunCharge> RunCharge::Take(RunControl* control, int64_t bytes) {
  if (control == nullptr || bytes <= 0) return RunCharge();
  if (absl::Status s = control->Acquire(bytes); !s.ok()) return s;
  return RunCharge(control, bytes);
}

RunCharge& RunCharge::operator=(RunCharge&& other) noexcept {
  if (this != &other) {
    Reset();
    control_ = other.control_;
    bytes_ = other.bytes_;
    other.control_ = nullptr;
  }
  return *this;
}

void RunCharge::Reset() {
  if (control_ != nullptr) control_->Release(bytes_);
  control_ = nullptr;
  bytes_ = 0;
}

}  // namespace gpuflow
