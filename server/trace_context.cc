#include "server/trace_context.h"

namespace gpuflow::server {

namespace {

constexpr size_t kVersion00Length = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2

bool IsLowerHex(absl::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool AllZeros(absl::string_view s) { return s.find_first_not_of('0') == absl::string_view::npos; }

}  // namespace

std::optional<std::string> ParseTraceparent(absl::string_view value) {
  if (value.size() < kVersion00Length) return std::nullopt;
  const absl::string_view version = value.substr(0, 2);
  const absl::string_view trace_id = value.substr(3, 32);
  const absl::string_view parent_id = value.substr(36, 16);
  const absl::string_view flags = value.substr(53, 2);
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') return std::nullopt;
  if (!IsLowerHex(version) || version == "ff") return std::nullopt;
  if (!IsLowerHex(trace_id) || AllZeros(trace_id)) return std::nullopt;
  if (!IsLowerHex(parent_id) || AllZeros(parent_id)) return std::nullopt;
  if (!IsLowerHex(flags)) return std::nullopt;
  if (version == "00") {
    if (value.size() != kVersion00Length) return std::nullopt;
  } else if (value.size() > kVersion00Length && value[kVersion00Length] != '-') {
    return std::nullopt;
  }
  return std::string(value.substr(0, kVersion00Length));
}

std::optional<std::string> TraceparentOf(const grpc::ServerContextBase& context) {
  const auto& metadata = context.client_metadata();
  const auto [first, last] = metadata.equal_range(kTraceparentKey);
  if (first == last || std::next(first) != last) return std::nullopt;  // none, or repeated
  return ParseTraceparent(absl::string_view(first->second.data(), first->second.size()));
}

}  // namespace gpuflow::server
