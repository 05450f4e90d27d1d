// Serves metrics over HTTP for Prometheus to scrape, with civetweb (the HTTP
// library prometheus-cpp's Exposer uses).
//
//   absl::StatusOr<std::unique_ptr<HttpExposer>> exposer =
//       HttpExposer::Start({.address = "0.0.0.0", .port = 9464}, {&registry});
//   // GET http://HOST:9464/metrics -> SerializeText(registry.Collect())
//   exposer->reset();   // stops serving; scrapes in progress finish first
//
// GET and HEAD of /metrics answer 200 with the text format (Content-Type
// text/plain; version=0.0.4; charset=utf-8); / answers a short pointer to
// /metrics; other paths 404, other methods 405. Each scrape collects every
// collectable afresh, on one of civetweb's threads.
//
// Thread-safe. The collectables must outlive the exposer.
#ifndef GPUFLOW_SERVER_METRICS_HTTP_EXPOSER_H_
#define GPUFLOW_SERVER_METRICS_HTTP_EXPOSER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/metrics/registry.h"

struct mg_context;
struct mg_connection;

namespace gpuflow::metrics {

struct HttpExposerOptions {
  // An IPv4 address or a host name ("localhost"); "0.0.0.0" for every
  // interface. "::" and "[::]" mean every IPv4 interface too: this
  // civetweb build has no IPv6.
  std::string address = "localhost";
  // 0 picks a free port (see HttpExposer::port).
  int port = 9464;
  // civetweb worker threads. An open connection holds one until it sends a
  // request or request_timeout passes, so there must be more threads than
  // idle connections a scraper, probe or port scanner may leave open:
  // with 32, scrapes are served while 16 (or more) sit idle.
  int threads = 32;
};

class HttpExposer {
 public:
  // Starts listening. INVALID_ARGUMENT for an IPv6 address or a port outside
  // [0, 65535]; UNAVAILABLE when the address cannot be bound (in use, not
  // local).
  static absl::StatusOr<std::unique_ptr<HttpExposer>> Start(
      const HttpExposerOptions& options, std::vector<const Collectable*> collectables);

  // Stops listening and waits for requests in progress.
  ~HttpExposer();
  HttpExposer(const HttpExposer&) = delete;
  HttpExposer& operator=(const HttpExposer&) = delete;

  // The bound port (the chosen one when options.port was 0).
  int port() const { return port_; }

  // The body a scrape returns now (also what tests compare against).
  std::string Scrape() const;

 private:
  explicit HttpExposer(std::vector<const Collectable*> collectables)
      : collectables_(std::move(collectables)) {}
  static int HandleMetrics(mg_connection* connection, void* self);
  static int HandleOther(mg_connection* connection, void* self);

  const std::vector<const Collectable*> collectables_;
  mg_context* context_ = nullptr;
  int port_ = 0;
  // Where the destructor connects to wake civetweb up.
  std::string wake_host_;
};

}  // namespace gpuflow::metrics

#endif  // GPUFLOW_SERVER_METRICS_HTTP_EXPOSER_H_
