#include "server/metrics/endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"
#include "tests/testing/status_matchers.h"

namespace gpuflow::metrics {
namespace {

using ::gpuflow::testing::StatusIs;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Connects to 127.0.0.1:port; -1 on failure.
int Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends `request` to 127.0.0.1:port and returns the whole reply.
std::string HttpExchange(int port, const std::string& request) {
  const int fd = Connect(port);
  if (fd < 0) return "connect failed";
  std::string reply;
  if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
    char buffer[4096];
    ssize_t n = 0;
    while ((n = read(fd, buffer, sizeof(buffer))) > 0) reply.append(buffer, n);
  }
  close(fd);
  return reply;
}

std::string Get(int port, const std::string& path) {
  return HttpExchange(
      port,
      absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"));
}

class MetricsEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    prometheus::BuildCounter()
        .Name("test_requests_total")
        .Help("Requests.")
        .Register(*registry_)
        .Add({{"code", "OK"}})
        .Increment(7);
    absl::StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint =
        MetricsEndpoint::Start({.address = "127.0.0.1", .port = 0}, {registry_});
    ASSERT_TRUE(endpoint.ok()) << endpoint.status();
    endpoint_ = *std::move(endpoint);
    ASSERT_GT(endpoint_->port(), 0);
  }

  std::shared_ptr<prometheus::Registry> registry_ = std::make_shared<prometheus::Registry>();
  std::unique_ptr<MetricsEndpoint> endpoint_;
};

TEST_F(MetricsEndpointTest, ServesTheTextFormatAtMetrics) {
  const std::string reply = Get(endpoint_->port(), "/metrics");
  EXPECT_THAT(reply, StartsWith("HTTP/1.1 200 OK\r\n"));
  EXPECT_THAT(reply, HasSubstr("Content-Type: text/plain"));
  EXPECT_THAT(reply, HasSubstr("# TYPE test_requests_total counter\n"));
  // prometheus-cpp adds its own exposer_* families in front of ours.
  EXPECT_THAT(reply, HasSubstr("exposer_scrapes_total"));
  EXPECT_THAT(reply, EndsWith(Scrape({registry_})));
  EXPECT_THAT(reply, HasSubstr("test_requests_total{code=\"OK\"} 7\n"));
}

TEST_F(MetricsEndpointTest, EachScrapeCollectsAfresh) {
  prometheus::BuildGauge()
      .Name("test_late_bytes")
      .Help("Added after start.")
      .Register(*registry_)
      .Add({})
      .Set(3);
  EXPECT_THAT(Get(endpoint_->port(), "/metrics"), HasSubstr("test_late_bytes 3\n"));
}

TEST_F(MetricsEndpointTest, OtherPathsAreNotFound) {
  EXPECT_THAT(Get(endpoint_->port(), "/nothing"), StartsWith("HTTP/1.1 404"));
}

// Regression (session 4): two idle TCP connections tied up the endpoint's
// two worker threads and scrapes timed out.
TEST_F(MetricsEndpointTest, ServesWhileSixteenConnectionsSitIdle) {
  std::vector<int> idle;
  for (int i = 0; i < 16; ++i) idle.push_back(Connect(endpoint_->port()));
  for (int i = 0; i < 5; ++i) {
    EXPECT_THAT(Get(endpoint_->port(), "/metrics"), StartsWith("HTTP/1.1 200 OK\r\n"));
  }
  for (int fd : idle) {
    if (fd >= 0) close(fd);
  }
}

TEST_F(MetricsEndpointTest, StopsWithoutWaitingForCivetwebsPoll) {
  const int port = endpoint_->port();
  const absl::Time start = absl::Now();
  endpoint_.reset();
  // civetweb alone notices the stop only at its next 2 s poll; a loaded
  // machine still stops well within that.
  EXPECT_LT(absl::Now() - start, absl::Seconds(1.9));
  EXPECT_EQ(Connect(port), -1);
}

TEST(MetricsEndpointStartTest, PortInUseIsUnavailable) {
  auto registry = std::make_shared<prometheus::Registry>();
  absl::StatusOr<std::unique_ptr<MetricsEndpoint>> first =
      MetricsEndpoint::Start({.address = "127.0.0.1", .port = 0}, {registry});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(
      MetricsEndpoint::Start({.address = "127.0.0.1", .port = (*first)->port()}, {registry}),
      StatusIs(absl::StatusCode::kUnavailable, HasSubstr("cannot serve metrics")));
}

TEST(MetricsEndpointStartTest, RejectsIpv6AndBadPorts) {
  auto registry = std::make_shared<prometheus::Registry>();
  EXPECT_THAT(MetricsEndpoint::Start({.address = "::1", .port = 0}, {registry}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("IPv6")));
  EXPECT_THAT(MetricsEndpoint::Start({.address = "127.0.0.1", .port = 70000}, {registry}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("70000")));
}

TEST(MetricsEndpointStartTest, AcceptsHostNamesAndEveryInterface) {
  auto registry = std::make_shared<prometheus::Registry>();
  for (const char* address : {"localhost", "0.0.0.0", "[::]"}) {
    SCOPED_TRACE(address);
    absl::StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint =
        MetricsEndpoint::Start({.address = address, .port = 0}, {registry});
    ASSERT_TRUE(endpoint.ok()) << endpoint.status();
    EXPECT_THAT(Get((*endpoint)->port(), "/metrics"), StartsWith("HTTP/1.1 200 OK"));
  }
}

}  // namespace
}  // namespace gpuflow::metrics
