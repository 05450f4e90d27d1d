#include "server/metrics/http_exposer.h"

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
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/metrics/text_format.h"

// Debian's libcivetweb is built with USE_STACK_SIZE=102400: every thread it
// starts asks pthread_attr_setstacksize for 100 KiB. glibc carves each
// thread's static TLS out of its stack, and the CUDA libraries gpuflowd links
// need more than that (cuBLASLt alone ~92 KiB), so pthread_create fails with
// EINVAL and civetweb cannot start a worker. This definition, which the
// dynamic linker binds in preference to libc's (the executable comes first),
// raises requests below 1 MiB to 1 MiB and is otherwise libc's. Linked in with
// HttpExposer, so only binaries that serve metrics carry it.
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

constexpr char kIndex[] = "gpuflowd metrics: GET /metrics (Prometheus text format 0.0.4)\n";

// The host part of civetweb's listening_ports entry, or an error.
absl::StatusOr<std::string> ListeningHost(const HttpExposerOptions& options) {
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

bool IsGetOrHead(mg_connection* connection, bool* head) {
  const mg_request_info* info = mg_get_request_info(connection);
  const char* method = info != nullptr ? info->request_method : nullptr;
  *head = method != nullptr && std::strcmp(method, "HEAD") == 0;
  return method != nullptr && (*head || std::strcmp(method, "GET") == 0);
}

int SendBody(mg_connection* connection, const char* content_type, const std::string& body,
             bool head) {
  mg_send_http_ok(connection, content_type, static_cast<long long>(body.size()));
  if (!head) mg_write(connection, body.data(), body.size());
  return 200;
}

int MethodNotAllowed(mg_connection* connection) {
  mg_response_header_start(connection, 405);
  mg_response_header_add(connection, "Allow", "GET, HEAD", -1);
  mg_response_header_add(connection, "Content-Length", "0", -1);
  mg_response_header_send(connection);
  return 405;
}

// civetweb logs to stderr by default; gpuflowd has its own log.
int QuietLog(const mg_connection* /*connection*/, const char* /*message*/) { return 1; }

}  // namespace

absl::StatusOr<std::unique_ptr<HttpExposer>> HttpExposer::Start(
    const HttpExposerOptions& options, std::vector<const Collectable*> collectables) {
  absl::StatusOr<std::string> host = ListeningHost(options);
  if (!host.ok()) return host.status();
  const std::string listening = absl::StrCat(*host, ":", options.port);
  static std::once_flag init_once;
  std::call_once(init_once, [] { mg_init_library(0); });

  auto exposer = std::unique_ptr<HttpExposer>(new HttpExposer(std::move(collectables)));
  const std::string threads = absl::StrCat(options.threads < 1 ? 1 : options.threads);
  const char* configuration[] = {"listening_ports", listening.c_str(), "num_threads",
                                 threads.c_str(),
                                 // An idle connection is dropped after 5 s.
                                 "request_timeout_ms", "5000", nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  callbacks.log_message = QuietLog;
  mg_init_data init{&callbacks, exposer.get(), configuration};
  char error_text[256] = {0};
  mg_error_data error{nullptr, error_text, sizeof(error_text)};
  exposer->context_ = mg_start2(&init, &error);
  if (exposer->context_ == nullptr) {
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", listening, ": ",
                                               error_text[0] != 0 ? error_text : "civetweb failed",
                                               " (address in use, or not local?)"));
  }
  mg_set_request_handler(exposer->context_, "/metrics$", &HttpExposer::HandleMetrics,
                         exposer.get());
  mg_set_request_handler(exposer->context_, "/$", &HttpExposer::HandleOther, exposer.get());
  mg_server_port port{};
  if (mg_get_server_ports(exposer->context_, 1, &port) == 1) exposer->port_ = port.port;
  exposer->wake_host_ = *host == "0.0.0.0" ? "127.0.0.1" : *host;
  return exposer;
}

HttpExposer::~HttpExposer() {
  if (context_ == nullptr) return;
  // civetweb's master thread polls its listening socket with a 2 s timeout
  // and only then sees the stop flag; a connection wakes it at once.
  std::atomic<bool> stopped{false};
  std::thread waker([&] {
    while (!stopped.load()) {
      Knock(wake_host_, port_);
      absl::SleepFor(absl::Milliseconds(20));
    }
  });
  mg_stop(context_);
  stopped.store(true);
  waker.join();
}

std::string HttpExposer::Scrape() const {
  std::vector<MetricFamily> families;
  for (const Collectable* collectable : collectables_) {
    std::vector<MetricFamily> collected = collectable->Collect();
    families.insert(families.end(), std::make_move_iterator(collected.begin()),
                    std::make_move_iterator(collected.end()));
  }
  return SerializeText(families);
}

int HttpExposer::HandleMetrics(mg_connection* connection, void* self) {
  bool head = false;
  if (!IsGetOrHead(connection, &head)) return MethodNotAllowed(connection);
  const std::string content_type(kTextContentType);
  return SendBody(connection, content_type.c_str(), static_cast<HttpExposer*>(self)->Scrape(),
                  head);
}

int HttpExposer::HandleOther(mg_connection* connection, void* /*self*/) {
  bool head = false;
  if (!IsGetOrHead(connection, &head)) return MethodNotAllowed(connection);
  return SendBody(connection, "text/plain; charset=utf-8", kIndex, head);
}

}  // namespace gpuflow::metrics
