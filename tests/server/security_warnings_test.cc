#include "server/security_warnings.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace gpuflow::server {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

TEST(IsLoopbackAddressTest, LoopbackNamesAndAddresses) {
  for (const char* address : {"localhost", "LOCALHOST", "api.localhost", "127.0.0.1", "127.1.2.3",
                              "::1", "[::1]", " localhost "}) {
    EXPECT_TRUE(IsLoopbackAddress(address)) << address;
  }
  for (const char* address : {"0.0.0.0", "::", "[::]", "10.0.0.5", "192.168.1.1", "gpu-0",
                              "example.com", "128.0.0.1", "::2", ""}) {
    EXPECT_FALSE(IsLoopbackAddress(address)) << address;
  }
}

TEST(SecurityWarningsTest, NothingOnLoopback) {
  EXPECT_THAT(SecurityWarnings({.address = "localhost"}), IsEmpty());
  EXPECT_THAT(SecurityWarnings({.address = "127.0.0.1", .raw_kernels = true}), IsEmpty());
}

TEST(SecurityWarningsTest, BeyondLoopbackWithoutTlsOrAuthentication) {
  EXPECT_THAT(SecurityWarnings({.address = "0.0.0.0"}),
              ElementsAre(HasSubstr("listening on 0.0.0.0 without TLS"),
                          HasSubstr("listening on 0.0.0.0 without authentication")));
  EXPECT_THAT(SecurityWarnings({.address = "0.0.0.0", .raw_kernels = true}),
              ElementsAre(Not(HasSubstr("own code")), HasSubstr("run their own code")));
  for (const std::string& warning : SecurityWarnings({.address = "0.0.0.0"})) {
    EXPECT_THAT(warning, HasSubstr("docs/security.md"));
  }
}

TEST(SecurityWarningsTest, TokensWithoutTlsWouldCrossTheNetworkInClear) {
  EXPECT_THAT(SecurityWarnings({.address = "0.0.0.0", .tokens = true}),
              ElementsAre(HasSubstr("session ids, bearer tokens and array data")));
}

TEST(SecurityWarningsTest, MutualTlsOrTlsWithTokensIsQuiet) {
  EXPECT_THAT(SecurityWarnings({.address = "0.0.0.0", .tls = true, .mutual_tls = true}), IsEmpty());
  EXPECT_THAT(SecurityWarnings({.address = "0.0.0.0", .tls = true, .tokens = true}), IsEmpty());
  EXPECT_THAT(SecurityWarnings({.address = "0.0.0.0", .tls = true}),
              ElementsAre(HasSubstr("without authentication")));
}

}  // namespace
}  // namespace gpuflow::server
