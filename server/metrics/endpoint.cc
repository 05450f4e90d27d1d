#include "server/metrics/endpoint.h"

#include <CivetServer.h>
#include <civetweb.h>
#include <dlfcn.h>
#include <netdb.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <exception>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "prometheus/exposer.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"

// Debian's libcivetweb (which prometheus-cpp's Exposer runs on) is built
// with USE_STACK_SIZE=102400: every thread it starts asks
// pthread_attr_setstacksize for 100 KiB. glibc carves each thread's static
// TLS out of its stack, and the CUDA libraries gpuflowd links need more than
// that (cuBLASLt alone ~92 KiB), so pthread_create fails with EINVAL and
// civetweb cannot start a worker ("Cannot create first worker thread"). This
// definition, which the dynamic linker binds in preference to libc's (the
// executable comes first), raises requests below 1 MiB to 1 MiB and is
// otherwise libc's. Linked in with MetricsEndpoint, so only binaries that
// serve metrics carry it.
extern "C" int pthread_attr_setstacksize(pthread_attr_t* attr, size_t size) noexcept {
  using Setter = int (*)(pthread_attr_t*, size_t);
  static const Setter libc_setter =
      reinterpret_cast<Setter>(dlsym(RTLD_NEXT, "pthread_attr_setstacksize"));
  constexpr size_t kMinimumStack = size_t{1} << 20;
  if (libc_setter == nullptr) return ENOSYS;
  return libc_setter(attr, std::max(size, kMinimumStack));
}

namespace gpuflow::metrics {

namespace {

// The host part of civetweb's listening_ports entry, or an error.
absl::StatusOr<std::string> ListeningHost(const EndpointOptions& options) {
  if (options.port < 0 || options.port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("metrics port ", options.port, " is outside [0, 65535]"));
  }
  std::string host = std::string(absl::StripAsciiWhitespace(options.address));
  if (host.empty() || host == "::" || host == "[::]") host = "0.0.0.0";
  if (absl::StrContains(host, ':')) {
    return absl::InvalidArgumentError(absl::StrCat(
        "metrics address '", options.address,
        "': IPv6 addresses are not supported (civetweb here has no IPv6); give an IPv4 "
        "address, a host name or 0.0.0.0"));
  }
  return host;
}

// Opens and closes a TCP connection to host:port (IPv4), ignoring failures.
void Knock(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), absl::StrCat(port).c_str(), &hints, &found) != 0) return;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    const bool connected = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    close(fd);
    if (connected) break;
  }
  freeaddrinfo(found);
}

// civetweb logs to stderr by default; gpuflowd has its own log.
int QuietLog(const mg_connection* /*connection*/, const char* /*message*/) { return 1; }

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const EndpointOptions& options,
    const std::vector<std::shared_ptr<prometheus::Collectable>>& collectables) {
  absl::StatusOr<std::string> host = ListeningHost(options);
  if (!host.ok()) return host.status();
  const std::string listening = absl::StrCat(*host, ":", options.port);
  static const CivetCallbacks callbacks = [] {
    CivetCallbacks c;
    c.log_message = QuietLog;
    return c;
  }();
  auto endpoint = std::unique_ptr<MetricsEndpoint>(new MetricsEndpoint);
  try {
    endpoint->exposer_ = std::make_unique<prometheus::Exposer>(
        std::vector<std::string>{"listening_ports", listening, "num_threads",
                                 absl::StrCat(std::max(1, options.threads)),
                                 // An idle connection is dropped after 5 s.
                                 "request_timeout_ms", "5000"},
        &callbacks);
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", listening, ": ",
                                               e.what(), " (address in use, or not local?)"));
  }
  endpoint->collectables_ = collectables;
  for (const std::shared_ptr<prometheus::Collectable>& c : endpoint->collectables_) {
    endpoint->exposer_->RegisterCollectable(c);
  }
  const std::vector<int> ports = endpoint->exposer_->GetListeningPorts();
  endpoint->port_ = ports.empty() ? options.port : ports.front();
  endpoint->wake_host_ = *host == "0.0.0.0" ? "127.0.0.1" : *host;
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (exposer_ == nullptr) return;
  // civetweb's master thread polls its listening socket with a 2 s timeout
  // and only then sees the stop flag; a connection wakes it at once.
  std::atomic<bool> stopped{false};
  std::thread waker([&] {
    while (!stopped.load()) {
      Knock(wake_host_, port_);
      absl::SleepFor(absl::Milliseconds(20));
    }
  });
  exposer_.reset();
  stopped.store(true);
  waker.join();
}

std::string Scrape(const std::vector<std::shared_ptr<prometheus::Collectable>>& collectables) {
  std::vector<prometheus::MetricFamily> families;
  for (const std::shared_ptr<prometheus::Collectable>& c : collectables) {
    std::vector<prometheus::MetricFamily> collected = c->Collect();
    families.insert(families.end(), std::make_move_iterator(collected.begin()),
                    std::make_move_iterator(collected.end()));
  }
  return prometheus::TextSerializer().Serialize(families);
}

}  // namespace gpuflow::metrics
