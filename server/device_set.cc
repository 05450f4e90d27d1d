#include "server/device_set.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace gpuflow::server {

absl::StatusOr<DeviceList> ParseDevicesFlag(absl::string_view spec, DeviceKind kind, int visible) {
  spec = absl::StripAsciiWhitespace(spec);
  DeviceList list;
  if (spec.empty()) return list;
  const std::string flag = absl::StrCat("--devices=", spec);
  if (kind == DeviceKind::kCpu) {
    if (spec == "all") {
      list.ids = {0};
      return list;
    }
    int count = 0;
    if (!absl::SimpleAtoi(spec, &count) || count < 1 || count > kMaxVirtualDevices) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": the cpu backend takes a count of virtual devices, 1 to ",
                       kMaxVirtualDevices, " (a list of ordinals is for the cuda backend)"));
    }
    for (int i = 0; i < count; ++i) list.ids.push_back(i);
    return list;
  }
  if (spec == "all") {
    if (visible <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": no CUDA device is visible"));
    }
    for (int i = 0; i < visible; ++i) list.ids.push_back(i);
    return list;
  }
  absl::flat_hash_set<int> seen;
  for (absl::string_view item : absl::StrSplit(spec, ',')) {
    item = absl::StripAsciiWhitespace(item);
    int id = 0;
    if (item.empty() || !absl::SimpleAtoi(item, &id) || id < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          flag, ": '", item, "' is not a device ordinal (expected all, or a list such as 0,1,3)"));
    }
    if (id >= visible) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": device ", id, " does not exist (",
                                                     visible, " CUDA device(s) are visible)"));
    }
    if (!seen.insert(id).second) {
      return absl::InvalidArgumentError(absl::StrCat(flag, ": device ", id, " is listed twice"));
    }
    list.ids.push_back(id);
  }
  return list;
}

DeviceSet::DeviceSet(std::vector<std::unique_ptr<Backend>> backends, std::vector<int> ids)
    : owned_(std::move(backends)), ids_(std::move(ids)) {
  for (const std::unique_ptr<Backend>& b : owned_) backends_.push_back(b.get());
}

DeviceSet::DeviceSet(Backend& backend) : backends_{&backend}, ids_{std::max(0, backend.device())} {}

int DeviceSet::IndexOf(int id) const {
  auto it = std::find(ids_.begin(), ids_.end(), id);
  return it == ids_.end() ? -1 : static_cast<int>(it - ids_.begin());
}

int DeviceSet::healthy_count() const {
  return static_cast<int>(
      std::count_if(backends_.begin(), backends_.end(), [](Backend* b) { return b->healthy(); }));
}

std::string DeviceSet::Describe(int index) const {
  return absl::StrCat("device ", ids_[index], " (", backends_[index]->name(), ")");
}

absl::Status CheckServing(const DeviceSet& devices, int index) {
  const Backend& backend = devices.backend(index);
  if (backend.healthy()) return absl::OkStatus();
  if (devices.size() == 1) {
    return absl::UnavailableError(absl::StrCat("the ", backend.name(), " backend is unhealthy"));
  }
  return absl::UnavailableError(absl::StrCat(
      devices.Describe(index),
      " is unhealthy (a sticky device error): the session is lost; open a new one, which goes to "
      "a healthy device"));
}

}  // namespace gpuflow::server
