// Keeps grpc.health.v1 in step with the devices: SERVING while any device
// is healthy (Backend::healthy()), NOT_SERVING once a sticky error has hit
// every one of them, and NOT_SERVING for good once the server shuts down.
// A device that fails while others serve is logged, not published: only its
// own sessions are lost.
//
//   HealthMonitor health(backend, {"", "gpuflow.v1.GpuFlow"}, {.interval = absl::Seconds(1)});
//   ... build the grpc::Server (the service may already call Check()) ...
//   health.Start(server->GetHealthCheckService());   // publishes now, then every second
//   health.Shutdown();      // on SIGTERM, before grpc::Server::Shutdown
//
// Thread-safe. The backend and the health service must outlive the monitor.
#ifndef GPUFLOW_SERVER_HEALTH_MONITOR_H_
#define GPUFLOW_SERVER_HEALTH_MONITOR_H_

#include <grpcpp/health_check_service_interface.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "engine/backend.h"
#include "server/device_set.h"
#include "server/logging.h"

namespace gpuflow::server {

struct HealthMonitorOptions {
  // How often the backend is polled; zero: only on Check().
  absl::Duration interval = absl::Seconds(1);
  // Status changes are logged here (may be null).
  Logger* log = nullptr;
  // Called (once, on the thread that noticed, outside the monitor's lock)
  // when no device is healthy any more: main uses it to drain and exit
  // (--exit_on_device_error). May be empty.
  std::function<void()> on_unhealthy = nullptr;
};

class HealthMonitor {
 public:
  // Watches `backend` on behalf of `services` ("" is the server as a
  // whole); publishes nothing until Start.
  HealthMonitor(Backend& backend, std::vector<std::string> services,
                HealthMonitorOptions options = {});
  // Watches every device of `devices` (which must outlive the monitor).
  HealthMonitor(const DeviceSet& devices, std::vector<std::string> services,
                HealthMonitorOptions options = {});
  // Stops polling (does not change the published status).
  ~HealthMonitor();
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  // Publishes the backend's state to `health` at once, then polls it every
  // options.interval. Call once; no-op after Shutdown.
  void Start(grpc::HealthCheckServiceInterface* health) ABSL_LOCKS_EXCLUDED(mu_);

  // Reads the devices' health now and publishes it if it changed (a failed
  // request calls this so the flip does not wait for the next poll). No-op
  // before Start and after Shutdown.
  void Check() ABSL_LOCKS_EXCLUDED(mu_);

  // NOT_SERVING for every service from now on, and stops polling.
  void Shutdown() ABSL_LOCKS_EXCLUDED(mu_);

  // What is (or, before Start, would be) published now.
  bool serving() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  HealthMonitor(std::unique_ptr<DeviceSet> own, const DeviceSet* devices,
                std::vector<std::string> services, HealthMonitorOptions options);
  void Publish(bool serving) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Logs devices that turned unhealthy since the last look.
  void LogDeviceChanges() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Set when the monitor was given one backend (before devices_).
  const std::unique_ptr<DeviceSet> own_devices_;
  const DeviceSet& devices_;
  const std::vector<std::string> services_;
  const HealthMonitorOptions options_;

  mutable absl::Mutex mu_;
  grpc::HealthCheckServiceInterface* health_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool serving_ ABSL_GUARDED_BY(mu_) = false;
  bool shut_down_ ABSL_GUARDED_BY(mu_) = false;
  bool reported_unhealthy_ ABSL_GUARDED_BY(mu_) = false;
  // Each device's health as last logged.
  std::vector<bool> device_healthy_ ABSL_GUARDED_BY(mu_);
  absl::Notification stop_;
  std::thread poller_;
};

}  // namespace gpuflow::server

#endif  // GPUFLOW_SERVER_HEALTH_MONITOR_H_
