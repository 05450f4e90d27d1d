// The /metrics endpoint Prometheus scrapes: prometheus-cpp's Exposer (its
// pull library, on civetweb), configured for a server that must keep
// answering scrapes whatever the network does.
//
//   absl::StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint =
//       MetricsEndpoint::Start({.address = "0.0.0.0", .port = 9464}, {registry, callbacks});
//   // GET http://HOST:9464/metrics -> the text format of every collectable
//   endpoint->reset();   // stops serving within milliseconds
//
// Each scrape collects every collectable afresh, on one of civetweb's
// threads. Thread-safe.
#ifndef GPUFLOW_SERVER_METRICS_ENDPOINT_H_
#define GPUFLOW_SERVER_METRICS_ENDPOINT_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "prometheus/collectable.h"

namespace prometheus {
class Exposer;
}  // namespace prometheus

namespace gpuflow::metrics {

struct EndpointOptions {
  // An IPv4 address or a host name ("localhost"); "0.0.0.0" for every
  // interface. "::" and "[::]" mean every IPv4 interface too: Debian's
  // civetweb has no IPv6.
  std::string address = "localhost";
  // 0 picks a free port (see MetricsEndpoint::port).
  int port = 9464;
  // civetweb worker threads. An open connection holds one until it sends a
  // request or 5 s pass, so there must be more threads than idle
  // connections a scraper, probe or port scanner may leave open: with 32,
  // scrapes are served while 16 (or more) sit idle.
  int threads = 32;
};

class MetricsEndpoint {
 public:
  // Starts listening. INVALID_ARGUMENT for an IPv6 address or a port outside
  // [0, 65535]; UNAVAILABLE when the address cannot be bound (in use, not
  // local). The collectables are kept alive by the endpoint.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const EndpointOptions& options,
      const std::vector<std::shared_ptr<prometheus::Collectable>>& collectables);

  // Stops listening and waits for scrapes in progress.
  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  // The bound port (the chosen one when options.port was 0).
  int port() const { return port_; }

 private:
  MetricsEndpoint() = default;

  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  int port_ = 0;
  // Where the destructor connects to wake civetweb up.
  std::string wake_host_;
};

// The text exposition format of `collectables`, as a scrape returns it
// (prometheus-cpp's serializer; for tests and tools).
std::string Scrape(const std::vector<std::shared_ptr<prometheus::Collectable>>& collectables);

}  // namespace gpuflow::metrics

#endif  // GPUFLOW_SERVER_METRICS_ENDPOINT_H_
