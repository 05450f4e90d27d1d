#include "server/health_monitor.h"

#include <utility>

namespace gpuflow::server {

HealthMonitor::HealthMonitor(const Backend& backend, std::vector<std::string> services,
                             HealthMonitorOptions options)
    : backend_(backend), services_(std::move(services)), options_(options) {
  absl::MutexLock lock(&mu_);
  serving_ = backend_.healthy();
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
    serving_ = backend_.healthy();
    for (const std::string& service : services_) health_->SetServingStatus(service, serving_);
  }
  if (options_.interval > absl::ZeroDuration()) {
    poller_ = std::thread([this] {
      while (!stop_.WaitForNotificationWithTimeout(options_.interval)) Check();
    });
  }
}

void HealthMonitor::Check() {
  const bool healthy = backend_.healthy();
  bool report = false;
  {
    absl::MutexLock lock(&mu_);
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
  if (serving) {
    options_.log->Info("health: SERVING", {{"backend", backend_.name()}});
  } else {
    options_.log->Error("health: NOT_SERVING, the backend is unhealthy",
                        {{"backend", backend_.name()}});
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
