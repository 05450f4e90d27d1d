// The devices one server drives (--devices): one backend instance each, and
// the ids clients name them by.
//
//   absl::StatusOr<DeviceList> list = ParseDevicesFlag("0,1,3", DeviceKind::kCuda, 4);
//   DeviceSet devices(std::move(backends), list->ids);     // one backend per id
//   Backend& b = devices.backend(devices.IndexOf(3));
//
// A device's id is what CreateSessionRequest.device, SessionInfo.device,
// ServerInfo.devices and the metrics' `device` label say: the CUDA ordinal
// on the CUDA backend, 0 .. N-1 for the CPU backend's virtual devices. Its
// index is its position in the set (0 .. size() - 1), which the server uses
// internally.
//
// Thread-safe: the set never changes after construction; the backends are
// thread-safe themselves.
#ifndef GPUFLOW_SERVER_DEVICE_SET_H_
#define GPUFLOW_SERVER_DEVICE_SET_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/backend.h"

namespace gpuflow::server {

enum class DeviceKind { kCuda, kCpu };

// What --devices asked for.
struct DeviceList {
  // Empty: the flag was not given (one device, as --device says).
  std::vector<int> ids;
};

// Parses --devices. CUDA: "all" (every visible device, `visible` of them)
// or a comma-separated list of distinct ordinals in [0, visible), e.g.
// "0,1,3". CPU: a count N of virtual devices (1 .. kMaxVirtualDevices),
// ids 0 .. N-1; "all" is one. Empty: the default, an empty list.
// INVALID_ARGUMENT naming the flag and what is wrong (a bad or empty item,
// a duplicate, an id out of range, no visible CUDA device for "all").
absl::StatusOr<DeviceList> ParseDevicesFlag(absl::string_view spec, DeviceKind kind, int visible);

inline constexpr int kMaxVirtualDevices = 64;

class DeviceSet {
 public:
  // Owns `backends`; ids[i] names backends[i]. Both the same non-zero size.
  DeviceSet(std::vector<std::unique_ptr<Backend>> backends, std::vector<int> ids);
  // One borrowed backend (the default single device, and tests): its id is
  // backend.device(), or 0 where that is -1 (the CPU backend).
  explicit DeviceSet(Backend& backend);
  DeviceSet(const DeviceSet&) = delete;
  DeviceSet& operator=(const DeviceSet&) = delete;

  int size() const { return static_cast<int>(backends_.size()); }
  Backend& backend(int index) const { return *backends_[index]; }
  int id(int index) const { return ids_[index]; }
  // The index of the device with this id; -1 when there is none.
  int IndexOf(int id) const;
  // Devices that can run requests now (Backend::healthy()).
  int healthy_count() const;
  // "device 1 (cpu)" for messages.
  std::string Describe(int index) const;

 private:
  std::vector<std::unique_ptr<Backend>> owned_;
  std::vector<Backend*> backends_;
  std::vector<int> ids_;
};

// OK while device `index` of `devices` can run requests; else UNAVAILABLE,
// for the calls naming a session it holds ("the cpu backend is unhealthy"
// for a server of one device, as before there were several).
absl::Status CheckServing(const DeviceSet& devices, int index);

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_DEVICE_SET_H_
