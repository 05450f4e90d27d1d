#include "server/metrics/http_exposer.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics/registry.h"
#include "server/metrics/text_format.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::metrics {
namespace {

using ::gpuflow::testing::StatusIs;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Sends `request` to 127.0.0.1:port and returns the whole reply.
std::string HttpExchange(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "socket failed";
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    ssize_t n = 0;
    while ((n = read(fd, buffer, sizeof(buffer))) > 0) reply.append(buffer, n);
  }
  close(fd);
  return reply;
}

std::string Get(int port, const std::string& method, const std::string& path) {
  return HttpExchange(
      port,
      absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
}

class HttpExposerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    registry_.AddCounter("test_requests_total", "Requests.").Add({{"code", "OK"}}).Increment(7);
    absl::StatusOr<std::unique_ptr<HttpExposer>> exposer =
        HttpExposer::Start({.address = "127.0.0.1", .port = 0}, {&registry_});
    ASSERT_TRUE(exposer.ok()) << exposer.status();
    exposer_ = *std::move(exposer);
    ASSERT_GT(exposer_->port(), 0);
  }

  Registry registry_;
  std::unique_ptr<HttpExposer> exposer_;
};

TEST_F(HttpExposerTest, ServesTheTextFormatAtMetrics) {
  const std::string reply = Get(exposer_->port(), "GET", "/metrics");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(reply, HasSubstr("Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"));
  EXPECT_THAT(reply, EndsWith("\r\n\r\n" + exposer_->Scrape()));
  EXPECT_THAT(reply, HasSubstr("test_requests_total{code=\"OK\"} 7\n"));
}

TEST_F(HttpExposerTest, EachScrapeCollectsAfresh) {
  registry_.AddGauge("test_late_bytes", "Added after start.").Add({}).Set(3);
  EXPECT_THAT(Get(exposer_->port(), "GET", "/metrics"), HasSubstr("test_late_bytes 3\n"));
}

TEST_F(HttpExposerTest, HeadHasHeadersOnly) {
  const std::string reply = Get(exposer_->port(), "HEAD", "/metrics");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(reply, EndsWith("\r\n\r\n"));
  EXPECT_THAT(reply, HasSubstr(absl::StrCat("Content-Length: ", exposer_->Scrape().size())));
}

TEST_F(HttpExposerTest, OtherPathsAndMethods) {
  EXPECT_THAT(Get(exposer_->port(), "GET", "/"), HasSubstr("GET /metrics"));
  EXPECT_THAT(Get(exposer_->port(), "GET", "/nothing"), StartsWith("HTTP/1.1 404"));
  EXPECT_THAT(Get(exposer_->port(), "POST", "/metrics"), StartsWith("HTTP/1.1 405"));
}

TEST(HttpExposerStartTest, PortInUseIsUnavailable) {
  Registry registry;
  absl::StatusOr<std::unique_ptr<HttpExposer>> first =
      HttpExposer::Start({.address = "127.0.0.1", .port = 0}, {&registry});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(HttpExposer::Start({.address = "127.0.0.1", .port = (*first)->port()}, {&registry}),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("cannot serve metrics")));
}

TEST(HttpExposerStartTest, RejectsIpv6AndBadPorts) {
  Registry registry;
  EXPECT_THAT(HttpExposer::Start({.address = "::1", .port = 0}, {&registry}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("IPv6")));
  EXPECT_THAT(HttpExposer::Start({.address = "127.0.0.1", .port = 70000}, {&registry}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("70000")));
}

TEST(HttpExposerStartTest, AcceptsHostNamesAndEveryInterface) {
  Registry registry;
  for (const char* address : {"localhost", "0.0.0.0", "[::]"}) {
    SCOPED_TRACE(address);
    absl::StatusOr<std::unique_ptr<HttpExposer>> exposer =
        HttpExposer::Start({.address = address, .port = 0}, {&registry});
    ASSERT_TRUE(exposer.ok()) << exposer.status();
    EXPECT_THAT(Get((*exposer)->port(), "GET", "/metrics"), StartsWith("HTTP/1.1 200 OK"));
  }
}

}  // namespace
}  // namespace gpuflow::metrics
