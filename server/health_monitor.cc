#include "server/health_monitor.h"

#include <utility>

namespace gpuflow::server {

HealthMonitor::HealthMonitor(Backend& backend, std::vector<std::string> services,
                             HealthMonitorOptions options)
    : HealthMonitor(std::make_unique<DeviceSet>(backend), nullptr, std::move(services), options) {}

HealthMonitor::HealthMonitor(const DeviceSet& devices, std::vector<std::string> services,
                             HealthMonitorOptions options)
    : HealthMonitor(nullptr, &devices, std::move(services), options) {}

HealthMonitor::HealthMonitor(std::unique_ptr<DeviceSet> own, const DeviceSet* devices,
                             std::vector<std::string> services, HealthMonitorOptions options)
    : own_devices_(std::move(own)),
      devices_(devices != nullptr ? *devices : *own_devices_),
      services_(std::move(services)),
      options_(options) {
  absl::MutexLock lock(&mu_);
  serving_ = devices_.healthy_count() > 0;
  device_healthy_.assign(devices_.size(), true);
}

HealthMonitor::~HealthMonitor() {
  {
    absl::MutexLock lock(&mu_);
    if (!stop_.HasBeenNotified()) stop_.Notify();
  }
  if (poller_.joinable()) poller_.join();
}

void HealthMonitor::Start(grpc::HealthCheckServiceInterface* health) {
  {
    absl::MutexLock lock(&mu_);
    if (shut_down_ || health_ != nullptr) return;
    health_ = health;
    serving_ = devices_.healthy_count() > 0;
    for (const std::string& service : services_) health_->SetServingStatus(service, serving_);
  }
  if (options_.interval > absl::ZeroDuration()) {
    poller_ = std::thread([this] {
      while (!stop_.WaitForNotificationWithTimeout(options_.interval)) Check();
    });
  }
}

void HealthMonitor::Check() {
  const bool healthy = devices_.healthy_count() > 0;
  bool report = false;
  {
    absl::MutexLock lock(&mu_);
    LogDeviceChanges();
    if (!healthy && !reported_unhealthy_) {
      reported_unhealthy_ = true;
      report = true;
    }
    if (!shut_down_ && health_ != nullptr && healthy != serving_) Publish(healthy);
  }
  if (report && options_.on_unhealthy) options_.on_unhealthy();
}

void HealthMonitor::Publish(bool serving) {
  serving_ = serving;
  for (const std::string& service : services_) health_->SetServingStatus(service, serving);
  if (options_.log == nullptr) return;
  const std::string backend(devices_.backend(0).name());
  if (serving) {
    options_.log->Info("health: SERVING", {{"backend", backend}});
  } else {
    options_.log->Error(devices_.size() == 1 ? "health: NOT_SERVING, the backend is unhealthy"
                                             : "health: NOT_SERVING, every device is unhealthy",
                        {{"backend", backend}});
  }
}

void HealthMonitor::LogDeviceChanges() {
  if (devices_.size() == 1) return;  // Publish says it all
  for (int d = 0; d < devices_.size(); ++d) {
    const bool healthy = devices_.backend(d).healthy();
    if (healthy == device_healthy_[d]) continue;
    device_healthy_[d] = healthy;
    if (options_.log == nullptr || healthy) continue;
    options_.log->Error("device unhealthy: its sessions are lost, new sessions go to the others",
                        {{"device", static_cast<int64_t>(devices_.id(d))},
                         {"backend", std::string(devices_.backend(d).name())},
                         {"healthy_devices", static_cast<int64_t>(devices_.healthy_count())},
                         {"devices", static_cast<int64_t>(devices_.size())}});
  }
}

void HealthMonitor::Shutdown() {
  absl::MutexLock lock(&mu_);
  if (shut_down_) return;
  shut_down_ = true;
  serving_ = false;
  // grpc's Shutdown sets NOT_SERVING for every service (watchers hear it)
  // and ignores later SetServingStatus calls.
  if (health_ != nullptr) health_->Shutdown();
  if (!stop_.HasBeenNotified()) stop_.Notify();
}

bool HealthMonitor::serving() const {
  absl::MutexLock lock(&mu_);
  return serving_;
}

}  // namespace gpuflow::server
